package statesim

import (
	"fmt"
	"slices"

	"github.com/pipestate/pipestate/monoid"
)

// lostKinds are the writes a "lost" operation may make, of those not left
// out: the ones package state's "Lost replies" says are applied exactly once
// and report the first attempt's outcome (MergeUpdateOnce, MarkSeen and
// Release, and a max store's MergeUpdate; a sum's MergeUpdate is
// at-least-once), so the referee's rules are the ones without the fault.
func lostKinds(h Harness, off map[opKind]bool) []opKind {
	l := []opKind{opOnce}
	if h.OpenDeduper != nil {
		l = append(l, opSeen)
	}
	if _, isMax := h.Monoid.(monoid.Max[int64]); isMax {
		l = append(l, opMerge)
	}
	return slices.DeleteFunc(l, func(k opKind) bool { return off[k] })
}

// lost makes the write o.sub with a lost reply armed (Harness.Faults), judged
// as without it, and says whether the fault fired.
func (w *world) lost(o op) (string, error) {
	sub := o
	sub.kind = o.sub
	w.h.Faults.LoseReply(w.t)
	desc, err := w.do(sub)
	tag := map[bool]string{true: "reply lost", false: "fault did not fire"}[w.h.Faults.Disarm(w.t)]
	return fmt.Sprintf("lost: %s [%s]", desc, tag), err
}
