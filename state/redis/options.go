package redis

import (
	"strings"
	"time"

	"github.com/pipestate/pipestate/state"
)

// DefaultKeyPrefix is the key prefix of every store and deduper unless WithKeyPrefix
// says otherwise.
const DefaultKeyPrefix = "pipestate:state"

// Option configures a store or a deduper. An option that does not apply to the
// constructor it is passed to, or that has an invalid value, makes the constructor
// return an error wrapping state.ErrInvalidArgument.
type Option func(*config) error

// target says which constructors an option applies to.
type target uint8

const (
	targetNumeric target = 1 << iota // Int64SumStore, Float64SumStore, Int64MaxStore
	targetBytes                      // BytesStore
	targetDeduper                    // Deduper

	targetStores = targetNumeric | targetBytes
	targetAll    = targetStores | targetDeduper
)

// config is what options set; the zero value is not valid, see newConfig.
type config struct {
	ctor     string
	target   target
	prefix   string
	cas      state.CASPolicy // retries of lost races
	dedupTTL time.Duration   // OnceStore claims
	ttl      time.Duration   // Deduper claims
}

func newConfig(ctor string, t target, opts []Option) (config, error) {
	c := config{
		ctor:     ctor,
		target:   t,
		prefix:   DefaultKeyPrefix,
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

// allow rejects an option that does not apply to the constructor being configured.
func (c *config) allow(option string, t target) error {
	if c.target&t == 0 {
		return state.Invalidf("%s: option %s does not apply", c.ctor, option)
	}
	return nil
}

// WithKeyPrefix sets the prefix of every key the store or deduper uses (default
// DefaultKeyPrefix). Stores of different kinds may share a prefix; two stores of the
// same kind (say two BytesStores holding different sketches) share values when they
// share a prefix, so give each logical store its own. The prefix must be non-empty
// and must not contain '{' or '}' (they would change the Redis Cluster hash tag).
func WithKeyPrefix(prefix string) Option {
	return func(c *config) error {
		if err := c.allow("WithKeyPrefix", targetAll); err != nil {
			return err
		}
		if prefix == "" || strings.ContainsAny(prefix, "{}") {
			return state.Invalidf("%s: key prefix %q must be non-empty without '{' or '}'", c.ctor, prefix)
		}
		c.prefix = prefix
		return nil
	}
}

// WithMaxRetries sets how many times a BytesStore merge retries after losing a
// compare-and-swap race before it returns an error wrapping
// state.ErrMaxRetriesExceeded (default state.DefaultMaxRetries; 0 = a single
// attempt). n < 0 is an error. BytesStore only.
func WithMaxRetries(n int) Option {
	return func(c *config) error {
		if err := c.allow("WithMaxRetries", targetBytes); err != nil {
			return err
		}
		if n < 0 {
			return state.Invalidf("%s: max retries %d is negative", c.ctor, n)
		}
		c.cas.MaxRetries = n
		return nil
	}
}

// WithBackoff sets the delays between BytesStore compare-and-swap retries: capped
// exponential backoff with full jitter, a random delay in [0, min(max, base*2^n)]
// before retry n (defaults state.DefaultRetryBase and state.DefaultRetryMax). base and
// max must be positive with base <= max. BytesStore only.
func WithBackoff(base, max time.Duration) Option {
	return func(c *config) error {
		if err := c.allow("WithBackoff", targetBytes); err != nil {
			return err
		}
		if base <= 0 || max < base {
			return state.Invalidf("%s: backoff base %v and max %v must be positive with base <= max", c.ctor, base, max)
		}
		c.cas.Base, c.cas.Max = base, max
		return nil
	}
}

// WithDedupTTL sets how long a MergeUpdateOnce claim on an event ID lives (default
// state.DefaultDedupTTL; 0 = forever), independent of the value's ttl. d < 0 is an
// error. Stores only.
func WithDedupTTL(d time.Duration) Option {
	return func(c *config) error {
		if err := c.allow("WithDedupTTL", targetStores); err != nil {
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

// millis converts a ttl to the whole milliseconds Redis takes, rounding a positive
// sub-millisecond remainder up so that a positive ttl never becomes 0 (no expiry) or
// an immediate delete.
func millis(d time.Duration) int64 {
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond > 0 {
		ms++
	}
	return ms
}
