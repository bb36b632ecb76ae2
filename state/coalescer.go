package state

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/pipestate/pipestate/monoid"
)

// ErrBufferFull is returned by Coalescer.Add when the buffer holds MaxKeys distinct
// keys and a flush could not make room: the delta was not accepted.
var ErrBufferFull = errors.New("state: coalescer buffer full")

// Coalescer defaults.
const (
	DefaultFlushInterval       = time.Second
	DefaultCoalescerMaxKeys    = 10_000
	DefaultCoalescerConcurrent = 16
)

// CoalescerOption configures a Coalescer.
type CoalescerOption func(*coalescerConfig) error

type coalescerConfig struct {
	interval    time.Duration
	maxKeys     int
	concurrency int
	ttl         time.Duration
	onError     func(error)
	mp          metric.MeterProvider // nil: the global one
	log         *slog.Logger         // nil: none
}

// WithFlushInterval sets how often the Coalescer flushes in the background (default
// DefaultFlushInterval); 0 turns the background flush off (flush with Flush, the size
// bound and Close). Negative is an error.
func WithFlushInterval(d time.Duration) CoalescerOption {
	return func(c *coalescerConfig) error {
		if d < 0 {
			return Invalidf("flush interval %v is negative", d)
		}
		c.interval = d
		return nil
	}
}

// WithMaxKeys bounds the distinct keys buffered (default DefaultCoalescerMaxKeys):
// an Add of a new key into a full buffer flushes first. n < 1 is an error.
func WithMaxKeys(n int) CoalescerOption {
	return func(c *coalescerConfig) error {
		if n < 1 {
			return Invalidf("max keys %d is below 1", n)
		}
		c.maxKeys = n
		return nil
	}
}

// WithFlushConcurrency sets how many store writes (MergeUpdate calls, or MergeMany
// calls on a BatchStore) one flush runs at once (default
// DefaultCoalescerConcurrent). n < 1 is an error.
func WithFlushConcurrency(n int) CoalescerOption {
	return func(c *coalescerConfig) error {
		if n < 1 {
			return Invalidf("flush concurrency %d is below 1", n)
		}
		c.concurrency = n
		return nil
	}
}

// WithWriteTTL sets the ttl of every store write (default 0: no expiry). Negative is
// an error.
func WithWriteTTL(ttl time.Duration) CoalescerOption {
	return func(c *coalescerConfig) error {
		if err := CheckTTL(ttl); err != nil {
			return err
		}
		c.ttl = ttl
		return nil
	}
}

// WithErrorHandler receives the errors of background (interval) flushes, which run
// with context.Background() (the store's own timeouts apply). Without a handler, they
// are kept (the first 16, then counted) and returned, joined, by the next Flush or
// Close. f must not be
// nil and must not call the Coalescer's Flush or Close.
func WithErrorHandler(f func(error)) CoalescerOption {
	return func(c *coalescerConfig) error {
		if f == nil {
			return Invalidf("nil error handler")
		}
		c.onError = f
		return nil
	}
}

// CoalescerStats counts what a Coalescer did since it was created.
type CoalescerStats struct {
	Deltas   uint64 // deltas accepted by Add
	Flushes  uint64 // flushes run (interval, size bound, Flush, Close)
	Writes   uint64 // keys written (one per key per flush, also within a MergeMany)
	Failures uint64 // keys whose write failed (their deltas were kept or reported)
}

// Coalescer buffers deltas per key in memory, combined with the monoid in arrival
// order, and writes each buffered key to the store once per flush: one MergeUpdate
// per key, or, when the store is a BatchStore, one MergeMany per MergeBatchSize keys
// (WithFlushConcurrency of either at once).
// It flushes every flush interval, when an Add of a new key finds MaxKeys keys
// buffered, on Flush and on Close. It is safe for concurrent use.
//
// Nothing is dropped silently: a key whose write fails keeps its delta (combined
// before any delta added since, so arrival order is preserved even for
// non-commutative monoids) and is retried on the next flush, and the error is
// returned by Flush / Close or passed to the error handler. The exceptions are
// reported, never silent: a write rejected with ErrInvalidArgument is dropped (it
// can never succeed) and named in the error; so are the deltas added to a key
// during a flush that failed its write when they no longer combine with the kept
// delta (an int64 sum past its range); and a write whose outcome is unknown
// (a timeout after the store applied it) is retried, so a plain MergeUpdate may
// apply that delta twice. Deltas still buffered when the process exits are lost:
// call Close.
//
// It records its pending keys, flush sizes, flush durations and failed flushes as
// OpenTelemetry metrics (WithMeterProvider) and logs each flush (WithLogger);
// Stats counts the same events without either.
type Coalescer[V any] struct {
	store Store[V]
	m     monoid.Monoid[V]
	cfg   coalescerConfig
	sig   *coalescerSignals

	flushMu sync.Mutex // one flush at a time, so retried deltas keep their order

	mu     sync.Mutex
	buf    map[Key]V
	closed bool
	bgErrs []error // background flush errors for the next Flush/Close (no handler)
	bgMore int     // background errors beyond maxBackgroundErrors, counted only

	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}

	deltas, flushes, writes, failures atomic.Uint64
}

