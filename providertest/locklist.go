package providertest

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// RunLockLister tests the optional provider.LockLister: the locks and leases
// held now, each as GetLockInfo shows it (owner, or token and fence; expiry, none
// for ttl 0), seen from any instance; nothing released or expired (at the exact
// instant of expiry); bytewise key order and the limit; the pattern ('*' across
// every character, '?', escapes, literal keys through provider.QuoteLockPattern);
// adversarial keys; bad input, cancellation and Stop. It skips when the provider
// does not implement provider.LockLister; its lease tests skip without
// provider.Leaser. Like every test of the suite it relies on the harness rule
// that different tests never see each other's data: a test lists every key.
func RunLockLister(t *testing.T, h Harness) {
	t.Helper()
	group(t, "LockLister", h, func(t *testing.T, s *suite) {
		s.probe = probeTraits
		if _, ok := s.open(t).(provider.LockLister); !ok {
			t.Skip("the provider does not implement provider.LockLister")
		}
		s.run(t, "held_listed", testLockListerHeldListed)
		s.run(t, "lease_listed", testLockListerLeaseListed)
		s.run(t, "key_order_and_limit", testLockListerKeyOrderAndLimit)
		s.run(t, "pattern", testLockListerPattern)
		s.run(t, "adversarial_keys", testLockListerAdversarialKeys)
		s.run(t, "expired_at_exact_ttl", testLockListerExpiredAtExactTTL)
		testLockListerBadInputAndCancelled(t, s)
		s.run(t, "after_stop", testLockListerAfterStop)
	})
}

