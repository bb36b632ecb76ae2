package provider

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/pipestate/pipestate/internal/nilcheck"
	"github.com/pipestate/pipestate/types"
)

// KeepAlive keeps lease alive for work done under the returned context: it renews
// the lease for ttl once before it returns, then every ttl/3, and cancels the
// context the moment the lease is lost (a renewal returned ErrLockNotHeld) or could
// not be renewed before it expires, so that the work stops before another holder's
// fence can be accepted. A failed renewal is retried every ttl/10 until the expiry.
//
// The expiry KeepAlive guards is the time the last successful renewal was sent plus
// ttl, on the caller's clock: never later than the backend's expiry, whatever the
// backend's clock says, as long as both clocks run at the same rate.
//
// stop ends the renewals, cancels the context and releases the lease. It returns nil
// when the lease was held to the end and released; the cause of the cancellation
// (wrapping ErrLockNotHeld, or the last renewal error) when the lease was lost; or
// the release error. stop may be called more than once; later calls return the same.
// ctx ending also cancels the returned context and ends the renewals, but releases
// nothing: call stop.
//
// KeepAlive fails with ErrInvalidArgument on a nil l, an invalid lease or a ttl that
// CheckLeaseTTL rejects, before any I/O, and with the first renewal's error
// (wrapping ErrLockNotHeld when the lease is no longer held).
func KeepAlive(ctx context.Context, l Leaser, lease types.Lease, ttl time.Duration) (context.Context, func() error, error) {
	if nilcheck.IsNil(l) {
		return nil, nil, Invalidf("KeepAlive: nil Leaser")
	}
	if err := Validate(lease); err != nil {
		return nil, nil, err
	}
	if err := CheckLeaseTTL(ttl); err != nil {
		return nil, nil, err
	}
	sent := time.Now()
	next, err := l.RenewLease(ctx, lease, ttl)
	if err != nil {
		return nil, nil, err
	}
	if next == nil {
		return nil, nil, fmt.Errorf("KeepAlive: RenewLease returned no lease and no error")
	}
	wctx, cancel := context.WithCancelCause(ctx)
	k := &keeper{l: l, lease: *next, ttl: ttl, cancel: cancel, quit: make(chan struct{}), done: make(chan struct{})}
	k.lease.ExpiresAt = sent.Add(ttl)
	k.expiry = time.AfterFunc(time.Until(k.lease.ExpiresAt), k.expired)
	go k.renew(wctx)
	return wctx, sync.OnceValue(k.stop), nil
}

type keeper struct {
	l      Leaser
	ttl    time.Duration
	cancel context.CancelCauseFunc
	expiry *time.Timer
	quit   chan struct{} // closed by stop
	done   chan struct{} // closed when renew returns

	mu    sync.Mutex
	lease types.Lease // the current lease
	lost  error       // why the lease was lost; nil while held
}

// lose records why the lease was lost (the first reason wins) and cancels the work.
func (k *keeper) lose(err error) {
	k.mu.Lock()
	if k.lost == nil {
		k.lost = err
	}
	k.mu.Unlock()
	k.cancel(err)
}

func (k *keeper) expired() {
	k.mu.Lock()
	key := k.lease.Key
	k.mu.Unlock()
	k.lose(fmt.Errorf("%w: lease %q expired before it could be renewed", ErrLockNotHeld, key))
}

// renew renews the lease until stop, ctx's end or the lease's loss.
func (k *keeper) renew(ctx context.Context) {
	defer close(k.done)
	wait := k.ttl / 3
	for {
		select {
		case <-k.quit:
			return
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		k.mu.Lock()
		cur := k.lease
		k.mu.Unlock()
		sent := time.Now()
		rctx, cancel := context.WithDeadline(ctx, cur.ExpiresAt)
		next, err := k.l.RenewLease(rctx, cur, k.ttl)
		cancel()
		switch {
		case err == nil && next != nil:
			k.mu.Lock()
			k.lease = *next
			k.lease.ExpiresAt = sent.Add(k.ttl)
			k.mu.Unlock()
			k.expiry.Reset(time.Until(sent.Add(k.ttl)))
			wait = k.ttl / 3
		case errors.Is(err, ErrLockNotHeld):
			k.lose(err)
			return
		case err == nil:
			k.lose(fmt.Errorf("KeepAlive: RenewLease returned no lease and no error"))
			return
		default:
			wait = k.ttl / 10 // the expiry timer ends the work if no retry succeeds in time
		}
	}
}

func (k *keeper) stop() error {
	close(k.quit)
	<-k.done
	k.expiry.Stop()
	k.mu.Lock()
	lost, lease := k.lost, k.lease
	k.mu.Unlock()
	k.cancel(context.Canceled)
	if lost != nil {
		return lost
	}
	return k.l.ReleaseLease(context.WithoutCancel(context.Background()), lease)
}