// NewCoalescer returns a Coalescer writing to store with m (whose Combine must be
// the store's monoid). A nil store or monoid, or a bad option, is an error wrapping
// ErrInvalidArgument; so is an error of the meter provider creating the
// Coalescer's instruments. With a positive flush interval it starts a goroutine,
// stopped by Close.
func NewCoalescer[V any](store Store[V], m monoid.Monoid[V], opts ...CoalescerOption) (*Coalescer[V], error) {
	if store == nil || m == nil {
		return nil, Invalidf("NewCoalescer: nil store or monoid")
	}
	cfg := coalescerConfig{interval: DefaultFlushInterval, maxKeys: DefaultCoalescerMaxKeys, concurrency: DefaultCoalescerConcurrent}
	for _, o := range opts {
		if o == nil {
			return nil, Invalidf("NewCoalescer: nil option")
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	c := &Coalescer[V]{store: store, m: m, cfg: cfg, buf: map[Key]V{}, stop: make(chan struct{}), done: make(chan struct{})}
	sig, err := newCoalescerSignals(cfg, c.Pending)
	if err != nil {
		return nil, fmt.Errorf("%w: NewCoalescer: metrics: %w", ErrInvalidArgument, err)
	}
	c.sig = sig
	if cfg.interval > 0 {
		go c.loop()
	} else {
		close(c.done)
	}
	return c, nil
}

func (c *Coalescer[V]) loop() {
	defer close(c.done)
	t := time.NewTicker(c.cfg.interval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			if err := c.flush(context.Background()); err != nil {
				if c.cfg.onError != nil {
					c.cfg.onError(err)
				} else {
					c.keepBackgroundError(err)
				}
			}
		}
	}
}

// maxBackgroundErrors bounds the background errors kept for the next Flush.
const maxBackgroundErrors = 16

// keepBackgroundError records err for the next Flush or Close, keeping the first
// maxBackgroundErrors and counting the rest.
func (c *Coalescer[V]) keepBackgroundError(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.bgErrs) < maxBackgroundErrors {
		c.bgErrs = append(c.bgErrs, err)
	} else {
		c.bgMore++
	}
}

// Add buffers delta for k, combined with what is buffered for k. A bad key or delta
// is an error wrapping ErrInvalidArgument; after Close it is ErrClosed; a cancelled
// ctx returns ctx.Err(). When k is new and the buffer is full, Add flushes first (in
// the caller's goroutine, with ctx); if the buffer is still full it returns an error
// wrapping ErrBufferFull and the flush error, and the delta was not accepted.
func (c *Coalescer[V]) Add(ctx context.Context, k Key, delta V) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := CheckKey(k); err != nil {
		return err
	}
	if err := CheckDelta(c.m, delta); err != nil {
		return err
	}
	for flushed := false; ; flushed = true {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return fmt.Errorf("coalescer: %w", ErrClosed)
		}
		cur, ok := c.buf[k]
		if ok || len(c.buf) < c.cfg.maxKeys {
			if !ok {
				cur = c.m.Identity()
			}
			next, err := Combine(c.m, cur, delta)
			if err != nil {
				c.mu.Unlock()
				return fmt.Errorf("%w: %w", ErrInvalidArgument, err)
			}
			c.buf[k] = next
			c.mu.Unlock()
			c.deltas.Add(1)
			return nil
		}
		c.mu.Unlock()
		if flushed {
			return fmt.Errorf("%w: %d keys buffered", ErrBufferFull, c.cfg.maxKeys)
		}
		if err := c.flush(ctx); err != nil {
			c.mu.Lock()
			full := len(c.buf) >= c.cfg.maxKeys
			c.mu.Unlock()
			if full {
				return fmt.Errorf("%w: %w", ErrBufferFull, err)
			}
		}
	}
}

// Flush writes every buffered key now (one MergeUpdate per key, or MergeMany
// batches on a BatchStore) and returns the errors of the keys that failed (kept for
// the next flush; the keys of one failed MergeMany in one error) joined with
// background errors not yet reported. A cancelled ctx stops the flush; unwritten keys stay
// buffered. Flush works after Close, to retry what Close could not write.
func (c *Coalescer[V]) Flush(ctx context.Context) error {
	err := c.flush(ctx)
	c.mu.Lock()
	bg := c.bgErrs
	if c.bgMore > 0 {
		bg = append(bg, fmt.Errorf("coalescer: %d more background flush errors", c.bgMore))
	}
	c.bgErrs, c.bgMore = nil, 0
	c.mu.Unlock()
	return errors.Join(append(bg, err)...)
}

