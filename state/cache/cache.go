package cache

import (
	"bytes"
	"context"
	"fmt"
	"hash/maphash"
	"reflect"
	"sync"
	"time"

	"github.com/maypok86/otter/v2"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/pipestate/pipestate/internal/lifecycle"
	"github.com/pipestate/pipestate/internal/modversion"
	"github.com/pipestate/pipestate/internal/nilcheck"
	"github.com/pipestate/pipestate/internal/signal"
	"github.com/pipestate/pipestate/state"
)

//go:generate go run github.com/pipestate/pipestate/internal/capwrap -pkg cache -out restrict_store.go -func restrictStore -base state.Store[V] -opt onceMethods[V],batchMethods[V] -import github.com/pipestate/pipestate/state -tparams "V any" -targs V

// Defaults of New.
const (
	DefaultStaleness = 100 * time.Millisecond
	DefaultMaxKeys   = 10_000
)

// MaxStaleness is the longest staleness WithStaleness accepts: an in-process cache
// is for hot reads, not for hiding other processes' writes for long.
const MaxStaleness = time.Hour

// Option configures New.
type Option func(*config) error

type config struct {
	staleness time.Duration
	maxKeys   int
	now       func() time.Time
	clock     bool // now was set by WithClock
	clone     any  // func(V) V, checked by New
	mp        metric.MeterProvider
}

// WithStaleness sets how long a value read from the store may be served from the
// cache, counted from the start of the read that fetched it (default
// DefaultStaleness). d must be in (0, MaxStaleness].
func WithStaleness(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 || d > MaxStaleness {
			return state.Invalidf("cache: staleness %v outside (0, %v]", d, MaxStaleness)
		}
		c.staleness = d
		return nil
	}
}

// WithMaxKeys bounds the keys cached (default DefaultMaxKeys); past it, the least
// useful are evicted (otter's S3-FIFO policy). n < 1 is an error.
func WithMaxKeys(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return state.Invalidf("cache: max keys %d is below 1", n)
		}
		c.maxKeys = n
		return nil
	}
}

// WithClock makes the cache judge staleness by now (default time.Now), for tests.
// now must not be nil.
func WithClock(now func() time.Time) Option {
	return func(c *config) error {
		if now == nil {
			return state.Invalidf("cache: nil clock")
		}
		c.now, c.clock = now, true
		return nil
	}
}

// WithClone sets how a cached value is copied, so that a caller changing a value
// Get returned never changes what the cache holds (the stores' no-aliasing rule).
// New requires it when V holds references (a map, a pointer, an interface, a
// slice other than []byte, which is copied by default); for a value type such as
// int64 no copy is needed. clone must not be nil.
func WithClone[V any](clone func(V) V) Option {
	return func(c *config) error {
		if clone == nil {
			return state.Invalidf("cache: nil clone")
		}
		c.clone = clone
		return nil
	}
}

// WithMeterProvider sets the meter provider of the cache's metrics (default:
// otel.GetMeterProvider() at construction): pipestate.cache.hits,
// pipestate.cache.misses and pipestate.cache.evictions (keys evicted for size).
// mp must not be nil.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) error {
		if nilcheck.IsNil(mp) {
			return state.Invalidf("cache: nil meter provider")
		}
		c.mp = mp
		return nil
	}
}

// onceMethods is what state.OnceStore adds to state.Store.
type onceMethods[V any] interface {
	MergeUpdateOnce(ctx context.Context, eventID string, k state.Key, delta V, ttl time.Duration) (applied bool, err error)
}

// batchMethods is what state.BatchStore adds to state.Store.
type batchMethods[V any] interface {
	MergeMany(ctx context.Context, updates []state.Update[V]) error
}

