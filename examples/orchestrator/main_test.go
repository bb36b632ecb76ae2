package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider/memory"
	"github.com/pipestate/pipestate/types"
)

// TestRun checks the whole transcript of one orchestrator: the simulated world and
// clock make it the same on every run.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(testContext(t), &out, 1); err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, out.String())
	}
	if got := out.String(); got != wantTranscript {
		t.Errorf("transcript differs\ngot:\n%s\nwant:\n%s", got, wantTranscript)
	}
}

// TestTwoOrchestrators runs two orchestrators at once on one store, many times:
// the lock and the run log keep each date's run single, so the summary is the same
// as with one orchestrator and every run was triggered once.
func TestTwoOrchestrators(t *testing.T) {
	wantSummary := wantTranscript[strings.Index(wantTranscript, "== summary"):]
	for i := range 20 {
		var out bytes.Buffer
		if err := run(testContext(t), &out, 2); err != nil {
			t.Fatalf("round %d: run: %v\noutput:\n%s", i, err, out.String())
		}
		got := out.String()
		if s := got[strings.Index(got, "== summary"):]; s != wantSummary {
			t.Fatalf("round %d: summary differs\ngot:\n%s\nwant:\n%s\nfull output:\n%s", i, s, wantSummary, got)
		}
		for _, runID := range []string{"orders-raw-2026-11-23-daily-1", "orders-raw-2026-11-23-daily-2", "orders-daily-2026-11-23-daily-1"} {
			if n := strings.Count(got, "run "+runID+" PENDING -> TRIGGERING -> RUNNING"); n != 1 {
				t.Fatalf("round %d: run %s started %d times\noutput:\n%s", i, runID, n, got)
			}
		}
	}
}

