package redisprovider_test

import (
	"errors"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/redisprovider"
	"github.com/pipestate/pipestate/types"
)

// TestNewRejectsTypedNilClients passes nil pointers of the client types as
// UniversalClient: an error wrapping ErrInvalidArgument, no panic later.
func TestNewRejectsTypedNilClients(t *testing.T) {
	for name, c := range map[string]goredis.UniversalClient{
		"client":  (*goredis.Client)(nil),
		"cluster": (*goredis.ClusterClient)(nil),
		"ring":    (*goredis.Ring)(nil),
	} {
		if _, err := redisprovider.New(c); !errors.Is(err, provider.ErrInvalidArgument) {
			t.Errorf("New(%s typed nil) = %v, want ErrInvalidArgument", name, err)
		}
	}
}

// TestBoundaries runs the numeric limits of the contract on every server: CAS up
// to types.MaxRunVersion exactly, and TTLs of provider.MaxTTL (which must neither
// overflow into "no expiry" nor into an immediate delete).
func TestBoundaries(t *testing.T) {
	for name, h := range lockHarnesses(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			t.Run("max_version", func(t *testing.T) {
				ctx := t.Context()
				p := h.open(t)
				for _, start := range []int{types.MaxRunVersion - 1, 1 << 52, 1<<53 - 3} {
					r := types.RunState{RunID: "r", PipelineID: "p", Status: types.RunPending, Version: start}
					if err := p.PutRunState(ctx, r); err != nil {
						t.Fatal(err)
					}
					ok, err := p.CompareAndSwapRunState(ctx, "r", start, r)
					if !ok || err != nil {
						t.Fatalf("CAS from %d = %v, %v", start, ok, err)
					}
					got, err := p.GetRunState(ctx, "r")
					if err != nil || got == nil || got.Version != start+1 {
						t.Fatalf("after CAS from %d: %+v, %v; want version %d", start, got, err, start+1)
					}
					if ok, err := p.CompareAndSwapRunState(ctx, "r", start, r); ok || err != nil {
						t.Fatalf("second CAS from %d = %v, %v; want false", start, ok, err)
					}
					runs, err := p.ListRuns(ctx, "p", 1)
					if err != nil || len(runs) != 1 || runs[0].Version != start+1 {
						t.Fatalf("ListRuns after CAS from %d = %+v, %v", start, runs, err)
					}
				}
				r := types.RunState{RunID: "r", PipelineID: "p", Status: types.RunPending, Version: types.MaxRunVersion}
				if err := p.PutRunState(ctx, r); err != nil {
					t.Fatal(err)
				}
				for _, v := range []int{types.MaxRunVersion, types.MaxRunVersion + 1, 1<<63 - 1, -1} {
					if _, err := p.CompareAndSwapRunState(ctx, "r", v, r); !errors.Is(err, provider.ErrInvalidArgument) {
						t.Errorf("CAS from %d = %v, want ErrInvalidArgument", v, err)
					}
				}
				if got, _ := p.GetRunState(ctx, "r"); got == nil || got.Version != types.MaxRunVersion {
					t.Errorf("stored run changed by rejected CASes: %+v", got)
				}
			})
			t.Run("max_ttl", func(t *testing.T) {
				ctx := t.Context()
				a, b := h.open(t), h.open(t)
				if ok, err := a.AcquireLock(ctx, "lock", provider.MaxTTL); !ok || err != nil {
					t.Fatalf("AcquireLock(MaxTTL) = %v, %v", ok, err)
				}
				if ok, err := b.AcquireLock(ctx, "lock", time.Minute); ok || err != nil {
					t.Fatalf("a lock of MaxTTL is free: %v, %v", ok, err)
				}
				l, err := a.AcquireLease(ctx, "lease", provider.MaxTTL)
				if err != nil {
					t.Fatal(err)
				}
				for range 2 {
					if l, err = a.RenewLease(ctx, *l, provider.MaxTTL); err != nil {
						t.Fatalf("RenewLease(MaxTTL): %v", err)
					}
					if _, err := b.AcquireLease(ctx, "lease", time.Minute); !errors.Is(err, provider.ErrLockHeld) {
						t.Fatalf("a lease renewed for MaxTTL is free: %v", err)
					}
				}
				if _, err := a.RenewLease(ctx, *l, provider.MaxTTL+1); !errors.Is(err, provider.ErrInvalidArgument) {
					t.Fatalf("RenewLease(MaxTTL+1) = %v, want ErrInvalidArgument", err)
				}
				if _, err := b.AcquireLease(ctx, "lease", time.Minute); !errors.Is(err, provider.ErrLockHeld) {
					t.Fatalf("a rejected renewal freed the lease: %v", err)
				}
				tr := types.TraitEvaluation{TraitType: "t", Status: types.TraitPass}
				if err := a.PutTrait(ctx, "p", tr, provider.MaxTTL); err != nil {
					t.Fatal(err)
				}
				if got, err := b.GetTrait(ctx, "p", "t"); err != nil || got == nil {
					t.Fatalf("a trait of MaxTTL is gone: %+v, %v", got, err)
				}
				for _, ttl := range []time.Duration{provider.MaxTTL + 1, 1<<63 - 1} {
					if _, err := a.AcquireLock(ctx, "other", ttl); !errors.Is(err, provider.ErrInvalidArgument) {
						t.Errorf("AcquireLock(%v) = %v", ttl, err)
					}
					if _, err := a.AcquireLease(ctx, "other", ttl); !errors.Is(err, provider.ErrInvalidArgument) {
						t.Errorf("AcquireLease(%v) = %v", ttl, err)
					}
					if err := a.PutTrait(ctx, "p", tr, ttl); !errors.Is(err, provider.ErrInvalidArgument) {
						t.Errorf("PutTrait(%v) = %v", ttl, err)
					}
				}
			})
		})
	}
}

// TestTraitExpiryInstant checks the contract's instant: a trait is expired when
// the clock reads exactly its ExpiresAt, and live one nanosecond before.
func TestTraitExpiryInstant(t *testing.T) {
	h := newMiniHarness()
	now := time.Date(2026, 1, 1, 0, 0, 0, 500, time.UTC)
	clock := func() time.Time { return now }
	ctx := t.Context()
	p := h.open(t, redisprovider.WithClock(func() time.Time { return clock() }))
	const ttl = 10*time.Second + 1234*time.Nanosecond
	if err := p.PutTrait(ctx, "p", types.TraitEvaluation{TraitType: "t", Status: types.TraitPass}, ttl); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		at   time.Duration
		live bool
	}{{ttl - time.Nanosecond, true}, {ttl, false}, {ttl + time.Nanosecond, false}} {
		at := now.Add(tc.at)
		clock = func() time.Time { return at }
		got, err := p.GetTrait(ctx, "p", "t")
		all, err2 := p.GetTraits(ctx, "p")
		if err != nil || err2 != nil || (got != nil) != tc.live || (len(all) == 1) != tc.live {
			t.Errorf("at ExpiresAt%+v: GetTrait = %+v, %v, GetTraits = %d, %v; want live=%v", tc.at-ttl, got, err, len(all), err2, tc.live)
		}
	}
}
