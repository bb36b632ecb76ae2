package provider_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/memprovider"
	"github.com/pipestate/pipestate/types"
)

// leaser returns two handles on one memory backend: the holder and a rival.
func leaser(t *testing.T) (*memprovider.Provider, *memprovider.Provider) {
	t.Helper()
	a, err := memprovider.New()
	if err != nil {
		t.Fatal(err)
	}
	b, err := a.NewHandle()
	if err != nil {
		t.Fatal(err)
	}
	return a, b
}

// TestKeepAliveHoldsAndReleases: the lease outlives many TTLs while kept alive, a
// rival cannot take it, and stop releases it. The ttl leaves a renewal (every
// ttl/3) 250ms of stall on a loaded machine before the lease is lost.
func TestKeepAliveHoldsAndReleases(t *testing.T) {
	a, rival := leaser(t)
	ctx := t.Context()
	const ttl = 400 * time.Millisecond
	lease, err := a.AcquireLease(ctx, "job", ttl)
	if err != nil {
		t.Fatal(err)
	}
	work, stop, err := provider.KeepAlive(ctx, a, *lease, ttl)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * ttl)
	if err := work.Err(); err != nil {
		t.Fatalf("work canceled while the lease was kept alive: %v", context.Cause(work))
	}
	if _, err := rival.AcquireLease(ctx, "job", ttl); !errors.Is(err, provider.ErrLockHeld) {
		t.Fatalf("rival AcquireLease = %v, want ErrLockHeld", err)
	}
	if err := stop(); err != nil {
		t.Fatalf("stop = %v", err)
	}
	if work.Err() == nil {
		t.Error("stop did not cancel the work")
	}
	if err := stop(); err != nil {
		t.Errorf("second stop = %v, want the first result (nil)", err)
	}
	next, err := rival.AcquireLease(ctx, "job", ttl)
	if err != nil {
		t.Fatalf("rival after stop: %v", err)
	}
	if next.Fence <= lease.Fence {
		t.Errorf("fence %d after release, want > %d", next.Fence, lease.Fence)
	}
}

// failing is a Leaser whose renewals fail with err once fail is set.
type failing struct {
	provider.Leaser
	fail  atomic.Bool
	err   error
	calls atomic.Int64
}

func (f *failing) RenewLease(ctx context.Context, l types.Lease, ttl time.Duration) (*types.Lease, error) {
	f.calls.Add(1)
	if f.fail.Load() {
		return nil, f.err
	}
	return f.Leaser.RenewLease(ctx, l, ttl)
}

// TestKeepAliveCancelsOnLoss: a renewal that reports ErrLockNotHeld cancels the work
// at once, and stop reports the loss without releasing.
func TestKeepAliveCancelsOnLoss(t *testing.T) {
	a, _ := leaser(t)
	const ttl = 300 * time.Millisecond
	lease, err := a.AcquireLease(t.Context(), "job", ttl)
	if err != nil {
		t.Fatal(err)
	}
	f := &failing{Leaser: a, err: provider.ErrLockNotHeld}
	work, stop, err := provider.KeepAlive(t.Context(), f, *lease, ttl)
	if err != nil {
		t.Fatal(err)
	}
	f.fail.Store(true)
	select {
	case <-work.Done():
	case <-time.After(ttl):
		t.Fatal("work not canceled after the renewal reported the lease lost")
	}
	if !errors.Is(context.Cause(work), provider.ErrLockNotHeld) {
		t.Errorf("cause = %v, want ErrLockNotHeld", context.Cause(work))
	}
	if err := stop(); !errors.Is(err, provider.ErrLockNotHeld) {
		t.Errorf("stop = %v, want the loss", err)
	}
}

// TestKeepAliveCancelsBeforeExpiry: when renewals keep failing with a transient
// error, the work is canceled no later than the lease's expiry, and renewals were
// retried in between. A loaded machine can wake the canceling goroutine late, so
// a round that cancels late is run again, up to three rounds; a KeepAlive that
// guards a later expiry is late in every round.
func TestKeepAliveCancelsBeforeExpiry(t *testing.T) {
	const ttl, slack, rounds = 300 * time.Millisecond, 20 * time.Millisecond, 3
	for round := 1; ; round++ {
		late := keepAliveLateness(t, ttl)
		if late <= slack {
			return
		}
		if round == rounds {
			t.Fatalf("work canceled %v after the lease could have expired, in each of %d rounds (the last shown)", late, rounds)
		}
		t.Logf("round %d: work canceled %v after the lease could have expired; again", round, late)
	}
}

// keepAliveLateness keeps a lease of ttl alive whose renewals all fail after the
// first, checks the cancellation's cause and the retries, and returns how long
// after the earliest expiry the backend could have (the first renewal's sending
// plus ttl) the work was canceled.
func keepAliveLateness(t *testing.T, ttl time.Duration) time.Duration {
	t.Helper()
	a, _ := leaser(t)
	lease, err := a.AcquireLease(t.Context(), "job", ttl)
	if err != nil {
		t.Fatal(err)
	}
	f := &failing{Leaser: a, err: errors.New("connection reset")}
	sent := time.Now()
	work, stop, err := provider.KeepAlive(t.Context(), f, *lease, ttl)
	if err != nil {
		t.Fatal(err)
	}
	f.fail.Store(true)
	defer func() { _ = stop() }()
	<-work.Done()
	late := time.Since(sent.Add(ttl))
	if !errors.Is(context.Cause(work), provider.ErrLockNotHeld) {
		t.Errorf("cause = %v, want ErrLockNotHeld (expired)", context.Cause(work))
	}
	if n := f.calls.Load(); n < 3 {
		t.Errorf("%d renewal attempts before expiry, want retries", n)
	}
	return late
}

// TestKeepAliveRefusesALostLease: a lease that is no longer held is refused at
// once (the first renewal fails), whatever the clocks say.
func TestKeepAliveRefusesALostLease(t *testing.T) {
	a, rival := leaser(t)
	lease, err := a.AcquireLease(t.Context(), "job", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.ReleaseLease(t.Context(), *lease); err != nil {
		t.Fatal(err)
	}
	if _, err := rival.AcquireLease(t.Context(), "job", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, _, err := provider.KeepAlive(t.Context(), a, *lease, time.Minute); !errors.Is(err, provider.ErrLockNotHeld) {
		t.Errorf("KeepAlive of a lost lease = %v, want ErrLockNotHeld", err)
	}
}

func TestKeepAliveRejectsBadInput(t *testing.T) {
	a, _ := leaser(t)
	good := types.Lease{Key: "job", Token: "t", ExpiresAt: time.Now().Add(time.Minute)}
	var nilLeaser *memprovider.Provider
	for name, call := range map[string]func() error{
		"nil leaser": func() error { _, _, err := provider.KeepAlive(t.Context(), nilLeaser, good, time.Second); return err },
		"no token": func() error {
			_, _, err := provider.KeepAlive(t.Context(), a, types.Lease{Key: "job"}, time.Second)
			return err
		},
		"zero ttl":    func() error { _, _, err := provider.KeepAlive(t.Context(), a, good, 0); return err },
		"ttl too big": func() error { _, _, err := provider.KeepAlive(t.Context(), a, good, provider.MaxTTL+1); return err },
	} {
		if err := call(); !errors.Is(err, provider.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
}
