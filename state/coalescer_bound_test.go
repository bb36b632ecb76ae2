package state_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
)

// TestCoalescerBoundCountsKeysInFlight: the keys of a flush in flight count towards
// WithMaxKeys. New keys added while a failing flush runs are refused, so when the
// flush puts its keys back the buffer still holds at most MaxKeys; round after
// round of a store that is down, the buffer never grows. The adds run inside the
// store call, while the flush is certainly in flight, so nothing depends on timing:
// each waits for the flush in flight until its context ends, then is refused.
func TestCoalescerBoundCountsKeysInFlight(t *testing.T) {
	ctx := t.Context()
	const maxKeys = 4
	st := newSpy[int64](t, monoid.Sum[int64]{})
	c := newCoalescer[int64](t, st, monoid.Sum[int64]{}, state.WithFlushInterval(0), state.WithMaxKeys(maxKeys))
	for i := range maxKeys {
		if err := c.Add(ctx, state.Key{Entity: fmt.Sprint("k", i)}, 1); err != nil {
			t.Fatal(err)
		}
	}
	down := errors.New("store down")
	var (
		mu      sync.Mutex
		during  []error // the errors of the adds made while a flush was in flight
		entered bool
		round   int
	)
	st.setFail(func(k state.Key) error {
		mu.Lock()
		first := !entered
		entered = true
		mu.Unlock()
		if !first {
			return down
		}
		// Adds racing the flush: a key in flight is accepted, new keys are not.
		if err := c.Add(ctx, k, 1); err != nil {
			mu.Lock()
			during = append(during, fmt.Errorf("add to a key in flight: %w", err))
			mu.Unlock()
		}
		wctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		var wg sync.WaitGroup
		for g := range maxKeys - 1 {
			wg.Go(func() {
				err := c.Add(wctx, state.Key{Entity: fmt.Sprintf("new-%d-%d", round, g)}, 1)
				mu.Lock()
				during = append(during, err)
				mu.Unlock()
			})
		}
		wg.Wait()
		return down
	})
	for round = range 20 {
		mu.Lock()
		entered, during = false, nil
		mu.Unlock()
		if err := c.Flush(ctx); !errors.Is(err, down) {
			t.Fatalf("round %d: Flush = %v, want the store's error", round, err)
		}
		for _, err := range during {
			if !errors.Is(err, state.ErrBufferFull) {
				t.Fatalf("round %d: Add of a new key during a flush of a full buffer = %v, want ErrBufferFull", round, err)
			}
		}
		if n := c.Pending(); n > maxKeys {
			t.Fatalf("round %d: %d keys buffered, MaxKeys %d", round, n, maxKeys)
		}
	}
	st.setFail(nil)
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var total int64
	for i := range maxKeys {
		total += get[int64](t, st, fmt.Sprint("k", i))
	}
	if want := int64(maxKeys + 20); total != want { // the first k added once per round
		t.Errorf("store holds %d, want %d", total, want)
	}
}

