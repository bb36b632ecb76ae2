package statetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
)

// RunBatchStore runs the BatchStore conformance suite: Open must return stores that
// implement state.BatchStore. RunStore calls it for such stores.
func RunBatchStore[V any](t *testing.T, h Harness[V]) {
	h.check(t)
	t.Run("equals merge updates", func(t *testing.T) { testBatchEqualsMerges(t, &h) })
	t.Run("duplicate keys combine in order", func(t *testing.T) { testBatchDuplicates(t, &h) })
	t.Run("empty", func(t *testing.T) { testBatchEmpty(t, &h) })
	t.Run("bad input writes nothing", func(t *testing.T) { testBatchBadInput(t, &h) })
	t.Run("past the round-trip size", func(t *testing.T) { testBatchLarge(t, &h) })
	t.Run("closed and cancelled", func(t *testing.T) { testBatchClosedCancelled(t, &h) })
	if !h.SkipTTL {
		t.Run("ttl", func(t *testing.T) { testBatchTTL(t, &h) })
		t.Run("ttls of one key apply in order", func(t *testing.T) { testBatchTTLOrder(t, &h) })
	}
	if _, ok := any(&h).(*Harness[int64]); ok && !h.SkipSumLimits && h.Monoid.Kind() == monoid.KindSum {
		t.Run("refused update fails alone", func(t *testing.T) { testBatchRefusedAlone(t, any(&h).(*Harness[int64])) })
	}
	if _, _, ok := h.overflows(); ok {
		t.Run("refusals reported at their batch index", func(t *testing.T) { testBatchRefusalIndex(t, &h) })
	}
}

// openBatch opens a store and fails the test unless it is a state.BatchStore.
func (h *Harness[V]) openBatch(t *testing.T) state.BatchStore[V] {
	t.Helper()
	s, ok := h.open(t).(state.BatchStore[V])
	if !ok {
		t.Fatal("the store does not implement state.BatchStore")
	}
	return s
}

func mustMergeMany[V any](t *testing.T, s state.BatchStore[V], ups []state.Update[V]) {
	t.Helper()
	if err := s.MergeMany(t.Context(), ups); err != nil {
		t.Fatalf("MergeMany(%d updates): %v", len(ups), err)
	}
}

// wantValues fails the test unless every key of want holds its value (read with
// one GetMany).
func wantValues[V any](t *testing.T, h *Harness[V], s state.Store[V], keys []state.Key, want map[state.Key]V) {
	t.Helper()
	vs, found, err := s.GetMany(t.Context(), keys)
	if err != nil {
		t.Fatalf("GetMany(%d keys): %v", len(keys), err)
	}
	bad := 0
	for i, k := range keys {
		if w := want[k]; !found[i] || !h.Equal(vs[i], w) {
			if bad++; bad <= 5 {
				t.Errorf("key %v: got %v (found %v), want %v", k, vs[i], found[i], w)
			}
		}
	}
	if bad > 5 {
		t.Errorf("... %d wrong keys of %d", bad, len(keys))
	}
}

// testBatchEqualsMerges: a batch over the adversarial keys, onto values merged
// before, leaves what the same MergeUpdates in sequence leave.
func testBatchEqualsMerges[V any](t *testing.T, h *Harness[V]) {
	s := h.openBatch(t)
	keys := keysFor(h)
	want := map[state.Key]V{}
	for i, k := range keys[:len(keys)/2] {
		mustMerge(t, s, k, h.Delta(i), 0)
		want[k] = h.Delta(i)
	}
	var ups []state.Update[V]
	for i, k := range keys {
		d := h.Delta(len(keys) + i)
		ups = append(ups, state.Update[V]{Key: k, Delta: d})
		cur, ok := want[k]
		if !ok {
			cur = h.Monoid.Identity()
		}
		want[k] = h.Monoid.Combine(cur, d)
	}
	mustMergeMany(t, s, ups)
	wantValues(t, h, h.open(t), keys, want)
}

