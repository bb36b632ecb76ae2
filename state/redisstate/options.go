package redisstate

import (
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/pipestate/pipestate/state/internal/storeopt"
)

// Options are checked by the compiler: every constructor takes only the options it
// uses. An Option (WithDedupTTL, WithMeterProvider, WithLogger) is taken by every
// constructor; a BytesOption (WithMaxRetries, WithBackoff) by NewBytesStore only.
// So
//
//	redisstate.NewInt64SumStore(client, prefix, redisstate.WithMaxRetries(3)) // does not compile
//
// A nil option or a bad value makes the constructor return an error wrapping
// state.ErrInvalidArgument.
type (
	// StoreOption configures every store constructor: NewInt64SumStore,
	// NewFloat64SumStore, NewInt64MaxStore and NewBytesStore.
	StoreOption = storeopt.StoreOption[config]
	// BytesOption configures NewBytesStore.
	BytesOption = storeopt.BytesOption[config]
	// DeduperOption configures NewDeduper.
	DeduperOption = storeopt.DeduperOption[config]
	// Option configures every constructor.
	Option = storeopt.Option[config]
)

// config is what options set; see storeopt.NewCommon for the defaults.
type config struct{ storeopt.Common }

// newConfig applies opts, each through apply, to the defaults of constructor ctor.
func newConfig[O any](ctor string, opts []O, apply func(O, *config) error) (config, error) {
	c := config{storeopt.NewCommon(ctor)}
	return c, storeopt.Apply(&c, ctor, opts, apply)
}

// WithMaxRetries sets how many times a BytesStore merge retries after losing a
// compare-and-swap race before it returns an error wrapping
// state.ErrContention (default state.DefaultMaxRetries; 0 = a single
// attempt). n < 0 is an error.
func WithMaxRetries(n int) BytesOption {
	return storeopt.Bytes(func(c *config) error { return c.SetMaxRetries(n) })
}

// WithBackoff sets the delays between BytesStore compare-and-swap retries: capped
// exponential backoff with full jitter, a random delay in [0, min(max, base*2^n)]
// before retry n (defaults state.DefaultRetryBase and state.DefaultRetryMax). base and
// max must be positive with base <= max.
func WithBackoff(base, max time.Duration) BytesOption {
	return storeopt.Bytes(func(c *config) error { return c.SetBackoff(base, max) })
}

// WithDedupTTL sets how long a claimed event ID is remembered: a store's
// MergeUpdateOnce claims and a Deduper's claims (default state.DefaultDedupTTL;
// 0 = forever), independent of a value's ttl. d outside [0, state.MaxTTL] is an
// error. Every constructor takes it. A claim must outlive the client's retries
// of the call that made it (go-redis retries a call for up to MaxRetries read timeouts, 3s each by default): a retried MergeUpdateOnce whose first attempt
// was applied, and whose claim expired in between, applies again. Keep d at
// minutes or more.
func WithDedupTTL(d time.Duration) Option {
	return storeopt.Any(func(c *config) error { return c.SetDedupTTL(d) })
}

// WithMeterProvider sets the meter provider of the signals only the store or deduper
// knows (default: otel.GetMeterProvider() at construction): BytesStore
// compare-and-swap retries (pipestate.retries) and give-ups (pipestate.giveups),
// and scripts sent again after NOSCRIPT (pipestate.redis.script.loads); see
// package observe for the instruments. mp must not be nil.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return storeopt.Any(func(c *config) error { return c.SetMeterProvider(mp) })
}

// WithLogger sets the logger of the same signals (default: none): Debug for each
// retry and script reload, Warn for each give-up. log must not be nil.
func WithLogger(log *slog.Logger) Option {
	return storeopt.Any(func(c *config) error { return c.SetLogger(log) })
}
