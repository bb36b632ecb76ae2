package state

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/pipestate/pipestate/internal/modversion"
	"github.com/pipestate/pipestate/internal/nilcheck"
	"github.com/pipestate/pipestate/internal/signal"
)

// WithMeterProvider sets the meter provider of the Coalescer's metrics (default:
// otel.GetMeterProvider() at construction): keys pending
// (pipestate.coalescer.pending), keys per flush (pipestate.coalescer.flush.size),
// flush latency (pipestate.coalescer.flush.duration) and failed flushes
// (pipestate.coalescer.flush.failures); package observe's doc lists them. Until an
// SDK is installed nothing is recorded. mp must not be nil.
func WithMeterProvider(mp metric.MeterProvider) CoalescerOption {
	return func(c *coalescerConfig) error {
		if nilcheck.IsNil(mp) {
			return Invalidf("nil meter provider")
		}
		c.mp = mp
		return nil
	}
}

// WithLogger sets the logger of the Coalescer's flushes (default: none): a Debug
// record per flush and a Warn record per failed flush, with key counts, never keys
// or values. log must not be nil.
func WithLogger(log *slog.Logger) CoalescerOption {
	return func(c *coalescerConfig) error {
		if log == nil {
			return Invalidf("nil logger")
		}
		c.log = log
		return nil
	}
}

// coalescerSignals are the instruments and logger of one Coalescer.
type coalescerSignals struct {
	log      *slog.Logger
	size     metric.Int64Histogram
	duration metric.Float64Histogram
	failures metric.Int64Counter
	reg      metric.Registration // the callback observing the pending keys
}

// Bucket boundaries: keys per flush up to DefaultCoalescerMaxKeys and beyond, and
// the durations of the database-client conventions.
var (
	flushSizeBuckets     = []float64{1, 5, 10, 50, 100, 500, 1000, 5000, 10000, 50000}
	flushDurationBuckets = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10}
)

// newCoalescerSignals creates the instruments of cfg's meter provider and registers
// a callback observing count() pending keys; an error is the meter provider's.
func newCoalescerSignals(cfg coalescerConfig, count func() int) (*coalescerSignals, error) {
	mp, log := cfg.mp, cfg.log
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := mp.Meter(signal.ScopeName, metric.WithInstrumentationVersion(modversion.Version()))
	s := &coalescerSignals{log: log}
	var (
		errs    [4]error
		pending metric.Int64ObservableUpDownCounter
	)
	s.size, errs[0] = m.Int64Histogram("pipestate.coalescer.flush.size", metric.WithUnit("{key}"),
		metric.WithDescription("Keys taken by one Coalescer flush."), metric.WithExplicitBucketBoundaries(flushSizeBuckets...))
	s.duration, errs[1] = m.Float64Histogram("pipestate.coalescer.flush.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of Coalescer flushes."), metric.WithExplicitBucketBoundaries(flushDurationBuckets...))
	s.failures, errs[2] = m.Int64Counter("pipestate.coalescer.flush.failures", metric.WithUnit("{flush}"),
		metric.WithDescription("Coalescer flushes that returned an error: a key failed or was dropped, or the flush stopped."))
	pending, errs[3] = m.Int64ObservableUpDownCounter("pipestate.coalescer.pending", metric.WithUnit("{key}"),
		metric.WithDescription("Keys buffered by Coalescers, not yet written."))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(pending, int64(count()))
		return nil
	}, pending)
	if err != nil {
		return nil, err
	}
	s.reg = reg
	return s, nil
}

// flushed records one flush of keys keys that took d, of which failed failed and
// kept stayed buffered; err is the flush's error.
func (s *coalescerSignals) flushed(ctx context.Context, keys, failed, kept int, d time.Duration, err error) {
	s.size.Record(ctx, int64(keys))
	s.duration.Record(ctx, d.Seconds())
	if err != nil {
		s.failures.Add(ctx, 1)
		s.log.WarnContext(ctx, "pipestate: coalescer flush failed", "keys", keys, "failed", failed, "kept", kept, "error", err)
		return
	}
	s.log.DebugContext(ctx, "pipestate: coalescer flushed", "keys", keys, "duration", d)
}

// close unregisters the callback of the pending keys.
func (s *coalescerSignals) close() error { return s.reg.Unregister() }
