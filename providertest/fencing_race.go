package providertest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
)

// RunFencingRace tests fenced writes under concurrency: a stale holder (fence
// 5) and a newer one (fence 6) of one lease key write one record at the same
// instant, from two instances, started from a spinning barrier, each round on
// a fresh record, for at least 3 rounds and 500 ms. Every outcome must be one
// that some order of the two writes gives: the newer write succeeds; a stale
// write that succeeded came first (the record reads as the stale write followed
// by the newer one); one that was refused (ErrFenced) came second (the record
// reads as the newer write alone). A backend that checks the fence and then
// writes in two steps lets the stale write land after the newer one, and fails.
// Every provider must pass it. Its leases are made up, as RunFencing's are.
func RunFencingRace(t *testing.T, h Harness) {
	t.Helper()
	group(t, "FencingRace", h, func(t *testing.T, s *suite) {
		for _, w := range fencedWrites() {
			if w.setup != nil {
				// The CAS reads its version first: two CAS writers race on the
				// version, not on the fence (RunStore's one-winner tests).
				continue
			}
			s.run(t, w.name, func(t *testing.T, s *suite) { testFencingRace(t, s, w) })
		}
	})
}

// testFencingRace races a stale and a newer fenced write of w, round after
// round, and compares each round's record with the same writes made one after
// the other, in the order the results imply, on a record of its own.
func testFencingRace(t *testing.T, s *suite, w fencedWrite) {
	p, q, base := s.open(t), s.open(t), newIDs(t)
	const stale, newer = 5, 6
	var bad errs
	start := time.Now()
	for round := 0; raceAgain(round, start) && !bad.failed(); round++ {
		race, ref := roundIDs(base, round, "race"), roundIDs(base, round, "ref")
		var staleErr, newerErr error
		sp, nq := fenced(t, p, race.lock, stale), fenced(t, q, race.lock, newer)
		runConcurrently(2, func(i int) {
			if i == 0 {
				staleErr = w.write(t.Context(), sp, race, 1)
			} else {
				newerErr = w.write(t.Context(), nq, race, 2)
			}
		})
		if newerErr != nil {
			bad.add("round %d: %s fenced %d racing fence %d: %v, want it written (the newer fence always writes)",
				round, w.name, newer, stale, newerErr)
			continue
		}
		staleFirst := staleErr == nil
		if !staleFirst && !errors.Is(staleErr, provider.ErrFenced) {
			bad.add("round %d: %s fenced %d racing fence %d: %v, want nil or an error wrapping ErrFenced",
				round, w.name, stale, newer, staleErr)
			continue
		}
		// The same writes one after the other, in the only order that gives
		// these results, on a record of their own.
		if staleFirst {
			noErr(t, w.write(t.Context(), fenced(t, p, ref.lock, stale), ref, 1), w.name+" fenced 5 (the reference)")
		}
		noErr(t, w.write(t.Context(), fenced(t, q, ref.lock, newer), ref, 2), w.name+" fenced 6 (the reference)")
		got, want := w.read(t, p, race), w.read(t, p, ref)
		if got != want {
			order := "fence 6 first, fence 5 refused"
			if staleFirst {
				order = "fence 5 first, then fence 6"
			}
			bad.add("round %d: %s fenced %d and %d at once: both returned (%v, %v) and the record reads %q, "+
				"but %s reads %q: the stale write landed after the newer one (is the fence checked and the record written in one atomic step?)",
				round, w.name, stale, newer, staleErr, newerErr, got, order, want)
		}
	}
	bad.report(t)
}

// roundIDs returns base's identifiers for one round and one role, unique to
// both, so that each round writes records of its own under a lease key of its
// own.
func roundIDs(base ids, round int, role string) ids {
	sfx := fmt.Sprintf("-%s%d", role, round)
	k := base
	k.pipeline += sfx
	k.other += sfx
	k.run += sfx
	k.rerun += sfx
	k.trait += sfx
	k.lock += sfx
	return k
}
