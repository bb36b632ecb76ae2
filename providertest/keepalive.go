package providertest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// The lease ttl of the KeepAlive tests is on real time, because KeepAlive renews
// on the caller's clock: a renewal is sent every ttl/3 and must complete within
// the ttl of the last one, or the work is canceled. On a loaded machine renewals
// and the keeper's timers are late by far more than a round trip takes when idle,
// so the tests derive their margins from what they measure:
//   - the ttl is keepAliveMargin times the slowest of keepAliveProbes lease round
//     trips and timer wake-ups measured at the test's start, times 3/2 (the slack
//     of a renewal is 2/3 of the ttl), rounded up to 100 ms, within
//     [minKeepAliveTTL, maxKeepAliveTTL];
//   - while a test runs, a stallMonitor records how late the process runs and
//     how long each renewal takes. A check that fails while the process stalled
//     for more than a third of the ttl proves nothing about KeepAlive: it is tried
//     again with twice the ttl, keepAliveTries times at most. A KeepAlive that
//     does not renew fails every try, however long the ttl.
const (
	minKeepAliveTTL = 900 * time.Millisecond
	maxKeepAliveTTL = 10 * time.Second
	keepAliveMargin = 20
	keepAliveProbes = 5
	keepAliveTries  = 3
	stallTick       = 5 * time.Millisecond
)

// keepAliveTTLFor returns the lease ttl of a KeepAlive test (see above), timing
// renewals of a lease of key.
func keepAliveTTLFor(t *testing.T, l provider.Leaser, key string) time.Duration {
	t.Helper()
	lease := mustLease(t, l, key, longTTL)
	var slowest time.Duration
	for range keepAliveProbes {
		start := time.Now()
		_, err := l.RenewLease(t.Context(), lease, longTTL)
		noErr(t, err, "RenewLease (timing a round trip)")
		slowest = max(slowest, time.Since(start))
		start = time.Now()
		time.Sleep(time.Millisecond)
		slowest = max(slowest, time.Since(start)-time.Millisecond)
	}
	noErr(t, l.ReleaseLease(t.Context(), lease), "ReleaseLease (timing a round trip)")
	ttl := roundTTL(max(slowest*keepAliveMargin*3/2, minKeepAliveTTL))
	t.Logf("lease ttl %v (slowest round trip or timer lateness of %d: %v)", ttl, keepAliveProbes, slowest)
	return ttl
}

// roundTTL rounds ttl up to 100 ms (whole milliseconds, which every backend
// keeps exactly) and caps it at maxKeepAliveTTL.
func roundTTL(ttl time.Duration) time.Duration {
	return min((ttl + 99*time.Millisecond).Truncate(100*time.Millisecond), maxKeepAliveTTL)
}

// stallMonitor records the longest stall of the process while it runs: how much
// later than asked a goroutine that sleeps stallTick at a time wakes up, and how
// long the renewals of the Leasers it wraps (timed) take.
type stallMonitor struct {
	worst atomic.Int64 // nanoseconds
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
}

// watchStalls starts a stallMonitor, closed when t ends at the latest.
func watchStalls(t *testing.T) *stallMonitor {
	m := &stallMonitor{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			start := time.Now()
			select {
			case <-m.stop:
				return
			case <-time.After(stallTick):
			}
			m.note(time.Since(start) - stallTick)
		}
	}()
	t.Cleanup(m.close)
	return m
}

func (m *stallMonitor) note(d time.Duration) {
	for {
		cur := m.worst.Load()
		if int64(d) <= cur || m.worst.CompareAndSwap(cur, int64(d)) {
			return
		}
	}
}

func (m *stallMonitor) close() {
	m.once.Do(func() { close(m.stop) })
	<-m.done
}

// stalled returns the longest stall recorded.
func (m *stallMonitor) stalled() time.Duration { return time.Duration(m.worst.Load()) }

// timed returns l with its renewals' durations recorded as stalls.
func (m *stallMonitor) timed(l provider.Leaser) provider.Leaser { return timedLeaser{l, m} }

type timedLeaser struct {
	provider.Leaser
	m *stallMonitor
}

