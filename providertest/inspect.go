package providertest

import (
	"context"
	"fmt"
	"testing"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

func leaserOf(t *testing.T, p provider.Provider) provider.Leaser {
	t.Helper()
	l, ok := p.(provider.Leaser)
	if !ok {
		t.Skip("the provider does not implement provider.Leaser")
	}
	return l
}

// RunLockInspector tests the optional provider.LockInspector: a free key, a lock
// (its owner, seen from every instance, and its expiry; none for ttl 0), a lease
// (its token, fence and expiry, following renewals and new leases), nothing after
// a release or at the exact instant of expiry (when AcquireLock takes the key),
// renewals for longer and shorter, a ttl-0 lock after a lease, the new holder
// after a takeover, adversarial keys, bad input, cancellation and Stop. It skips
// when the provider does not implement provider.LockInspector; its lease tests
// skip without provider.Leaser.
func RunLockInspector(t *testing.T, h Harness) {
	t.Helper()
	group(t, "LockInspector", h, func(t *testing.T, s *suite) {
		s.probe = probeTraits
		if _, ok := s.open(t).(provider.LockInspector); !ok {
			t.Skip("the provider does not implement provider.LockInspector")
		}
		s.run(t, "free_key", testLockInspectorFreeKey)
		s.run(t, "lock_held", testLockInspectorLockHeld)
		s.run(t, "lock_ttl_zero", testLockInspectorLockTTLZero)
		s.run(t, "owners_per_instance", testLockInspectorOwnersPerInstance)
		s.run(t, "owner_identity", testLockInspectorOwnerIdentity)
		s.run(t, "lease_held", testLockInspectorLeaseHeld)
		s.run(t, "lease_after_expiry", testLockInspectorLeaseAfterExpiry)
		s.run(t, "lock_after_lease", testLockInspectorLockAfterLease)
		s.run(t, "after_release", testLockInspectorAfterRelease)
		s.run(t, "expired_at_exact_ttl", testLockInspectorExpiredAtExactTTL)
		s.run(t, "lease_renewals_move_expiry", testLockInspectorLeaseRenewalsMoveExpiry)
		s.run(t, "lock_ttl_zero_after_lease", testLockInspectorLockTTLZeroAfterLease)
		s.run(t, "takeover_shows_new_holder", testLockInspectorTakeoverShowsNewHolder)
		s.run(t, "adversarial_keys", testLockInspectorAdversarialKeys)
		testLockInspectorBadInputAndCancelled(t, s)
		s.run(t, "after_stop", testLockInspectorAfterStop)
	})
}

// testLockInspectorBadInputAndCancelled runs the bad-input table (bad_input/...) and the cancelled-context subtest of the LockInspector group.
func testLockInspectorBadInputAndCancelled(t *testing.T, s *suite) {
	var bad []badCase
	for _, b := range badLockKeys {
		bad = append(bad, badCase{name: "key_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.(provider.LockInspector).GetLockInfo(ctx, b.key)
			return err
		}})
	}
	s.checkBadInput(t, bad, nil)
	s.checkCancelled(t, []call{{"GetLockInfo", func(ctx context.Context, p provider.Provider, k ids) error {
		_, err := p.(provider.LockInspector).GetLockInfo(ctx, k.lock)
		return err
	}}}, nil, nil)
}

func testLockInspectorFreeKey(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	wantFree(t, p, k.lock, "GetLockInfo of a key never taken")
}

func testLockInspectorLockHeld(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	before := s.now(t, p)
	wantAcquire(t, p, k.lock, longTTL, true, "AcquireLock")
	after := s.now(t, p)
	for name, r := range map[string]provider.Provider{"holder": p, "other instance": q} {
		info := mustInspect(t, r, k.lock, "GetLockInfo by the "+name)
		if info.Key != k.lock || info.Owner == "" || info.Token != "" || info.Fence != 0 || info.IsLease() {
			t.Errorf("GetLockInfo by the %s = %+v, want key %q, an owner, no token or fence", name, info, k.lock)
		}
		if info.ExpiresAt == nil {
			t.Fatalf("GetLockInfo by the %s: ExpiresAt nil, want the lock's expiry", name)
		}
		wantWithin(t, "ExpiresAt by the "+name, *info.ExpiresAt, before.Add(longTTL), after.Add(longTTL))
	}
}

func testLockInspectorLockTTLZero(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	wantAcquire(t, p, k.lock, 0, true, "AcquireLock with ttl 0")
	s.sleep(t, expireWait)
	if info := mustInspect(t, p, k.lock, "GetLockInfo of a ttl-0 lock"); info.ExpiresAt != nil {
		t.Errorf("GetLockInfo of a ttl-0 lock: ExpiresAt = %v, want nil (no expiry)", *info.ExpiresAt)
	}
}

