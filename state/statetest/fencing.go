package statetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/types"
)

// RunFencing tests fenced merges (package fence, state.Fenced) on MergeUpdate,
// MergeUpdateOnce (when the store is a state.OnceStore) and MergeMany (when it is
// a state.BatchStore): once a lease key's fence f has merged into a key, a merge
// into it carrying a lower fence of that key fails with an error wrapping
// state.ErrFenced (and pipestate.ErrLockNotHeld), from any instance, with nothing
// written; equal and higher fences merge; another lease key's fences neither pass
// nor block; an unfenced merge passes and leaves what the key remembers as it
// was; a refused merge remembers nothing (refused by a fence, or by an int64
// sum's range); what a key remembers outlives every merge that extended its
// value (with FakeTime: a ttl'd fenced merge, then a merge extending or clearing
// the ttl, then time past the first merge's ttl). MergeUpdateOnce checks its event's
// claim first (a redelivery is a duplicate whatever its fence) and a refused
// event claims nothing; MergeMany reports a refused update at its index in a
// *state.MergeError and applies the others. RunStore calls it: every store must
// pass it.
func RunFencing[V any](t *testing.T, h Harness[V]) {
	h.check(t)
	probe := h.open(t)
	_, once := probe.(state.OnceStore[V])
	_, batch := probe.(state.BatchStore[V])
	writes := fencedMerges(probe)
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) { fencingRules(t, &h, w) })
	}
	if once {
		t.Run("MergeUpdateOnce/claim_before_fence", func(t *testing.T) { testOnceClaimBeforeFence(t, &h) })
	}
	if batch {
		t.Run("MergeMany/refusal_at_its_index", func(t *testing.T) { testBatchFenced(t, &h) })
	}
	t.Run("bad_lease_refused_by_view", func(t *testing.T) {
		for _, l := range []types.Lease{{Key: "", Token: "t", Fence: 1}, {Key: "k", Token: "", Fence: 1}, {Key: "k", Token: "t", Fence: 0}} {
			if _, err := state.Fenced(probe, l); !errors.Is(err, state.ErrInvalidArgument) {
				t.Errorf("state.Fenced(%+v) error = %v, want ErrInvalidArgument", l, err)
			}
		}
	})
}

// fencedMerge is one kind of merge that takes a fence: merge merges delta into
// k through s with ttl; event is a fresh event ID for MergeUpdateOnce (whose
// not-applied new event is an error). A MergeMany of one update returns that
// update's error, not the *state.MergeError holding it.
type fencedMerge[V any] struct {
	name  string
	merge func(ctx context.Context, s state.Store[V], k state.Key, event string, delta V, ttl time.Duration) error
}

// fencedMerges returns the fenced merge kinds of the store: MergeUpdate, and
// MergeUpdateOnce and MergeMany where it is a state.OnceStore or a
// state.BatchStore.
func fencedMerges[V any](probe state.Store[V]) []fencedMerge[V] {
	merges := []fencedMerge[V]{{"MergeUpdate", func(ctx context.Context, s state.Store[V], k state.Key, _ string, d V, ttl time.Duration) error {
		return s.MergeUpdate(ctx, k, d, ttl)
	}}}
	if _, ok := probe.(state.OnceStore[V]); ok {
		merges = append(merges, fencedMerge[V]{"MergeUpdateOnce", func(ctx context.Context, s state.Store[V], k state.Key, event string, d V, ttl time.Duration) error {
			applied, err := s.(state.OnceStore[V]).MergeUpdateOnce(ctx, event, k, d, ttl)
			if err == nil && !applied {
				return fmt.Errorf("MergeUpdateOnce of the new event %q was not applied", event)
			}
			return err
		}})
	}
	if _, ok := probe.(state.BatchStore[V]); ok {
		merges = append(merges, fencedMerge[V]{"MergeMany", func(ctx context.Context, s state.Store[V], k state.Key, _ string, d V, ttl time.Duration) error {
			err := s.(state.BatchStore[V]).MergeMany(ctx, []state.Update[V]{{Key: k, Delta: d, TTL: ttl}})
			var me *state.MergeError
			if errors.As(err, &me) && len(me.Errs) == 1 {
				return me.Errs[0]
			}
			return err
		}})
	}
	return merges
}

