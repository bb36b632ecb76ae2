package dynamodb

import (
	"time"

	"github.com/pipestate/pipestate/state"
)

// Option configures a store or a deduper. An option that does not apply to the
// constructor it is passed to, or that has an invalid value, makes the constructor
// return an error wrapping state.ErrInvalidArgument.
type Option func(*config) error

// target says which constructors an option applies to.
type target uint8

const (
	targetStore   target = 1 << iota // every store
	targetDeduper                    // Deduper

	targetAll = targetStore | targetDeduper
)

// config is what options set; see newConfig for the defaults.
type config struct {
	ctor       string
	target     target
	now        func() time.Time
	cas        state.CASPolicy // retries of lost races
	dedupTable string          // OnceStore claims; "" = MergeUpdateOnce unavailable
	dedupTTL   time.Duration   // OnceStore claims
	ttl        time.Duration   // Deduper claims
}

func newConfig(ctor string, t target, opts []Option) (config, error) {
	c := config{
		ctor:     ctor,
		target:   t,
		now:      time.Now,
		cas:      state.DefaultCASPolicy(),
		dedupTTL: state.DefaultDedupTTL,
		ttl:      state.DefaultDedupTTL,
	}
	for _, o := range opts {
		if o == nil {
			return config{}, state.Invalidf("%s: nil option", ctor)
		}
		if err := o(&c); err != nil {
			return config{}, err
		}
	}
	return c, nil
}

func (c *config) allow(option string, t target) error {
	if c.target&t == 0 {
		return state.Invalidf("%s: option %s does not apply", c.ctor, option)
	}
	return nil
}

// WithClock makes the store or deduper read the time from now (default time.Now).
// Expiry is computed from this clock (DynamoDB keeps expired items until its TTL
// sweeper deletes them, so every read and conditional write compares the item's ttl
// attribute with now): give every process a synchronised clock, or a fake one in
// tests. now must not be nil.
func WithClock(now func() time.Time) Option {
	return func(c *config) error {
		if err := c.allow("WithClock", targetAll); err != nil {
			return err
		}
		if now == nil {
			return state.Invalidf("%s: nil clock", c.ctor)
		}
		c.now = now
		return nil
	}
}

// WithMaxRetries sets how many times a merge retries after losing a race (a failed
// compare-and-swap of BytesStore, a transaction conflict, or an item expiring between
// two conditional writes) before it returns an error wrapping
// state.ErrMaxRetriesExceeded (default state.DefaultMaxRetries; 0 = a single attempt).
// n < 0 is an error. Stores only.
func WithMaxRetries(n int) Option {
	return func(c *config) error {
		if err := c.allow("WithMaxRetries", targetStore); err != nil {
			return err
		}
		if n < 0 {
			return state.Invalidf("%s: max retries %d is negative", c.ctor, n)
		}
		c.cas.MaxRetries = n
		return nil
	}
}

// WithBackoff sets the delays between merge retries: capped exponential backoff with
// full jitter, a random delay in [0, min(max, base*2^n)] before retry n (defaults
// state.DefaultRetryBase and state.DefaultRetryMax). base and max must be positive
// with base <= max. Stores only.
func WithBackoff(base, max time.Duration) Option {
	return func(c *config) error {
		if err := c.allow("WithBackoff", targetStore); err != nil {
			return err
		}
		if base <= 0 || max < base {
			return state.Invalidf("%s: backoff base %v and max %v must be positive with base <= max", c.ctor, base, max)
		}
		c.cas.Base, c.cas.Max = base, max
		return nil
	}
}

// WithDedupTable names the table (made by CreateDedupTable) that holds the event
// claims of MergeUpdateOnce; without it MergeUpdateOnce returns an error wrapping
// state.ErrInvalidArgument. One dedup table may serve any number of stores and
// dedupers: claims are namespaced by value table and store kind. Stores only.
func WithDedupTable(table string) Option {
	return func(c *config) error {
		if err := c.allow("WithDedupTable", targetStore); err != nil {
			return err
		}
		if table == "" {
			return state.Invalidf("%s: empty dedup table name", c.ctor)
		}
		c.dedupTable = table
		return nil
	}
}

// WithDedupTTL sets how long a MergeUpdateOnce claim on an event ID lives (default
// state.DefaultDedupTTL; 0 = forever), independent of the value's ttl. d < 0 is an
// error. Stores only.
func WithDedupTTL(d time.Duration) Option {
	return func(c *config) error {
		if err := c.allow("WithDedupTTL", targetStore); err != nil {
			return err
		}
		if d < 0 {
			return state.Invalidf("%s: dedup ttl %v is negative", c.ctor, d)
		}
		c.dedupTTL = d
		return nil
	}
}

// WithTTL sets how long a Deduper claim lives (default state.DefaultDedupTTL; 0 =
// forever). d < 0 is an error. Deduper only.
func WithTTL(d time.Duration) Option {
	return func(c *config) error {
		if err := c.allow("WithTTL", targetDeduper); err != nil {
			return err
		}
		if d < 0 {
			return state.Invalidf("%s: ttl %v is negative", c.ctor, d)
		}
		c.ttl = d
		return nil
	}
}