// TestRetriesExhausted: a job that always fails is tried MaxAttempts times, the run
// log says FAILED with the retry history, and the downstream pipeline is blocked.
func TestRetriesExhausted(t *testing.T) {
	ctx := testContext(t)
	w := newWorld(time.Date(2026, 11, 23, 5, 0, 0, 0, time.UTC))
	p, err := memory.New(memory.WithClock(w.clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range pipelines() {
		if err := p.RegisterPipeline(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	o := &Orchestrator{Name: "t", Provider: p, Evaluators: w.evaluators(), Jobs: failingJobs{}, Now: w.clock.Now, Out: &out}
	if err := o.RunDate(ctx, "2026-11-23"); err != nil {
		t.Fatalf("RunDate: %v\noutput:\n%s", err, out.String())
	}
	entry, err := p.GetRunLog(ctx, "orders-raw", "2026-11-23", "")
	if err != nil || entry == nil {
		t.Fatalf("GetRunLog = %v, %v", entry, err)
	}
	if entry.Status != types.RunFailed || entry.AttemptNumber != 3 || len(entry.RetryHistory) != 2 ||
		entry.FailureMessage != "out of memory" {
		t.Errorf("run log = %+v, want FAILED at attempt 3 with 2 retries and the failure message", entry)
	}
	for _, want := range []string{
		"orders-raw: attempt 2 of 3 failed (out of memory); retrying",
		"orders-raw: run log: FAILED after 3 attempt(s)",
		"orders-daily: blocked: an upstream run failed",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q\noutput:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "cascade marker written") {
		t.Errorf("a failed pipeline wrote a cascade marker\noutput:\n%s", out.String())
	}
}

// TestEvaluatorError: an evaluator error is a FAIL with the error as reason, and a
// failing required trait keeps the pipeline from triggering.
func TestEvaluatorError(t *testing.T) {
	ctx := testContext(t)
	w := newWorld(time.Date(2026, 11, 23, 5, 0, 0, 0, time.UTC))
	p, err := memory.New(memory.WithClock(w.clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	cfg := types.PipelineConfig{ID: "broken", Traits: map[string]types.TraitConfig{
		"probe": {Evaluator: "missing", Required: true}}}
	var out bytes.Buffer
	o := &Orchestrator{Name: "t", Provider: p, Jobs: w, Now: w.clock.Now, Out: &out}
	got, err := o.Evaluate(ctx, cfg, nil, "2026-11-23")
	if err != nil || got != NotReady {
		t.Fatalf("Evaluate = %q, %v; want %q", got, err, NotReady)
	}
	trait, err := p.GetTrait(ctx, "broken", "probe")
	if err != nil || trait == nil || trait.Status != types.TraitFail || trait.Reason != `no evaluator "missing"` {
		t.Errorf("GetTrait = %+v, %v; want FAIL with the error as reason", trait, err)
	}
	ready, err := p.GetReadiness(ctx, "broken")
	if err != nil || ready == nil || ready.Status != types.NotReady {
		t.Errorf("GetReadiness = %+v, %v; want NOT_READY", ready, err)
	}
	if runs, _ := p.ListRuns(ctx, "broken", 10); len(runs) != 0 {
		t.Errorf("a not-ready pipeline has runs: %+v", runs)
	}
}

type failingJobs struct{}

func (failingJobs) Trigger(context.Context, string, string) error { return nil }
func (failingJobs) Status(context.Context, string) (types.RunStatus, string, error) {
	return types.RunFailed, "out of memory", nil
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

const wantTranscript = `== 2026-11-22
[05:00 orch-1] orders-daily: excluded by its calendar
[05:00 orch-1] orders-raw: excluded by its calendar
== 2026-11-23
[05:00 orch-1] orders-daily: waiting for upstream's cascade marker
[05:00 orch-1] orders-raw: trait row-count PASS
[05:00 orch-1] orders-raw: trait source-landed FAIL (timed out after 5ms)
[05:00 orch-1] orders-raw: NOT_READY, blocking: [source-landed]
[05:00 orch-1] orders-raw: trait row-count PASS
[05:00 orch-1] orders-raw: trait source-landed PASS
[05:00 orch-1] orders-raw: READY
[05:00 orch-1] orders-raw: run orders-raw-2026-11-23-daily-1 PENDING -> TRIGGERING -> RUNNING
[05:20 orch-1] orders-raw: run orders-raw-2026-11-23-daily-1 FAILED
[05:20 orch-1] orders-raw: attempt 1 of 3 failed (executor lost); retrying
[05:20 orch-1] orders-raw: run orders-raw-2026-11-23-daily-2 PENDING -> TRIGGERING -> RUNNING
[05:50 orch-1] orders-raw: run orders-raw-2026-11-23-daily-2 COMPLETED
[05:50 orch-1] orders-raw: run log: COMPLETED after 2 attempt(s)
[05:50 orch-1] orders-raw: cascade marker written for orders-daily
[05:50 orch-1] orders-daily: SLA missed: evaluation deadline 05:45
[05:50 orch-1] orders-daily: trait schema PASS
[05:50 orch-1] orders-daily: READY
[05:50 orch-1] orders-daily: run orders-daily-2026-11-23-daily-1 PENDING -> TRIGGERING -> RUNNING
[06:20 orch-1] orders-daily: run orders-daily-2026-11-23-daily-1 COMPLETED
[06:20 orch-1] orders-daily: SLA missed: completion deadline 06:00
[06:20 orch-1] orders-daily: run log: COMPLETED after 1 attempt(s)
== summary
orders-daily 2026-11-22: no run, 0 job(s) triggered
orders-daily 2026-11-23: COMPLETED at attempt 1, 1 job(s) triggered; runs: orders-daily-2026-11-23-daily-1 COMPLETED
orders-daily events: READINESS=1 RUN_STATE_CHANGED=3 SLA_MISSED=2 TRAIT_EVALUATED=1
orders-raw 2026-11-22: no run, 0 job(s) triggered
orders-raw 2026-11-23: COMPLETED at attempt 2, 2 job(s) triggered; runs: orders-raw-2026-11-23-daily-1 FAILED, orders-raw-2026-11-23-daily-2 COMPLETED
orders-raw events: READINESS=2 RUN_STATE_CHANGED=6 TRAIT_EVALUATED=4
`
