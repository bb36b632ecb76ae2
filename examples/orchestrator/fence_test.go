package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pipestate/pipestate/examples/internal/exbackend"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// TestLateWriteFenced stops an orchestrator whose write is in flight, on every
// backend: A holds the lease of orders-raw and has sent the run log write that
// claims the date (RUNNING, attempt 1), which the network holds, as a slow
// network or a paused process would. A's client stops, so its lease expires; B
// takes over, runs the date and writes the run log COMPLETED. Then A's write
// arrives, carrying A's fence, lower than B's: the storage refuses it with
// provider.ErrFenced, and the run log stays B's. Without the fence, the late
// write would turn the completed date back into a running one.
func TestLateWriteFenced(t *testing.T) {
	for _, tb := range testBackends {
		for _, killed := range []bool{true, false} {
			name := tb.name + "/partitioned"
			if killed {
				name = tb.name + "/killed"
			}
			t.Run(name, func(t *testing.T) { testLateWriteFenced(t, tb.config(t), tb.leaseTTL, killed) })
		}
	}
}

func testLateWriteFenced(t *testing.T, cfg exbackend.Config, ttl time.Duration, killed bool) {
	const date = "2026-11-23"
	r := newTakeoverRig(t, cfg, ttl)
	ctx, admin, storeA := r.ctx, r.admin, r.storeA
	held := &heldRunLog{Store: storeA, network: client(t, r.b), sent: make(chan types.RunLogEntry, 1),
		deliver: make(chan struct{}), answer: make(chan error, 1)}
	orchA := r.orchestrator("orch-A", held, r.w, &r.outA)
	orchB := r.orchestrator("orch-B", client(t, r.b), r.w, &r.outB)

	ctxA, killA := context.WithCancel(ctx)
	defer killA()
	doneA := make(chan error, 1)
	go func() { doneA <- orchA.RunDate(ctxA, date) }()
	var sent types.RunLogEntry
	select {
	case sent = <-held.sent:
	case <-ctx.Done():
		t.Fatal("A never wrote its run log")
	}
	if err := storeA.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if killed {
		killA()
	}
	r.complete(t, orchB, date)

	close(held.deliver) // A's write arrives
	if err := <-held.answer; !errors.Is(err, provider.ErrFenced) {
		t.Errorf("the storage answered A's late run log write (%s, attempt %d): %v; want %v",
			sent.Status, sent.AttemptNumber, err, provider.ErrFenced)
	}
	<-doneA
	entry, err := admin.GetRunLog(ctx, "orders-raw", date, "")
	if err != nil || entry == nil || entry.Status != types.RunCompleted {
		t.Errorf("run log of orders-raw after A's late write = %+v, %v; want B's COMPLETED", entry, err)
	}
	if !killed && !strings.Contains(r.outA.String(), "orders-raw: "+string(Superseded)) {
		t.Errorf("partitioned A's output lacks %q", "orders-raw: "+string(Superseded))
	}
}

// heldRunLog holds the first PutRunLog in flight, as a slow network or a paused
// process would: it sends the entry on sent, and once deliver is closed, sends
// the request on through network (another client of the same storage: the
// request is already on the wire, whatever became of the client that sent it),
// with the call's context values (its fence) but not its cancellation, and sends
// the storage's answer on answer.
type heldRunLog struct {
	Store
	network Store
	sent    chan types.RunLogEntry
	deliver chan struct{}
	answer  chan error
	once    bool
}

func (h *heldRunLog) PutRunLog(ctx context.Context, e types.RunLogEntry) error {
	if h.once {
		return h.Store.PutRunLog(ctx, e)
	}
	h.once = true
	h.sent <- e
	<-h.deliver
	err := h.network.PutRunLog(context.WithoutCancel(ctx), e)
	h.answer <- err
	return err
}