func (l timedLeaser) RenewLease(ctx context.Context, lease types.Lease, ttl time.Duration) (*types.Lease, error) {
	start := time.Now()
	defer func() { l.m.note(time.Since(start)) }()
	return l.Leaser.RenewLease(ctx, lease, ttl)
}

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
		s.run(t, "renews_and_releases", testKeepAliveRenewsAndReleases)
		s.run(t, "canceled_before_takeover", testKeepAliveCanceledBeforeTakeover)
	})
}

func testKeepAliveRenewsAndReleases(t *testing.T, s *suite) {
	a, rival, k := s.open(t).(provider.Leaser), s.open(t).(provider.Leaser), newIDs(t)
	ttl := keepAliveTTLFor(t, a, k.other)
	var lease types.Lease
	var work context.Context
	var stop func() error
	for try := 1; ; try++ {
		var failure string
		var stalled time.Duration
		lease, work, stop, failure, stalled = keptAlive(t, a, rival, fmt.Sprintf("%s-%d", k.lock, try), ttl)
		if failure == "" {
			break
		}
		if stalled <= ttl/3 || try == keepAliveTries || ttl == maxKeepAliveTTL {
			t.Fatalf("%s (lease ttl %v; the process stalled for %v at most)", failure, ttl, stalled)
		}
		t.Logf("%s, but the process stalled for %v, more than a third of the lease ttl %v: again with a longer ttl", failure, stalled, ttl)
		ttl = roundTTL(2 * ttl)
	}
	noErr(t, stop(), "stop")
	if work.Err() == nil {
		t.Error("stop did not cancel the work")
	}
	next, err := rival.AcquireLease(t.Context(), lease.Key, ttl)
	noErr(t, err, "rival AcquireLease after stop")
	if next.Fence <= lease.Fence {
		t.Errorf("fence %d after the release, want > %d", next.Fence, lease.Fence)
	}
}

func testKeepAliveCanceledBeforeTakeover(t *testing.T, s *suite) {
	a, rival, k := s.open(t).(provider.Leaser), s.open(t).(provider.Leaser), newIDs(t)
	keepAliveTTL := keepAliveTTLFor(t, a, k.other)
	lease, err := a.AcquireLease(t.Context(), k.lock, keepAliveTTL)
	noErr(t, err, "AcquireLease")
	cut := &unreachable{Leaser: a}
	stalls := watchStalls(t)
	work, stop, err := provider.KeepAlive(t.Context(), cut, *lease, keepAliveTTL)
	noErr(t, err, "KeepAlive")
	defer func() { _ = stop() }()
	cut.down.Store(true) // the backend becomes unreachable: no renewal succeeds
	select {
	case <-work.Done():
	case <-time.After(2 * keepAliveTTL):
		// A timer that fires late because the process stalled is no fault
		// of KeepAlive's: wait on, as long as the stall.
		if stalled := stalls.stalled(); stalled <= keepAliveTTL/3 {
			t.Fatal("work not canceled although no renewal succeeded for twice the ttl")
		}
		select {
		case <-work.Done():
		case <-time.After(maxKeepAliveTTL):
			t.Fatalf("work not canceled although no renewal succeeded for twice the ttl and %v more (the process stalled for %v)",
				maxKeepAliveTTL, stalls.stalled())
		}
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
}

// keptAlive leases key for ttl, keeps it alive for twice the ttl and checks that
// the work still runs and a rival cannot take the key. It returns the lease and
// what KeepAlive returned, or what went wrong (and stops the keep-alive), with
// the longest stall of the process meanwhile.
func keptAlive(t *testing.T, a, rival provider.Leaser, key string, ttl time.Duration) (lease types.Lease, work context.Context, stop func() error, failure string, stalled time.Duration) {
	t.Helper()
	lease = mustLease(t, a, key, ttl)
	stalls := watchStalls(t)
	work, stop, err := provider.KeepAlive(t.Context(), stalls.timed(a), lease, ttl)
	noErr(t, err, "KeepAlive")
	time.Sleep(2 * ttl)
	if work.Err() != nil {
		failure = fmt.Sprintf("work canceled while the lease was kept alive: %v", context.Cause(work))
	} else if _, err := rival.AcquireLease(t.Context(), key, ttl); !errors.Is(err, provider.ErrLockHeld) {
		failure = fmt.Sprintf("rival AcquireLease of a kept-alive lease: got error %v, want one wrapping %v", err, provider.ErrLockHeld)
	}
	stalls.close()
	if failure != "" {
		_ = stop()
	}
	return lease, work, stop, failure, stalls.stalled()
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