// testBatchDuplicates: updates of one key within a batch combine in batch order,
// interleaved with other keys.
func testBatchDuplicates[V any](t *testing.T, h *Harness[V]) {
	s := h.openBatch(t)
	a, b := state.Key{Entity: "dup", Bucket: 1}, state.Key{Entity: "dup", Bucket: 2}
	var ups []state.Update[V]
	for i := range 12 {
		k := a
		if i%3 == 2 {
			k = b
		}
		ups = append(ups, state.Update[V]{Key: k, Delta: h.Delta(i)})
	}
	mustMergeMany(t, s, ups)
	wantA, wantB := h.Monoid.Identity(), h.Monoid.Identity()
	for i, u := range ups {
		if u.Key == a {
			wantA = h.Monoid.Combine(wantA, h.Delta(i))
		} else {
			wantB = h.Monoid.Combine(wantB, h.Delta(i))
		}
	}
	wantValue(t, h, s, a, wantA)
	wantValue(t, h, s, b, wantB)
}

func testBatchEmpty[V any](t *testing.T, h *Harness[V]) {
	s := h.openBatch(t)
	mustMergeMany(t, s, nil)
	mustMergeMany(t, s, []state.Update[V]{})
}

// testBatchBadInput: bad input anywhere in a batch (first, middle, last) refuses
// the whole batch with state.ErrInvalidArgument, not a *state.MergeError, and
// writes none of its good updates.
func testBatchBadInput[V any](t *testing.T, h *Harness[V]) {
	s := h.openBatch(t)
	type bad struct {
		name string
		up   state.Update[V]
	}
	cases := []bad{
		{"bad key", state.Update[V]{Key: state.Key{Entity: "a\nb"}, Delta: h.Delta(0)}},
		{"empty entity", state.Update[V]{Delta: h.Delta(0)}},
		{"negative ttl", state.Update[V]{Key: state.Key{Entity: "neg"}, Delta: h.Delta(0), TTL: -time.Second}},
		{"ttl over MaxTTL", state.Update[V]{Key: state.Key{Entity: "long"}, Delta: h.Delta(0), TTL: state.MaxTTL + time.Millisecond}},
	}
	for i, d := range h.BadDeltas {
		cases = append(cases, bad{fmt.Sprintf("bad delta %d", i), state.Update[V]{Key: state.Key{Entity: "bad-delta"}, Delta: d}})
	}
	existing := state.Key{Entity: "batch-bad-existing"}
	mustMerge(t, s, existing, h.Delta(0), 0)
	for _, c := range cases {
		for _, at := range []int{0, 2, 4} {
			t.Run(fmt.Sprintf("%s at %d", c.name, at), func(t *testing.T) {
				var good []state.Key
				var ups []state.Update[V]
				for i := range 4 {
					k := state.Key{Entity: fmt.Sprintf("batch-bad-%s-%d", c.name, i), Bucket: int64(at)}
					good = append(good, k)
					ups = append(ups, state.Update[V]{Key: k, Delta: h.Delta(i + 1)})
				}
				ups = append(ups, state.Update[V]{Key: existing, Delta: h.Delta(9)})
				ups = append(ups[:at], append([]state.Update[V]{c.up}, ups[at:]...)...)
				err := s.MergeMany(t.Context(), ups)
				wantInvalid(t, "MergeMany", err)
				var me *state.MergeError
				if errors.As(err, &me) {
					t.Errorf("MergeMany of bad input returned a *state.MergeError (some updates written): %v", err)
				}
				for _, k := range good {
					wantMissing(t, s, k)
				}
				wantValue(t, h, s, existing, h.fold(0, 1))
			})
		}
	}
}

// testBatchLarge: a batch of more than state.MergeBatchSize distinct keys (split
// by the backend into several round trips), with updates of its first key again at
// the end, applies every update, in order.
func testBatchLarge[V any](t *testing.T, h *Harness[V]) {
	s := h.openBatch(t)
	n := state.MergeBatchSize + 1
	keys := make([]state.Key, n)
	want := map[state.Key]V{}
	ups := make([]state.Update[V], 0, n+2)
	for i := range keys {
		keys[i] = state.Key{Entity: fmt.Sprintf("large-%d", i), Bucket: int64(i % 5)}
		ups = append(ups, state.Update[V]{Key: keys[i], Delta: h.Delta(i)})
		want[keys[i]] = h.Delta(i)
	}
	for _, i := range []int{n, n + 1} {
		ups = append(ups, state.Update[V]{Key: keys[0], Delta: h.Delta(i)})
		want[keys[0]] = h.Monoid.Combine(want[keys[0]], h.Delta(i))
	}
	mustMergeMany(t, s, ups)
	wantValues(t, h, s, keys, want)
}

