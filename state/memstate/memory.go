package memstate

import (
	"bytes"
	"sync"
	"time"

	"github.com/pipestate/pipestate/state/internal/storeopt"
)

// Options are checked by the compiler: New takes StoreOptions, NewDeduper
// DeduperOptions, and an Option (WithClock, WithDedupTTL) is both.
//
// A nil option or a bad value makes the constructor return an error wrapping
// state.ErrInvalidArgument. Options belong to the data New creates (one clock, one
// claim TTL, as a server's): NewHandle takes none.
type (
	// StoreOption configures New.
	StoreOption = storeopt.StoreOption[config]
	// DeduperOption configures NewDeduper.
	DeduperOption = storeopt.DeduperOption[config]
	// Option configures New and NewDeduper alike.
	Option = storeopt.Option[config]
)

// config is what options set: the clock and the claim TTLs.
type config struct{ storeopt.Common }

// WithClock makes the store or deduper read time from now (default time.Now), for
// tests with a fake clock. now must not be nil.
func WithClock(now func() time.Time) Option {
	return storeopt.Any(func(c *config) error { return c.SetClock(now) })
}

// WithDedupTTL sets how long a claimed event ID is remembered: a store's
// MergeUpdateOnce claims and a Deduper's claims (default state.DefaultDedupTTL;
// 0 = forever), independent of a value's ttl. d outside [0, state.MaxTTL] is an
// error. Every constructor takes it.
func WithDedupTTL(d time.Duration) Option {
	return storeopt.Any(func(c *config) error { return c.SetDedupTTL(d) })
}

// newConfig applies opts, each through apply, to the defaults of constructor ctor.
func newConfig[O any](ctor string, opts []O, apply func(O, *config) error) (config, error) {
	c := config{storeopt.NewCommon("memory." + ctor)}
	return c, storeopt.Apply(&c, c.Ctor, opts, apply)
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
