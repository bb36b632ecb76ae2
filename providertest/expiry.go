package providertest

import (
	"errors"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// subSecondTTL is the ttl of the sub-second tests; subSecondLive is how long after
// the write they expect it live, leaving room for clocks that keep running between
// calls (real time plus an offset).
const (
	subSecondTTL  = 500 * time.Millisecond
	subSecondLive = 400 * time.Millisecond
	// realReadTTL is the ttl of read_live_then_expired on real time (Harness.Sleep
	// nil): long enough to read the entity right after writing it on a loaded machine.
	realReadTTL = 5 * time.Second
)

// ttlEntity is one entity with a ttl in one test: a trait, a readiness result, a
// lock or a lease.
type ttlEntity struct {
	// put writes (or takes) it with ttl through the test's first instance.
	put func(ttl time.Duration)
	// again writes it again with ttl: a re-put, a release and re-acquire, a renewal.
	again func(ttl time.Duration)
	// live reports whether inst sees it (held, for locks and leases); a check that
	// finds a lock or lease free gives it back at once.
	live func(inst provider.Provider) bool
}

// ttlKind makes the ttlEntity of a test; fixedTTL marks readiness, whose ttl is the
// backend's ReadinessTTL whatever the test asks.
type ttlKind struct {
	name     string
	fixedTTL bool
	leaser   bool
	new      func(t *testing.T, p provider.Provider, k ids) ttlEntity
}

func ttlKinds() []ttlKind {
	return []ttlKind{
		{name: "traits", new: func(t *testing.T, p provider.Provider, k ids) ttlEntity {
			put := func(ttl time.Duration) {
				noErr(t, p.PutTrait(t.Context(), k.pipeline, newTrait(k.trait), ttl), "PutTrait")
			}
			return ttlEntity{put: put, again: put, live: func(inst provider.Provider) bool {
				got, err := inst.GetTrait(t.Context(), k.pipeline, k.trait)
				noErr(t, err, "GetTrait")
				list, err := inst.GetTraits(t.Context(), k.pipeline)
				noErr(t, err, "GetTraits")
				if (got != nil) != (len(list) == 1) {
					t.Fatalf("GetTrait found %v but GetTraits %d traits: an expired trait is invisible to every read", got != nil, len(list))
				}
				return got != nil
			}}
		}},
		{name: "readiness", fixedTTL: true, new: func(t *testing.T, p provider.Provider, k ids) ttlEntity {
			put := func(time.Duration) {
				noErr(t, p.PutReadiness(t.Context(), newReadiness(k.pipeline)), "PutReadiness")
			}
			return ttlEntity{put: put, again: put, live: func(inst provider.Provider) bool {
				got, err := inst.GetReadiness(t.Context(), k.pipeline)
				noErr(t, err, "GetReadiness")
				return got != nil
			}}
		}},
		{name: "locks", new: func(t *testing.T, p provider.Provider, k ids) ttlEntity {
			return ttlEntity{
				put: func(ttl time.Duration) { wantAcquire(t, p, k.lock, ttl, true, "AcquireLock") },
				again: func(ttl time.Duration) {
					noErr(t, p.ReleaseLock(t.Context(), k.lock), "ReleaseLock")
					wantAcquire(t, p, k.lock, ttl, true, "AcquireLock again")
				},
				live: func(inst provider.Provider) bool {
					ok, err := inst.AcquireLock(t.Context(), k.lock, longTTL)
					noErr(t, err, "AcquireLock")
					if ok {
						noErr(t, inst.ReleaseLock(t.Context(), k.lock), "ReleaseLock")
					}
					return !ok
				},
			}
		}},
		{name: "leases", leaser: true, new: func(t *testing.T, p provider.Provider, k ids) ttlEntity {
			var lease types.Lease
			return ttlEntity{
				put: func(ttl time.Duration) { lease = mustLease(t, p.(provider.Leaser), k.lock, ttl) },
				again: func(ttl time.Duration) {
					_, err := p.(provider.Leaser).RenewLease(t.Context(), lease, ttl)
					noErr(t, err, "RenewLease")
				},
				live: func(inst provider.Provider) bool {
					l, err := inst.(provider.Leaser).AcquireLease(t.Context(), k.lock, longTTL)
					if errors.Is(err, provider.ErrLockHeld) {
						return true
					}
					got := mustGet(t, l, err, "AcquireLease")
					noErr(t, inst.(provider.Leaser).ReleaseLease(t.Context(), got), "ReleaseLease")
					return false
				},
			}
		}},
	}
}

// ttlOf is the ttl an entity of kind is written with when a test asks for ttl:
// the readiness TTL for a kind whose ttl is fixed.
func (s *suite) ttlOf(kind ttlKind, ttl time.Duration) time.Duration {
	if kind.fixedTTL {
		return s.readinessTTL()
	}
	return ttl
}

// bothLive fails the test unless e is live (want) as both p and q see it.
func bothLive(t *testing.T, e ttlEntity, want bool, what string, p, q provider.Provider) {
	t.Helper()
	for i, inst := range []provider.Provider{p, q} {
		if got := e.live(inst); got != want {
			t.Fatalf("%s: live = %v as instance %d sees it, want %v", what, got, i, want)
		}
	}
}

// RunExpiry tests TTLs beyond the single-ttl tests of each group, on traits,
// readiness results, locks and leases: sub-second ttls honoured to the
// millisecond, a shorter ttl after a longer one, a re-put part-way through a ttl
// restarting it, and an entity read while live (from the writing instance and
// another) invisible to both once expired, so no read-through cache keeps it.
func RunExpiry(t *testing.T, h Harness) {
	t.Helper()
	group(t, "Expiry", h, func(t *testing.T, s *suite) {
		_, hasLeaser := s.open(t).(provider.Leaser)
		for _, kind := range ttlKinds() {
			if kind.leaser && !hasLeaser {
				continue
			}
			if !kind.fixedTTL {
				test(t, "sub_second_ttl/"+kind.name, func(t *testing.T) { testExpirySubSecondTTL(t, s, kind) })
				test(t, "shorter_ttl_after_longer/"+kind.name, func(t *testing.T) { testExpiryShorterTTLAfterLonger(t, s, kind) })
			}
			test(t, "re_put_mid_ttl/"+kind.name, func(t *testing.T) { testExpiryRePutMidTTL(t, s, kind) })
			test(t, "read_live_then_expired/"+kind.name, func(t *testing.T) { testExpiryReadLiveThenExpired(t, s, kind) })
		}
	})
}

func testExpirySubSecondTTL(t *testing.T, s *suite, kind ttlKind) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	e := kind.new(t, p, k)
	e.put(subSecondTTL)
	if s.h.Sleep == nil {
		s.sleep(t, subSecondTTL+time.Second)
		bothLive(t, e, false, "a second after a sub-second ttl", p, q)
		return
	}
	s.sleep(t, subSecondLive)
	bothLive(t, e, true, "before a sub-second ttl passed", p, q)
	s.sleep(t, subSecondTTL-subSecondLive)
	bothLive(t, e, false, "exactly when a sub-second ttl passed", p, q)
}