// testBatchClosedCancelled: after Close MergeMany is state.ErrClosed, with a
// cancelled context context.Canceled; neither writes anything nor is a
// *state.MergeError.
func testBatchClosedCancelled[V any](t *testing.T, h *Harness[V]) {
	s := h.openBatch(t)
	existing, k := state.Key{Entity: "batch-cancelled"}, state.Key{Entity: "batch-cancelled", Bucket: 1}
	mustMerge(t, s, existing, h.Delta(0), 0)
	ups := []state.Update[V]{{Key: k, Delta: h.Delta(1)}, {Key: existing, Delta: h.Delta(1)}}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var me *state.MergeError
	if err := s.MergeMany(ctx, ups); !errors.Is(err, context.Canceled) || errors.As(err, &me) {
		t.Errorf("MergeMany with a cancelled context: err = %v, want context.Canceled, not a *state.MergeError", err)
	}
	wantMissing(t, s, k)
	wantValue(t, h, s, existing, h.fold(0, 1))
	c := h.openBatch(t)
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.MergeMany(t.Context(), ups); !errors.Is(err, state.ErrClosed) {
		t.Errorf("MergeMany after Close: err = %v, want state.ErrClosed", err)
	}
	wantMissing(t, s, k)
	wantValue(t, h, s, existing, h.fold(0, 1))
}

// testBatchTTL: each update sets its own key's expiry to now+ttl, as MergeUpdate
// does: a ttl reset part-way holds, ttl 0 clears an earlier expiry, a ttl expires.
func testBatchTTL[V any](t *testing.T, h *Harness[V]) {
	s := h.openBatch(t)
	ttl := h.ttl()
	h.observe(t, func(tl *timeline, attempt int) string {
		key := func(b int64) state.Key { return state.Key{Entity: fmt.Sprintf("batch-ttl-%d", attempt), Bucket: b} }
		reset, cleared, fresh, forever := key(1), key(2), key(3), key(4)
		first := tl.do(func() {
			mustMerge(t, s, reset, h.Delta(0), ttl)
			mustMerge(t, s, cleared, h.Delta(0), ttl)
		})
		tl.sleepUntil(first.from + ttl*6/10)
		batch := tl.do(func() {
			mustMergeMany(t, s, []state.Update[V]{
				{Key: reset, Delta: h.Delta(1), TTL: ttl},
				{Key: cleared, Delta: h.Delta(1)},
				{Key: fresh, Delta: h.Delta(1), TTL: ttl},
				{Key: forever, Delta: h.Delta(1)},
			})
		})
		if why := endsBefore(batch, first.from+ttl, "the batch"); why != "" {
			return why
		}
		// After the first merges' expiry, before the batch's (fake clock: 1.3 ttl
		// after the first merges, 0.7 ttl after the batch): all there.
		tl.sleepUntil(between(first.to+ttl, batch.from+ttl))
		keys := []state.Key{reset, cleared, fresh, forever}
		var (
			vs    []V
			found []bool
			err   error
		)
		read := tl.do(func() { vs, found, err = s.GetMany(t.Context(), keys) })
		if err != nil || len(vs) != len(keys) || len(found) != len(keys) {
			t.Fatalf("GetMany: %d values, %d flags, %v", len(vs), len(found), err)
		}
		if why := startsFrom(read, first.to+ttl, "the read after the first expiry"); why != "" {
			return why
		}
		if why := endsBefore(read, batch.from+ttl, "the read before the batch's expiry"); why != "" {
			return why
		}
		want := []V{h.fold(0, 2), h.fold(0, 2), h.fold(1, 2), h.fold(1, 2)}
		for i, k := range keys {
			wantGot(t, h, k, vs[i], found[i], want[i])
		}
		tl.sleepUntil(batch.to + ttl*11/10)
		wantMissing(t, s, reset)
		wantMissing(t, s, fresh)
		wantValues(t, h, s, []state.Key{cleared, forever}, map[state.Key]V{cleared: h.fold(0, 2), forever: h.fold(1, 2)})
		return ""
	})
}

