package dynamodb

import (
	"time"

	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/internal/storeopt"
)

// Option configures a store or a deduper. An option that does not apply to the
// constructor it is passed to, or that has an invalid value, makes the constructor
// return an error wrapping state.ErrInvalidArgument.
type Option func(*config) error

// config is what options set; see newConfig for the defaults.
type config struct {
	storeopt.Common
	now        func() time.Time
	dedupTable string // OnceStore claims; "" = MergeUpdateOnce unavailable
}

func newConfig(ctor string, t storeopt.Target, opts []Option) (config, error) {
	c := config{Common: storeopt.NewCommon(ctor, t), now: time.Now}
	return c, storeopt.Apply(&c, ctor, opts)
}

// WithClock makes the store or deduper read the time from now (default time.Now).
// Expiry is computed from this clock (DynamoDB keeps expired items until its TTL
// sweeper deletes them, so every read and conditional write compares the item's ttl
// attribute with now): give every process a synchronised clock, or a fake one in
// tests. now must not be nil.
func WithClock(now func() time.Time) Option {
	return func(c *config) error {
		if err := c.Allow("WithClock", storeopt.All); err != nil {
			return err
		}
		if now == nil {
			return state.Invalidf("%s: nil clock", c.Ctor)
		}
		c.now = now
		return nil
	}
}

// WithMaxRetries sets how many times a merge retries after losing a race (a failed
// compare-and-swap of BytesStore, a transaction conflict, or an item expiring between
// two conditional writes) before it returns an error wrapping
// state.ErrContention (default state.DefaultMaxRetries; 0 = a single attempt).
// n < 0 is an error. Stores only.
func WithMaxRetries(n int) Option {
	return func(c *config) error { return c.SetMaxRetries(storeopt.Stores, n) }
}

// WithBackoff sets the delays between merge retries: capped exponential backoff with
// full jitter, a random delay in [0, min(max, base*2^n)] before retry n (defaults
// state.DefaultRetryBase and state.DefaultRetryMax). base and max must be positive
// with base <= max. Stores only.
func WithBackoff(base, max time.Duration) Option {
	return func(c *config) error { return c.SetBackoff(storeopt.Stores, base, max) }
}

// WithDedupTable names the table (made by CreateDedupTable) that holds the event
// claims of MergeUpdateOnce; without it MergeUpdateOnce returns an error wrapping
// state.ErrInvalidArgument. One dedup table may serve any number of stores and
// dedupers: claims are namespaced by value table and store kind. Stores only.
func WithDedupTable(table string) Option {
	return func(c *config) error {
		if err := c.Allow("WithDedupTable", storeopt.Stores); err != nil {
			return err
		}
		if table == "" {
			return state.Invalidf("%s: empty dedup table name", c.Ctor)
		}
		c.dedupTable = table
		return nil
	}
}

// WithDedupTTL sets how long a MergeUpdateOnce claim on an event ID lives (default
// state.DefaultDedupTTL; 0 = forever), independent of the value's ttl. d < 0 is an
// error. Stores only.
func WithDedupTTL(d time.Duration) Option {
	return func(c *config) error { return c.SetDedupTTL(d) }
}

// WithTTL sets how long a Deduper claim lives (default state.DefaultDedupTTL; 0 =
// forever). d < 0 is an error. Deduper only.
func WithTTL(d time.Duration) Option {
	return func(c *config) error { return c.SetTTL(d) }
}
