package providertest

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// RunLimits tests the numeric limits of the contract at and just beyond each one:
// run versions up to types.MaxRunVersion (a compare-and-swap may start from at most
// MaxRunVersion-1 and stores MaxRunVersion exactly), ttls up to provider.MaxTTL on
// every call that takes one (accepted and honoured at the limit; beyond it, and at
// math.MaxInt64, ErrInvalidArgument with nothing written), a lease renewed at
// the limit staying held, and the length limits, which are in bytes: lock and
// lease keys (types.MaxLockKeyLen) and event kinds (types.MaxEventKindLen) of
// 2-, 3- and 4-byte runes exactly at the limit are accepted, one rune more (over
// it in bytes, under it in runes) is ErrInvalidArgument and writes nothing;
// two lease keys of the longest length that differ only in their last byte (or
// their last rune) are remembered apart by fenced writes. IDs
// (types.ValidateID) are ASCII, so their bytes are their runes.
func RunLimits(t *testing.T, h Harness) {
	t.Helper()
	group(t, "Limits", h, func(t *testing.T, s *suite) {
		s.run(t, "cas_up_to_max_version", testLimitsCASUpToMaxVersion)
		s.run(t, "put_beyond_max_version", testLimitsPutBeyondMaxVersion)
		s.run(t, "ttl_at_max_is_honoured", testLimitsTTLAtMaxIsHonoured)
		s.run(t, "ttl_beyond_max", testLimitsTTLBeyondMax)
		s.run(t, "lease_ttl_limits", testLimitsLeaseTTLLimits)
		s.run(t, "lock_key_length_in_bytes", testLimitsLockKeyLengthInBytes)
		s.run(t, "lease_key_length_in_bytes", testLimitsLeaseKeyLengthInBytes)
		s.run(t, "lease_keys_at_limit_fence_apart", testLimitsLeaseKeysAtLimitFenceApart)
		s.run(t, "event_kind_length_in_bytes", testLimitsEventKindLengthInBytes)
	})
}

func testLimitsCASUpToMaxVersion(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	run := newRun(k.pipeline, k.run, t0)
	run.Version = types.MaxRunVersion - 1
	noErr(t, p.PutRunState(t.Context(), run), "PutRunState at MaxRunVersion-1")
	next := run
	next.Status = types.RunRunning
	ok, err := p.CompareAndSwapRunState(t.Context(), k.run, types.MaxRunVersion-1, next)
	if err != nil || !ok {
		t.Fatalf("CAS from MaxRunVersion-1 = (%v, %v), want (true, nil)", ok, err)
	}
	got, err := p.GetRunState(t.Context(), k.run)
	if g := mustGet(t, got, err, "GetRunState"); g.Version != types.MaxRunVersion || g.Status != types.RunRunning {
		t.Fatalf("after CAS from MaxRunVersion-1: Version %d, Status %s; want %d (exactly), %s", g.Version, g.Status, types.MaxRunVersion, types.RunRunning)
	}
	for _, v := range []int{types.MaxRunVersion, types.MaxRunVersion + 1, math.MaxInt} {
		next.Status = types.RunFailed
		_, err := p.CompareAndSwapRunState(t.Context(), k.run, v, next)
		wantErr(t, err, provider.ErrInvalidArgument, "CAS from a version whose successor exceeds MaxRunVersion")
	}
	got, err = p.GetRunState(t.Context(), k.run)
	if g := mustGet(t, got, err, "GetRunState"); g.Version != types.MaxRunVersion || g.Status != types.RunRunning {
		t.Errorf("a rejected CAS changed the run: Version %d, Status %s", g.Version, g.Status)
	}
}

func testLimitsPutBeyondMaxVersion(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	for _, v := range []int{types.MaxRunVersion + 1, math.MaxInt} {
		run := newRun(k.pipeline, k.run, t0)
		run.Version = v
		wantErr(t, p.PutRunState(t.Context(), run), provider.ErrInvalidArgument, "PutRunState beyond MaxRunVersion")
	}
	got, err := p.GetRunState(t.Context(), k.run)
	wantNil(t, got, err, "GetRunState after rejected puts")
}