func testLockInspectorOwnersPerInstance(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	wantAcquire(t, p, k.lock+"-p1", longTTL, true, "AcquireLock by p")
	wantAcquire(t, p, k.lock+"-p2", longTTL, true, "AcquireLock of another key by p")
	wantAcquire(t, q, k.lock+"-q", longTTL, true, "AcquireLock by q")
	// owner is the key's owner as both instances see it.
	owner := func(key string) string {
		t.Helper()
		byP := mustInspect(t, p, key, "GetLockInfo("+key+") by p").Owner
		if byQ := mustInspect(t, q, key, "GetLockInfo("+key+") by q").Owner; byQ != byP {
			t.Errorf("GetLockInfo(%q): owner %q by p, %q by q; want the holder's, whoever asks", key, byP, byQ)
		}
		return byP
	}
	p1, p2, oq := owner(k.lock+"-p1"), owner(k.lock+"-p2"), owner(k.lock+"-q")
	if p1 == "" || p1 != p2 || p1 == oq {
		t.Errorf("owners: p's locks %q and %q, q's %q; want one owner per instance, different instances different", p1, p2, oq)
	}
}

func testLockInspectorOwnerIdentity(t *testing.T, s *suite) {
	if s.h.OpenOwner == nil {
		t.Skip("Harness.OpenOwner is nil")
	}
	k := newIDs(t)
	reader := s.open(t)
	for _, owner := range []string{"worker-1", "worker-10", "worker-"} {
		key := k.lock + "-" + owner
		wantAcquire(t, s.h.OpenOwner(t, owner), key, longTTL, true, "AcquireLock by "+owner)
		if got := mustInspect(t, reader, key, "GetLockInfo of "+owner+"'s lock").Owner; got != owner {
			t.Errorf("GetLockInfo of a lock held by %q: owner %q", owner, got)
		}
	}
}

func testLockInspectorLeaseHeld(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	lease := mustLease(t, leaserOf(t, p), k.lock, longTTL)
	wantLeaseInfo(t, q, lease, "GetLockInfo of a lease by another instance")
	renewed, err := leaserOf(t, p).RenewLease(t.Context(), lease, 2*longTTL)
	wantLeaseInfo(t, q, mustGet(t, renewed, err, "RenewLease"), "GetLockInfo after RenewLease")
	noErr(t, leaserOf(t, p).ReleaseLease(t.Context(), lease), "ReleaseLease")
	next := mustLease(t, leaserOf(t, q), k.lock, longTTL)
	wantLeaseInfo(t, p, next, "GetLockInfo of the next lease")
}

func testLockInspectorLeaseAfterExpiry(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	mustLease(t, leaserOf(t, p), k.lock, shortTTL)
	s.sleepToExpiry(t, shortTTL)
	wantFree(t, q, k.lock, "GetLockInfo exactly at the lease's expiry")
	next := mustLease(t, leaserOf(t, q), k.lock, longTTL)
	wantLeaseInfo(t, p, next, "GetLockInfo of the lease taken after the expiry")
}

func testLockInspectorLockAfterLease(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	lease := mustLease(t, leaserOf(t, p), k.lock, longTTL)
	noErr(t, leaserOf(t, p).ReleaseLease(t.Context(), lease), "ReleaseLease")
	wantAcquire(t, q, k.lock, longTTL, true, "AcquireLock after the lease's release")
	if info := mustInspect(t, p, k.lock, "GetLockInfo of a lock taken after a lease"); info.Token != "" || info.Fence != 0 || info.Owner == "" {
		t.Errorf("GetLockInfo of a lock taken after a lease = %+v, want an owner and no token or fence", info)
	}
}

func testLockInspectorAfterRelease(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	wantAcquire(t, p, k.lock, longTTL, true, "AcquireLock")
	noErr(t, p.ReleaseLock(t.Context(), k.lock), "ReleaseLock")
	wantFree(t, q, k.lock, "GetLockInfo after ReleaseLock")
}

func testLockInspectorExpiredAtExactTTL(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	wantAcquire(t, p, k.lock, shortTTL, true, "AcquireLock")
	mustInspect(t, q, k.lock, "GetLockInfo of the live lock")
	s.sleepToExpiry(t, shortTTL) // expired when now >= the expiry
	wantFree(t, p, k.lock, "GetLockInfo by the holder exactly at the lock's expiry")
	wantFree(t, q, k.lock, "GetLockInfo by another instance exactly at the lock's expiry")
	wantAcquire(t, q, k.lock, longTTL, true, "AcquireLock of the key GetLockInfo reported free")
}

