package providertest

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// RunLocker tests provider.Locker across two instances: acquire, not re-entrant,
// owner-safe release, expiry and takeover, ttl 0, exactly one winner among 16
// goroutines, mutual exclusion over rounds, adversarial keys kept apart, bad input
// and cancellation.
func RunLocker(t *testing.T, h Harness) {
	t.Helper()
	group(t, "Locker", h, func(t *testing.T, s *suite) {
		s.run(t, "acquire_free", testLockerAcquireFree)
		s.run(t, "not_reentrant", testLockerNotReentrant)
		s.run(t, "held_by_other_instance", testLockerHeldByOtherInstance)
		s.run(t, "release_frees", testLockerReleaseFrees)
		s.run(t, "release_not_held", testLockerReleaseNotHeld)
		s.run(t, "release_twice", testLockerReleaseTwice)
		s.run(t, "release_by_other_instance", testLockerReleaseByOtherInstance)
		s.run(t, "expiry_takeover", testLockerExpiryTakeover)
		s.run(t, "expired_lock_not_released", testLockerExpiredLockNotReleased)
		s.run(t, "ttl_zero_never_expires", testLockerTTLZeroNeverExpires)
		s.run(t, "expired_at_exact_ttl", testLockerExpiredAtExactTTL)
		s.run(t, "owner_prefix_cannot_release", testLockerOwnerPrefixCannotRelease)
		s.run(t, "concurrent_one_winner", testLockerConcurrentOneWinner)
		s.run(t, "release_visible_to_waiting_instance", testLockerReleaseVisibleToWaitingInstance)
		s.run(t, "mutual_exclusion_rounds", testLockerMutualExclusionRounds)
		s.run(t, "adversarial_keys", testLockerAdversarialKeys)
		testLockerBadInputAndCancelled(t, s)
	})
}

// testLockerBadInputAndCancelled runs the bad-input table (bad_input/...) and the cancelled-context subtest of the Locker group.
func testLockerBadInputAndCancelled(t *testing.T, s *suite) {
	var bad []badCase
	for _, b := range badLockKeys {
		bad = append(bad,
			badCase{name: "acquire_key_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				_, err := p.AcquireLock(ctx, b.key, longTTL)
				return err
			}},
			badCase{name: "release_key_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				return p.ReleaseLock(ctx, b.key)
			}})
	}
	bad = append(bad, badCase{name: "acquire_negative_ttl", call: func(ctx context.Context, p provider.Provider, k ids) error {
		_, err := p.AcquireLock(ctx, k.lock, -time.Second)
		return err
	}})
	s.checkBadInput(t, bad, func(t *testing.T, p provider.Provider, k ids) {
		t.Helper()
		wantAcquire(t, p, k.lock, longTTL, true, "AcquireLock after a rejected call")
	})
	s.checkCancelled(t, []call{
		{"AcquireLock", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.AcquireLock(ctx, k.lock, longTTL)
			return err
		}},
		{"ReleaseLock", func(ctx context.Context, p provider.Provider, k ids) error {
			return p.ReleaseLock(ctx, k.lock+"-held")
		}},
	}, func(t *testing.T, p provider.Provider, k ids) {
		t.Helper()
		wantAcquire(t, p, k.lock+"-held", longTTL, true, "AcquireLock")
	}, func(t *testing.T, p provider.Provider, k ids) {
		t.Helper()
		q := s.open(t)
		wantAcquire(t, q, k.lock, longTTL, true, "AcquireLock by another instance after a cancelled AcquireLock")
		wantAcquire(t, q, k.lock+"-held", longTTL, false, "AcquireLock by another instance after a cancelled ReleaseLock")
	})
}

func testLockerAcquireFree(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	wantAcquire(t, p, k.lock, longTTL, true, "AcquireLock of a free key")
}

func testLockerNotReentrant(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	wantAcquire(t, p, k.lock, longTTL, true, "AcquireLock")
	wantAcquire(t, p, k.lock, longTTL, false, "AcquireLock again by the holder")
	wantAcquire(t, p, k.lock, 0, false, "AcquireLock again by the holder, ttl 0")
}

func testLockerHeldByOtherInstance(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	wantAcquire(t, p, k.lock, longTTL, true, "AcquireLock")
	wantAcquire(t, q, k.lock, longTTL, false, "AcquireLock by another instance")
}

func testLockerReleaseFrees(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	wantAcquire(t, p, k.lock, longTTL, true, "AcquireLock")
	noErr(t, p.ReleaseLock(t.Context(), k.lock), "ReleaseLock by the holder")
	wantAcquire(t, q, k.lock, longTTL, true, "AcquireLock by another instance after the release")
}

func testLockerReleaseNotHeld(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	wantErr(t, p.ReleaseLock(t.Context(), k.lock), provider.ErrLockNotHeld, "ReleaseLock of a free key")
}

