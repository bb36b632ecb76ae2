package redisstate_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/internal/storekey"
	"github.com/pipestate/pipestate/state/internal/storetest"
	"github.com/pipestate/pipestate/types"
)

// fenceView is s seen by the holder of fence f of lease key "job".
func fenceView[V any](t *testing.T, s state.Store[V], f int64) state.Store[V] {
	t.Helper()
	v, err := state.Fenced(s, types.Lease{Key: "job", Token: "t", Fence: f})
	must(t, err)
	return v
}

// fenceMemory returns the fence that the memory of kind's values of entity
// remembers for "job".
func fenceMemory(t *testing.T, s lostReplyStores, kind, entity string) int64 {
	t.Helper()
	n, err := s.client.HGet(t.Context(), s.prefix+":{"+entity+"}:"+kind+":fences", "job").Int64()
	if err != nil {
		t.Fatalf("fence memory of %s: %v", entity, err)
	}
	return n
}

// fencedMerge is one fenced merge of delta into entity's bucket 0 through st.
// event is the event ID of a MergeUpdateOnce.
type fencedMerge[V any] func(ctx context.Context, st state.Store[V], entity, event string, delta V) (applied bool, err error)

func mergeUpdate[V any](ctx context.Context, st state.Store[V], entity, _ string, delta V) (bool, error) {
	return true, st.MergeUpdate(ctx, state.Key{Entity: entity}, delta, time.Hour)
}

func mergeOnce[V any](ctx context.Context, st state.Store[V], entity, event string, delta V) (bool, error) {
	return st.(state.OnceStore[V]).MergeUpdateOnce(ctx, event, state.Key{Entity: entity}, delta, time.Hour)
}

func mergeMany[V any](ctx context.Context, st state.Store[V], entity, _ string, delta V) (bool, error) {
	return true, st.(state.BatchStore[V]).MergeMany(ctx, []state.Update[V]{{Key: state.Key{Entity: entity}, Delta: delta, TTL: time.Hour}})
}

// fencedRowPair is the two lost-reply rows of one fenced merge (method of a
// store, kind its key segment): a fenced merge whose reply is lost keeps its
// documented outcome (get must say ok: at least once for a plain sum, once
// otherwise) and remembers its fence; a merge the fence refused is refused
// again by its retry, and writes nothing (once is what one merge leaves).
func fencedRowPair[V any](method, kind string, store func(lostReplyStores) state.Store[V], merge fencedMerge[V], delta V,
	ok func(t *testing.T, st state.Store[V], k state.Key), once func(t *testing.T, st state.Store[V], k state.Key)) []lostReplyRow {
	entity := "lost-fenced-" + method
	k := state.Key{Entity: entity}
	return []lostReplyRow{
		{method + " fenced", func(t *testing.T, s lostReplyStores, arm func(...string)) {
			st := store(s)
			arm("evalsha", entity)
			if applied, err := merge(t.Context(), fenceView(t, st, 3), entity, "ev", delta); err != nil || !applied {
				t.Fatalf("fenced merge = %v, %v; want applied", applied, err)
			}
			ok(t, st, k)
			if got := fenceMemory(t, s, kind, entity); got != 3 {
				t.Fatalf("fence memory = %d, want 3", got)
			}
		}},
		{method + " fence refused", func(t *testing.T, s lostReplyStores, arm func(...string)) {
			st := store(s)
			if _, err := merge(t.Context(), fenceView(t, st, 5), entity, "ev1", delta); err != nil {
				t.Fatal(err)
			}
			arm("evalsha", entity)
			_, err := merge(t.Context(), fenceView(t, st, 4), entity, "ev2", delta) // a new event: not a duplicate
			if !errors.Is(err, state.ErrFenced) {
				t.Fatalf("merge of an older fence = %v, want ErrFenced", err)
			}
			once(t, st, k)
			if got := fenceMemory(t, s, kind, entity); got != 5 {
				t.Fatalf("fence memory = %d, want 5", got)
			}
		}},
	}
}

// values is a check that k holds one of want.
func values[V comparable](want ...V) func(t *testing.T, st state.Store[V], k state.Key) {
	return func(t *testing.T, st state.Store[V], k state.Key) { t.Helper(); wantGet(t, st.Get, k, want...) }
}

func bytesValue(want string) func(t *testing.T, st state.Store[[]byte], k state.Key) {
	return func(t *testing.T, st state.Store[[]byte], k state.Key) {
		t.Helper()
		if got, _, err := st.Get(t.Context(), k); err != nil || string(got) != want {
			t.Fatalf("Get = %v, %v; want %v", got, err, []byte(want))
		}
	}
}

// TestLostReplyFenced runs the lost-reply rows of every fenced merge: each
// store's MergeUpdate, MergeUpdateOnce and MergeMany.
func TestLostReplyFenced(t *testing.T) {
	sum := func(s lostReplyStores) state.Store[int64] { return s.sum }
	fsum := func(s lostReplyStores) state.Store[float64] { return s.fsum }
	mx := func(s lostReplyStores) state.Store[int64] { return s.max }
	bs := func(s lostReplyStores) state.Store[[]byte] { return s.bytes }
	bytesKind := storekey.Bytes(storetest.Counter{}.Kind())
	var rows []lostReplyRow
	for _, r := range [][]lostReplyRow{
		fencedRowPair("Int64SumStore.MergeUpdate", storekey.Int64Sum, sum, mergeUpdate, 5, values[int64](5, 10), values[int64](5)),
		fencedRowPair("Int64SumStore.MergeUpdateOnce", storekey.Int64Sum, sum, mergeOnce, 5, values[int64](5), values[int64](5)),
		fencedRowPair("Int64SumStore.MergeMany", storekey.Int64Sum, sum, mergeMany, 5, values[int64](5, 10), values[int64](5)),
		fencedRowPair("Float64SumStore.MergeUpdate", storekey.Float64Sum, fsum, mergeUpdate, 0.5, values(0.5, 1), values(0.5)),
		fencedRowPair("Float64SumStore.MergeUpdateOnce", storekey.Float64Sum, fsum, mergeOnce, 0.5, values(0.5), values(0.5)),
		fencedRowPair("Float64SumStore.MergeMany", storekey.Float64Sum, fsum, mergeMany, 0.5, values(0.5, 1), values(0.5)),
		fencedRowPair("Int64MaxStore.MergeUpdate", storekey.Int64Max, mx, mergeUpdate, 5, values[int64](5), values[int64](5)),
		fencedRowPair("Int64MaxStore.MergeUpdateOnce", storekey.Int64Max, mx, mergeOnce, 5, values[int64](5), values[int64](5)),
		fencedRowPair("Int64MaxStore.MergeMany", storekey.Int64Max, mx, mergeMany, 5, values[int64](5), values[int64](5)),
		fencedRowPair("BytesStore.MergeUpdate", bytesKind, bs, mergeUpdate, storetest.Counter{}.Of(5), bytesValue(c5), bytesValue(c5)),
		fencedRowPair("BytesStore.MergeUpdateOnce", bytesKind, bs, mergeOnce, storetest.Counter{}.Of(5), bytesValue(c5), bytesValue(c5)),
	} {
		rows = append(rows, r...)
	}
	runLostReplyRows(t, rows)
}
