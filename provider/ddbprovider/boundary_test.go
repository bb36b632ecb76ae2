package ddbprovider_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/types"
)

// TestVersionLimit swaps a run from types.MaxRunVersion-1: the stored version is
// MaxRunVersion exactly, and no CAS may start from it.
func TestVersionLimit(t *testing.T) {
	p := open(t)
	ctx := context.Background()
	top := int(types.MaxRunVersion)
	run := types.RunState{RunID: "r", PipelineID: "p", Status: types.RunPending, Version: top - 1}
	if err := p.PutRunState(ctx, run); err != nil {
		t.Fatal(err)
	}
	if ok, err := p.CompareAndSwapRunState(ctx, "r", top-1, run); !ok || err != nil {
		t.Fatalf("CAS from MaxRunVersion-1: %v, %v", ok, err)
	}
	got, err := p.GetRunState(ctx, "r")
	if err != nil || got == nil || got.Version != top {
		t.Fatalf("version %+v, %v; want %d", got, err, top)
	}
	if list, err := p.ListRuns(ctx, "p", 1); err != nil || len(list) != 1 || list[0].Version != top {
		t.Fatalf("listed %+v, %v; want version %d", list, err, top)
	}
	if _, err := p.CompareAndSwapRunState(ctx, "r", top, run); !errors.Is(err, provider.ErrInvalidArgument) {
		t.Fatalf("CAS from MaxRunVersion: err %v, want ErrInvalidArgument", err)
	}
}

// TestMaxTTL uses provider.MaxTTL on every call that takes a ttl: the entity is
// live (no overflow into the past or into "no expiry") and expires exactly then.
func TestMaxTTL(t *testing.T) {
	e := testEnv(t)
	p, q := open(t), open(t)
	ctx := context.Background()
	if err := p.PutTrait(ctx, "p", types.TraitEvaluation{TraitType: "t", Status: types.TraitPass}, provider.MaxTTL); err != nil {
		t.Fatal(err)
	}
	if ok, err := p.AcquireLock(ctx, "lock", provider.MaxTTL); !ok || err != nil {
		t.Fatalf("AcquireLock(MaxTTL) = %v, %v", ok, err)
	}
	lease, err := p.AcquireLease(ctx, "lease", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if lease, err = p.RenewLease(ctx, *lease, provider.MaxTTL); err != nil {
		t.Fatal(err)
	}
	live := func(want bool, when string) {
		t.Helper()
		tr, err := p.GetTrait(ctx, "p", "t")
		if err != nil || (tr != nil) != want {
			t.Errorf("%s: trait %+v, %v; want live %v", when, tr, err, want)
		}
		if ok, err := q.AcquireLock(ctx, "lock", time.Second); err != nil || ok == want {
			t.Errorf("%s: another instance acquired the lock: %v, %v; want %v", when, ok, err, !want)
		}
		if _, err := q.AcquireLease(ctx, "lease", time.Second); want != errors.Is(err, provider.ErrLockHeld) {
			t.Errorf("%s: another instance's AcquireLease: %v; want held %v", when, err, want)
		}
	}
	e.clock.Advance(provider.MaxTTL - time.Nanosecond)
	live(true, "a nanosecond before MaxTTL")
	e.clock.Advance(time.Nanosecond)
	live(false, "at MaxTTL")
	if _, err := p.RenewLease(ctx, *lease, time.Second); !errors.Is(err, provider.ErrLockNotHeld) {
		t.Errorf("RenewLease at expiry: %v, want ErrLockNotHeld", err)
	}
}

// TestExpiryInstant checks every read that filters by expiry at the exact instant:
// an entity is live a nanosecond before its expiry and expired at it.
func TestExpiryInstant(t *testing.T) {
	e := testEnv(t)
	const ttl = time.Minute
	p := open(t, ddbprovider.WithReadinessTTL(ttl), ddbprovider.WithEventRetention(ttl))
	ctx := context.Background()
	if err := p.PutTrait(ctx, "p", types.TraitEvaluation{TraitType: "t", Status: types.TraitPass}, ttl); err != nil {
		t.Fatal(err)
	}
	if err := p.PutReadiness(ctx, types.ReadinessResult{PipelineID: "p", Status: types.Ready}); err != nil {
		t.Fatal(err)
	}
	if err := p.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p"}); err != nil {
		t.Fatal(err)
	}
	check := func(want bool, when string) {
		t.Helper()
		count := 0
		if want {
			count = 1
		}
		if tr, err := p.GetTrait(ctx, "p", "t"); err != nil || (tr != nil) != want {
			t.Errorf("%s: GetTrait %+v, %v", when, tr, err)
		}
		if trs, err := p.GetTraits(ctx, "p"); err != nil || len(trs) != count {
			t.Errorf("%s: GetTraits %+v, %v", when, trs, err)
		}
		if r, err := p.GetReadiness(ctx, "p"); err != nil || (r != nil) != want {
			t.Errorf("%s: GetReadiness %+v, %v", when, r, err)
		}
		if evs, err := p.ListEvents(ctx, "p", 10); err != nil || len(evs) != count {
			t.Errorf("%s: ListEvents %+v, %v", when, evs, err)
		}
		if evs, err := p.ReadEventsSince(ctx, "p", "", 10); err != nil || len(evs) != count {
			t.Errorf("%s: ReadEventsSince %+v, %v", when, evs, err)
		}
	}
	e.clock.Advance(ttl - time.Nanosecond)
	check(true, "a nanosecond before expiry")
	e.clock.Advance(time.Nanosecond)
	check(false, "at expiry")
}
