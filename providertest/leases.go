package providertest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

func (s *suite) leaser(t *testing.T) provider.Leaser {
	t.Helper()
	return s.open(t).(provider.Leaser)
}

// RunLeaser tests the optional provider.Leaser: acquire while held, release and
// renew only of the current lease, renew extending past the old expiry, fences
// strictly increasing across holders, expiries and releases (also after a day
// idle, on a fake clock), one winner among 16
// goroutines, locks and leases sharing a key, bad input and cancellation. It skips
// when the provider does not implement provider.Leaser.
func RunLeaser(t *testing.T, h Harness) {
	t.Helper()
	group(t, "Leaser", h, func(t *testing.T, s *suite) {
		s.probe = probeLeases
		if _, ok := s.open(t).(provider.Leaser); !ok {
			t.Skip("the provider does not implement provider.Leaser")
		}
		s.run(t, "acquire_returns_lease", testLeaserAcquireReturnsLease)
		s.run(t, "acquire_held_by_other_instance", testLeaserAcquireHeldByOtherInstance)
		s.run(t, "acquire_held_by_self", testLeaserAcquireHeldBySelf)
		s.run(t, "release_frees", testLeaserReleaseFrees)
		s.run(t, "release_twice", testLeaserReleaseTwice)
		s.run(t, "release_stale_lease", testLeaserReleaseStaleLease)
		s.run(t, "forged_token_rejected", testLeaserForgedTokenRejected)
		s.run(t, "token_prefix_rejected", testLeaserTokenPrefixRejected)
		s.run(t, "expired_at_exact_ttl", testLeaserExpiredAtExactTTL)
		s.run(t, "release_expired_lease", testLeaserReleaseExpiredLease)
		s.run(t, "stale_lease_reused_by_own_instance", testLeaserStaleLeaseReusedByOwnInstance)
		s.run(t, "renew_extends", testLeaserRenewExtends)
		s.run(t, "renew_keeps_identity", testLeaserRenewKeepsIdentity)
		s.run(t, "renew_after_expiry", testLeaserRenewAfterExpiry)
		s.run(t, "renew_after_takeover", testLeaserRenewAfterTakeover)
		s.run(t, "renew_after_release", testLeaserRenewAfterRelease)
		s.run(t, "fence_strictly_increases", testLeaserFenceStrictlyIncreases)
		s.run(t, "fence_increases_after_idle_day", testLeaserFenceIncreasesAfterIdleDay)
		s.run(t, "fences_per_key", testLeaserFencesPerKey)
		s.run(t, "concurrent_one_winner", testLeaserConcurrentOneWinner)
		s.run(t, "release_lock_keeps_lease", testLeaserReleaseLockKeepsLease)
		s.run(t, "lease_calls_leave_lock", testLeaserLeaseCallsLeaveLock)
		s.run(t, "renew_sets_expiry_from_now", testLeaserRenewSetsExpiryFromNow)
		s.run(t, "lock_blocks_lease", testLeaserLockBlocksLease)
		s.run(t, "lease_blocks_lock", testLeaserLeaseBlocksLock)
		s.run(t, "lease_expiry_frees", testLeaserLeaseExpiryFrees)
		testLeaserBadInputAndCancelled(t, s)
	})
}

