package state_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
)

// batchSpy is a spy that is also a state.BatchStore: MergeMany records its batch
// sizes and fails the updates failMany names (the rest applied), or the whole
// batch when whole says so.
type batchSpy[V any] struct {
	*spy[V]
	mu       sync.Mutex
	sizes    []int
	failMany func(u state.Update[V]) error     // nil: no failures
	whole    func(ups []state.Update[V]) error // nil: never the whole batch
}

func (b *batchSpy[V]) MergeMany(ctx context.Context, ups []state.Update[V]) error {
	b.mu.Lock()
	b.sizes = append(b.sizes, len(ups))
	fail, whole := b.failMany, b.whole
	b.mu.Unlock()
	if whole != nil {
		if err := whole(ups); err != nil {
			return err
		}
	}
	errs := make([]error, len(ups))
	var ok []state.Update[V]
	for i, u := range ups {
		if fail != nil {
			errs[i] = fail(u)
		}
		if errs[i] == nil {
			ok = append(ok, u)
		}
	}
	if err := b.spy.Store.(state.BatchStore[V]).MergeMany(ctx, ok); err != nil {
		return err
	}
	return state.MergeErrors(errs)
}

func (b *batchSpy[V]) set(fail func(state.Update[V]) error, whole func([]state.Update[V]) error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failMany, b.whole = fail, whole
}

func newBatchSpy[V any](t *testing.T, m monoid.Monoid[V]) *batchSpy[V] {
	t.Helper()
	return &batchSpy[V]{spy: newSpy(t, m)}
}

