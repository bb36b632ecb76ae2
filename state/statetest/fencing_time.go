package statetest

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
)

// fencingTime runs the rule's tests with time on merge kind name (package
// fence, "Lifetime"): what a key remembers lives as long as its value, whatever
// merge extended the value last. A merge fenced 5 with ttl T, then, half T
// later, a merge that extends the value's life (unfenced with ttl 4T or 0, as an
// operator's backfill or an older version does, or fenced 5 with ttl 4T), then
// time moved to 2T, past the first merge's expiry: the value is live, so fence 4
// is still refused and writes nothing. It needs FakeTime (the Sleep of hours)
// and skips without it, or with SkipTTL.
func fencingTime[V any](t *testing.T, h *Harness[V], m fencedMerge[V]) {
	name := m.name
	for _, c := range []struct {
		test  string
		fence int64         // of the rewrite, 0 unfenced
		ttl   time.Duration // of the rewrite, in T
	}{
		{"unfenced_longer_ttl_keeps_fence", 0, 4},
		{"unfenced_ttl_cleared_keeps_fence", 0, 0},
		{"fenced_longer_ttl_keeps_fence", 5, 4},
	} {
		t.Run(c.test, func(t *testing.T) {
			switch {
			case !h.FakeTime:
				t.Skip("needs Harness.FakeTime to move time past a ttl")
			case h.SkipTTL:
				t.Skip("Harness.SkipTTL")
			}
			ttl := h.ttl()
			a, b := h.open(t), h.open(t)
			k := state.Key{Entity: "fenced-time-" + name, Bucket: 1}
			if err := m.merge(t.Context(), fencedStore(t, a, "lock", 5), k, "e0", h.Delta(0), ttl); err != nil {
				t.Fatalf("%s fenced 5 with ttl %v: %v", name, ttl, err)
			}
			h.sleep(t, ttl/2)
			if err := m.merge(t.Context(), fencedStore(t, b, "lock", c.fence), k, "e1", h.Delta(1), c.ttl*ttl); err != nil {
				t.Fatalf("%s (fence %d, 0 unfenced) with ttl %v: %v", name, c.fence, c.ttl*ttl, err)
			}
			h.sleep(t, ttl*3/2)
			wantValue(t, h, b, k, h.fold(0, 2))
			wantFenced(t, m.merge(t.Context(), fencedStore(t, a, "lock", 4), k, "e2", h.Delta(100), ttl),
				fmt.Sprintf("%s fenced 4, past the ttl of fence 5's merge but not the value's", name))
			wantValue(t, h, b, k, h.fold(0, 2))
		})
	}
}

// fencingRefusedByMonoid runs, on an int64 sum store, the rule that a merge the
// monoid refuses (a sum past the int64 range: state.ErrInvalidArgument, nothing
// written) remembers nothing, as a fence's refusal does: after fence 5 merged,
// fence 7's refused merge leaves the key remembering 5, so fence 6 merges.
func fencingRefusedByMonoid[V any](t *testing.T, h *Harness[V], merge fencedMerge[V]) {
	hi, ok := any(h).(*Harness[int64])
	m, _ := any(merge).(fencedMerge[int64])
	name := m.name
	if !ok || h.SkipSumLimits || h.Monoid.Kind() != monoid.KindSum {
		return
	}
	t.Run("refused_merge_remembers_nothing", func(t *testing.T) {
		a, b := hi.open(t), hi.open(t)
		k := state.Key{Entity: "fenced-range-" + name, Bucket: 1}
		if err := m.merge(t.Context(), fencedStore(t, a, "lock", 5), k, "e0", math.MaxInt64, 0); err != nil {
			t.Fatalf("%s fenced 5 of MaxInt64: %v", name, err)
		}
		if err := m.merge(t.Context(), fencedStore(t, b, "lock", 7), k, "e1", 1, 0); !errors.Is(err, state.ErrInvalidArgument) {
			t.Fatalf("%s fenced 7 of 1 onto MaxInt64 = %v, want ErrInvalidArgument (past the int64 range)", name, err)
		}
		if err := m.merge(t.Context(), fencedStore(t, a, "lock", 6), k, "e2", -1, 0); err != nil {
			t.Fatalf("%s fenced 6 after fence 5 merged and fence 7's merge was refused by the monoid: %v, want it merged (a refused merge remembers nothing)", name, err)
		}
		wantValue(t, hi, b, k, math.MaxInt64-1)
	})
}
