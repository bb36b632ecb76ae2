package redis

import (
	"time"

	"github.com/pipestate/pipestate/internal/rediskey"
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
}

func newConfig(ctor string, t storeopt.Target, opts []Option) (config, error) {
	c := config{Common: storeopt.NewCommon(ctor, t)}
	return c, storeopt.Apply(&c, ctor, opts)
}

// checkPrefix checks the key prefix every constructor requires: 1 to 64 bytes of valid
// UTF-8 without control characters, '{' or '}' (they would change the Redis Cluster
// hash tag).
func checkPrefix(ctor, prefix string) error {
	if err := rediskey.CheckPrefix(prefix); err != nil {
		return state.Invalidf("%s: %v", ctor, err)
	}
	return nil
}

// WithMaxRetries sets how many times a BytesStore merge retries after losing a
// compare-and-swap race before it returns an error wrapping
// state.ErrContention (default state.DefaultMaxRetries; 0 = a single
// attempt). n < 0 is an error. BytesStore only.
func WithMaxRetries(n int) Option {
	return func(c *config) error { return c.SetMaxRetries(storeopt.Bytes, n) }
}

// WithBackoff sets the delays between BytesStore compare-and-swap retries: capped
// exponential backoff with full jitter, a random delay in [0, min(max, base*2^n)]
// before retry n (defaults state.DefaultRetryBase and state.DefaultRetryMax). base and
// max must be positive with base <= max. BytesStore only.
func WithBackoff(base, max time.Duration) Option {
	return func(c *config) error { return c.SetBackoff(storeopt.Bytes, base, max) }
}

// WithDedupTTL sets how long a MergeUpdateOnce claim on an event ID lives (default
// state.DefaultDedupTTL; 0 = forever), independent of the value's ttl. d outside
// [0, state.MaxTTL] is an error. Stores only.
func WithDedupTTL(d time.Duration) Option {
	return func(c *config) error { return c.SetDedupTTL(d) }
}

// WithTTL sets how long a Deduper claim lives (default state.DefaultDedupTTL; 0 =
// forever). d outside [0, state.MaxTTL] is an error. Deduper only.
func WithTTL(d time.Duration) Option {
	return func(c *config) error { return c.SetTTL(d) }
}

// millis converts a ttl to the milliseconds Redis takes: whole milliseconds, a
// positive sub-millisecond remainder rounded up so that a positive ttl never becomes
// 0 (no expiry), then one less above 1 ms: Redis treats a key as expired only once
// its clock is past the expiry millisecond, and the contract says expired when now
// >= expiry.
func millis(d time.Duration) int64 {
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond > 0 {
		ms++
	}
	if ms > 1 {
		ms--
	}
	return ms
}