// testLeaserBadInputAndCancelled runs the bad-input table (bad_input/...) and the cancelled-context subtest of the Leaser group.
func testLeaserBadInputAndCancelled(t *testing.T, s *suite) {
	var bad []badCase
	leaseOf := func(k ids) types.Lease {
		return types.Lease{Key: k.lock, Token: "token", Fence: 1, ExpiresAt: at(0)}
	}
	for _, b := range badLockKeys {
		bad = append(bad,
			badCase{name: "acquire_key_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				_, err := p.(provider.Leaser).AcquireLease(ctx, b.key, longTTL)
				return err
			}},
			badCase{name: "renew_key_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				l := leaseOf(k)
				l.Key = b.key
				_, err := p.(provider.Leaser).RenewLease(ctx, l, longTTL)
				return err
			}},
			badCase{name: "release_key_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				l := leaseOf(k)
				l.Key = b.key
				return p.(provider.Leaser).ReleaseLease(ctx, l)
			}})
	}
	for _, ttl := range []struct {
		name string
		d    time.Duration
	}{{"zero", 0}, {"negative", -time.Second}} {
		bad = append(bad,
			badCase{name: "acquire_ttl_" + ttl.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				_, err := p.(provider.Leaser).AcquireLease(ctx, k.lock, ttl.d)
				return err
			}},
			badCase{name: "renew_ttl_" + ttl.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				_, err := p.(provider.Leaser).RenewLease(ctx, leaseOf(k), ttl.d)
				return err
			}})
	}
	s.checkBadInput(t, bad, func(t *testing.T, p provider.Provider, k ids) {
		t.Helper()
		wantAcquire(t, p, k.lock, longTTL, true, "AcquireLock after a rejected call")
	})
	var held types.Lease // the cancelled renew and release target it; setup takes it
	s.checkCancelled(t, []call{
		{"AcquireLease", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.(provider.Leaser).AcquireLease(ctx, k.lock, longTTL)
			return err
		}},
		{"RenewLease", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.(provider.Leaser).RenewLease(ctx, held, longTTL)
			return err
		}},
		{"ReleaseLease", func(ctx context.Context, p provider.Provider, k ids) error {
			return p.(provider.Leaser).ReleaseLease(ctx, held)
		}},
	}, func(t *testing.T, p provider.Provider, k ids) {
		t.Helper()
		held = mustLease(t, p.(provider.Leaser), k.lock+"-held", shortTTL)
	}, func(t *testing.T, p provider.Provider, k ids) {
		t.Helper()
		q := s.open(t).(provider.Leaser)
		mustLease(t, q, k.lock, longTTL) // the cancelled acquire took nothing
		_, err := q.AcquireLease(t.Context(), held.Key, longTTL)
		wantErr(t, err, provider.ErrLockHeld, "AcquireLease after a cancelled ReleaseLease (the lease must still hold)")
		s.sleep(t, expireWait)
		mustLease(t, q, held.Key, longTTL) // the cancelled renew extended nothing
	})
}

func testLeaserAcquireReturnsLease(t *testing.T, s *suite) {
	p := s.open(t)
	l, k := p.(provider.Leaser), newIDs(t)
	before := s.now(t, p)
	lease := mustLease(t, l, k.lock, longTTL)
	after := s.now(t, p)
	if lease.Key != k.lock || lease.Token == "" {
		t.Errorf("lease = %+v, want Key %q and a Token", lease, k.lock)
	}
	wantWithin(t, "ExpiresAt", lease.ExpiresAt, before.Add(longTTL), after.Add(longTTL))
}

func testLeaserAcquireHeldByOtherInstance(t *testing.T, s *suite) {
	a, b, k := s.leaser(t), s.leaser(t), newIDs(t)
	mustLease(t, a, k.lock, longTTL)
	_, err := b.AcquireLease(t.Context(), k.lock, longTTL)
	wantErr(t, err, provider.ErrLockHeld, "AcquireLease of a key leased by another instance")
}

func testLeaserAcquireHeldBySelf(t *testing.T, s *suite) {
	a, k := s.leaser(t), newIDs(t)
	mustLease(t, a, k.lock, longTTL)
	_, err := a.AcquireLease(t.Context(), k.lock, longTTL)
	wantErr(t, err, provider.ErrLockHeld, "AcquireLease of a key this instance leased")
}

func testLeaserReleaseFrees(t *testing.T, s *suite) {
	a, b, k := s.leaser(t), s.leaser(t), newIDs(t)
	lease := mustLease(t, a, k.lock, longTTL)
	noErr(t, a.ReleaseLease(t.Context(), lease), "ReleaseLease")
	mustLease(t, b, k.lock, longTTL)
}

func testLeaserReleaseTwice(t *testing.T, s *suite) {
	a, k := s.leaser(t), newIDs(t)
	lease := mustLease(t, a, k.lock, longTTL)
	noErr(t, a.ReleaseLease(t.Context(), lease), "ReleaseLease")
	wantErr(t, a.ReleaseLease(t.Context(), lease), provider.ErrLockNotHeld, "ReleaseLease a second time")
}

