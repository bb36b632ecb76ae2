package state

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/pipestate/pipestate/internal/nilcheck"
	"github.com/pipestate/pipestate/monoid"
)

// ErrBufferFull is returned by Coalescer.Add when MaxKeys distinct keys are buffered
// or in flight and a flush could not make room: the delta was not accepted.
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

// WithMaxKeys bounds the distinct keys buffered (default DefaultCoalescerMaxKeys),
// counting the keys of a flush in flight until they are written, so the buffer
// stays bounded while the store refuses writes: an Add of a new key into a full
// buffer flushes first, and is refused with ErrBufferFull while that leaves it full.
// n < 1 is an error.
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

// WithErrorHandler receives the errors of the flushes no caller waits for: background
// (interval) flushes, which run with context.Background() (the store's own timeouts
// apply), and flushes started by an Add that made room (Add accepted its delta).
// Without a handler, they are kept (the first 16, then counted) and returned,
// joined, by the next Flush or Close. f is called from the flushing goroutine (the
// background one, or an Add's caller), so it may run concurrently with itself and
// must be safe for that; it must not be nil and must not call the Coalescer's Add,
// Flush or Close.
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
// non-commutative monoids) and is retried on the next flush, and the error of every
// flush, whichever call started it, is returned by Flush / Close (or by the Add it
// refused) or passed to the error handler. The exceptions are
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

	// flushing holds a token while a flush runs: one flush at a time, so retried
	// deltas keep their order, and a caller waits for it no longer than its ctx.
	flushing chan struct{}

	mu       sync.Mutex
	buf      map[Key]V // deltas added since the flush in flight took the buffer
	inflight map[Key]V // the flush in flight's deltas not yet written (nil: none)
	keys     int       // distinct keys in buf or inflight, bounded by maxKeys
	stalled  struct {  // the last flush, if it failed and left the buffer full
		at  time.Time
		err error
	}
	closed bool
	bgErrs []error // background flush errors for the next Flush/Close (no handler)
	bgMore int     // background errors beyond maxBackgroundErrors, counted only

	bg       context.Context // of background flushes; cancelled by a Close whose ctx ends first
	cancelBg context.CancelFunc
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}

	deltas, flushes, writes, failures atomic.Uint64
}

// NewCoalescer returns a Coalescer writing to store with m (whose Combine must be
// the store's monoid). A nil store or monoid (also a typed nil, an interface holding
// a nil pointer), or a bad option, is an error wrapping ErrInvalidArgument; so is an
// error of the meter provider creating the
// Coalescer's instruments. With a positive flush interval it starts a goroutine,
// stopped by Close.
func NewCoalescer[V any](store Store[V], m monoid.Monoid[V], opts ...CoalescerOption) (*Coalescer[V], error) {
	if nilcheck.IsNil(store) || nilcheck.IsNil(m) {
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
	c := &Coalescer[V]{store: store, m: m, cfg: cfg, buf: map[Key]V{}, flushing: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	c.bg, c.cancelBg = context.WithCancel(context.Background())
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
			if err := c.flush(c.bg); err != nil {
				c.report(err)
			}
		}
	}
}

// maxBackgroundErrors bounds the background errors kept for the next Flush.
const maxBackgroundErrors = 16