// flush writes the buffer once.
func (c *Coalescer[V]) flush(ctx context.Context) error {
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	c.mu.Lock()
	batch := c.buf
	if len(batch) == 0 {
		c.mu.Unlock()
		return nil
	}
	c.buf = make(map[Key]V, len(batch))
	c.mu.Unlock()
	c.flushes.Add(1)
	start, keys, failed := time.Now(), len(batch), 0

	// A job is one store write: a MergeMany of up to MergeBatchSize updates when
	// the store is a BatchStore, else one MergeUpdate.
	size := 1
	if _, ok := c.store.(BatchStore[V]); ok {
		size = MergeBatchSize
	}
	ups := make([]Update[V], 0, len(batch))
	for k, v := range batch {
		ups = append(ups, Update[V]{Key: k, Delta: v, TTL: c.cfg.ttl})
	}
	type result struct {
		ups  []Update[V]
		errs []error // one per update; nil: all written
	}
	jobs := make(chan []Update[V])
	results := make(chan result)
	var wg sync.WaitGroup
	for range min(c.cfg.concurrency, (len(ups)+size-1)/size) {
		wg.Go(func() {
			for j := range jobs {
				results <- result{j, mergeAll(ctx, c.store, j)}
			}
		})
	}
	go func() {
		defer close(jobs)
		for i := 0; i < len(ups); i += size {
			if ctx.Err() != nil {
				return
			}
			jobs <- ups[i:min(i+size, len(ups))]
		}
	}()
	go func() { wg.Wait(); close(results) }()

	tried := 0
	var errs []error
	for r := range results {
		tried += len(r.ups)
		var kept []Key
		var keptErr error
		for i, u := range r.ups {
			var err error
			if r.errs != nil {
				err = r.errs[i]
			}
			switch {
			case err == nil:
				c.writes.Add(1)
				delete(batch, u.Key)
			case errors.Is(err, ErrInvalidArgument):
				c.failures.Add(1)
				failed++
				errs = append(errs, fmt.Errorf("coalescer: dropped key %q/%d: %w", u.Key.Entity, u.Key.Bucket, err))
				delete(batch, u.Key)
			default:
				c.failures.Add(1)
				failed++
				if kept = append(kept, u.Key); keptErr == nil {
					keptErr = err
				}
			}
		}
		switch {
		case len(kept) == 1:
			errs = append(errs, fmt.Errorf("coalescer: key %q/%d kept for retry: %w", kept[0].Entity, kept[0].Bucket, keptErr))
		case len(kept) > 1:
			errs = append(errs, fmt.Errorf("coalescer: %d keys kept for retry, the first %q/%d: %w", len(kept), kept[0].Entity, kept[0].Bucket, keptErr))
		}
	}
	if len(batch) > 0 {
		if unsent := len(ups) - tried; unsent > 0 {
			errs = append(errs, fmt.Errorf("coalescer: flush stopped, %d keys kept: %w", unsent, ctx.Err()))
		}
		errs = append(errs, c.restore(batch)...)
	}
	err := errors.Join(errs...)
	c.sig.flushed(ctx, keys, failed, len(batch), time.Since(start), err)
	return err
}

// restore puts unwritten deltas back in front of what was added since. When the
// two do not combine (an int64 sum past its range: each was accepted on its own),
// it keeps the older delta and returns an error naming the key whose newer deltas
// it dropped.
func (c *Coalescer[V]) restore(batch map[Key]V) []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for k, d := range batch {
		if cur, ok := c.buf[k]; ok {
			next, err := Combine(c.m, d, cur)
			if err != nil {
				errs = append(errs, fmt.Errorf("coalescer: dropped the deltas added to key %q/%d during the flush (they do not combine with its kept delta): %w", k.Entity, k.Bucket, err))
			} else {
				d = next
			}
		}
		c.buf[k] = d
	}
	return errs
}

// Close stops the background flush, refuses later Adds (ErrClosed), stops reporting
// pending keys to the meter provider, and flushes what is buffered, returning
// Flush's error (joined with the meter provider's, if unregistering failed). Keys it
// could not write stay buffered: Pending reports them and a later Flush retries
// them. Close is idempotent.
func (c *Coalescer[V]) Close(ctx context.Context) error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	var unregErr error
	c.stopOnce.Do(func() {
		close(c.stop)
		unregErr = c.sig.close()
	})
	<-c.done
	return errors.Join(c.Flush(ctx), unregErr)
}

// Pending returns the number of keys buffered.
func (c *Coalescer[V]) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.buf)
}

// Stats returns counters of what the Coalescer did.
func (c *Coalescer[V]) Stats() CoalescerStats {
	return CoalescerStats{Deltas: c.deltas.Load(), Flushes: c.flushes.Load(), Writes: c.writes.Load(), Failures: c.failures.Load()}
}