func testLimitsTTLAtMaxIsHonoured(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	noErr(t, p.PutTrait(t.Context(), k.pipeline, newTrait(k.trait), provider.MaxTTL), "PutTrait with MaxTTL")
	wantAcquire(t, p, k.lock, provider.MaxTTL, true, "AcquireLock with MaxTTL")
	s.sleep(t, expireWait)
	got, err := p.GetTrait(t.Context(), k.pipeline, k.trait)
	g := mustGet(t, got, err, "GetTrait of a MaxTTL trait after a sleep")
	if g.ExpiresAt == nil || g.ExpiresAt.Before(t0.Add(provider.MaxTTL/2)) {
		t.Errorf("ExpiresAt of a MaxTTL trait = %v, want about now + %v", g.ExpiresAt, provider.MaxTTL)
	}
	wantAcquire(t, q, k.lock, longTTL, false, "AcquireLock of a key locked with MaxTTL, after a sleep")
}

func testLimitsTTLBeyondMax(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	for _, ttl := range []time.Duration{provider.MaxTTL + 1, math.MaxInt64} {
		wantErr(t, p.PutTrait(t.Context(), k.pipeline, newTrait(k.trait), ttl), provider.ErrInvalidArgument, "PutTrait beyond MaxTTL")
		_, err := p.AcquireLock(t.Context(), k.lock, ttl)
		wantErr(t, err, provider.ErrInvalidArgument, "AcquireLock beyond MaxTTL")
	}
	got, err := p.GetTrait(t.Context(), k.pipeline, k.trait)
	wantNil(t, got, err, "GetTrait after rejected puts")
	wantAcquire(t, q, k.lock, longTTL, true, "AcquireLock after rejected acquires (nothing may be held)")
}

func testLimitsLeaseTTLLimits(t *testing.T, s *suite) {
	p := s.open(t)
	l, ok := p.(provider.Leaser)
	if !ok {
		t.Skip("the provider does not implement provider.Leaser")
	}
	k := newIDs(t)
	lease := mustLease(t, l, k.lock, shortTTL)
	for _, ttl := range []time.Duration{provider.MaxTTL + 1, math.MaxInt64} {
		_, err := l.RenewLease(t.Context(), lease, ttl)
		wantErr(t, err, provider.ErrInvalidArgument, "RenewLease beyond MaxTTL")
		_, err = l.AcquireLease(t.Context(), k.other, ttl)
		wantErr(t, err, provider.ErrInvalidArgument, "AcquireLease beyond MaxTTL")
	}
	renewed, err := l.RenewLease(t.Context(), lease, provider.MaxTTL)
	noErr(t, err, "RenewLease with MaxTTL")
	s.sleep(t, expireWait)
	other := s.open(t).(provider.Leaser)
	_, err = other.AcquireLease(t.Context(), k.lock, longTTL)
	wantErr(t, err, provider.ErrLockHeld, "AcquireLease of a key renewed with MaxTTL, after the first ttl passed")
	_, err = l.RenewLease(t.Context(), *renewed, provider.MaxTTL)
	noErr(t, err, "RenewLease with MaxTTL again")
	fresh := mustLease(t, other, k.other, provider.MaxTTL)
	noErr(t, other.ReleaseLease(t.Context(), fresh), "ReleaseLease of a MaxTTL lease")
}

func testLimitsLockKeyLengthInBytes(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	for _, c := range byteLimited(k.lock, types.MaxLockKeyLen) {
		// The key over the limit first: a backend that stored it truncated
		// to the limit would hold the key at the limit.
		_, err := p.AcquireLock(t.Context(), c.over, longTTL)
		wantErr(t, err, provider.ErrInvalidArgument, "AcquireLock of "+c.describe(c.over))
		wantErr(t, p.ReleaseLock(t.Context(), c.over), provider.ErrInvalidArgument, "ReleaseLock of "+c.describe(c.over))
		wantAcquire(t, q, c.at, longTTL, true, "AcquireLock of "+c.describe(c.at)+" after the rejected calls")
		wantAcquire(t, p, c.at, longTTL, false, "AcquireLock by another instance of "+c.describe(c.at))
		noErr(t, q.ReleaseLock(t.Context(), c.at), "ReleaseLock of "+c.describe(c.at))
	}
}