// report hands err, the error of a flush no caller waits for, to the error handler,
// or keeps it for the next Flush or Close (the first maxBackgroundErrors, then
// counted).
func (c *Coalescer[V]) report(err error) {
	if c.cfg.onError != nil {
		c.cfg.onError(err)
		return
	}
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
// ctx returns ctx.Err(). When k is new and MaxKeys keys are buffered or in flight,
// Add waits for a flush in flight and then, if that did not make room, flushes (in
// the caller's goroutine, with ctx); if the buffer is still full it returns an error
// wrapping ErrBufferFull and the flush's error (or ctx's, if it ended the wait), and
// the delta was not accepted. During an outage, after a flush that failed and left
// the buffer full, Adds of new keys are refused at once, without a flush, for the
// flush interval (DefaultFlushInterval without one): a refused Add never sends the
// whole buffer again to a store that is refusing it. When its flush made room but failed some keys, Add
// accepts the delta and reports the flush's error like a background one.
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
	if ok, err := c.accept(k, delta); ok || err != nil {
		return err
	}
	if err := c.lockFlush(ctx); err != nil {
		return fmt.Errorf("%w: %d keys buffered: %w", ErrBufferFull, c.cfg.maxKeys, err)
	}
	// Accepting and reporting under the flush token orders them before a Close.
	defer c.unlockFlush()
	var flushErr error
	if !c.hasRoom(k) { // a flush in flight may have made room
		if err := c.stalledErr(); err != nil {
			return fmt.Errorf("%w: %d keys buffered and the last flush freed none: %w", ErrBufferFull, c.cfg.maxKeys, err)
		}
		flushErr = c.flushLocked(ctx)
	}
	ok, err := c.accept(k, delta)
	switch {
	case err != nil:
		return errors.Join(err, flushErr)
	case !ok && flushErr != nil:
		return fmt.Errorf("%w: %d keys buffered: %w", ErrBufferFull, c.cfg.maxKeys, flushErr)
	case !ok:
		return fmt.Errorf("%w: %d keys buffered", ErrBufferFull, c.cfg.maxKeys)
	case flushErr != nil:
		c.report(flushErr)
	}
	return nil
}

// stalledErr returns the error of the last flush if it left the buffer full less
// than stallBackoff ago: an Add then refuses its key at once rather than send the
// whole buffer again to a store that is refusing it.
func (c *Coalescer[V]) stalledErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stalled.err != nil && time.Since(c.stalled.at) < c.stallBackoff() {
		return c.stalled.err
	}
	return nil
}

// stallBackoff is how long after a flush that left the buffer full an Add flushes
// again: the flush interval, or DefaultFlushInterval without one.
func (c *Coalescer[V]) stallBackoff() time.Duration {
	return cmp.Or(c.cfg.interval, DefaultFlushInterval)
}

// accept buffers delta for k if k is buffered or in flight, or there is room for
// one more key; false means the buffer is full.
func (c *Coalescer[V]) accept(k Key, delta V) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false, fmt.Errorf("coalescer: %w", ErrClosed)
	}
	if !c.hasRoomLocked(k) {
		return false, nil
	}
	cur, buffered := c.buf[k]
	if !buffered {
		cur = c.m.Identity()
	}
	next, err := Combine(c.m, cur, delta)
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	if _, flying := c.inflight[k]; !buffered && !flying {
		c.keys++
	}
	c.buf[k] = next
	c.deltas.Add(1)
	return true, nil
}

// hasRoom reports whether a delta for k would be accepted now.
func (c *Coalescer[V]) hasRoom(k Key) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hasRoomLocked(k)
}

func (c *Coalescer[V]) hasRoomLocked(k Key) bool {
	if _, ok := c.buf[k]; ok {
		return true
	}
	if _, ok := c.inflight[k]; ok {
		return true
	}
	return c.keys < c.cfg.maxKeys
}

// lockFlush waits until no flush is in flight and takes the flush token, or
// returns ctx's error.
func (c *Coalescer[V]) lockFlush(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case c.flushing <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *Coalescer[V]) unlockFlush() { <-c.flushing }

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

// flush writes the buffer once, after any flush in flight.
func (c *Coalescer[V]) flush(ctx context.Context) error {
	if err := c.lockFlush(ctx); err != nil {
		return err
	}
	defer c.unlockFlush()
	return c.flushLocked(ctx)
}

