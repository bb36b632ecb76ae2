package providertest

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// keepAliveTTL is the lease ttl of the KeepAlive tests: real time, because
// KeepAlive renews on the caller's clock.
const keepAliveTTL = 900 * time.Millisecond

// RunKeepAlive tests provider.KeepAlive over the provider's Leaser: the lease
// outlives its ttl while kept alive and a rival cannot take it, stop releases it,
// and when renewals stop succeeding the work is canceled before the lease can
// expire, so a rival that takes the key after the expiry is never overlapped. It
// skips when the provider is not a provider.Leaser.
func RunKeepAlive(t *testing.T, h Harness) {
	t.Helper()
	group(t, "KeepAlive", h, func(t *testing.T, s *suite) {
		if _, ok := s.open(t).(provider.Leaser); !ok {
			t.Skip("provider is not a provider.Leaser")
		}
		test(t, "renews_and_releases", func(t *testing.T) {
			a, rival, k := s.open(t).(provider.Leaser), s.open(t).(provider.Leaser), newIDs(t)
			lease, err := a.AcquireLease(t.Context(), k.lock, keepAliveTTL)
			noErr(t, err, "AcquireLease")
			work, stop, err := provider.KeepAlive(t.Context(), a, *lease, keepAliveTTL)
			noErr(t, err, "KeepAlive")
			time.Sleep(2 * keepAliveTTL)
			if work.Err() != nil {
				t.Fatalf("work canceled while the lease was kept alive: %v", context.Cause(work))
			}
			_, err = rival.AcquireLease(t.Context(), k.lock, keepAliveTTL)
			wantErr(t, err, provider.ErrLockHeld, "rival AcquireLease of a kept-alive lease")
			noErr(t, stop(), "stop")
			if work.Err() == nil {
				t.Error("stop did not cancel the work")
			}
			next, err := rival.AcquireLease(t.Context(), k.lock, keepAliveTTL)
			noErr(t, err, "rival AcquireLease after stop")
			if next.Fence <= lease.Fence {
				t.Errorf("fence %d after the release, want > %d", next.Fence, lease.Fence)
			}
		})
		test(t, "canceled_before_takeover", func(t *testing.T) {
			a, rival, k := s.open(t).(provider.Leaser), s.open(t).(provider.Leaser), newIDs(t)
			lease, err := a.AcquireLease(t.Context(), k.lock, keepAliveTTL)
			noErr(t, err, "AcquireLease")
			cut := &unreachable{Leaser: a}
			work, stop, err := provider.KeepAlive(t.Context(), cut, *lease, keepAliveTTL)
			noErr(t, err, "KeepAlive")
			defer func() { _ = stop() }()
			cut.down.Store(true) // the backend becomes unreachable: no renewal succeeds
			select {
			case <-work.Done():
			case <-time.After(2 * keepAliveTTL):
				t.Fatal("work not canceled although no renewal succeeded for twice the ttl")
			}
			if !errors.Is(context.Cause(work), provider.ErrLockNotHeld) {
				t.Errorf("cause %v, want one wrapping ErrLockNotHeld", context.Cause(work))
			}
			s.sleepToExpiry(t, keepAliveTTL) // the backend's expiry passes
			next, err := rival.AcquireLease(t.Context(), k.lock, keepAliveTTL)
			noErr(t, err, "rival AcquireLease after the expiry")
			if next.Fence <= lease.Fence {
				t.Errorf("rival's fence %d, want > %d", next.Fence, lease.Fence)
			}
			if err := stop(); !errors.Is(err, provider.ErrLockNotHeld) {
				t.Errorf("stop after the loss = %v, want ErrLockNotHeld", err)
			}
		})
	})
}

// unreachable is a Leaser whose renewals fail with a network-like error once down.
type unreachable struct {
	provider.Leaser
	down atomic.Bool
}

func (u *unreachable) RenewLease(ctx context.Context, l types.Lease, ttl time.Duration) (*types.Lease, error) {
	if u.down.Load() {
		return nil, errors.New("connection refused")
	}
	return u.Leaser.RenewLease(ctx, l, ttl)
}
