package memory

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pipestate/pipestate/state"
)

// Option configures a Store or a Deduper.
type Option func(*config) error

type config struct {
	now      func() time.Time
	ttl      time.Duration // Deduper claim TTL
	dedupTTL time.Duration // Store event-claim TTL
	ttlSet   bool
	dedupSet bool
}

// WithClock makes the store or deduper read time from now (default time.Now), for
// tests with a fake clock. now must not be nil.
func WithClock(now func() time.Time) Option {
	return func(c *config) error {
		if now == nil {
			return state.Invalidf("memory.WithClock(nil)")
		}
		c.now = now
		return nil
	}
}

// WithTTL sets how long a Deduper claim lives (default state.DefaultDedupTTL; 0 means
// claims never expire; negative is an error). Only NewDeduper accepts it.
func WithTTL(ttl time.Duration) Option {
	return func(c *config) error {
		if err := state.CheckTTL(ttl); err != nil {
			return fmt.Errorf("memory.WithTTL: %w", err)
		}
		c.ttl, c.ttlSet = ttl, true
		return nil
	}
}

// WithDedupTTL sets how long a Store remembers an event ID applied by
// MergeUpdateOnce (default state.DefaultDedupTTL; 0 means forever; negative is an
// error). Only New accepts it.
func WithDedupTTL(ttl time.Duration) Option {
	return func(c *config) error {
		if err := state.CheckTTL(ttl); err != nil {
			return fmt.Errorf("memory.WithDedupTTL: %w", err)
		}
		c.dedupTTL, c.dedupSet = ttl, true
		return nil
	}
}

func newConfig(opts []Option) (config, error) {
	c := config{now: time.Now, ttl: state.DefaultDedupTTL, dedupTTL: state.DefaultDedupTTL}
	for _, o := range opts {
		if o == nil {
			return c, state.Invalidf("memory: nil option")
		}
		if err := o(&c); err != nil {
			return c, err
		}
	}
	return c, nil
}

// expiry returns the deadline of a ttl from now; the zero time means none.
func expiry(now time.Time, ttl time.Duration) time.Time {
	if ttl == 0 {
		return time.Time{}
	}
	return now.Add(ttl)
}

// live reports whether an item with deadline exp is visible at now.
func live(exp, now time.Time) bool { return exp.IsZero() || now.Before(exp) }

// claims is a set of event IDs with deadlines, used by Deduper and by
// Store.MergeUpdateOnce. The caller holds the owner's lock.
type claims struct {
	m      map[string]time.Time
	writes int
}

// claimed reports whether id holds a live claim.
func (c *claims) claimed(id string, now time.Time) bool {
	exp, ok := c.m[id]
	return ok && live(exp, now)
}

// set records a claim on id, sweeping expired claims now and then (amortised O(1)).
func (c *claims) set(id string, now time.Time, ttl time.Duration) {
	if c.m == nil {
		c.m = map[string]time.Time{}
	}
	c.m[id] = expiry(now, ttl)
	if c.writes++; c.writes > 1024 && c.writes > len(c.m) {
		c.writes = 0
		for id, exp := range c.m {
			if !live(exp, now) {
				delete(c.m, id)
			}
		}
	}
}

// lifecycle is the closed flag of one handle.
type lifecycle struct{ closed atomic.Bool }

// errClosed is returned after Close.
var errClosed = fmt.Errorf("memory: %w", state.ErrClosed)

// enter returns errClosed after Close, else ctx's error.
func (l *lifecycle) enter(ctx context.Context) error {
	if l.closed.Load() {
		return errClosed
	}
	return ctx.Err()
}

// Close marks the handle closed; it is idempotent and always returns nil.
func (l *lifecycle) Close() error {
	l.closed.Store(true)
	return nil
}

// cloneValue copies byte slices so callers never share the store's memory. Other
// values are shared: Combine returns fresh values by the Monoid contract, and callers
// must not modify maps or slices they read or pass in.
func cloneValue[V any](v V) V {
	if b, ok := any(v).([]byte); ok {
		return any(bytes.Clone(b)).(V)
	}
	return v
}

// mutexed is shared data behind one lock.
type mutexed struct {
	mu  sync.Mutex
	cfg config
}
