package main

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/pipestate/pipestate/examples/internal/exbackend"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// TestRecoverAfterCrash: orchestrator A is killed with its run in flight
// (TRIGGERING, its job's trigger not yet delivered), its lease left to expire.
// B, a new orchestrator whose schedule never runs, finds A's run through the
// active-runs index (Recover), takes it over once A's lease has expired and
// completes the date, orders-daily included (through its router), each job
// started once; then no run is unfinished. A store without the index is
// skipped: Recover returns ErrNoActiveIndex there.
func TestRecoverAfterCrash(t *testing.T) {
	for _, tb := range testBackends {
		t.Run(tb.name, func(t *testing.T) {
			const date = "2026-11-23"
			r := newTakeoverRig(t, tb.config(t), tb.leaseTTL)
			if _, ok := r.admin.(provider.ActiveRunLister); !ok {
				t.Fatalf("%T has no active-runs index (provider.ActiveRunLister): every backend of this example keeps one", r.admin)
			}
			held := &heldTrigger{Jobs: r.w, sent: make(chan Job, 1), deliver: make(chan struct{}), answer: make(chan error, 1)}
			orchA := r.orchestrator("orch-A", r.storeA, held, &r.outA)
			ctxA, killA := context.WithCancel(r.ctx)
			defer killA()
			doneA := make(chan error, 1)
			go func() { doneA <- orchA.RunDate(ctxA, date) }()
			select {
			case <-held.sent:
			case <-r.ctx.Done():
				t.Fatal("A never triggered its job")
			}
			// A's process dies: its client and its work end, its lease runs on.
			if err := r.storeA.Stop(r.ctx); err != nil {
				t.Fatal(err)
			}
			killA()

			orchB := r.orchestrator("orch-B", client(t, r.b), r.w, &r.outB)
			orchB.PipelinePrefix = "orders-"
			ctxB, stopB := context.WithCancel(r.ctx)
			routed := make(chan error, 1)
			go func() { routed <- orchB.Route(ctxB) }()
			ids, err := orchB.Recover(r.ctx)
			if err != nil {
				t.Fatalf("B: Recover: %v", err)
			}
			if want := []string{"orders-raw-2026-11-23-daily-1"}; !slices.Equal(ids, want) {
				t.Fatalf("B: Recover found %q, want %q", ids, want)
			}
			if err := awaitDate(r.ctx, r.admin, pipelines(), date); err != nil {
				t.Fatalf("awaitDate: %v", err)
			}
			stopB()
			if err := <-routed; err != nil {
				t.Errorf("B: Route: %v", err)
			}
			close(held.deliver) // A's trigger arrives, too late
			<-held.answer
			<-doneA

			for _, want := range []string{
				"orders-raw: recovery: run orders-raw-2026-11-23-daily-1 is TRIGGERING (date 2026-11-23, written by orch-A)",
				"orders-raw: taking over run orders-raw-2026-11-23-daily-1 at attempt 1",
			} {
				if !strings.Contains(r.outB.String(), want) {
					t.Errorf("B's output lacks %q", want)
				}
			}
			for runID, want := range map[string]int{"orders-raw-2026-11-23-daily-1": 1, "orders-raw-2026-11-23-daily-2": 1,
				"orders-daily-2026-11-23-daily-1": 1} {
				if got := r.w.triggers[runID]; got != want {
					t.Errorf("job %s triggered %d times, want %d", runID, got, want)
				}
			}
			for id, attempt := range map[string]int{"orders-raw": 2, "orders-daily": 1} {
				entry, err := r.admin.GetRunLog(r.ctx, id, date, "")
				if err != nil || entry == nil || entry.Status != types.RunCompleted || entry.AttemptNumber != attempt {
					t.Errorf("run log of %s = %+v, %v; want COMPLETED at attempt %d", id, entry, err, attempt)
				}
			}
			left, _, err := r.admin.(provider.ActiveRunLister).ListActiveRuns(r.ctx, provider.ActiveRunFilter{}, "", 10)
			if err != nil || len(left) != 0 {
				t.Errorf("unfinished runs after the recovery: %+v, %v; want none", left, err)
			}
		})
	}
}