func testLockInspectorLeaseRenewalsMoveExpiry(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	lease := mustLease(t, leaserOf(t, p), k.lock, shortTTL)
	longer, err := leaserOf(t, p).RenewLease(t.Context(), lease, longTTL)
	lease = mustGet(t, longer, err, "RenewLease for longer")
	s.sleepToExpiry(t, shortTTL)
	wantLeaseInfo(t, q, lease, "GetLockInfo at the first ttl's end of a lease renewed for longer")
	shorter, err := leaserOf(t, p).RenewLease(t.Context(), lease, shortTTL)
	lease = mustGet(t, shorter, err, "RenewLease for shorter")
	wantLeaseInfo(t, q, lease, "GetLockInfo of a lease renewed for shorter")
	s.sleepToExpiry(t, shortTTL)
	wantFree(t, q, k.lock, "GetLockInfo at the expiry of a lease renewed for shorter")
	next := mustLease(t, leaserOf(t, q), k.lock, longTTL)
	if next.Fence <= lease.Fence {
		t.Errorf("AcquireLease after the renewed lease expired: fence %d, want more than %d", next.Fence, lease.Fence)
	}
	wantLeaseInfo(t, p, next, "GetLockInfo of the lease taken after the renewed one expired")
}

func testLockInspectorLockTTLZeroAfterLease(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	mustLease(t, leaserOf(t, p), k.lock, shortTTL)
	s.sleepToExpiry(t, shortTTL)
	wantAcquire(t, q, k.lock, 0, true, "AcquireLock with ttl 0 of an expired lease's key")
	info := mustInspect(t, p, k.lock, "GetLockInfo of a ttl-0 lock taken after a lease")
	if info.Owner == "" || info.Token != "" || info.Fence != 0 || info.ExpiresAt != nil {
		t.Errorf("GetLockInfo of a ttl-0 lock taken after a lease = %+v, want an owner, no token or fence, no expiry", info)
	}
}

func testLockInspectorTakeoverShowsNewHolder(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	wantAcquire(t, p, k.lock, shortTTL, true, "AcquireLock by p")
	first := mustInspect(t, q, k.lock, "GetLockInfo of p's lock").Owner
	s.sleep(t, expireWait)
	wantAcquire(t, q, k.lock, longTTL, true, "AcquireLock by q after p's ttl")
	if now := mustInspect(t, p, k.lock, "GetLockInfo after the takeover").Owner; now == first {
		t.Errorf("GetLockInfo after q took over p's expired lock: owner %q, still p's", now)
	}
}

func testLockInspectorAdversarialKeys(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	keys := adversarialLockKeys(k.lock)
	for i, key := range keys {
		if i%2 == 0 {
			wantAcquire(t, p, key, longTTL, true, fmt.Sprintf("AcquireLock(%q)", key))
		}
	}
	for i, key := range keys {
		what := fmt.Sprintf("GetLockInfo(%q)", key)
		if i%2 == 1 {
			wantFree(t, q, key, what+" (only its neighbours are held)")
			continue
		}
		if info := mustInspect(t, q, key, what); info.Key != key {
			t.Errorf("%s: Key %q", what, info.Key)
		}
	}
}

func testLockInspectorAfterStop(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	noErr(t, p.Stop(t.Context()), "Stop")
	_, err := p.(provider.LockInspector).GetLockInfo(t.Context(), k.lock)
	wantErr(t, err, provider.ErrClosed, "GetLockInfo after Stop")
}

// mustInspect returns what holds key, failing the test unless something does.
func mustInspect(t *testing.T, p provider.Provider, key, what string) types.LockInfo {
	t.Helper()
	info, err := p.(provider.LockInspector).GetLockInfo(t.Context(), key)
	return mustGet(t, info, err, what)
}

// wantFree reports unless GetLockInfo of key is (nil, nil).
func wantFree(t *testing.T, p provider.Provider, key, what string) {
	t.Helper()
	info, err := p.(provider.LockInspector).GetLockInfo(t.Context(), key)
	wantNil(t, info, err, what)
}

// wantLeaseInfo reports unless GetLockInfo shows lease: its key, token and fence,
// no owner, and its ExpiresAt (to the clock slack: a backend may keep expiries in
// milliseconds).
func wantLeaseInfo(t *testing.T, p provider.Provider, lease types.Lease, what string) {
	t.Helper()
	info := mustInspect(t, p, lease.Key, what)
	if info.Key != lease.Key || info.Token != lease.Token || info.Fence != lease.Fence || info.Owner != "" || !info.IsLease() {
		t.Errorf("%s = %+v, want key %q, token %q, fence %d and no owner", what, info, lease.Key, lease.Token, lease.Fence)
	}
	if info.ExpiresAt == nil {
		t.Errorf("%s: ExpiresAt nil, want the lease's %v", what, lease.ExpiresAt)
		return
	}
	wantWithin(t, what+": ExpiresAt", *info.ExpiresAt, lease.ExpiresAt, lease.ExpiresAt)
}