func testLeaserReleaseStaleLease(t *testing.T, s *suite) {
	a, b, k := s.leaser(t), s.leaser(t), newIDs(t)
	old := mustLease(t, a, k.lock, shortTTL)
	s.sleep(t, expireWait)
	cur := mustLease(t, b, k.lock, longTTL)
	wantErr(t, a.ReleaseLease(t.Context(), old), provider.ErrLockNotHeld, "ReleaseLease of a lease taken over")
	_, err := a.AcquireLease(t.Context(), k.lock, longTTL)
	wantErr(t, err, provider.ErrLockHeld, "AcquireLease after a stale release (the current lease must hold)")
	noErr(t, b.ReleaseLease(t.Context(), cur), "ReleaseLease of the current lease")
}

func testLeaserForgedTokenRejected(t *testing.T, s *suite) {
	a, b, k := s.leaser(t), s.leaser(t), newIDs(t)
	lease := mustLease(t, a, k.lock, longTTL)
	forged := lease
	forged.Token = lease.Token + "x"
	_, err := b.RenewLease(t.Context(), forged, longTTL)
	wantErr(t, err, provider.ErrLockNotHeld, "RenewLease with a forged token")
	wantErr(t, b.ReleaseLease(t.Context(), forged), provider.ErrLockNotHeld, "ReleaseLease with a forged token")
	_, err = b.AcquireLease(t.Context(), k.lock, longTTL)
	wantErr(t, err, provider.ErrLockHeld, "AcquireLease after forged calls (the lease must still hold)")
}

func testLeaserTokenPrefixRejected(t *testing.T, s *suite) {
	a, b, k := s.leaser(t), s.leaser(t), newIDs(t)
	lease := mustLease(t, a, k.lock, longTTL)
	for _, tok := range []string{lease.Token[:len(lease.Token)-1], lease.Token[:1], ""} {
		forged := lease
		forged.Token = tok
		for _, l := range []provider.Leaser{a, b} {
			_, err := l.RenewLease(t.Context(), forged, longTTL)
			if !errors.Is(err, provider.ErrLockNotHeld) && !errors.Is(err, provider.ErrInvalidArgument) {
				t.Errorf("RenewLease with token %q, a prefix of the current one: %v, want ErrLockNotHeld or ErrInvalidArgument", tok, err)
			}
			err = l.ReleaseLease(t.Context(), forged)
			if !errors.Is(err, provider.ErrLockNotHeld) && !errors.Is(err, provider.ErrInvalidArgument) {
				t.Errorf("ReleaseLease with token %q, a prefix of the current one: %v, want ErrLockNotHeld or ErrInvalidArgument", tok, err)
			}
		}
	}
	_, err := b.AcquireLease(t.Context(), k.lock, longTTL)
	wantErr(t, err, provider.ErrLockHeld, "AcquireLease after calls with prefix tokens (the lease must still hold)")
	noErr(t, a.ReleaseLease(t.Context(), lease), "ReleaseLease with the real token")
}

func testLeaserExpiredAtExactTTL(t *testing.T, s *suite) {
	a, b, k := s.leaser(t), s.leaser(t), newIDs(t)
	lease := mustLease(t, a, k.lock, shortTTL)
	s.sleepToExpiry(t, shortTTL) // expired when now >= the expiry
	_, err := a.RenewLease(t.Context(), lease, longTTL)
	wantErr(t, err, provider.ErrLockNotHeld, "RenewLease exactly at ExpiresAt")
	next := mustLease(t, b, k.lock, longTTL)
	if next.Fence <= lease.Fence {
		t.Errorf("fence after expiry = %d, want > %d", next.Fence, lease.Fence)
	}
}

func testLeaserReleaseExpiredLease(t *testing.T, s *suite) {
	a, k := s.leaser(t), newIDs(t)
	lease := mustLease(t, a, k.lock, shortTTL)
	s.sleep(t, expireWait)
	wantErr(t, a.ReleaseLease(t.Context(), lease), provider.ErrLockNotHeld, "ReleaseLease of an expired lease")
	mustLease(t, a, k.lock, longTTL)
}

