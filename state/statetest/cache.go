package statetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/pipestate/pipestate/state"
)

// CacheHarness describes a read cache in front of a store (state/cache, or a
// cache of your own) for RunCache. The suite gives the cache its store and its
// clock: a store of its own (an int64 sum) whose reads it can hold or slow
// down, shared by the caches of one test as a server is by processes, and a
// fake clock that only the suite moves.
type CacheHarness struct {
	// Wrap returns a cache in front of s that judges staleness by now (for
	// state/cache: cache.New(s, cache.WithClock(now), cache.WithStaleness(...))).
	// Each call is another process's cache. The suite closes what it returns.
	Wrap func(t *testing.T, s state.Store[int64], now func() time.Time) state.Store[int64]
	// Staleness is the cache's bound: a value read from the store is served
	// for less than Staleness, counted from the start of the read that fetched
	// it; from then on a read goes to the store. It must be positive.
	Staleness time.Duration
}

// RunCache tests a read cache's freshness rules:
//
//   - hits_do_not_extend_freshness: a reader that keeps hitting a key sees
//     another process's write once Staleness has passed since the read that
//     filled its cache began, however often it read in between (freshness
//     counts from the fill, not from the last hit);
//   - own_write_not_undone_by_racing_read: a read of the store that began
//     before the process's own write and returns after it must not leave the
//     old value cached: every read that starts after the write returned sees
//     it;
//   - slow_read_does_not_extend_staleness: a store read that took half the
//     staleness leaves only the other half (age counts from the read's start,
//     not its end).
//
// RunStore with Harness.Staleness checks the rest of the store contract
// through the cache.
func RunCache(t *testing.T, h CacheHarness) {
	if h.Wrap == nil || h.Staleness <= 0 {
		t.Fatal("statetest: CacheHarness needs Wrap and a positive Staleness")
	}
	t.Run("hits do not extend freshness", func(t *testing.T) { testCacheHitsDoNotExtend(t, &h) })
	t.Run("own write not undone by racing read", func(t *testing.T) { testCacheOwnWriteRace(t, &h) })
	t.Run("slow read does not extend staleness", func(t *testing.T) { testCacheSlowRead(t, &h) })
}

// cacheWorld is the store and clock the caches of one test share.
type cacheWorld struct {
	mu     sync.Mutex
	now    time.Time
	values map[state.Key]int64
	// onRead, when set, runs inside a store read, after it read its values
	// and before it returns them (without mu held).
	onRead func()
}

func newCacheWorld() *cacheWorld {
	return &cacheWorld{now: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC), values: map[state.Key]int64{}}
}

func (w *cacheWorld) clock() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.now
}

func (w *cacheWorld) advance(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.now = w.now.Add(d)
}

// hold makes the next store read run f after it read its values.
func (w *cacheWorld) hold(f func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.onRead = f
}

// cacheBackend is the suite's store: an int64 sum without expiry.
type cacheBackend struct{ w *cacheWorld }

func (b cacheBackend) Get(ctx context.Context, k state.Key) (int64, bool, error) {
	vs, found, err := b.GetMany(ctx, []state.Key{k})
	if err != nil {
		return 0, false, err
	}
	return vs[0], found[0], nil
}

func (b cacheBackend) GetMany(ctx context.Context, ks []state.Key) ([]int64, []bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if err := state.CheckKeys(ks); err != nil {
		return nil, nil, err
	}
	b.w.mu.Lock()
	vs, found := make([]int64, len(ks)), make([]bool, len(ks))
	for i, k := range ks {
		vs[i], found[i] = b.w.values[k]
	}
	hook := b.w.onRead
	b.w.onRead = nil
	b.w.mu.Unlock()
	if hook != nil {
		hook()
	}
	return vs, found, nil
}

func (b cacheBackend) MergeUpdate(ctx context.Context, k state.Key, delta int64, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := state.CheckKey(k); err != nil {
		return err
	}
	if err := state.CheckTTL(ttl); err != nil {
		return err
	}
	b.w.mu.Lock()
	defer b.w.mu.Unlock()
	b.w.values[k] += delta
	return nil
}

func (b cacheBackend) Close() error { return nil }

// caches returns n caches over one world's store, closed when t ends.
func (h *CacheHarness) caches(t *testing.T, n int) (*cacheWorld, []state.Store[int64]) {
	t.Helper()
	w := newCacheWorld()
	out := make([]state.Store[int64], n)
	for i := range out {
		c := h.Wrap(t, cacheBackend{w}, w.clock)
		if c == nil {
			t.Fatal("CacheHarness.Wrap returned nil")
		}
		t.Cleanup(func() { _ = c.Close() })
		out[i] = c
	}
	return w, out
}