// testLockListerBadInputAndCancelled runs the bad-input table (bad_input/...) and the cancelled-context subtest of the LockLister group.
func testLockListerBadInputAndCancelled(t *testing.T, s *suite) {
	s.checkBadInput(t, []badCase{
		{name: "limit_zero", call: func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.(provider.LockLister).ListLocks(ctx, "", 0)
			return err
		}},
		{name: "limit_negative", call: func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.(provider.LockLister).ListLocks(ctx, "", -1)
			return err
		}},
		{name: "pattern_unfinished_escape", call: func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.(provider.LockLister).ListLocks(ctx, k.lock+`\`, 10)
			return err
		}},
	}, nil)
	s.checkCancelled(t, []call{{"ListLocks", func(ctx context.Context, p provider.Provider, k ids) error {
		_, err := p.(provider.LockLister).ListLocks(ctx, "", 10)
		return err
	}}}, nil, nil)
}

func testLockListerHeldListed(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	before := s.now(t, p)
	wantAcquire(t, p, k.lock+"-a", longTTL, true, "AcquireLock")
	after := s.now(t, p)
	wantAcquire(t, p, k.lock+"-c", 0, true, "AcquireLock with ttl 0")
	wantAcquire(t, p, k.lock+"-d", longTTL, true, "AcquireLock")
	noErr(t, p.ReleaseLock(t.Context(), k.lock+"-d"), "ReleaseLock")
	list := mustListLocks(t, q, "", listAll, "ListLocks by another instance")
	if got := lockKeys(list); !slices.Equal(got, []string{k.lock + "-a", k.lock + "-c"}) {
		t.Fatalf("ListLocks = keys %q, want the held %q and %q (not the released -d)", got, k.lock+"-a", k.lock+"-c")
	}
	a, c := list[0], list[1]
	if a.Owner == "" || a.Token != "" || a.Fence != 0 || a.ExpiresAt == nil {
		t.Errorf("ListLocks: lock %+v, want an owner, no token or fence, an expiry", a)
	} else {
		wantWithin(t, "ListLocks: the lock's ExpiresAt", *a.ExpiresAt, before.Add(longTTL), after.Add(longTTL))
	}
	if c.Owner != a.Owner || c.ExpiresAt != nil {
		t.Errorf("ListLocks: ttl-0 lock %+v, want owner %q (the same instance's) and no expiry", c, a.Owner)
	}
	if li, ok := q.(provider.LockInspector); ok {
		info, err := li.GetLockInfo(t.Context(), a.Key)
		if got := mustGet(t, info, err, "GetLockInfo"); got.Owner != a.Owner {
			t.Errorf("ListLocks shows owner %q, GetLockInfo %q", a.Owner, got.Owner)
		}
	}
}

func testLockListerLeaseListed(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	l, ok := p.(provider.Leaser)
	if !ok {
		t.Skip("the provider does not implement provider.Leaser")
	}
	lease := mustLease(t, l, k.lock, longTTL)
	wantListedLease(t, q, lease, "ListLocks of a lease")
	renewed, err := l.RenewLease(t.Context(), lease, 2*longTTL)
	lease = mustGet(t, renewed, err, "RenewLease")
	wantListedLease(t, q, lease, "ListLocks after RenewLease")
	noErr(t, l.ReleaseLease(t.Context(), lease), "ReleaseLease")
	wantNoLocks(t, q, "", "ListLocks after ReleaseLease")
	next := mustLease(t, q.(provider.Leaser), k.lock, longTTL)
	wantListedLease(t, p, next, "ListLocks of the next lease")
}

func testLockListerKeyOrderAndLimit(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	var keys []string
	for _, suffix := range []string{"b", "a", "c", "a:b", "A", "ab", "é", "a b"} {
		keys = append(keys, k.lock+suffix)
		wantAcquire(t, p, k.lock+suffix, longTTL, true, "AcquireLock")
	}
	slices.Sort(keys) // bytewise
	for _, limit := range []int{1, 2, len(keys) - 1, len(keys), listAll} {
		got := lockKeys(mustListLocks(t, p, "", limit, fmt.Sprintf("ListLocks limit %d", limit)))
		if want := keys[:min(limit, len(keys))]; !slices.Equal(got, want) {
			t.Errorf("ListLocks(%q, %d) = %q, want the first %d keys in bytewise order: %q", "", limit, got, len(want), want)
		}
	}
}

func testLockListerPattern(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	P := provider.QuoteLockPattern(k.lock)
	for _, suffix := range []string{"x:1", "x:2/3", "y:1", "x", "*", "x?", `\`} {
		wantAcquire(t, p, k.lock+suffix, longTTL, true, "AcquireLock")
	}
	for _, c := range []struct {
		pattern string
		want    []string // suffixes
	}{
		{P + "x:*", []string{"x:1", "x:2/3"}}, // '*' crosses '/'
		{P + "?:1", []string{"x:1", "y:1"}},
		{P + `\*`, []string{"*"}},
		{P + "x", []string{"x"}},
		{P + "x?", []string{"x?"}}, // "x" and one more character
		{P + `x\?`, []string{"x?"}},
		{P + `\\`, []string{`\`}},
		{"*:1", []string{"x:1", "y:1"}},
		{P + "*3", []string{"x:2/3"}},
		{P + "z*", nil},
		{P + "**", []string{"*", "x", "x:1", "x:2/3", "x?", "y:1", `\`}},
	} {
		var want []string
		for _, suffix := range c.want {
			want = append(want, k.lock+suffix)
		}
		slices.Sort(want) // bytewise
		got := lockKeys(mustListLocks(t, p, c.pattern, listAll, "ListLocks("+c.pattern+")"))
		if !slices.Equal(got, want) {
			t.Errorf("ListLocks(%q) = %q, want %q", c.pattern, got, want)
		}
	}
}

func testLockListerAdversarialKeys(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	keys := adversarialLockKeys(k.lock)
	for _, key := range keys {
		wantAcquire(t, p, key, longTTL, true, fmt.Sprintf("AcquireLock(%q)", key))
	}
	want := slices.Sorted(slices.Values(keys))
	if got := lockKeys(mustListLocks(t, q, "", listAll, "ListLocks")); !slices.Equal(got, want) {
		t.Errorf("ListLocks of adversarial keys = %q, want %q", got, want)
	}
	for _, key := range keys {
		pattern := provider.QuoteLockPattern(key)
		if got := lockKeys(mustListLocks(t, q, pattern, listAll, "ListLocks("+pattern+")")); !slices.Equal(got, []string{key}) {
			t.Errorf("ListLocks(QuoteLockPattern(%q)) = %q, want that key alone", key, got)
		}
	}
}

func testLockListerExpiredAtExactTTL(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	wantAcquire(t, p, k.lock, shortTTL, true, "AcquireLock")
	if got := lockKeys(mustListLocks(t, q, "", listAll, "ListLocks of the live lock")); !slices.Equal(got, []string{k.lock}) {
		t.Fatalf("ListLocks of a live lock = %q, want %q", got, k.lock)
	}
	s.sleepToExpiry(t, shortTTL) // expired when now >= the expiry
	wantNoLocks(t, p, "", "ListLocks by the holder exactly at the lock's expiry")
	wantNoLocks(t, q, "", "ListLocks by another instance exactly at the lock's expiry")
}

func testLockListerAfterStop(t *testing.T, s *suite) {
	p := s.open(t)
	noErr(t, p.Stop(t.Context()), "Stop")
	_, err := p.(provider.LockLister).ListLocks(t.Context(), "", 10)
	wantErr(t, err, provider.ErrClosed, "ListLocks after Stop")
}

// mustListLocks returns ListLocks(match, limit), failing the test on an error.
func mustListLocks(t *testing.T, p provider.Provider, match string, limit int, what string) []types.LockInfo {
	t.Helper()
	list, err := p.(provider.LockLister).ListLocks(t.Context(), match, limit)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if len(list) > limit {
		t.Errorf("%s: %d locks, more than the limit %d", what, len(list), limit)
	}
	return list
}

// wantNoLocks reports unless ListLocks(match) lists nothing.
func wantNoLocks(t *testing.T, p provider.Provider, match, what string) {
	t.Helper()
	if got := lockKeys(mustListLocks(t, p, match, listAll, what)); len(got) != 0 {
		t.Errorf("%s = %q, want none", what, got)
	}
}

// wantListedLease reports unless ListLocks lists lease alone, as GetLockInfo
// would show it (see wantLeaseInfo).
func wantListedLease(t *testing.T, p provider.Provider, lease types.Lease, what string) {
	t.Helper()
	list := mustListLocks(t, p, "", listAll, what)
	if len(list) != 1 {
		t.Fatalf("%s = %q, want the lease of %q alone", what, lockKeys(list), lease.Key)
	}
	info := list[0]
	if info.Key != lease.Key || info.Token != lease.Token || info.Fence != lease.Fence || info.Owner != "" || !info.IsLease() {
		t.Errorf("%s = %+v, want key %q, token %q, fence %d and no owner", what, info, lease.Key, lease.Token, lease.Fence)
	}
	if info.ExpiresAt == nil {
		t.Errorf("%s: ExpiresAt nil, want the lease's %v", what, lease.ExpiresAt)
		return
	}
	wantWithin(t, what+": ExpiresAt", *info.ExpiresAt, lease.ExpiresAt, lease.ExpiresAt)
}

// lockKeys is the keys of list, in its order.
func lockKeys(list []types.LockInfo) []string {
	out := make([]string, len(list))
	for i, info := range list {
		out[i] = info.Key
	}
	return out
}