func testLeaserStaleLeaseReusedByOwnInstance(t *testing.T, s *suite) {
	a, b, k := s.leaser(t), s.leaser(t), newIDs(t)
	old := mustLease(t, a, k.lock, shortTTL)
	s.sleep(t, expireWait)
	cur := mustLease(t, a, k.lock, longTTL)
	_, err := a.RenewLease(t.Context(), old, longTTL)
	wantErr(t, err, provider.ErrLockNotHeld, "RenewLease of this instance's expired lease after it leased the key again")
	wantErr(t, a.ReleaseLease(t.Context(), old), provider.ErrLockNotHeld, "ReleaseLease of this instance's expired lease after it leased the key again")
	_, err = b.AcquireLease(t.Context(), k.lock, longTTL)
	wantErr(t, err, provider.ErrLockHeld, "AcquireLease after the stale calls (the current lease must hold)")
	noErr(t, a.ReleaseLease(t.Context(), cur), "ReleaseLease of the current lease")
}

func testLeaserRenewExtends(t *testing.T, s *suite) {
	a, b, k := s.leaser(t), s.leaser(t), newIDs(t)
	lease := mustLease(t, a, k.lock, shortTTL)
	renewed, err := a.RenewLease(t.Context(), lease, longTTL)
	noErr(t, err, "RenewLease")
	if renewed == nil || !renewed.ExpiresAt.After(lease.ExpiresAt) {
		t.Fatalf("RenewLease = %+v, want ExpiresAt after %v", renewed, lease.ExpiresAt)
	}
	s.sleep(t, expireWait)
	_, err = b.AcquireLease(t.Context(), k.lock, longTTL)
	wantErr(t, err, provider.ErrLockHeld, "AcquireLease past the original ttl of a renewed lease")
	_, err = a.RenewLease(t.Context(), *renewed, longTTL)
	noErr(t, err, "RenewLease again past the original ttl")
}

func testLeaserRenewKeepsIdentity(t *testing.T, s *suite) {
	a, k := s.leaser(t), newIDs(t)
	lease := mustLease(t, a, k.lock, longTTL)
	renewed, err := a.RenewLease(t.Context(), lease, 2*longTTL)
	noErr(t, err, "RenewLease")
	if renewed == nil || renewed.Key != lease.Key || renewed.Token != lease.Token || renewed.Fence != lease.Fence {
		t.Fatalf("RenewLease = %+v, want the Key, Token and Fence of %+v", renewed, lease)
	}
	noErr(t, a.ReleaseLease(t.Context(), *renewed), "ReleaseLease of the renewed lease")
}

func testLeaserRenewAfterExpiry(t *testing.T, s *suite) {
	a, k := s.leaser(t), newIDs(t)
	lease := mustLease(t, a, k.lock, shortTTL)
	s.sleep(t, expireWait)
	_, err := a.RenewLease(t.Context(), lease, longTTL)
	wantErr(t, err, provider.ErrLockNotHeld, "RenewLease after expiry")
}

func testLeaserRenewAfterTakeover(t *testing.T, s *suite) {
	a, b, k := s.leaser(t), s.leaser(t), newIDs(t)
	old := mustLease(t, a, k.lock, shortTTL)
	s.sleep(t, expireWait)
	cur := mustLease(t, b, k.lock, longTTL)
	_, err := a.RenewLease(t.Context(), old, longTTL)
	wantErr(t, err, provider.ErrLockNotHeld, "RenewLease after another holder took over")
	_, err = b.RenewLease(t.Context(), cur, longTTL)
	noErr(t, err, "RenewLease by the current holder")
}

func testLeaserRenewAfterRelease(t *testing.T, s *suite) {
	a, k := s.leaser(t), newIDs(t)
	lease := mustLease(t, a, k.lock, longTTL)
	noErr(t, a.ReleaseLease(t.Context(), lease), "ReleaseLease")
	_, err := a.RenewLease(t.Context(), lease, longTTL)
	wantErr(t, err, provider.ErrLockNotHeld, "RenewLease after release")
}

