package sim

import (
	"errors"
	"fmt"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// readOnlyKinds are the reads a "readonly" operation makes through the
// read-only instance.
var readOnlyKinds = []opKind{opGet, opRead, opFollow, opWatch, opActive}

// reader returns the provider a read of o's slot goes through: the slot's, or,
// for a "readonly" operation, the read-only instance.
func (w *world) reader(slot int) provider.Provider {
	if w.viaRO {
		return w.ro
	}
	return w.slots[slot].p
}

// readOnly makes the read o.sub through an instance opened read-only
// (Harness.OpenReadOnly), judged as through any other: it repairs nothing it
// reads (a provisional index entry, a stale list copy) and must still read
// right. One in four then writes through it, PutRunState, which must fail with
// ErrReadOnly and change nothing (what later reads check).
func (w *world) readOnly(o op) (string, error) {
	if w.ro == nil {
		w.ro = w.h.OpenReadOnly(w.t)
	}
	sub := o
	sub.kind, sub.lease = o.sub, -1
	w.viaRO = true
	desc, err := w.do1(sub)
	w.viaRO = false
	desc = "read-only: " + desc
	if err != nil || o.m%4 != 0 {
		return desc, err
	}
	ctx, cancel := w.ctx()
	defer cancel()
	id := runID(o.run)
	err = w.ro.PutRunState(ctx, types.RunState{RunID: id, PipelineID: pipelineID, Status: types.RunRunning, Version: 7})
	desc += fmt.Sprintf("; PutRunState(%s) → %v", id, err)
	if !errors.Is(err, provider.ErrReadOnly) {
		return desc, fmt.Errorf("PutRunState through a read-only instance: %v, want ErrReadOnly", err)
	}
	return desc, nil
}