// cacheWait bounds each wait of the suite on a cache's goroutines, so a cache
// that blocks fails its test with a message instead of hanging until the test
// binary's timeout.
const cacheWait = 30 * time.Second

// awaitOr receives from ch within cacheWait; ok is false when it timed out.
func awaitOr[T any](ch <-chan T) (v T, ok bool) {
	select {
	case v = <-ch:
		return v, true
	case <-time.After(cacheWait):
		return v, false
	}
}

// await receives from ch within cacheWait, failing t with what it waited for.
func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	v, ok := awaitOr(ch)
	if !ok {
		t.Fatalf("waited %v for %s", cacheWait, what)
	}
	return v
}

// cacheGet reads k through c, failing t on an error.
func cacheGet(t *testing.T, c state.Store[int64], k state.Key) int64 {
	t.Helper()
	v, _, err := c.Get(t.Context(), k)
	if err != nil {
		t.Fatalf("Get(%v): %v", k, err)
	}
	return v
}

func testCacheHitsDoNotExtend(t *testing.T, h *CacheHarness) {
	w, cs := h.caches(t, 2)
	reader, writer := cs[0], cs[1]
	k := state.Key{Entity: "hot"}
	mustMerge(t, writer, k, 1, 0)
	if v := cacheGet(t, reader, k); v != 1 {
		t.Fatalf("the first read = %d, want 1", v)
	}
	mustMerge(t, writer, k, 10, 0) // another process writes
	step, elapsed := h.Staleness/8, time.Duration(0)
	for ; elapsed+step < h.Staleness; elapsed += step {
		w.advance(step)
		cacheGet(t, reader, k) // a hit, or a fresh read: either is allowed
	}
	w.advance(h.Staleness - elapsed)
	if v := cacheGet(t, reader, k); v != 11 {
		t.Fatalf("a reader that kept hitting the key read %d once the staleness (%v) had passed since the read that filled its cache, want 11: "+
			"freshness counts from the fill, not from the last hit", v, h.Staleness)
	}
}

func testCacheOwnWriteRace(t *testing.T, h *CacheHarness) {
	w, cs := h.caches(t, 1)
	c := cs[0]
	k := state.Key{Entity: "raced"}
	mustMerge(t, c, k, 1, 0)
	w.advance(h.Staleness) // nothing cached is fresh
	// A read of the store takes the old value, then waits until the write
	// below has returned before it returns it.
	readValue, wrote := make(chan struct{}), make(chan struct{})
	w.hold(func() {
		close(readValue)
		<-wrote
	})
	done := make(chan int64, 1)
	go func() {
		v, _, _ := c.Get(context.Background(), k)
		done <- v
	}()
	await(t, readValue, "the racing Get to read the store")
	merged := make(chan error, 1)
	go func() { merged <- c.MergeUpdate(t.Context(), k, 10, 0) }()
	err, ok := awaitOr(merged)
	close(wrote)
	if !ok {
		t.Fatalf("MergeUpdate did not return within %v while a Get's store read was in flight: the cache makes writes wait for reads (a slow store read would stall every writer)", cacheWait)
	}
	if err != nil {
		t.Fatalf("MergeUpdate: %v", err)
	}
	await(t, done, "the racing Get to return") // it may return the old value: it began before the write
	if v := cacheGet(t, c, k); v != 11 {
		t.Fatalf("a read that began after the process's own write returned read %d, want 11: "+
			"a store read that raced the write left the old value in the cache", v)
	}
}

func testCacheSlowRead(t *testing.T, h *CacheHarness) {
	w, cs := h.caches(t, 2)
	reader, writer := cs[0], cs[1]
	k := state.Key{Entity: "slow"}
	mustMerge(t, writer, k, 1, 0)
	// The read begins now, reads 1 and takes half the staleness to return;
	// another process writes as soon as it has read.
	w.hold(func() {
		_ = writer.MergeUpdate(context.Background(), k, 10, 0)
		w.advance(h.Staleness / 2)
	})
	if v := cacheGet(t, reader, k); v != 1 {
		t.Fatalf("the slow read = %d, want 1 (what it read before the write)", v)
	}
	w.advance(h.Staleness - h.Staleness/2)
	if v := cacheGet(t, reader, k); v != 11 {
		t.Fatalf("a read the staleness (%v) after the start of a slow read (of %v) read %d, want 11: "+
			"a value's age counts from the start of the read that fetched it", h.Staleness, h.Staleness/2, v)
	}
}