// testBatchRefusedAlone: an update the store refuses (an int64 sum overflow) fails
// alone: MergeMany returns a *state.MergeError whose entry for it wraps
// state.ErrInvalidArgument, that key is unchanged, and every other update applied.
func testBatchRefusedAlone(t *testing.T, h *Harness[int64]) {
	s := h.openBatch(t)
	hi := state.Key{Entity: "batch-int-max"}
	a, b := state.Key{Entity: "batch-refused", Bucket: 1}, state.Key{Entity: "batch-refused", Bucket: 2}
	mustMerge(t, s, hi, math.MaxInt64, 0)
	err := s.MergeMany(t.Context(), []state.Update[int64]{{Key: a, Delta: 1}, {Key: hi, Delta: 1}, {Key: b, Delta: 2}})
	var me *state.MergeError
	if !errors.As(err, &me) || len(me.Errs) != 3 {
		t.Fatalf("MergeMany with an overflowing update: err = %v, want a *state.MergeError of 3 entries", err)
	}
	if me.Errs[0] != nil || me.Errs[2] != nil || !errors.Is(me.Errs[1], state.ErrInvalidArgument) {
		t.Errorf("MergeError.Errs = %v, want [nil, ErrInvalidArgument, nil]", me.Errs)
	}
	wantValue(t, h, s, hi, math.MaxInt64)
	wantValue(t, h, s, a, 1)
	wantValue(t, h, s, b, 2)
}

// testBatchTTLOrder: updates of one key with different ttls in one batch leave
// the expiry that the same MergeUpdates in order leave: the last one's, also when
// the key's updates straddle a round trip (state.MergeBatchSize). One key ends
// with the ttl of its last update, neither the first, the longest nor the
// shortest of the batch: live just before that expiry, gone at it; another ends
// with ttl 0 after longer ttls: live past every ttl of the batch.
func testBatchTTLOrder[V any](t *testing.T, h *Harness[V]) {
	s := h.openBatch(t)
	ttl := h.ttl()
	n := state.MergeBatchSize + 10
	h.observe(t, func(tl *timeline, attempt int) string {
		last := state.Key{Entity: "ttl-order", Bucket: int64(2*attempt + 1)}
		cleared := state.Key{Entity: "ttl-order", Bucket: int64(2*attempt + 2)}
		// at: the index of each update of the two keys, and its ttl.
		type at struct {
			i   int
			ttl time.Duration
		}
		plan := map[state.Key][]at{
			last:    {{0, ttl * 3 / 2}, {n / 3, 0}, {state.MergeBatchSize - 1, ttl / 2}, {state.MergeBatchSize + 5, ttl}},
			cleared: {{1, ttl / 2}, {state.MergeBatchSize + 1, ttl * 3 / 2}, {state.MergeBatchSize + 6, 0}},
		}
		ups := make([]state.Update[V], n)
		for i := range ups {
			ups[i] = state.Update[V]{Key: state.Key{Entity: fmt.Sprintf("ttl-order-%d", attempt), Bucket: int64(i)}, Delta: h.Delta(i)}
		}
		want := map[state.Key]V{}
		for k, ats := range plan {
			want[k] = h.Monoid.Identity()
			for _, a := range ats {
				ups[a.i] = state.Update[V]{Key: k, Delta: h.Delta(a.i), TTL: a.ttl}
				want[k] = h.Monoid.Combine(want[k], h.Delta(a.i))
			}
		}
		batch := tl.do(func() { mustMergeMany(t, s, ups) })
		tl.sleepUntil(tl.justBefore(batch.from+ttl, ttl))
		var (
			vs    []V
			found []bool
			err   error
		)
		keys := []state.Key{last, cleared}
		read := tl.do(func() { vs, found, err = s.GetMany(t.Context(), keys) })
		if err != nil || len(vs) != 2 || len(found) != 2 {
			t.Fatalf("GetMany: %d values, %d flags, %v", len(vs), len(found), err)
		}
		if why := endsBefore(read, batch.from+ttl, "the read just before the expiry"); why != "" {
			return why
		}
		for i, k := range keys {
			if !found[i] {
				t.Fatalf("key %v: expired %v after the batch, before its last update's ttl %v", k, read.to-batch.from, ttl)
			}
			wantGot(t, h, k, vs[i], found[i], want[k])
		}
		tl.sleepUntil(batch.to + ttl)
		if v, found := mustGet(t, s, last); found {
			t.Fatalf("key %v = %v, found at the expiry of its last update (ttl %v): the batch kept another of its ttls (%v first, 0, %v, %v last)",
				last, v, ttl, ttl*3/2, ttl/2, ttl)
		}
		tl.sleepUntil(batch.to + 2*ttl)
		wantValue(t, h, s, cleared, want[cleared])
		return ""
	})
}

