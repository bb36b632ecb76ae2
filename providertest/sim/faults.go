package sim

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// Faults are the network faults of a harness whose client reaches its server
// over a network (internal/testkit/faults has injectors for go-redis and the
// AWS SDK). The simulation arms one before a write ("lost": LoseReply, then
// the write through an instance it opened with Harness.Open; "timeout":
// LoseReply, then the write through an instance of OpenNoRetry) and disarms it
// after.
type Faults struct {
	// LoseReply arms a one-shot fault on the storage of t: the next request
	// that writes (the harness says which requests do) is applied by the
	// server and its reply lost, so a client library that retries sends it
	// again.
	LoseReply func(t *testing.T)

	// Disarm cancels a fault LoseReply armed that has not fired, and reports
	// whether one fired since it was armed.
	Disarm func(t *testing.T) bool

	// OpenNoRetry opens a provider as Harness.Open does, on a client that does
	// not retry a request whose reply was lost: the call fails after the
	// server applied its request, as a call whose deadline passed then would.
	// Nil: the kind "timeout" does nothing.
	OpenNoRetry func(t *testing.T) provider.Provider
}

// faultMode is how the fault of a "lost" or "timeout" operation is armed.
type faultMode int

const (
	noFault faultMode = iota
	lostReply
	timeoutAfterApply
)

// lostKinds are the writes a "lost" operation makes with its reply lost: every
// write the simulation makes, each of which the contract row "lost replies"
// of package provider says neither loses nor doubles (the retry reports the
// first attempt's outcome), so the referee's rules are the ones without the
// fault.
var lostKinds = []opKind{opPut, opCAS, opCreate, opAppend, opMarker, opAcquire, opRenew, opRelease,
	opRunLog, opRerun, opReplay, opLate, opCLI}

// timeoutKinds are the writes a "timeout" operation makes: the run writes,
// whose outcome (applied or not) the referee learns from a read after.
var timeoutKinds = []opKind{opPut, opCAS, opCreate}

// faulty runs the write o.sub with a fault armed, as o.kind says.
func (w *world) faulty(o op) (string, error) {
	f := w.h.Faults
	mode := lostReply
	if o.kind == opTimeout {
		mode = timeoutAfterApply
	}
	sub := o
	sub.kind = o.sub
	if sub.d == 0 {
		sub.d = []time.Duration{time.Minute, time.Hour, 24 * time.Hour}[o.m%3] // a lease's ttl
	}
	if f == nil || f.LoseReply == nil || (mode == timeoutAfterApply && f.OpenNoRetry == nil) {
		return fmt.Sprintf("%s (no faults)", o.kind), nil
	}
	if mode == timeoutAfterApply {
		if w.noRetry == nil {
			w.noRetry = f.OpenNoRetry(w.t)
		}
	}
	w.fault, w.fired, w.disarmed = mode, false, false
	defer func() { w.fault = noFault }()
	f.LoseReply(w.t)
	desc, err := w.do1(sub)
	fired := w.disarm()
	tag := map[bool]string{true: "reply lost", false: "fault did not fire"}[fired]
	return fmt.Sprintf("%s: %s [%s]", o.kind, desc, tag), err
}

// disarm disarms the armed fault, once, and reports whether it fired.
func (w *world) disarm() bool {
	if w.fault != noFault && !w.disarmed {
		w.disarmed = true
		w.fired = w.h.Faults.Disarm(w.t)
	}
	return w.fired
}

// writer returns the provider a run write of o goes through before fencing:
// the slot's, or, for a "timeout" operation, the instance that does not retry.
func (w *world) writer(slot int) provider.Provider {
	if w.fault == timeoutAfterApply {
		return w.noRetry
	}
	return w.slots[slot].p
}

// timedOut reports whether err is a failure of a call whose reply a
// "timeout" operation lost, so the write may or may not have been applied.
func (w *world) timedOut(err error) bool {
	if w.fault != timeoutAfterApply || err == nil || errors.Is(err, provider.ErrFenced) {
		return false
	}
	return w.disarm()
}

// settle learns whether a run write that timed out was applied: a read of the
// run must show it as it was (r, live or not, as before) or as the write
// would have left it (after); the model follows. It returns whether it was
// applied.
func (w *world) settle(id string, r *runM, wasLive bool, after types.RunState, canApply bool) (bool, string, error) {
	ctx, cancel := w.ctx()
	defer cancel()
	got, err := w.slots[0].p.GetRunState(ctx, id)
	if err != nil {
		return false, "", fmt.Errorf("GetRunState after a timeout: %w", err)
	}
	desc := "missing"
	if got != nil {
		desc = fmt.Sprintf("v%d %s", got.Version, got.Status)
	}
	if canApply && got != nil && got.Version == after.Version && got.Status == after.Status {
		return true, "applied (read " + desc + ")", nil
	}
	if (got == nil && !wasLive) || (got != nil && wasLive && got.Version == r.version && got.Status == r.status) {
		return false, "not applied (read " + desc + ")", nil
	}
	want := "as before"
	if canApply {
		want += fmt.Sprintf(" or v%d %s", after.Version, after.Status)
	}
	return false, "", fmt.Errorf("GetRunState after a timed-out write: %s, want %s", desc, want)
}

// settleRun is writeRun's end for a write to run i that timed out (desc, err):
// it learns whether the write was applied (after, which it could only be when
// canApply: a CAS on the version the run has, a create of a run that is not
// live, a write the fence allows) and updates the model as writeRun would.
func (w *world) settleRun(desc string, err error, i int, l *leaseM, ret time.Duration, wasLive bool, after types.RunState, canApply bool) (string, error) {
	r := w.m.runs[i]
	if !wasLive {
		r.fences.forget()
	}
	if l != nil && r.fences.check(l.lease.Key, l.lease.Fence) == mustRefuse {
		canApply = false
	}
	applied, how, serr := w.settle(runID(i), r, wasLive, after, canApply)
	desc += fmt.Sprintf(" (%v)", err)
	if serr != nil {
		return desc, serr
	}
	desc += "; " + how
	if !applied {
		return desc, nil
	}
	r.exists, r.version, r.status = true, after.Version, after.Status
	r.exp, r.updated, r.surelyUnindexed = provider.Expiry(w.m.now, ret), w.m.now, false
	if l != nil {
		r.fences.wrote(l.lease.Key, l.lease.Fence)
		w.m.wrote = max(w.m.wrote, l.lease.Fence)
	}
	return desc, nil
}