// TestCoalescerOutageMemoryFlat: during a long outage (every write fails), with the
// background flush running and producers adding new keys as fast as they can, the
// buffer never holds more than MaxKeys keys and the heap does not grow with the
// number of failed flushes.
func TestCoalescerOutageMemoryFlat(t *testing.T) {
	ctx := t.Context()
	const maxKeys = 16
	st := newSpy[int64](t, monoid.Sum[int64]{})
	st.setFail(func(state.Key) error { return errors.New("store down") })
	c := newCoalescer[int64](t, st, monoid.Sum[int64]{}, state.WithFlushInterval(50*time.Microsecond),
		state.WithMaxKeys(maxKeys), state.WithErrorHandler(func(error) {}))
	pad := strings.Repeat("x", 480) // makes a leaked key cost over 500 bytes
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	produce := func(from, n int) {
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range n {
					err := c.Add(ctx, state.Key{Entity: fmt.Sprintf("%s-%d-%d", pad, g, from+i)}, 1)
					if err != nil && !errors.Is(err, state.ErrBufferFull) {
						t.Error(err)
						return
					}
					if p := c.Pending(); p > maxKeys {
						t.Errorf("%d keys buffered, MaxKeys %d", p, maxKeys)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	produce(0, 300)
	before, flushesBefore := heap(), c.Stats().Flushes
	produce(300, 1_500)
	after, flushes := heap(), c.Stats().Flushes-flushesBefore
	if flushes < 10 {
		t.Fatalf("only %d flushes ran during the outage: the test did not exercise failed flushes", flushes)
	}
	// Buffered keys are about 600 bytes here: the old unbounded buffer grew by
	// 6.7 MB over 846 failed flushes; a bounded one stays within the runtime's own
	// noise (up to about 1.2 MB, not growing with the number of flushes).
	if after > before+4<<20 {
		t.Errorf("heap grew from %d to %d bytes over %d failed flushes", before, after, flushes)
	}
}

// TestCoalescerAddFlushErrorsReported: a flush that Add starts because the buffer is
// full, and that makes room, may still fail keys or drop them (a write the store
// refuses with ErrInvalidArgument). Add accepts its delta, and the flush's error is
// not lost: the error handler gets it, or, without one, the next Flush or Close
// returns it.
func TestCoalescerAddFlushErrorsReported(t *testing.T) {
	refuse := func(st *spy[int64]) {
		st.setFail(func(k state.Key) error {
			if k.Entity == "bad" {
				return state.Invalidf("sum past its range")
			}
			return nil
		})
	}
	t.Run("next flush", func(t *testing.T) {
		ctx := t.Context()
		st := newSpy[int64](t, monoid.Sum[int64]{})
		refuse(st)
		c := newCoalescer[int64](t, st, monoid.Sum[int64]{}, state.WithFlushInterval(0), state.WithMaxKeys(1))
		if err := c.Add(ctx, state.Key{Entity: "bad"}, 1); err != nil {
			t.Fatal(err)
		}
		if err := c.Add(ctx, state.Key{Entity: "good"}, 1); err != nil {
			t.Fatalf("Add after a flush that made room = %v", err)
		}
		err := c.Flush(ctx)
		if !errors.Is(err, state.ErrInvalidArgument) || !strings.Contains(err.Error(), `dropped key "bad"`) {
			t.Errorf("Flush = %v, want the drop of \"bad\" by Add's flush", err)
		}
		if v := get[int64](t, st, "good"); v != 1 {
			t.Errorf("good = %d, want 1", v)
		}
		if err := c.Flush(ctx); err != nil {
			t.Errorf("second Flush = %v: the error is reported once", err)
		}
	})
	t.Run("handler", func(t *testing.T) {
		ctx := t.Context()
		st := newSpy[int64](t, monoid.Sum[int64]{})
		refuse(st)
		var got []error
		c := newCoalescer[int64](t, st, monoid.Sum[int64]{}, state.WithFlushInterval(0), state.WithMaxKeys(1),
			state.WithErrorHandler(func(err error) { got = append(got, err) }))
		for _, k := range []string{"bad", "good"} {
			if err := c.Add(ctx, state.Key{Entity: k}, 1); err != nil {
				t.Fatal(err)
			}
		}
		if len(got) != 1 || !errors.Is(got[0], state.ErrInvalidArgument) || !strings.Contains(got[0].Error(), `"bad"`) {
			t.Errorf("handler got %v, want the drop of \"bad\"", got)
		}
		if err := c.Close(ctx); err != nil {
			t.Errorf("Close = %v", err)
		}
	})
	t.Run("deltas that no longer combine", func(t *testing.T) {
		// Add's flush writes x (making room) and fails big; a delta added to big
		// during that flush no longer combines with big's kept delta (an int64
		// sum past its range), so the flush drops it and says so.
		ctx := t.Context()
		st := newSpy[int64](t, monoid.Sum[int64]{})
		c := newCoalescer[int64](t, st, monoid.Sum[int64]{}, state.WithFlushInterval(0), state.WithMaxKeys(2))
		big, half := state.Key{Entity: "big"}, int64(1)<<62
		down := errors.New("down")
		var addErr error
		st.setFail(func(k state.Key) error {
			if k == big {
				addErr = c.Add(ctx, big, half)
				st.setFail(nil) // the store comes back
				return down
			}
			return nil
		})
		if err := c.Add(ctx, big, half); err != nil {
			t.Fatal(err)
		}
		if err := c.Add(ctx, state.Key{Entity: "x"}, 1); err != nil {
			t.Fatal(err)
		}
		if err := c.Add(ctx, state.Key{Entity: "c"}, 1); err != nil {
			t.Fatalf("Add after a flush that made room = %v", err)
		}
		if addErr != nil {
			t.Fatalf("Add to a key in flight: %v", addErr)
		}
		err := c.Flush(ctx)
		if !errors.Is(err, down) || !errors.Is(err, state.ErrInvalidArgument) || !strings.Contains(err.Error(), "during the flush") {
			t.Errorf("Flush = %v, want Add's flush error: big kept, and the deltas added during it dropped", err)
		}
		for k, want := range map[string]int64{"big": half, "x": 1, "c": 1} {
			if v := get[int64](t, st, k); v != want {
				t.Errorf("%s = %d, want %d", k, v, want)
			}
		}
	})
}
