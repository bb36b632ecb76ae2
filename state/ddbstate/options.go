package ddbstate

import (
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/internal/storeopt"
)

// Options are checked by the compiler: every constructor takes only the options it
// uses. A StoreOption (WithMaxRetries, WithBackoff, WithDedupTable,
// WithBatchConcurrency) is taken by every store constructor, and an Option
// (WithDedupTTL, WithClock, WithMeterProvider, WithLogger) by every constructor,
// NewDeduper included. So
//
//	ddbstate.NewDeduper(client, table, ddbstate.WithDedupTable("d")) // does not compile
//
// A nil option or a bad value makes the constructor return an error wrapping
// state.ErrInvalidArgument.
type (
	// StoreOption configures every store constructor: NewInt64SumStore,
	// NewFloat64SumStore, NewInt64MaxStore and NewBytesStore.
	StoreOption = storeopt.StoreOption[config]
	// DeduperOption configures NewDeduper.
	DeduperOption = storeopt.DeduperOption[config]
	// Option configures every constructor.
	Option = storeopt.Option[config]
)

// config is what options set; see storeopt.NewCommon for the defaults.
type config struct {
	storeopt.Common
	dedupTable string // OnceStore claims; "" = MergeUpdateOnce unavailable
	batchConc  int    // MergeMany's merges at once (WithBatchConcurrency); 0 = the default
}

// newConfig applies opts, each through apply, to the defaults of constructor ctor.
func newConfig[O any](ctor string, opts []O, apply func(O, *config) error) (config, error) {
	c := config{Common: storeopt.NewCommon(ctor)}
	return c, storeopt.Apply(&c, ctor, opts, apply)
}

// WithClock makes the store or deduper read the time from now (default time.Now).
// Expiry is computed from this clock (DynamoDB keeps expired items until its TTL
// sweeper deletes them, so every read and conditional write compares the item's ttl
// attribute with now): give every process a synchronised clock, or a fake one in
// tests. now must not be nil.
func WithClock(now func() time.Time) Option {
	return storeopt.Any(func(c *config) error { return c.SetClock(now) })
}

// WithMaxRetries sets how many times a merge retries after losing a race (a failed
// compare-and-swap of BytesStore, a transaction conflict, or an item expiring between
// two conditional writes) before it returns an error wrapping
// state.ErrContention (default state.DefaultMaxRetries; 0 = a single attempt).
// n < 0 is an error.
func WithMaxRetries(n int) StoreOption {
	return storeopt.Store(func(c *config) error { return c.SetMaxRetries(n) })
}

// WithBackoff sets the delays between merge retries: capped exponential backoff with
// full jitter, a random delay in [0, min(max, base*2^n)] before retry n (defaults
// state.DefaultRetryBase and state.DefaultRetryMax). base and max must be positive
// with base <= max.
func WithBackoff(base, max time.Duration) StoreOption {
	return storeopt.Store(func(c *config) error { return c.SetBackoff(base, max) })
}

// WithDedupTable names the table (made by CreateDedupTable) that holds the event
// claims of MergeUpdateOnce; without it MergeUpdateOnce returns an error wrapping
// state.ErrInvalidArgument. One dedup table may serve any number of stores and
// dedupers: claims are namespaced by value table and store kind. table must not be
// empty.
func WithDedupTable(table string) StoreOption {
	return storeopt.Store(func(c *config) error {
		if table == "" {
			return state.Invalidf("%s: empty dedup table name", c.Ctor)
		}
		c.dedupTable = table
		return nil
	})
}

// WithDedupTTL sets how long a claimed event ID is remembered: a store's
// MergeUpdateOnce claims and a Deduper's claims (default state.DefaultDedupTTL;
// 0 = forever), independent of a value's ttl. d outside [0, state.MaxTTL] is an
// error. Every constructor takes it. A claim must outlive the client's retries
// of the call that made it (the SDK retries a call for seconds): a retried MergeUpdateOnce whose first attempt
// was applied, and whose claim expired in between, applies again. Keep d at
// minutes or more.
func WithDedupTTL(d time.Duration) Option {
	return storeopt.Any(func(c *config) error { return c.SetDedupTTL(d) })
}

// WithMeterProvider sets the meter provider of the signals only the store or
// deduper knows (default: otel.GetMeterProvider() at construction): retries and
// give-ups (pipestate.retries, pipestate.giveups) of merges that lost a race
// (cas_conflict), whose transaction a concurrent one cancelled
// (transaction_conflict), or that DynamoDB throttled (throttled: also every
// request the SDK's retryer retried after a throttle), and of batch reads whose
// keys DynamoDB left unprocessed (unprocessed). See "Signals" in the package doc;
// mp must not be nil.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return storeopt.Any(func(c *config) error { return c.SetMeterProvider(mp) })
}

// WithLogger sets the logger of the same signals (default: none): Debug for each
// retry, Warn for each give-up. log must not be nil.
func WithLogger(log *slog.Logger) Option {
	return storeopt.Any(func(c *config) error { return c.SetLogger(log) })
}