// flushLocked writes the buffer once; the caller holds the flush token. The keys
// stay in flight (counted by the bound) until written, dropped or put back.
func (c *Coalescer[V]) flushLocked(ctx context.Context) error {
	c.mu.Lock()
	batch := c.buf
	if len(batch) == 0 {
		c.mu.Unlock()
		return nil
	}
	c.buf, c.inflight = make(map[Key]V, len(batch)), batch
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
		var kept, done []Key
		var keptErr error
		for i, u := range r.ups {
			var err error
			if r.errs != nil {
				err = r.errs[i]
			}
			switch {
			case err == nil:
				c.writes.Add(1)
				done = append(done, u.Key)
			case errors.Is(err, ErrInvalidArgument):
				c.failures.Add(1)
				failed++
				errs = append(errs, fmt.Errorf("coalescer: dropped key %q/%d: %w", u.Key.Entity, u.Key.Bucket, err))
				done = append(done, u.Key)
			default:
				c.failures.Add(1)
				failed++
				if kept = append(kept, u.Key); keptErr == nil {
					keptErr = err
				}
			}
		}
		c.landed(done)
		switch {
		case len(kept) == 1:
			errs = append(errs, fmt.Errorf("coalescer: key %q/%d kept for retry: %w", kept[0].Entity, kept[0].Bucket, keptErr))
		case len(kept) > 1:
			errs = append(errs, fmt.Errorf("coalescer: %d keys kept for retry, the first %q/%d: %w", len(kept), kept[0].Entity, kept[0].Bucket, keptErr))
		}
	}
	if unsent := len(ups) - tried; unsent > 0 {
		errs = append(errs, fmt.Errorf("coalescer: flush stopped, %d keys kept: %w", unsent, ctx.Err()))
	}
	kept, restoreErrs := c.restore()
	err := errors.Join(append(errs, restoreErrs...)...)
	c.mu.Lock()
	if err != nil && c.keys >= c.cfg.maxKeys {
		c.stalled.at, c.stalled.err = time.Now(), err
	} else {
		c.stalled.err = nil
	}
	c.mu.Unlock()
	c.sig.flushed(ctx, keys, failed, kept, time.Since(start), err)
	return err
}

// landed takes the keys of the flush in flight that were written or dropped out of
// flight, freeing their room unless deltas were added to them since.
func (c *Coalescer[V]) landed(ks []Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range ks {
		delete(c.inflight, k)
		if _, ok := c.buf[k]; !ok {
			c.keys--
		}
	}
}

// restore ends the flush in flight: it puts its unwritten deltas back in front of
// what was added since, and returns how many keys it put back. When the two do not
// combine (an int64 sum past its range: each was accepted on its own), it keeps the
// older delta and returns an error naming the key whose newer deltas it dropped.
// The key count does not change: a key in flight was counted once, buffered again
// or not.
func (c *Coalescer[V]) restore() (int, []error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	batch := c.inflight
	c.inflight = nil
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
	return len(batch), errs
}

// Close stops the background flush, refuses later Adds (ErrClosed), stops reporting
// pending keys to the meter provider, and flushes what is buffered, returning
// Flush's error (joined with the meter provider's, if unregistering failed). It
// waits for a background flush in flight no longer than ctx allows: when ctx ends
// first, that flush is cancelled and Close returns ctx's error. Keys it could not
// write stay buffered: Pending reports them and a later Flush retries them. Close
// is idempotent.
func (c *Coalescer[V]) Close(ctx context.Context) error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	var unregErr error
	c.stopOnce.Do(func() {
		close(c.stop)
		unregErr = c.sig.close()
	})
	select {
	case <-c.done:
	case <-ctx.Done(): // a background flush is still writing: stop it (its keys stay buffered)
		c.cancelBg()
	}
	return errors.Join(c.Flush(ctx), unregErr)
}

// Pending returns the number of distinct keys buffered, counting those of a flush
// in flight until they are written: the number WithMaxKeys bounds.
func (c *Coalescer[V]) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.keys
}

// Stats returns counters of what the Coalescer did.
func (c *Coalescer[V]) Stats() CoalescerStats {
	return CoalescerStats{Deltas: c.deltas.Load(), Flushes: c.flushes.Load(), Writes: c.writes.Load(), Failures: c.failures.Load()}
}