// New returns s with an in-process read cache in front of its Get and GetMany; see
// the package doc for what it guarantees. The result implements state.OnceStore
// and state.BatchStore exactly when s does. A nil s (also a typed nil), a bad
// option, a V holding references without WithClone, or an error of the meter
// provider is an error wrapping ErrInvalidArgument. Close closes s.
func New[V any](s state.Store[V], opts ...Option) (state.Store[V], error) {
	if nilcheck.IsNil(s) {
		return nil, state.Invalidf("cache: nil store")
	}
	cfg := config{staleness: DefaultStaleness, maxKeys: DefaultMaxKeys, now: time.Now}
	for _, o := range opts {
		if o == nil {
			return nil, state.Invalidf("cache: nil option")
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	clone, err := cloneFunc[V](cfg.clone)
	if err != nil {
		return nil, err
	}
	mp := cfg.mp
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	sig, err := newSignals(mp)
	if err != nil {
		return nil, fmt.Errorf("%w: cache: metrics: %w", state.ErrInvalidArgument, err)
	}
	c := &cached[V]{s: s, flag: lifecycle.New("state/cache"), now: cfg.now, staleness: cfg.staleness, clone: clone,
		sig: sig, seed: maphash.MakeSeed()}
	o := &otter.Options[state.Key, entry[V]]{
		MaximumSize:      cfg.maxKeys,
		ExpiryCalculator: otter.ExpiryWriting[state.Key, entry[V]](cfg.staleness),
		OnDeletion: func(e otter.DeletionEvent[state.Key, entry[V]]) {
			if e.Cause == otter.CauseOverflow {
				sig.evictions.Add(context.Background(), 1)
			}
		},
	}
	if cfg.clock {
		o.Clock = clock(cfg.now)
	}
	c.c, err = otter.New(o)
	if err != nil {
		return nil, fmt.Errorf("%w: cache: %w", state.ErrInvalidArgument, err)
	}
	return restrictStore(s, c), nil
}

// cloneFunc returns the copy of V to use: clone if set (it must be a func(V) V),
// bytes.Clone for []byte, the identity for types without references.
func cloneFunc[V any](clone any) (func(V) V, error) {
	if clone != nil {
		f, ok := clone.(func(V) V)
		if !ok {
			return nil, state.Invalidf("cache: WithClone of %T for values of %v", clone, reflect.TypeFor[V]())
		}
		return f, nil
	}
	if _, ok := any((*V)(nil)).(*[]byte); ok {
		return func(v V) V { return any(bytes.Clone(any(v).([]byte))).(V) }, nil
	}
	if holdsReferences(reflect.TypeFor[V]()) {
		return nil, state.Invalidf("cache: values of %v hold references: give WithClone", reflect.TypeFor[V]())
	}
	return func(v V) V { return v }, nil
}

// holdsReferences reports whether copying a value of t shares memory with it.
func holdsReferences(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Map, reflect.Pointer, reflect.Slice, reflect.Interface, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return true
	case reflect.Array:
		return holdsReferences(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if holdsReferences(t.Field(i).Type) {
				return true
			}
		}
	}
	return false
}

// clock adapts a clock set by WithClock to otter's. It gives no ticks: expired
// entries are dropped when met, not by a periodic clean-up on real time.
type clock func() time.Time

func (c clock) NowNano() int64                      { return c().UnixNano() }
func (c clock) Tick(time.Duration) <-chan time.Time { return nil }

// entry is one cached read: the value, whether the store had it, and when the read
// that fetched it began.
type entry[V any] struct {
	v     V
	found bool
	read  time.Time
}

// stripes is how many generation counters guard fills; a write to a key bumps its
// stripe's, so that a read that overlapped it cannot fill the cache with what it
// read before the write.
const stripes = 256

type stripe struct {
	mu  sync.Mutex
	gen uint64
}

type cached[V any] struct {
	s         state.Store[V]
	c         *otter.Cache[state.Key, entry[V]]
	flag      *lifecycle.Flag
	now       func() time.Time
	staleness time.Duration
	clone     func(V) V
	sig       *signals
	seed      maphash.Seed
	stripes   [stripes]stripe
}

func (c *cached[V]) stripe(k state.Key) *stripe {
	return &c.stripes[maphash.Comparable(c.seed, k)%stripes]
}

// gen returns the generation of k's stripe, read before a read of the store.
func (c *cached[V]) gen(k state.Key) uint64 {
	st := c.stripe(k)
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.gen
}

// fill caches e for k unless a write to k's stripe ended since gen was read.
func (c *cached[V]) fill(k state.Key, gen uint64, e entry[V]) {
	st := c.stripe(k)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.gen == gen {
		e.v = c.clone(e.v)
		c.c.Set(k, e)
	}
}

// wrote ends a write to ks, whatever its outcome (an error may hide an applied
// write): it drops their cached values and turns away fills of reads that
// overlapped the write.
func (c *cached[V]) wrote(ks ...state.Key) {
	for _, k := range ks {
		st := c.stripe(k)
		st.mu.Lock()
		st.gen++
		c.c.Invalidate(k)
		st.mu.Unlock()
	}
}

// lookup returns k's cached value if it is fresh.
func (c *cached[V]) lookup(ctx context.Context, k state.Key) (entry[V], bool) {
	e, ok := c.c.GetIfPresent(k)
	if ok && c.now().Sub(e.read) < c.staleness {
		c.sig.hits.Add(ctx, 1)
		e.v = c.clone(e.v)
		return e, true
	}
	c.sig.misses.Add(ctx, 1)
	return entry[V]{}, false
}

// Get implements state.Store: a fresh cached value, else the store's (cached).
func (c *cached[V]) Get(ctx context.Context, k state.Key) (V, bool, error) {
	if err := c.flag.Enter(ctx, state.CheckKey(k)); err != nil {
		var zero V
		return zero, false, err
	}
	if e, ok := c.lookup(ctx, k); ok {
		return e.v, e.found, nil
	}
	gen, start := c.gen(k), c.now()
	v, found, err := c.s.Get(ctx, k)
	if err == nil {
		c.fill(k, gen, entry[V]{v: v, found: found, read: start})
	}
	return v, found, err
}

// GetMany implements state.Store: fresh cached values, and one GetMany of the
// store for the rest.
func (c *cached[V]) GetMany(ctx context.Context, ks []state.Key) ([]V, []bool, error) {
	if err := c.flag.Enter(ctx, state.CheckKeys(ks)); err != nil {
		return nil, nil, err
	}
	vals, found := make([]V, len(ks)), make([]bool, len(ks))
	var miss []int // indexes of ks to read from the store
	for i, k := range ks {
		if e, ok := c.lookup(ctx, k); ok {
			vals[i], found[i] = e.v, e.found
		} else {
			miss = append(miss, i)
		}
	}
	if len(miss) == 0 {
		return vals, found, nil
	}
	mks, gens, start := make([]state.Key, len(miss)), make([]uint64, len(miss)), c.now()
	for j, i := range miss {
		mks[j], gens[j] = ks[i], c.gen(ks[i])
	}
	mv, mf, err := c.s.GetMany(ctx, mks)
	if err != nil {
		return nil, nil, err
	}
	for j, i := range miss {
		vals[i], found[i] = mv[j], mf[j]
		c.fill(mks[j], gens[j], entry[V]{v: mv[j], found: mf[j], read: start})
	}
	return vals, found, nil
}

// MergeUpdate implements state.Store: the store's, then k is dropped from the cache.
func (c *cached[V]) MergeUpdate(ctx context.Context, k state.Key, delta V, ttl time.Duration) error {
	if err := c.flag.Enter(ctx); err != nil {
		return err
	}
	defer c.wrote(k)
	return c.s.MergeUpdate(ctx, k, delta, ttl)
}

// MergeUpdateOnce implements state.OnceStore when the store does.
func (c *cached[V]) MergeUpdateOnce(ctx context.Context, eventID string, k state.Key, delta V, ttl time.Duration) (bool, error) {
	if err := c.flag.Enter(ctx); err != nil {
		return false, err
	}
	defer c.wrote(k)
	return c.s.(onceMethods[V]).MergeUpdateOnce(ctx, eventID, k, delta, ttl)
}

// MergeMany implements state.BatchStore when the store does.
func (c *cached[V]) MergeMany(ctx context.Context, updates []state.Update[V]) error {
	if err := c.flag.Enter(ctx); err != nil {
		return err
	}
	ks := make([]state.Key, len(updates))
	for i, u := range updates {
		ks[i] = u.Key
	}
	defer c.wrote(ks...)
	return c.s.(batchMethods[V]).MergeMany(ctx, updates)
}

// Close closes the store and empties the cache; later calls return ErrClosed.
func (c *cached[V]) Close() error {
	c.flag.Close()
	c.c.InvalidateAll()
	c.c.StopAllGoroutines()
	return c.s.Close()
}

// signals are the cache's instruments.
type signals struct {
	hits, misses, evictions metric.Int64Counter
}

func newSignals(mp metric.MeterProvider) (*signals, error) {
	m := mp.Meter(signal.ScopeName, metric.WithInstrumentationVersion(modversion.Version()))
	var s signals
	var errs [3]error
	s.hits, errs[0] = m.Int64Counter("pipestate.cache.hits", metric.WithUnit("{read}"),
		metric.WithDescription("Keys read from an in-process cache."))
	s.misses, errs[1] = m.Int64Counter("pipestate.cache.misses", metric.WithUnit("{read}"),
		metric.WithDescription("Keys an in-process cache read from its store."))
	s.evictions, errs[2] = m.Int64Counter("pipestate.cache.evictions", metric.WithUnit("{key}"),
		metric.WithDescription("Keys an in-process cache evicted for its size bound."))
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return &s, nil
}