func testLeaserFenceStrictlyIncreases(t *testing.T, s *suite) {
	p, q := s.open(t), s.open(t)
	a, b, k := p.(provider.Leaser), q.(provider.Leaser), newIDs(t)
	var fences []int64
	take := func(l provider.Leaser, ttl time.Duration) types.Lease {
		t.Helper()
		lease := mustLease(t, l, k.lock, ttl)
		if n := len(fences); n > 0 && lease.Fence <= fences[n-1] {
			t.Fatalf("fence %d after fences %v: fences must strictly increase", lease.Fence, fences)
		}
		fences = append(fences, lease.Fence)
		return lease
	}
	noErr(t, a.ReleaseLease(t.Context(), take(a, longTTL)), "ReleaseLease") // released
	noErr(t, b.ReleaseLease(t.Context(), take(b, longTTL)), "ReleaseLease") // another holder
	take(a, shortTTL)                                                       // expires
	s.sleep(t, expireWait)
	renewed, err := b.RenewLease(t.Context(), take(b, longTTL), longTTL) // takeover, renewed
	noErr(t, err, "RenewLease")
	noErr(t, b.ReleaseLease(t.Context(), *renewed), "ReleaseLease")
	wantAcquire(t, p, k.lock, longTTL, true, "AcquireLock between leases")
	noErr(t, p.ReleaseLock(t.Context(), k.lock), "ReleaseLock")
	take(a, longTTL)
}

func testLeaserFenceIncreasesAfterIdleDay(t *testing.T, s *suite) {
	// A fence counter kept with the lease record restarts when the record
	// of an expired or released lease is deleted (a TTL sweeper, an
	// eviction), which may happen long after the expiry: fences increase
	// forever, also after a day without a lease.
	a, b, k := s.leaser(t), s.leaser(t), newIDs(t)
	expired := mustLease(t, a, k.lock, shortTTL)
	released := mustLease(t, a, k.other, longTTL)
	noErr(t, a.ReleaseLease(t.Context(), released), "ReleaseLease")
	s.sleep(t, s.idleGap())
	for _, prev := range []types.Lease{expired, released} {
		next := mustLease(t, b, prev.Key, longTTL)
		if next.Fence <= prev.Fence {
			t.Errorf("fence %d of key %q after %v idle, want > %d, the fence of its last lease: fences must increase forever",
				next.Fence, prev.Key, s.idleGap(), prev.Fence)
		}
	}
}

func testLeaserFencesPerKey(t *testing.T, s *suite) {
	a, k := s.leaser(t), newIDs(t)
	first := mustLease(t, a, k.lock, longTTL)
	other := mustLease(t, a, k.lock+"-other", longTTL)
	noErr(t, a.ReleaseLease(t.Context(), first), "ReleaseLease")
	second := mustLease(t, a, k.lock, longTTL)
	if second.Fence <= first.Fence {
		t.Errorf("fence %d after %d on one key (a lease of another key, fence %d, came between)", second.Fence, first.Fence, other.Fence)
	}
}