func testLockerReleaseTwice(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	wantAcquire(t, p, k.lock, longTTL, true, "AcquireLock")
	noErr(t, p.ReleaseLock(t.Context(), k.lock), "ReleaseLock")
	wantErr(t, p.ReleaseLock(t.Context(), k.lock), provider.ErrLockNotHeld, "ReleaseLock a second time")
}

func testLockerReleaseByOtherInstance(t *testing.T, s *suite) {
	p, q, r, k := s.open(t), s.open(t), s.open(t), newIDs(t)
	wantAcquire(t, p, k.lock, longTTL, true, "AcquireLock")
	wantErr(t, q.ReleaseLock(t.Context(), k.lock), provider.ErrLockNotHeld, "ReleaseLock by a non-owner")
	wantAcquire(t, r, k.lock, longTTL, false, "AcquireLock after a non-owner's release (the lock must still be held)")
	noErr(t, p.ReleaseLock(t.Context(), k.lock), "ReleaseLock by the owner")
}

func testLockerExpiryTakeover(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	wantAcquire(t, p, k.lock, shortTTL, true, "AcquireLock")
	s.sleep(t, expireWait)
	wantAcquire(t, q, k.lock, longTTL, true, "AcquireLock after the holder's ttl")
	wantErr(t, p.ReleaseLock(t.Context(), k.lock), provider.ErrLockNotHeld, "ReleaseLock by the expired holder")
	wantAcquire(t, p, k.lock, longTTL, false, "AcquireLock by the expired holder (the new holder must keep it)")
	noErr(t, q.ReleaseLock(t.Context(), k.lock), "ReleaseLock by the new holder")
}

func testLockerExpiredLockNotReleased(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	wantAcquire(t, p, k.lock, shortTTL, true, "AcquireLock")
	s.sleep(t, expireWait)
	wantErr(t, p.ReleaseLock(t.Context(), k.lock), provider.ErrLockNotHeld, "ReleaseLock after expiry")
}

func testLockerTTLZeroNeverExpires(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	wantAcquire(t, p, k.lock, 0, true, "AcquireLock with ttl 0")
	s.sleep(t, expireWait)
	wantAcquire(t, q, k.lock, longTTL, false, "AcquireLock of a ttl-0 lock after a sleep")
	noErr(t, p.ReleaseLock(t.Context(), k.lock), "ReleaseLock of a ttl-0 lock")
	wantAcquire(t, q, k.lock, longTTL, true, "AcquireLock after the release")
}

func testLockerExpiredAtExactTTL(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	wantAcquire(t, p, k.lock, shortTTL, true, "AcquireLock")
	s.sleepToExpiry(t, shortTTL) // expired when now >= the expiry
	wantAcquire(t, q, k.lock, longTTL, true, "AcquireLock by another instance exactly at the holder's expiry")
	wantErr(t, p.ReleaseLock(t.Context(), k.lock), provider.ErrLockNotHeld, "ReleaseLock by the expired holder")
}

func testLockerOwnerPrefixCannotRelease(t *testing.T, s *suite) {
	if s.h.OpenOwner == nil {
		t.Skip("Harness.OpenOwner is nil")
	}
	k := newIDs(t)
	owners := []string{"worker-1", "worker-10", "worker-1x", "worker-"}
	for _, holder := range owners {
		hp := s.h.OpenOwner(t, holder)
		key := k.lock + "-" + holder
		wantAcquire(t, hp, key, longTTL, true, "AcquireLock by "+holder)
		for _, other := range owners {
			if other == holder {
				continue
			}
			op := s.h.OpenOwner(t, other)
			wantErr(t, op.ReleaseLock(t.Context(), key), provider.ErrLockNotHeld,
				fmt.Sprintf("ReleaseLock by owner %q of a lock held by %q", other, holder))
			wantAcquire(t, op, key, longTTL, false, fmt.Sprintf("AcquireLock by %q after its release attempt (%q must still hold it)", other, holder))
		}
		noErr(t, hp.ReleaseLock(t.Context(), key), "ReleaseLock by the holder "+holder)
	}
}