// fencedStore returns s seen by a made-up lease of key with fence f (f 0: s).
func fencedStore[V any](t *testing.T, s state.Store[V], key string, f int64) state.Store[V] {
	t.Helper()
	if f == 0 {
		return s
	}
	fs, err := state.Fenced(s, types.Lease{Key: key, Token: fmt.Sprintf("token-%d", f), Fence: f, ExpiresAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatalf("state.Fenced: %v", err)
	}
	return fs
}

// wantFenced fails t unless err wraps state.ErrFenced.
func wantFenced(t *testing.T, err error, what string) {
	t.Helper()
	if !errors.Is(err, state.ErrFenced) {
		t.Fatalf("%s: error %v, want one wrapping ErrFenced", what, err)
	}
}

// fencingRules runs the rule's tests on one merge. Accepted merges use deltas
// 0, 1, 2...; refused ones use deltas from 100 on, which a harness's Delta makes
// different (for a Max store, larger), so a refused merge that wrote shows.
func fencingRules[V any](t *testing.T, h *Harness[V], w fencedMerge[V]) {
	type step struct {
		s     state.Store[V]
		key   string
		fence int64
		ok    bool
	}
	run := func(t *testing.T, lock string, steps []step) {
		k := state.Key{Entity: "fenced-" + w.name, Bucket: 1}
		accepted, refused := 0, 100
		for n, st := range steps {
			what := fmt.Sprintf("step %d: %s fenced %s/%d", n, w.name, st.key, st.fence)
			if st.fence == 0 {
				what = fmt.Sprintf("step %d: %s unfenced", n, w.name)
			}
			event := fmt.Sprintf("event-%d", n)
			s := fencedStore(t, st.s, lock+st.key, st.fence)
			if st.ok {
				if err := w.merge(t.Context(), s, k, event, h.Delta(accepted), 0); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				accepted++
			} else {
				wantFenced(t, w.merge(t.Context(), s, k, event, h.Delta(refused), 0), what)
				refused++
			}
			// Read through the instance that merged: it sees its own writes
			// at once, also through a read cache.
			wantValue(t, h, st.s, k, h.fold(0, accepted))
		}
	}
	t.Run("older_refused", func(t *testing.T) {
		a, b := h.open(t), h.open(t)
		run(t, "lock", []step{{a, "", 5, true}, {b, "", 4, false}, {a, "", 1, false}})
	})
	t.Run("equal_and_newer_pass", func(t *testing.T) {
		a, b := h.open(t), h.open(t)
		run(t, "lock", []step{{a, "", 5, true}, {b, "", 5, true}, {b, "", 6, true}, {a, "", 5, false}})
	})
	t.Run("keys_apart", func(t *testing.T) {
		a, b := h.open(t), h.open(t)
		run(t, "lock", []step{{a, "-a", 5, true}, {b, "-a:b", 1, true}, {a, "-a", 4, false}, {b, "-a:b", 1, true}, {a, "-a", 5, true}})
	})
	t.Run("unfenced_passes_and_forgets_nothing", func(t *testing.T) {
		a, b := h.open(t), h.open(t)
		run(t, "lock", []step{{a, "", 5, true}, {b, "", 0, true}, {a, "", 4, false}, {a, "", 5, true}})
	})
	t.Run("refusal_remembers_nothing", func(t *testing.T) {
		a, b := h.open(t), h.open(t)
		run(t, "lock", []step{{a, "", 5, true}, {b, "", 3, false}, {b, "", 4, false}, {a, "", 5, true}})
	})
	fencingTime(t, h, w)
	fencingRefusedByMonoid(t, h, w)
}

// testOnceClaimBeforeFence: a redelivered event is a duplicate whatever its
// fence, and a refused event claims nothing.
func testOnceClaimBeforeFence[V any](t *testing.T, h *Harness[V]) {
	a, b := h.openOnce(t), h.openOnce(t)
	k := state.Key{Entity: "fenced-once", Bucket: 1}
	merge := func(s state.Store[V], f int64, event string, i int) (bool, error) {
		return fencedStore(t, s, "lock", f).(state.OnceStore[V]).MergeUpdateOnce(t.Context(), event, k, h.Delta(i), 0)
	}
	if applied, err := merge(a, 5, "e1", 0); err != nil || !applied {
		t.Fatalf("e1 fenced 5 = (%v, %v), want (true, nil)", applied, err)
	}
	if applied, err := merge(b, 4, "e1", 0); err != nil || applied {
		t.Fatalf("redelivery of e1 fenced 4 = (%v, %v), want (false, nil): the claim is checked before the fence", applied, err)
	}
	_, err := merge(b, 4, "e2", 100)
	wantFenced(t, err, "e2 fenced 4 after fence 5 merged")
	if applied, err := merge(a, 5, "e2", 1); err != nil || !applied {
		t.Fatalf("e2 fenced 5 after its refusal = (%v, %v), want (true, nil): a refused event claims nothing", applied, err)
	}
	wantValue(t, h, a, k, h.fold(0, 2))
}

// testBatchFenced: a refused update of a batch is reported at its index, and the
// batch's other updates apply.
func testBatchFenced[V any](t *testing.T, h *Harness[V]) {
	a, b := h.open(t), h.open(t)
	k1, k2 := state.Key{Entity: "fenced-batch-1", Bucket: 1}, state.Key{Entity: "fenced-batch-2", Bucket: 1}
	batch := func(s state.Store[V], f int64, ups []state.Update[V]) error {
		return fencedStore(t, s, "lock", f).(state.BatchStore[V]).MergeMany(t.Context(), ups)
	}
	if err := batch(a, 5, []state.Update[V]{{Key: k1, Delta: h.Delta(0)}}); err != nil {
		t.Fatalf("MergeMany fenced 5: %v", err)
	}
	err := batch(b, 4, []state.Update[V]{{Key: k2, Delta: h.Delta(1)}, {Key: k1, Delta: h.Delta(100)}, {Key: k2, Delta: h.Delta(2)}})
	var me *state.MergeError
	if !errors.As(err, &me) || len(me.Errs) != 3 {
		t.Fatalf("MergeMany fenced 4 with a refused update = %v, want a *state.MergeError of 3 entries", err)
	}
	if me.Errs[0] != nil || me.Errs[2] != nil {
		t.Errorf("MergeMany: the updates of %v (which no newer fence wrote) failed: %v, %v", k2, me.Errs[0], me.Errs[2])
	}
	wantFenced(t, me.Errs[1], "MergeMany's update of a key fence 5 merged into, fenced 4")
	wantValue(t, h, b, k1, h.fold(0, 1))
	wantValue(t, h, b, k2, h.fold(1, 3))
}