func testLeaserConcurrentOneWinner(t *testing.T, s *suite) {
	insts := []provider.Leaser{s.leaser(t), s.leaser(t)}
	k := newIDs(t)
	const n = 16
	for round, start := 0, time.Now(); raceAgain(round, start) && !t.Failed(); round++ {
		key := fmt.Sprintf("%s-r%04d", k.lock, round)
		leases := make([]*types.Lease, n)
		var e errs
		runConcurrently(n, func(i int) {
			lease, err := insts[i%2].AcquireLease(t.Context(), key, longTTL)
			if err != nil && !errors.Is(err, provider.ErrLockHeld) {
				e.add("goroutine %d: AcquireLease: %v, want nil or ErrLockHeld", i, err)
			}
			if (err == nil) != (lease != nil) {
				e.add("goroutine %d: AcquireLease = %v, %v", i, lease, err)
			}
			leases[i] = lease
		})
		e.report(t)
		won := 0
		for _, l := range leases {
			if l != nil {
				won++
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d of %d concurrent AcquireLease calls won, want exactly 1", round, won, n)
		}
	}
}

func testLeaserReleaseLockKeepsLease(t *testing.T, s *suite) {
	p, q := s.open(t), s.open(t)
	k := newIDs(t)
	lease := mustLease(t, p.(provider.Leaser), k.lock, longTTL)
	for _, inst := range []provider.Provider{p, q} {
		wantErr(t, inst.ReleaseLock(t.Context(), k.lock), provider.ErrLockNotHeld, "ReleaseLock of a leased key")
	}
	_, err := q.(provider.Leaser).AcquireLease(t.Context(), k.lock, longTTL)
	wantErr(t, err, provider.ErrLockHeld, "AcquireLease after ReleaseLock calls (the lease must still hold)")
	_, err = p.(provider.Leaser).RenewLease(t.Context(), lease, longTTL)
	noErr(t, err, "RenewLease after ReleaseLock calls")
}

func testLeaserLeaseCallsLeaveLock(t *testing.T, s *suite) {
	p, q := s.open(t), s.open(t)
	k := newIDs(t)
	wantAcquire(t, p, k.lock, longTTL, true, "AcquireLock")
	for _, inst := range []provider.Provider{p, q} {
		forged := types.Lease{Key: k.lock, Token: "not-a-lease", Fence: 1, ExpiresAt: at(0)}
		_, err := inst.(provider.Leaser).RenewLease(t.Context(), forged, longTTL)
		wantErr(t, err, provider.ErrLockNotHeld, "RenewLease of a locked key")
		wantErr(t, inst.(provider.Leaser).ReleaseLease(t.Context(), forged), provider.ErrLockNotHeld, "ReleaseLease of a locked key")
	}
	wantAcquire(t, q, k.lock, longTTL, false, "AcquireLock after lease calls on the key (the lock must still hold)")
	noErr(t, p.ReleaseLock(t.Context(), k.lock), "ReleaseLock by the holder")
}

func testLeaserRenewSetsExpiryFromNow(t *testing.T, s *suite) {
	p := s.open(t)
	a, k := p.(provider.Leaser), newIDs(t)
	lease := mustLease(t, a, k.lock, longTTL)
	s.sleep(t, expireWait)
	before := s.now(t, p)
	renewed, err := a.RenewLease(t.Context(), lease, longTTL)
	after := s.now(t, p)
	r := mustGet(t, renewed, err, "RenewLease")
	wantWithin(t, "ExpiresAt of a renewed lease (the renewal's time + ttl, not the old expiry + ttl)", r.ExpiresAt, before.Add(longTTL), after.Add(longTTL))
}

func testLeaserLockBlocksLease(t *testing.T, s *suite) {
	p, q := s.open(t), s.open(t)
	k := newIDs(t)
	wantAcquire(t, p, k.lock, longTTL, true, "AcquireLock")
	for _, inst := range []provider.Provider{p, q} {
		_, err := inst.(provider.Leaser).AcquireLease(t.Context(), k.lock, longTTL)
		wantErr(t, err, provider.ErrLockHeld, "AcquireLease of a locked key")
	}
	noErr(t, p.ReleaseLock(t.Context(), k.lock), "ReleaseLock")
	mustLease(t, q.(provider.Leaser), k.lock, longTTL)
}

func testLeaserLeaseBlocksLock(t *testing.T, s *suite) {
	p, q := s.open(t), s.open(t)
	k := newIDs(t)
	lease := mustLease(t, p.(provider.Leaser), k.lock, longTTL)
	for _, inst := range []provider.Provider{p, q} {
		wantAcquire(t, inst, k.lock, longTTL, false, "AcquireLock of a leased key")
	}
	wantErr(t, q.ReleaseLock(t.Context(), k.lock), provider.ErrLockNotHeld, "ReleaseLock of a key another instance leased")
	noErr(t, p.(provider.Leaser).ReleaseLease(t.Context(), lease), "ReleaseLease")
	wantAcquire(t, q, k.lock, longTTL, true, "AcquireLock after the lease was released")
}

func testLeaserLeaseExpiryFrees(t *testing.T, s *suite) {
	a, b, k := s.leaser(t), s.leaser(t), newIDs(t)
	mustLease(t, a, k.lock, shortTTL)
	s.sleep(t, expireWait)
	mustLease(t, b, k.lock, longTTL)
}

// mustLease acquires a lease of key or fails the test.
func mustLease(t *testing.T, l provider.Leaser, key string, ttl time.Duration) types.Lease {
	t.Helper()
	lease, err := l.AcquireLease(t.Context(), key, ttl)
	return mustGet(t, lease, err, "AcquireLease("+key+")")
}