// TestRecoverOrphans: Recover fails an unfinished run whose date has settled
// without it and one whose pipeline is gone, leaves alone a run that no
// orchestrator created (no date) and the runs of other pipelines
// (PipelinePrefix), and says so.
func TestRecoverOrphans(t *testing.T) {
	const date = "2026-11-23"
	r := newTakeoverRig(t, exbackend.Config{}, testBackends[0].leaseTTL)
	ctx, admin := r.ctx, r.admin
	put := func(run types.RunState) {
		t.Helper()
		if err := admin.PutRunState(ctx, run); err != nil {
			t.Fatal(err)
		}
	}
	meta := map[string]any{"date": date, "attempt": 1, "orchestrator": "orch-dead"}
	put(types.RunState{RunID: "orders-raw-2026-11-23-daily-9", PipelineID: "orders-raw", Status: types.RunRunning, Metadata: meta})
	put(types.RunState{RunID: "orders-gone-2026-11-23-daily-1", PipelineID: "orders-gone", Status: types.RunPending, Metadata: meta})
	put(types.RunState{RunID: "orders-raw-manual", PipelineID: "orders-raw", Status: types.RunRunning})
	put(types.RunState{RunID: "billing-2026-11-23-daily-1", PipelineID: "billing", Status: types.RunRunning, Metadata: meta})
	if err := admin.PutRunLog(ctx, types.RunLogEntry{PipelineID: "orders-raw", Date: date, Status: types.RunCompleted,
		AttemptNumber: 2, RunID: "orders-raw-2026-11-23-daily-2"}); err != nil {
		t.Fatal(err)
	}
	o := r.orchestrator("orch-B", client(t, r.b), r.w, &r.outB)
	o.PipelinePrefix = "orders-"
	ids, err := o.Recover(ctx)
	if want := []string{"orders-gone-2026-11-23-daily-1", "orders-raw-2026-11-23-daily-9", "orders-raw-manual"}; err != nil || !slices.Equal(ids, want) {
		t.Fatalf("Recover = %q, %v; want %q", ids, err, want)
	}
	for id, want := range map[string]types.RunStatus{
		"orders-raw-2026-11-23-daily-9":  types.RunFailed,
		"orders-gone-2026-11-23-daily-1": types.RunFailed,
		"orders-raw-manual":              types.RunRunning,
		"billing-2026-11-23-daily-1":     types.RunRunning,
	} {
		if run, err := admin.GetRunState(ctx, id); err != nil || run == nil || run.Status != want {
			t.Errorf("run %s after Recover = %+v, %v; want %s", id, run, err, want)
		}
	}
	for _, want := range []string{
		"orders-raw: recovery: run orders-raw-2026-11-23-daily-9 FAILED (orphaned: its date settled without it)",
		"orders-gone: recovery: run orders-gone-2026-11-23-daily-1 FAILED (pipeline orders-gone is not registered)",
		"orders-raw: recovery: run orders-raw-manual (RUNNING) has no date: not an orchestrator's run, left alone",
	} {
		if !strings.Contains(r.outB.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// TestRecoverWithoutIndex: a store without the active-runs index is
// ErrNoActiveIndex, and the demo says so and runs on.
func TestRecoverWithoutIndex(t *testing.T) {
	mem, err := openBackend(testContext(t), exbackend.Config{})
	if err != nil {
		t.Fatal(err)
	}
	s := client(t, mem)
	o := &Orchestrator{Name: "orch-1", Store: noIndex{s}}
	if _, err := o.Recover(testContext(t)); !errors.Is(err, ErrNoActiveIndex) {
		t.Errorf("Recover without an index: %v; want %v", err, ErrNoActiveIndex)
	}
}

// noIndex is a Store without provider.ActiveRunLister.
type noIndex struct{ Store }