// overflows returns, for an int64 or float64 sum harness that tests the sum
// limits, two stored values and a delta each that the store must refuse (a sum
// past the range at either end); ok is false for other harnesses.
func (h *Harness[V]) overflows() (tops, deltas [2]V, ok bool) {
	if h.SkipSumLimits || h.Monoid.Kind() != monoid.KindSum {
		return tops, deltas, false
	}
	switch p := any(&tops).(type) {
	case *[2]int64:
		*p = [2]int64{math.MaxInt64, math.MinInt64}
		*any(&deltas).(*[2]int64) = [2]int64{1, -1}
		return tops, deltas, true
	case *[2]float64:
		*p = [2]float64{state.MaxFloat64, -state.MaxFloat64}
		*any(&deltas).(*[2]float64) = [2]float64{state.MaxFloat64, -state.MaxFloat64}
		return tops, deltas, true
	}
	return tops, deltas, false
}

// testBatchRefusalIndex: in a batch of several round trips (past
// 2*state.MergeBatchSize), updates the store refuses (a sum past its range) in
// the second and third round trip are reported at their index in the whole
// batch: the *state.MergeError has one entry per update, those two wrap
// state.ErrInvalidArgument, every other is nil and was applied.
func testBatchRefusalIndex[V any](t *testing.T, h *Harness[V]) {
	s := h.openBatch(t)
	tops, deltas, _ := h.overflows()
	n := 2*state.MergeBatchSize + 10
	refused := map[int]int{state.MergeBatchSize + 7: 0, 2*state.MergeBatchSize + 3: 1} // index -> which top
	top := [2]state.Key{{Entity: "refused-top"}, {Entity: "refused-bottom"}}
	for i, k := range top {
		mustMerge(t, s, k, tops[i], 0)
	}
	ups := make([]state.Update[V], n)
	keys := make([]state.Key, 0, n)
	want := map[state.Key]V{}
	for i := range ups {
		if j, ok := refused[i]; ok {
			ups[i] = state.Update[V]{Key: top[j], Delta: deltas[j]}
			continue
		}
		k := state.Key{Entity: "refused-batch", Bucket: int64(i)}
		ups[i] = state.Update[V]{Key: k, Delta: h.Delta(i)}
		keys = append(keys, k)
		want[k] = h.fold(i, i+1)
	}
	err := s.MergeMany(t.Context(), ups)
	var me *state.MergeError
	if !errors.As(err, &me) {
		t.Fatalf("MergeMany of %d updates with 2 refused: err = %v, want a *state.MergeError", n, err)
	}
	if len(me.Errs) != n {
		t.Fatalf("MergeError.Errs has %d entries, want %d (one per update of the whole batch)", len(me.Errs), n)
	}
	bad := 0
	for i, e := range me.Errs {
		_, isRefused := refused[i]
		if isRefused == errors.Is(e, state.ErrInvalidArgument) && (isRefused || e == nil) {
			continue
		}
		if bad++; bad <= 5 {
			if isRefused {
				t.Errorf("MergeError.Errs[%d] = %v, want state.ErrInvalidArgument (the refused update at batch index %d, index %d of its round trip)", i, e, i, i%state.MergeBatchSize)
			} else {
				t.Errorf("MergeError.Errs[%d] = %v, want nil", i, e)
			}
		}
	}
	if bad > 5 {
		t.Errorf("... %d wrong entries of %d", bad, n)
	}
	for i, k := range top {
		wantValue(t, h, s, k, tops[i])
	}
	wantValues(t, h, s, keys, want)
}
