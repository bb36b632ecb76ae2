package cache_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/pipestate/pipestate/internal/testkit/fakeclock"
	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/cache"
	"github.com/pipestate/pipestate/state/internal/storetest"
	"github.com/pipestate/pipestate/state/memstate"
	"github.com/pipestate/pipestate/state/statetest"
)

var start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// roots keeps one memory store and its clock per test name; each Open is a new
// cache over a new handle of it, as each process has its own cache.
type roots struct {
	mu     sync.Mutex
	clocks map[string]*fakeclock.Clock
	stores map[string]*memstate.Store[int64]
}

func (r *roots) get(t *testing.T) (*memstate.Store[int64], *fakeclock.Clock) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stores == nil {
		r.clocks, r.stores = map[string]*fakeclock.Clock{}, map[string]*memstate.Store[int64]{}
	}
	if s, ok := r.stores[t.Name()]; ok {
		return s, r.clocks[t.Name()]
	}
	clk := fakeclock.New(start)
	s, err := memstate.New[int64](monoid.Sum[int64]{}, memstate.WithClock(clk.Now), memstate.WithDedupTTL(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	r.stores[t.Name()], r.clocks[t.Name()] = s, clk
	return s, clk
}

func (r *roots) open(t *testing.T) state.Store[int64] {
	t.Helper()
	root, clk := r.get(t)
	s, err := cache.New[int64](root.NewHandle(), cache.WithClock(clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	var r roots
	statetest.RunStore(t, statetest.Harness[int64]{
		Open:      r.open,
		Sleep:     func(t *testing.T, d time.Duration) { _, c := r.get(t); c.Advance(d) },
		Monoid:    monoid.Sum[int64]{},
		Delta:     func(i int) int64 { return int64(i + 1) },
		Equal:     func(a, b int64) bool { return a == b },
		DedupTTL:  time.Hour,
		FakeTime:  true,
		Staleness: cache.DefaultStaleness, // each Open is another process's cache
	})
}

func get(t *testing.T, s state.Store[int64], k state.Key) int64 {
	t.Helper()
	v, _, err := s.Get(t.Context(), k)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func merge(t *testing.T, s state.Store[int64], k state.Key, d int64) {
	t.Helper()
	if err := s.MergeUpdate(t.Context(), k, d, 0); err != nil {
		t.Fatal(err)
	}
}

// TestStalenessBound: a write through another cache is seen once the staleness has
// passed since the read that filled this cache began, and not an instant later.
func TestStalenessBound(t *testing.T) {
	var r roots
	a, b, k := r.open(t), r.open(t), state.Key{Entity: "k"}
	_, clk := r.get(t)
	if v := get(t, a, k); v != 0 {
		t.Fatalf("first read = %d", v)
	}
	merge(t, b, k, 5)
	clk.Advance(cache.DefaultStaleness - time.Nanosecond)
	if v := get(t, a, k); v != 0 {
		t.Errorf("just before the staleness bound: %d, want the cached 0 (the cache is not in use?)", v)
	}
	clk.Advance(time.Nanosecond)
	if v := get(t, a, k); v != 5 {
		t.Errorf("at the staleness bound: %d, want 5", v)
	}
	if v := get(t, b, k); v != 5 {
		t.Errorf("the writer's cache: %d, want 5", v)
	}
}

// TestStalenessFromReadStart: the bound counts from the start of the read that
// filled the cache, so a slow read leaves less of it.
func TestStalenessFromReadStart(t *testing.T) {
	var r roots
	root, clk := r.get(t)
	const readTime = 60 * time.Millisecond
	s, err := cache.New[int64](&slowStore{Store: root.NewHandle(), clk: clk, d: readTime}, cache.WithClock(clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	k := state.Key{Entity: "k"}
	get(t, s, k) // began at T, returned at T+60ms
	if err := root.MergeUpdate(t.Context(), k, 5, 0); err != nil {
		t.Fatal(err)
	}
	clk.Advance(cache.DefaultStaleness - readTime - time.Nanosecond)
	if v := get(t, s, k); v != 0 {
		t.Errorf("just before T+staleness: %d, want the cached 0", v)
	}
	clk.Advance(time.Nanosecond)
	if v := get(t, s, k); v != 5 {
		t.Errorf("at T+staleness: %d, want 5 (the cached value is as old as its read's start)", v)
	}
}

// slowStore's reads take d on clk.
type slowStore struct {
	state.Store[int64]
	clk *fakeclock.Clock
	d   time.Duration
}

func (s *slowStore) Get(ctx context.Context, k state.Key) (int64, bool, error) {
	v, ok, err := s.Store.Get(ctx, k)
	s.clk.Advance(s.d)
	return v, ok, err
}

// TestReadYourWrites: a write through the cache is seen by the next read through
// it, also when a read that began before the write returns after it with the
// value it read before (that read must not fill the cache).
func TestReadYourWrites(t *testing.T) {
	var r roots
	root, clk := r.get(t)
	slow := &pausingStore{Store: root.NewHandle()}
	s, err := cache.New[int64](slow, cache.WithClock(clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	k := state.Key{Entity: "k"}
	for _, many := range []bool{false, true} {
		before := get(t, s, k)
		merge(t, s, k, 1)
		read, release := slow.pauseNextRead()
		done := make(chan int64)
		go func() {
			if many {
				vs, _, err := s.GetMany(context.Background(), []state.Key{k})
				if err != nil {
					t.Error(err)
				}
				done <- vs[0]
				return
			}
			v, _, err := s.Get(context.Background(), k)
			if err != nil {
				t.Error(err)
			}
			done <- v
		}()
		select { // the read has its value from the store
		case <-read:
		case <-time.After(10 * time.Second):
			t.Fatalf("many=%v: the read after a write did not reach the store", many)
		}
		merge(t, s, k, 10)
		close(release)
		if v := <-done; v != before+1 {
			t.Fatalf("many=%v: the overlapping read = %d, want %d", many, v, before+1)
		}
		if v := get(t, s, k); v != before+11 {
			t.Errorf("many=%v: read after the write = %d, want %d: a read that overlapped the write filled the cache", many, v, before+11)
		}
	}
}

// pausingStore can hold one read after it has read the store.
type pausingStore struct {
	state.Store[int64]
	mu            sync.Mutex
	read, release chan struct{}
}

func (p *pausingStore) pauseNextRead() (read, release chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.read, p.release = make(chan struct{}), make(chan struct{})
	return p.read, p.release
}

func (p *pausingStore) pause() {
	p.mu.Lock()
	read, release := p.read, p.release
	p.read, p.release = nil, nil
	p.mu.Unlock()
	if read != nil {
		close(read)
		<-release
	}
}

func (p *pausingStore) Get(ctx context.Context, k state.Key) (int64, bool, error) {
	v, ok, err := p.Store.Get(ctx, k)
	p.pause()
	return v, ok, err
}

func (p *pausingStore) GetMany(ctx context.Context, ks []state.Key) ([]int64, []bool, error) {
	vs, oks, err := p.Store.GetMany(ctx, ks)
	p.pause()
	return vs, oks, err
}

// TestHitsAndMisses: repeated reads are served from the cache, GetMany reads only
// the keys it misses, and the metrics count both.
func TestHitsAndMisses(t *testing.T) {
	var r roots
	root, clk := r.get(t)
	counted := &countingStore{Store: root.NewHandle()}
	reader := sdkmetric.NewManualReader()
	s, err := cache.New[int64](counted, cache.WithClock(clk.Now), cache.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	if err != nil {
		t.Fatal(err)
	}
	k1, k2 := state.Key{Entity: "a"}, state.Key{Entity: "b"}
	for range 3 {
		get(t, s, k1)
	}
	if _, _, err := s.GetMany(t.Context(), []state.Key{k1, k2, k2}); err != nil {
		t.Fatal(err)
	}
	if counted.gets != 1 || counted.getManyKeys != 2 {
		t.Errorf("store reads: %d Get, %d keys by GetMany; want 1 and 2 (k2 twice, k1 cached)", counted.gets, counted.getManyKeys)
	}
	got := sums(t, reader)
	if got["pipestate.cache.hits"] != 3 || got["pipestate.cache.misses"] != 3 {
		t.Errorf("metrics = %v, want 3 hits, 3 misses", got)
	}
}

type countingStore struct {
	state.Store[int64]
	mu                sync.Mutex
	gets, getManyKeys int
}

func (c *countingStore) Get(ctx context.Context, k state.Key) (int64, bool, error) {
	c.mu.Lock()
	c.gets++
	c.mu.Unlock()
	return c.Store.Get(ctx, k)
}

func (c *countingStore) GetMany(ctx context.Context, ks []state.Key) ([]int64, []bool, error) {
	c.mu.Lock()
	c.getManyKeys += len(ks)
	c.mu.Unlock()
	return c.Store.GetMany(ctx, ks)
}

func sums(t *testing.T, r *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if s, ok := m.Data.(metricdata.Sum[int64]); ok {
				for _, dp := range s.DataPoints {
					out[m.Name] += dp.Value
				}
			}
		}
	}
	return out
}

// TestSizeBound: reading many more keys than WithMaxKeys evicts (the counter says
// so), and every read is still right.
func TestSizeBound(t *testing.T) {
	var r roots
	root, clk := r.get(t)
	reader := sdkmetric.NewManualReader()
	s, err := cache.New[int64](root.NewHandle(), cache.WithClock(clk.Now), cache.WithMaxKeys(10),
		cache.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		k := state.Key{Entity: fmt.Sprint("k", i)}
		merge(t, s, k, int64(i))
		if v := get(t, s, k); v != int64(i) {
			t.Fatalf("%v = %d", k, v)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for sums(t, reader)["pipestate.cache.evictions"] < 900 { // otter evicts in the background
		if time.Now().After(deadline) {
			t.Fatalf("evictions = %d after 1,000 keys into 10 places", sums(t, reader)["pipestate.cache.evictions"])
		}
		get(t, s, state.Key{Entity: "k0"}) // reads drive otter's maintenance
		time.Sleep(time.Millisecond)
	}
}

// TestNoAliasing: changing a byte slice Get returned does not change what the
// cache serves next.
func TestNoAliasing(t *testing.T) {
	counter := storetest.Counter{}
	root, err := memstate.New[[]byte](counter)
	if err != nil {
		t.Fatal(err)
	}
	s, err := cache.New[[]byte](root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	k := state.Key{Entity: "k"}
	if err := s.MergeUpdate(t.Context(), k, counter.Of(7), 0); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		v, _, err := s.Get(t.Context(), k)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := counter.Decode(v); n != 7 {
			t.Fatalf("Get = %d, want 7", n)
		}
		clear(v)
	}
}

// TestOptionsAndValues: bad options, and values holding references without a
// clone, are refused.
func TestOptionsAndValues(t *testing.T) {
	root, err := memstate.New[int64](monoid.Sum[int64]{})
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range []cache.Option{cache.WithStaleness(0), cache.WithStaleness(cache.MaxStaleness + 1), cache.WithMaxKeys(0),
		cache.WithClock(nil), cache.WithMeterProvider(nil), cache.WithMeterProvider((*sdkmetric.MeterProvider)(nil)), nil,
		cache.WithClone[int64](nil), cache.WithClone(func(s string) string { return s })} {
		if _, err := cache.New[int64](root, o); !errors.Is(err, state.ErrInvalidArgument) {
			t.Errorf("option %d: %v, want ErrInvalidArgument", i, err)
		}
	}
	set, err := memstate.New[map[string]struct{}](monoid.Set[string]{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cache.New[map[string]struct{}](set); !errors.Is(err, state.ErrInvalidArgument) {
		t.Errorf("a map value without WithClone: %v, want ErrInvalidArgument", err)
	}
	if _, err := cache.New[map[string]struct{}](set, cache.WithClone(func(m map[string]struct{}) map[string]struct{} {
		out := make(map[string]struct{}, len(m))
		for k := range m {
			out[k] = struct{}{}
		}
		return out
	})); err != nil {
		t.Errorf("a map value with WithClone: %v", err)
	}
}

// TestCapabilities: the cache is a OnceStore and a BatchStore exactly when its
// store is.
func TestCapabilities(t *testing.T) {
	root, err := memstate.New[int64](monoid.Sum[int64]{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		s           state.Store[int64]
		once, batch bool
	}{{"memory", root, true, true}, {"plain", struct{ state.Store[int64] }{root}, false, false}} {
		s, err := cache.New(tc.s)
		if err != nil {
			t.Fatal(err)
		}
		_, once := s.(state.OnceStore[int64])
		_, batch := s.(state.BatchStore[int64])
		if once != tc.once || batch != tc.batch {
			t.Errorf("%s: OnceStore %v, BatchStore %v; want %v, %v", tc.name, once, batch, tc.once, tc.batch)
		}
	}
}

// TestClosed: after Close a cached key is not served.
func TestClosed(t *testing.T) {
	var r roots
	s, k := r.open(t), state.Key{Entity: "k"}
	get(t, s, k)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get(t.Context(), k); !errors.Is(err, state.ErrClosed) {
		t.Errorf("Get after Close = %v, want ErrClosed", err)
	}
}

// TestCacheSuite runs statetest's read cache rules on the cache.
func TestCacheSuite(t *testing.T) {
	statetest.RunCache(t, statetest.CacheHarness{
		Wrap: func(t *testing.T, s state.Store[int64], now func() time.Time) state.Store[int64] {
			c, err := cache.New(s, cache.WithClock(now))
			if err != nil {
				t.Fatal(err)
			}
			return c
		},
		Staleness: cache.DefaultStaleness,
	})
}