// TestCoalescerBatches: over a BatchStore, a flush is MergeMany calls of at most
// state.MergeBatchSize keys and no MergeUpdate.
func TestCoalescerBatches(t *testing.T) {
	ctx := t.Context()
	st := newBatchSpy[int64](t, monoid.Sum[int64]{})
	c := newCoalescer[int64](t, st, monoid.Sum[int64]{}, state.WithFlushInterval(0), state.WithMaxKeys(5000))
	const keys = 2500
	for i := range 2 * keys {
		if err := c.Add(ctx, state.Key{Entity: fmt.Sprint("k", i%keys)}, int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	slices.Sort(st.sizes)
	if !slices.Equal(st.sizes, []int{500, 1000, 1000}) || st.merges.Load() != 0 {
		t.Errorf("MergeMany sizes %v and %d MergeUpdates, want [500 1000 1000] and none", st.sizes, st.merges.Load())
	}
	for _, i := range []int{0, 999, 1000, keys - 1} {
		if v := get[int64](t, st, fmt.Sprint("k", i)); v != int64(2*i+keys) {
			t.Errorf("k%d = %d, want %d", i, v, 2*i+keys)
		}
	}
	if s := c.Stats(); s.Writes != keys || s.Failures != 0 || s.Flushes != 1 {
		t.Errorf("Stats = %+v", s)
	}
}

// TestCoalescerBatchFailures: the updates a MergeMany failed are kept (in order,
// before later deltas) or, refused as bad input, dropped; the rest are written
// once; the kept keys of one MergeMany make one error.
func TestCoalescerBatchFailures(t *testing.T) {
	ctx := t.Context()
	st := newBatchSpy[string](t, concat{})
	c := newCoalescer[string](t, st, concat{}, state.WithFlushInterval(0))
	boom := errors.New("backend down")
	st.set(func(u state.Update[string]) error {
		switch {
		case strings.HasPrefix(u.Key.Entity, "bad"):
			return boom
		case u.Key.Entity == "refused":
			return state.Invalidf("overflow")
		}
		return nil
	}, nil)
	add := func(k, v string) {
		t.Helper()
		if err := c.Add(ctx, state.Key{Entity: k}, v); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"good", "bad1", "bad2", "refused"} {
		add(k, "a")
	}
	err := c.Flush(ctx)
	if !errors.Is(err, boom) || !errors.Is(err, state.ErrInvalidArgument) ||
		!strings.Contains(err.Error(), "2 keys kept for retry") || !strings.Contains(err.Error(), `dropped key "refused"`) {
		t.Fatalf("Flush = %v, want 2 kept keys and the dropped one", err)
	}
	if c.Pending() != 2 {
		t.Fatalf("%d pending, want the 2 failed keys", c.Pending())
	}
	add("bad1", "b")
	st.set(nil, nil)
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"good": "a", "bad1": "ab", "bad2": "a", "refused": ""} {
		if v := get[string](t, st, k); v != want {
			t.Errorf("%s = %q, want %q", k, v, want)
		}
	}
	if s := c.Stats(); s.Writes != 3 || s.Failures != 3 {
		t.Errorf("Stats = %+v, want 3 writes and 3 failures", s)
	}
}

// TestCoalescerBatchWholeErrors: a MergeMany that fails before writing keeps every
// key of its batch (one error); one refusing its whole batch as bad input is
// retried key by key, so that only the bad key is dropped.
func TestCoalescerBatchWholeErrors(t *testing.T) {
	ctx := t.Context()
	st := newBatchSpy[int64](t, monoid.Sum[int64]{})
	c := newCoalescer[int64](t, st, monoid.Sum[int64]{}, state.WithFlushInterval(0))
	down := errors.New("connection refused")
	st.set(nil, func([]state.Update[int64]) error { return down })
	for i := range 3 {
		if err := c.Add(ctx, state.Key{Entity: fmt.Sprint("k", i)}, 1); err != nil {
			t.Fatal(err)
		}
	}
	err := c.Flush(ctx)
	if !errors.Is(err, down) || !strings.Contains(err.Error(), "3 keys kept") || c.Pending() != 3 {
		t.Fatalf("Flush = %v, %d pending; want 3 keys kept", err, c.Pending())
	}
	st.set(nil, func(ups []state.Update[int64]) error {
		for _, u := range ups {
			if u.Key.Entity == "k1" {
				return fmt.Errorf("update 1: %w", state.Invalidf("the backend refuses k1"))
			}
		}
		return nil
	})
	st.setFail(func(k state.Key) error {
		if k.Entity == "k1" {
			return state.Invalidf("the backend refuses k1")
		}
		return nil
	})
	err = c.Flush(ctx)
	if !errors.Is(err, state.ErrInvalidArgument) || !strings.Contains(err.Error(), `dropped key "k1"`) || c.Pending() != 0 {
		t.Fatalf("Flush = %v, %d pending; want k1 dropped", err, c.Pending())
	}
	if get[int64](t, st, "k0") != 1 || get[int64](t, st, "k2") != 1 || get[int64](t, st, "k1") != 0 {
		t.Error("k0 and k2 not written once, or k1 written")
	}
}

// TestCoalescerBatchLosesNothingUnderFailures is
// TestCoalescerLosesNothingUnderFailures over a BatchStore failing a fifth of the
// updates of each batch.
func TestCoalescerBatchLosesNothingUnderFailures(t *testing.T) {
	st := newBatchSpy[int64](t, monoid.Sum[int64]{})
	var calls atomic.Int64
	st.set(func(state.Update[int64]) error {
		if calls.Add(1)%5 == 0 {
			return errors.New("flaky")
		}
		return nil
	}, nil)
	if s := addUnderFailures(t, st); s.Failures == 0 || st.merges.Load() != 0 {
		t.Errorf("no write failed (%+v) or MergeUpdate was called (%d): the test did not exercise batches", s, st.merges.Load())
	}
}

// TestCoalescerBatchKeptDeltaThatNoLongerCombines: a key whose write failed keeps
// its delta, and deltas added to it during that flush are combined after it; when
// the two no longer combine (an int64 sum past MaxInt64), the deltas added since
// are dropped, but reported by the flush, never lost silently.
func TestCoalescerBatchKeptDeltaThatNoLongerCombines(t *testing.T) {
	ctx := t.Context()
	st := newBatchSpy[int64](t, monoid.Sum[int64]{})
	c := newCoalescer[int64](t, st, monoid.Sum[int64]{}, state.WithFlushInterval(0))
	k, half := state.Key{Entity: "big"}, int64(1)<<62
	down := errors.New("backend down")
	var addErr error
	st.set(func(u state.Update[int64]) error {
		if u.Key == k {
			// A delta arriving while the flush runs: buffered on its own.
			addErr = c.Add(ctx, k, half)
			return down
		}
		return nil
	}, nil)
	if err := c.Add(ctx, k, half); err != nil {
		t.Fatal(err)
	}
	err := c.Flush(ctx)
	if addErr != nil {
		t.Fatalf("Add during the flush: %v", addErr)
	}
	if !errors.Is(err, down) || !errors.Is(err, state.ErrInvalidArgument) || !strings.Contains(err.Error(), `"big"`) {
		t.Errorf("Flush = %v, want the kept key and the dropped deltas added since (ErrInvalidArgument) reported", err)
	}
	st.set(nil, nil)
	if err := c.Flush(ctx); err != nil || get[int64](t, st, "big") != half {
		t.Errorf("second Flush = %v, big = %d; want the kept delta %d written", err, get[int64](t, st, "big"), half)
	}
}
