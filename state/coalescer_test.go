package state_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
)

func newCoalescer[V any](t *testing.T, st state.Store[V], m monoid.Monoid[V], opts ...state.CoalescerOption) *state.Coalescer[V] {
	t.Helper()
	c, err := state.NewCoalescer(st, m, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

func get[V any](t *testing.T, st state.Store[V], entity string) V {
	t.Helper()
	v, _, err := st.Get(t.Context(), state.Key{Entity: entity})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestCoalescerOneWritePerKeyPerFlush(t *testing.T) {
	ctx := t.Context()
	st := newSpy[int64](t, monoid.Sum[int64]{})
	c := newCoalescer[int64](t, st, monoid.Sum[int64]{}, state.WithFlushInterval(0))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				if err := c.Add(ctx, state.Key{Entity: fmt.Sprint("k", i%10)}, int64(g+1)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := st.merges.Load(); n != 0 {
		t.Fatalf("%d writes before Flush", n)
	}
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := st.merges.Load(); n != 10 {
		t.Errorf("%d writes for 10 keys, want 10", n)
	}
	for i := range 10 {
		if v := get[int64](t, st, fmt.Sprint("k", i)); v != 10*36 {
			t.Errorf("k%d = %d, want %d", i, v, 10*36)
		}
	}
	if s := c.Stats(); s.Deltas != 800 || s.Writes != 10 || s.Flushes != 1 || s.Failures != 0 {
		t.Errorf("Stats = %+v", s)
	}
	if err := c.Flush(ctx); err != nil || st.merges.Load() != 10 {
		t.Errorf("empty Flush: %v, %d writes", err, st.merges.Load())
	}
}

func TestCoalescerSizeBound(t *testing.T) {
	ctx := t.Context()
	st := newSpy[int64](t, monoid.Sum[int64]{})
	c := newCoalescer[int64](t, st, monoid.Sum[int64]{}, state.WithFlushInterval(0), state.WithMaxKeys(3))
	for i := range 3 {
		if err := c.Add(ctx, state.Key{Entity: fmt.Sprint("k", i)}, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Add(ctx, state.Key{Entity: "k0"}, 1); err != nil || st.merges.Load() != 0 {
		t.Fatalf("Add to a buffered key flushed or failed: %v, %d writes", err, st.merges.Load())
	}
	if err := c.Add(ctx, state.Key{Entity: "k3"}, 1); err != nil {
		t.Fatal(err)
	}
	if n, p := st.merges.Load(), c.Pending(); n != 3 || p != 1 {
		t.Errorf("after the 4th key: %d writes, %d pending; want 3, 1", n, p)
	}
	if v := get[int64](t, st, "k0"); v != 2 {
		t.Errorf("k0 = %d, want 2", v)
	}
}

func TestCoalescerIntervalFlush(t *testing.T) {
	st := newSpy[int64](t, monoid.Sum[int64]{})
	st.merged = make(chan state.Key, 10)
	c := newCoalescer[int64](t, st, monoid.Sum[int64]{}, state.WithFlushInterval(5*time.Millisecond))
	if err := c.Add(t.Context(), state.Key{Entity: "tick"}, 7); err != nil {
		t.Fatal(err)
	}
	select {
	case k := <-st.merged:
		if k.Entity != "tick" {
			t.Errorf("flushed %v", k)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no background flush")
	}
}

func TestCoalescerKeepsFailedDeltasInOrder(t *testing.T) {
	ctx := t.Context()
	st := newSpy[string](t, concat{})
	c := newCoalescer[string](t, st, concat{}, state.WithFlushInterval(0))
	boom := errors.New("backend down")
	st.setFail(func(k state.Key) error {
		if k.Entity == "bad" {
			return boom
		}
		return nil
	})
	mustAdd := func(k string, v string) {
		t.Helper()
		if err := c.Add(ctx, state.Key{Entity: k}, v); err != nil {
			t.Fatal(err)
		}
	}
	mustAdd("good", "a")
	mustAdd("bad", "1")
	mustAdd("bad", "2")
	err := c.Flush(ctx)
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), `"bad"`) {
		t.Fatalf("Flush = %v, want the store error naming the key", err)
	}
	if c.Pending() != 1 {
		t.Fatalf("%d pending, want the failed key", c.Pending())
	}
	mustAdd("bad", "3")
	st.setFail(nil)
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if v := get[string](t, st, "bad"); v != "123" {
		t.Errorf("bad = %q, want 123 (retried deltas first)", v)
	}
	if v := get[string](t, st, "good"); v != "a" {
		t.Errorf("good = %q", v)
	}
	if s := c.Stats(); s.Failures != 1 || s.Writes != 2 {
		t.Errorf("Stats = %+v", s)
	}
}

func TestCoalescerBufferFull(t *testing.T) {
	ctx := t.Context()
	st := newSpy[int64](t, monoid.Sum[int64]{})
	c := newCoalescer[int64](t, st, monoid.Sum[int64]{}, state.WithFlushInterval(0), state.WithMaxKeys(2))
	boom := errors.New("down")
	st.setFail(func(state.Key) error { return boom })
	for _, k := range []string{"a", "b"} {
		if err := c.Add(ctx, state.Key{Entity: k}, 1); err != nil {
			t.Fatal(err)
		}
	}
	err := c.Add(ctx, state.Key{Entity: "c"}, 1)
	if !errors.Is(err, state.ErrBufferFull) || !errors.Is(err, boom) {
		t.Fatalf("Add into a full buffer with a failing store = %v, want ErrBufferFull and the cause", err)
	}
	st.setFail(nil)
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if a, b, cc := get[int64](t, st, "a"), get[int64](t, st, "b"), get[int64](t, st, "c"); a != 1 || b != 1 || cc != 0 {
		t.Errorf("a, b, c = %d, %d, %d; want 1, 1, 0 (c was refused)", a, b, cc)
	}
}

func TestCoalescerBackgroundErrors(t *testing.T) {
	t.Run("handler", func(t *testing.T) {
		st := newSpy[int64](t, monoid.Sum[int64]{})
		st.setFail(func(state.Key) error { return errors.New("down") })
		got := make(chan error, 100)
		c := newCoalescer[int64](t, st, monoid.Sum[int64]{}, state.WithFlushInterval(time.Millisecond),
			state.WithErrorHandler(func(err error) { got <- err }))
		if err := c.Add(t.Context(), state.Key{Entity: "x"}, 1); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-got:
			if !strings.Contains(err.Error(), "down") {
				t.Errorf("handler got %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("handler not called")
		}
		st.setFail(nil)
	})
	t.Run("next flush", func(t *testing.T) {
		st := newSpy[int64](t, monoid.Sum[int64]{})
		failed := make(chan struct{}, 100)
		st.setFail(func(state.Key) error { failed <- struct{}{}; return errors.New("down") })
		c := newCoalescer[int64](t, st, monoid.Sum[int64]{}, state.WithFlushInterval(time.Millisecond))
		if err := c.Add(t.Context(), state.Key{Entity: "x"}, 1); err != nil {
			t.Fatal(err)
		}
		<-failed
		st.setFail(nil)
		// The background failure surfaces even though this flush succeeds.
		var err error
		for err == nil || c.Pending() > 0 {
			if e := c.Flush(t.Context()); e != nil {
				err = e
			}
		}
		if !strings.Contains(err.Error(), "down") {
			t.Errorf("Flush = %v, want the background error", err)
		}
		if v := get[int64](t, st, "x"); v != 1 {
			t.Errorf("x = %d, want 1", v)
		}
	})
}

func TestCoalescerRejectsAndCloses(t *testing.T) {
	ctx := t.Context()
	st := newSpy[int64](t, monoid.Sum[int64]{})
	c := newCoalescer[int64](t, st, monoid.Sum[int64]{}, state.WithFlushInterval(0))
	if err := c.Add(ctx, state.Key{}, 1); !errors.Is(err, state.ErrInvalidArgument) {
		t.Errorf("Add(empty entity) = %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.Add(cctx, state.Key{Entity: "x"}, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("Add(cancelled) = %v", err)
	}
	if err := c.Add(ctx, state.Key{Entity: "x"}, 5); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(cctx); !errors.Is(err, context.Canceled) || c.Pending() != 1 {
		t.Errorf("Flush(cancelled) = %v with %d pending; want Canceled and the key kept", err, c.Pending())
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if v := get[int64](t, st, "x"); v != 5 {
		t.Errorf("x = %d after Close, want 5", v)
	}
	if err := c.Add(ctx, state.Key{Entity: "x"}, 1); !errors.Is(err, state.ErrClosed) {
		t.Errorf("Add after Close = %v", err)
	}
	if err := c.Close(ctx); err != nil {
		t.Errorf("second Close = %v", err)
	}
	for _, opt := range []state.CoalescerOption{state.WithFlushInterval(-1), state.WithMaxKeys(0), state.WithFlushConcurrency(0), state.WithWriteTTL(-1), state.WithErrorHandler(nil), nil,
		state.WithMeterProvider(nil), state.WithMeterProvider((*sdkmetric.MeterProvider)(nil)), state.WithLogger(nil)} {
		if _, err := state.NewCoalescer[int64](st, monoid.Sum[int64]{}, opt); !errors.Is(err, state.ErrInvalidArgument) {
			t.Errorf("bad option: %v", err)
		}
	}
	if _, err := state.NewCoalescer[int64](nil, monoid.Sum[int64]{}); !errors.Is(err, state.ErrInvalidArgument) {
		t.Errorf("nil store: %v", err)
	}
}

func TestCoalescerDropsInvalidWrites(t *testing.T) {
	ctx := t.Context()
	st := newSpy[int64](t, monoid.Sum[int64]{})
	st.setFail(func(state.Key) error { return state.Invalidf("backend says no") })
	c := newCoalescer[int64](t, st, monoid.Sum[int64]{}, state.WithFlushInterval(0))
	if err := c.Add(ctx, state.Key{Entity: "x"}, 1); err != nil {
		t.Fatal(err)
	}
	err := c.Flush(ctx)
	if !errors.Is(err, state.ErrInvalidArgument) || !strings.Contains(err.Error(), "dropped") || c.Pending() != 0 {
		t.Errorf("Flush = %v, %d pending; want a reported drop", err, c.Pending())
	}
}

// TestCoalescerLosesNothingUnderFailures adds from many goroutines while background
// and size-bound flushes run against a store that fails a fifth of its writes; after
// Close every delta is in the store exactly once.
func TestCoalescerLosesNothingUnderFailures(t *testing.T) {
	st := newSpy[int64](t, monoid.Sum[int64]{})
	var calls atomic.Int64
	st.setFail(func(state.Key) error {
		if calls.Add(1)%5 == 0 {
			return errors.New("flaky")
		}
		return nil
	})
	if s := addUnderFailures(t, st); s.Failures == 0 {
		t.Errorf("no write failed (%+v): the test did not exercise retries", s)
	}
}

// addUnderFailures adds 16,000 deltas over 50 keys from 8 goroutines to a
// Coalescer over st (a store failing some writes) flushing every millisecond and at
// 20 keys, closes it until nothing is pending, checks that st holds every accepted
// delta exactly once, and returns the Coalescer's stats.
func addUnderFailures(t *testing.T, st state.Store[int64]) state.CoalescerStats {
	ctx := t.Context()
	c := newCoalescer[int64](t, st, monoid.Sum[int64]{}, state.WithFlushInterval(time.Millisecond),
		state.WithMaxKeys(20), state.WithErrorHandler(func(error) {}))
	const goroutines, adds, keys = 8, 2000, 50
	var wg sync.WaitGroup
	var refused atomic.Int64
	for g := range goroutines {
		wg.Go(func() {
			for i := range adds {
				err := c.Add(ctx, state.Key{Entity: fmt.Sprint("k", (g*adds+i)%keys)}, 1)
				if errors.Is(err, state.ErrBufferFull) {
					refused.Add(1) // not accepted: not expected in the store
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for attempt := 0; c.Close(ctx) != nil || c.Pending() > 0; attempt++ {
		if attempt == 100 { // each try fails some of the writes
			t.Fatalf("%d keys still pending after 100 flushes", c.Pending())
		}
	}
	var total int64
	for i := range keys {
		total += get[int64](t, st, fmt.Sprint("k", i))
	}
	if want := int64(goroutines*adds) - refused.Load(); total != want {
		t.Errorf("store holds %d, want %d (%d refused)", total, want, refused.Load())
	}
	return c.Stats()
}
