package statetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/pipestate/pipestate/state"
)

// RunFencingRace tests fenced merges under concurrency: a stale holder (fence
// 5) and a newer one (fence 6) of one lease key merge into one key at the same
// instant, from two instances released from a barrier, each round on a fresh
// key, for MinRaceRounds rounds and RaceBudget at least (MergeUpdate, and
// MergeUpdateOnce and MergeMany where the store has them). The newer merge
// always succeeds. A stale merge that succeeded must come before the newer
// one: the newer holder's read of the key, made as soon as its merge returned,
// already holds the stale delta. One that was refused (ErrFenced) wrote
// nothing: the key holds the newer delta alone. A store that checks the fence
// and then writes in two steps lets the stale merge land after the newer one
// returned, and fails. RunStore calls it.
func RunFencingRace[V any](t *testing.T, h Harness[V]) {
	h.check(t)
	for _, m := range fencedMerges(h.open(t)) {
		t.Run(m.name, func(t *testing.T) { testFencingRace(t, &h, m) })
	}
}

// testFencingRace races a stale merge (delta 100, which a harness's Delta
// makes different, for a Max store larger) and a newer one (delta 0).
func testFencingRace[V any](t *testing.T, h *Harness[V], m fencedMerge[V]) {
	a, b := h.open(t), h.open(t)
	both := h.Monoid.Combine(h.Delta(0), h.Delta(100))
	raceRounds(t, func(round int) {
		k := state.Key{Entity: fmt.Sprintf("fence-race-%s-%d", m.name, round), Bucket: 1}
		lock := fmt.Sprintf("lock-%d", round)
		stale, newer := fencedStore(t, a, lock, 5), fencedStore(t, b, lock, 6)
		var staleErr, newerErr, readErr error
		var seen V
		var found bool
		together(2, func(g int) {
			if g == 0 {
				staleErr = retryContention(func() error { return m.merge(t.Context(), stale, k, fmt.Sprint("stale-", round), h.Delta(100), 0) })
				return
			}
			newerErr = retryContention(func() error { return m.merge(t.Context(), newer, k, fmt.Sprint("newer-", round), h.Delta(0), 0) })
			if newerErr == nil {
				seen, found, readErr = b.Get(t.Context(), k)
			}
		})
		switch {
		case newerErr != nil:
			t.Fatalf("round %d: %s fenced 6 racing fence 5: %v, want it merged (the newer fence always merges)", round, m.name, newerErr)
		case readErr != nil:
			t.Fatalf("round %d: Get(%v) after the merge fenced 6: %v", round, k, readErr)
		case staleErr != nil && !errors.Is(staleErr, state.ErrFenced):
			t.Fatalf("round %d: %s fenced 5 racing fence 6: %v, want nil or an error wrapping ErrFenced", round, m.name, staleErr)
		case staleErr == nil && (!found || !h.Equal(seen, both)):
			t.Fatalf("round %d: %s fenced 5 and 6 at once both merged, but the newer holder read %v (found %v) as soon as its merge returned, want %v with the stale delta: "+
				"the stale merge landed after the newer one (are the fence check and the write one atomic step?)", round, m.name, seen, found, both)
		case staleErr != nil:
			wantValue(t, h, b, k, h.Delta(0))
		}
	})
}