func testLockerConcurrentOneWinner(t *testing.T, s *suite) {
	insts := []provider.Provider{s.open(t), s.open(t)}
	k := newIDs(t)
	const n = 16
	for round, start := 0, time.Now(); raceAgain(round, start) && !t.Failed(); round++ {
		key := fmt.Sprintf("%s-r%04d", k.lock, round)
		won := make([]bool, n)
		var e errs
		runConcurrently(n, func(i int) {
			ok, err := insts[i%2].AcquireLock(t.Context(), key, longTTL)
			if err != nil {
				e.add("goroutine %d: AcquireLock: %v", i, err)
			}
			won[i] = ok
		})
		e.report(t)
		winner := -1
		for i, w := range won {
			if w {
				if winner >= 0 {
					t.Fatalf("round %d: goroutines %d and %d both acquired the lock", round, winner, i)
				}
				winner = i
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no goroutine acquired the free lock", round)
		}
		wantErr(t, insts[(winner+1)%2].ReleaseLock(t.Context(), key), provider.ErrLockNotHeld, "ReleaseLock by the losing instance")
		noErr(t, insts[winner%2].ReleaseLock(t.Context(), key), "ReleaseLock by the winning instance")
	}
}

func testLockerReleaseVisibleToWaitingInstance(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	wantAcquire(t, p, k.lock, longTTL, true, "AcquireLock")
	wantAcquire(t, q, k.lock, longTTL, false, "AcquireLock by another instance while held")
	wantAcquire(t, p, k.lock, longTTL, false, "AcquireLock by the holder while held")
	noErr(t, p.ReleaseLock(t.Context(), k.lock), "ReleaseLock")
	wantAcquire(t, q, k.lock, longTTL, true, "AcquireLock by the instance that saw it held, after the release")
	noErr(t, q.ReleaseLock(t.Context(), k.lock), "ReleaseLock")
	wantAcquire(t, p, k.lock, longTTL, true, "AcquireLock by the first holder, after the second released")
}

func testLockerMutualExclusionRounds(t *testing.T, s *suite) {
	insts := []provider.Provider{s.open(t), s.open(t)}
	k := newIDs(t)
	const n, attempts = 16, 25
	var inside, acquired atomic.Int64
	var e errs
	runConcurrently(n, func(i int) {
		p := insts[i%2]
		for range attempts {
			ok, err := p.AcquireLock(t.Context(), k.lock, longTTL)
			if err != nil {
				e.add("goroutine %d: AcquireLock: %v", i, err)
				return
			}
			if !ok {
				runtime.Gosched()
				continue
			}
			acquired.Add(1)
			if c := inside.Add(1); c != 1 {
				e.add("goroutine %d: %d holders inside the lock at once", i, c)
			}
			runtime.Gosched()
			inside.Add(-1)
			if err := p.ReleaseLock(t.Context(), k.lock); err != nil {
				e.add("goroutine %d: ReleaseLock: %v", i, err)
				return
			}
		}
	})
	e.report(t)
	if acquired.Load() == 0 {
		t.Fatal("no goroutine ever acquired the lock")
	}
	t.Logf("%d of %d attempts acquired the lock", acquired.Load(), n*attempts)
}

func testLockerAdversarialKeys(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	keys := adversarialLockKeys(k.lock)
	for _, key := range keys {
		wantAcquire(t, p, key, longTTL, true, fmt.Sprintf("AcquireLock(%q) (no two keys may share a lock)", key))
	}
	for _, key := range keys {
		wantAcquire(t, q, key, longTTL, false, fmt.Sprintf("AcquireLock(%q) by another instance", key))
	}
	noErr(t, p.ReleaseLock(t.Context(), keys[0]), fmt.Sprintf("ReleaseLock(%q)", keys[0]))
	for i, key := range keys {
		wantAcquire(t, q, key, longTTL, i == 0, fmt.Sprintf("AcquireLock(%q) after releasing only %q", key, keys[0]))
	}
}

// wantAcquire fails the test unless AcquireLock returns (want, nil).
func wantAcquire(t *testing.T, p provider.Provider, key string, ttl time.Duration, want bool, what string) {
	t.Helper()
	ok, err := p.AcquireLock(t.Context(), key, ttl)
	noErr(t, err, what)
	if ok != want {
		t.Fatalf("%s = %v, want %v", what, ok, want)
	}
}

// badLockKeys are lock keys every backend must reject with ErrInvalidArgument.
var badLockKeys = []struct{ name, key string }{
	{"empty", ""},
	{"newline", "a\nb"},
	{"nul", "a\x00b"},
	{"invalid_utf8", "a\xffb"},
	{"too_long", strings.Repeat("k", types.MaxLockKeyLen+1)},
}

// adversarialLockKeys returns valid lock keys, all different, built from the key
// delimiters of the built-in backends and more (lock keys are free-form, so every
// one must be accepted and be a lock of its own). prefix makes them unique to the
// test.
func adversarialLockKeys(prefix string) []string {
	long := prefix + strings.Repeat("k", types.MaxLockKeyLen-len(prefix))
	out := []string{prefix + "a", prefix + "A", prefix + "a ", " " + prefix + "a", prefix + "a:b", prefix + "a:b:c",
		prefix + "a::b", "{" + prefix + "a}", prefix + "a}", "{" + prefix + "a", prefix + "{a}", prefix + "a#b",
		"LOCK#" + prefix + "a", prefix + "a#LOCK", prefix + "a|b", prefix + "a/b", prefix + "a/../b", prefix + "b",
		prefix + "a b", prefix + "a  b", prefix + "é", prefix + "e\u0301", prefix + "a\u00a0b", prefix + "a\u2028b",
		prefix + "a\u200bb", prefix + "🔒", prefix + "*", prefix + "a*", prefix + "[a]", prefix + "%", prefix + "%25",
		prefix + "a%3Ab", prefix + "\\", prefix + "\"", prefix + "'", prefix + "a.b", prefix + "a,b", prefix + "a;b",
		long, long[:len(long)-1] + "j"}
	return out
}