func testLimitsLeaseKeyLengthInBytes(t *testing.T, s *suite) {
	p, q := s.open(t), s.open(t)
	l, ok := p.(provider.Leaser)
	if !ok {
		t.Skip("the provider does not implement provider.Leaser")
	}
	k := newIDs(t)
	for _, c := range byteLimited(k.lock, types.MaxLockKeyLen) {
		_, err := l.AcquireLease(t.Context(), c.over, longTTL)
		wantErr(t, err, provider.ErrInvalidArgument, "AcquireLease of "+c.describe(c.over))
		lease := mustLease(t, q.(provider.Leaser), c.at, longTTL)
		_, err = l.AcquireLease(t.Context(), c.at, longTTL)
		wantErr(t, err, provider.ErrLockHeld, "AcquireLease by another instance of "+c.describe(c.at))
		noErr(t, q.(provider.Leaser).ReleaseLease(t.Context(), lease), "ReleaseLease of "+c.describe(c.at))
	}
}

func testLimitsEventKindLengthInBytes(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	var want []types.Event
	for i, c := range byteLimited("", types.MaxEventKindLen) {
		ev := newEvent(k.pipeline, i)
		ev.Kind = c.over
		wantErr(t, p.AppendEvent(t.Context(), ev), provider.ErrInvalidArgument, "AppendEvent with a kind of "+c.describe(c.over))
		ev.Kind = c.at
		noErr(t, p.AppendEvent(t.Context(), ev), "AppendEvent with a kind of "+c.describe(c.at))
		want = append(want, jsonRoundTrip(t, ev))
	}
	list, err := p.ListEvents(t.Context(), k.pipeline, listAll)
	noErr(t, err, "ListEvents")
	same(t, "events (the kinds at the limit, nothing of the rejected ones)", want, list)
}

// byteLimit is a pair of strings made of one multi-byte rune: at is exactly the
// limit in bytes, over is one rune more, over the limit in bytes but under it in
// runes.
type byteLimit struct {
	name     string // the rune's width
	at, over string
}

func (b byteLimit) describe(s string) string {
	return fmt.Sprintf("%d bytes in %d runes (%s)", len(s), utf8.RuneCountInString(s), b.name)
}

// byteLimited returns, for runes of 2, 3 and 4 bytes, a byteLimit of limit
// bytes: prefix, ASCII padding, then the rune repeated. Limits are in bytes;
// a backend that counts runes accepts every over.
func byteLimited(prefix string, limit int) []byteLimit {
	var out []byteLimit
	for _, r := range []rune{'é', '€', '🔒'} {
		w := utf8.RuneLen(r)
		n := (limit - len(prefix)) / w
		at := prefix + strings.Repeat("z", limit-len(prefix)-n*w) + strings.Repeat(string(r), n)
		out = append(out, byteLimit{name: fmt.Sprintf("%d-byte runes", w), at: at, over: at + string(r)})
	}
	return out
}

// testLimitsLeaseKeysAtLimitFenceApart: lease keys of types.MaxLockKeyLen bytes
// that share all but their last byte, or all but their last 3-byte rune, are
// remembered apart by a record, as RunFencing's keys_apart requires of short
// keys: a backend that truncates or hashes a prefix of the key into its fence
// memory mixes them up.
func testLimitsLeaseKeysAtLimitFenceApart(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	ascii := strings.Repeat("k", types.MaxLockKeyLen-1)
	wide := strings.Repeat("k", types.MaxLockKeyLen-3)
	for _, keys := range [][2]string{{ascii + "a", ascii + "b"}, {wide + "\u4e00", wide + "\u4e01"}} {
		a, b := keys[0], keys[1]
		write := func(p provider.Provider, key string, f int64, i int) error {
			return fenced(t, p, key, f).PutRunState(t.Context(), fencedRun(k, i))
		}
		noErr(t, write(p, a, 5, 1), "PutRunState fenced 5 by the first long key")
		noErr(t, write(q, b, 1, 2), "PutRunState fenced 1 by the second long key (another key: it neither passes nor is blocked)")
		wantFenced(t, write(p, a, 4, 3), "PutRunState fenced 4 by the first long key after its fence 5 wrote")
		noErr(t, write(q, b, 1, 4), "PutRunState fenced 1 by the second long key again (its own newest)")
		noErr(t, write(q, b, 7, 5), "PutRunState fenced 7 by the second long key")
		noErr(t, write(p, a, 5, 6), "PutRunState fenced 5 by the first long key after the second's fence 7 wrote")
		got, err := q.GetRunState(t.Context(), k.run)
		if r := mustGet(t, got, err, "GetRunState"); step(r) != 6 {
			t.Errorf("run after the writes = step %d, want 6", step(r))
		}
		k.run += "-wide"
	}
}