func testExpiryShorterTTLAfterLonger(t *testing.T, s *suite, kind ttlKind) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	e := kind.new(t, p, k)
	e.put(longTTL)
	e.again(shortTTL)
	s.sleep(t, expireWait)
	bothLive(t, e, false, "after the shorter second ttl passed", p, q)
}

func testExpiryRePutMidTTL(t *testing.T, s *suite, kind ttlKind) {
	if s.h.Sleep == nil {
		t.Skip("Harness.Sleep is nil: on real time, a point part-way through a ttl is too close to expiry to assert reliably")
	}
	ttl := s.ttlOf(kind, shortTTL)
	p, q, k := s.open(t), s.open(t), newIDs(t)
	e := kind.new(t, p, k)
	e.put(ttl)
	s.sleep(t, ttl*3/4)
	e.again(ttl) // expires at 7/4 ttl now
	s.sleep(t, ttl/2)
	bothLive(t, e, true, "past the first ttl, within the ttl of the re-put", p, q)
	s.sleep(t, ttl/2)
	bothLive(t, e, false, "exactly when the ttl of the re-put passed", p, q)
}

func testExpiryReadLiveThenExpired(t *testing.T, s *suite, kind ttlKind) {
	ttl := shortTTL
	if s.h.Sleep == nil {
		ttl = realReadTTL
	}
	ttl = s.ttlOf(kind, ttl)
	p, q, k := s.open(t), s.open(t), newIDs(t)
	e := kind.new(t, p, k)
	e.put(ttl)
	bothLive(t, e, true, "right after the write", p, q)
	wait := ttl
	if s.h.Sleep == nil {
		wait += time.Second
	}
	s.sleep(t, wait)
	bothLive(t, e, false, "after the ttl, read while live before (no cache may keep it)", p, q)
}
