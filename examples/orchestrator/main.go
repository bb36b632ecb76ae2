// Command orchestrator is the evaluation flow of a pipeline orchestrator over any
// provider.Provider (the in-memory one here):
//
//  1. skip the date if the pipeline's exclusion calendar says so;
//  2. AcquireLock("eval:" + pipeline + ":" + schedule), so one orchestrator at a time
//     evaluates a pipeline;
//  3. skip if the run log says the date is done (or being run);
//  4. a downstream pipeline waits for its upstream's cascade marker;
//  5. evaluate the traits in parallel (errgroup), each under its own timeout, and
//     store them (PutTrait); a late evaluation emits an SLA event;
//  6. store readiness (PutReadiness); stop here unless every required trait passed;
//  7. trigger the job, moving the run PENDING -> TRIGGERING -> RUNNING with
//     compare-and-swap, poll until COMPLETED or FAILED, and retry per the pipeline's
//     RetryPolicy; a late completion emits an SLA event;
//  8. write the run log, a cascade marker for each downstream pipeline, and release.
//
// The evaluators and the job are simulated in world.go. Run two orchestrators at
// once on one store and each date still runs once:
//
//	go run ./examples/orchestrator
//	go run ./examples/orchestrator -orchestrators 2
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/memory"
	"github.com/pipestate/pipestate/types"
)

func main() {
	n := flag.Int("orchestrators", 1, "how many orchestrators run at once on one store")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, os.Stdout, *n); err != nil {
		log.Fatal(err)
	}
}

// pipelines are the demo's configs: orders-raw lands raw data, orders-daily builds
// on it once orders-raw has completed.
func pipelines() []types.PipelineConfig {
	weekdays := &types.ExclusionConfig{Weekends: true, Dates: []string{"2026-12-25"}}
	retry := &types.RetryPolicy{MaxAttempts: 3, Backoff: 2 * time.Millisecond, MaxBackoff: 4 * time.Millisecond}
	return []types.PipelineConfig{
		{
			ID: "orders-raw",
			Traits: map[string]types.TraitConfig{
				"source-landed": {Evaluator: "object-exists", Timeout: 5 * time.Millisecond, TTL: time.Hour, Required: true},
				"row-count":     {Evaluator: "row-count", Config: map[string]any{"min": 1000}, TTL: time.Hour, Required: true},
			},
			Trigger:    &types.TriggerConfig{Type: "batch-job"},
			Retry:      retry,
			SLA:        &types.SLAConfig{EvaluationDeadline: "06:00", CompletionDeadline: "07:00"},
			Exclusions: weekdays,
			Downstream: []string{"orders-daily"},
		},
		{
			ID: "orders-daily",
			Traits: map[string]types.TraitConfig{
				"schema": {Evaluator: "schema-check", TTL: time.Hour, Required: true},
			},
			Trigger:    &types.TriggerConfig{Type: "batch-job"},
			Retry:      retry,
			SLA:        &types.SLAConfig{EvaluationDeadline: "05:45", CompletionDeadline: "06:00"},
			Exclusions: weekdays,
		},
	}
}

// run registers the pipelines, runs n orchestrators at once over two dates (a
// Sunday and a Monday) and prints what each did, then a summary from the store.
func run(ctx context.Context, w io.Writer, n int) error {
	out := &lockedWriter{w: w}
	world := newWorld(time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC))
	admin, err := memory.New(memory.WithClock(world.clock.Now)) // creates the shared state, like a Redis server
	if err != nil {
		return err
	}
	for _, cfg := range pipelines() {
		if err := admin.RegisterPipeline(ctx, cfg); err != nil {
			return err
		}
	}
	dates := []string{"2026-11-22", "2026-11-23"}
	for _, date := range dates {
		world.clock.Set(date, "05:00")
		fmt.Fprintf(out, "== %s\n", date)
		g, gctx := errgroup.WithContext(ctx)
		for i := 1; i <= n; i++ {
			name := fmt.Sprintf("orch-%d", i)
			p, err := admin.NewHandle(memory.WithClock(world.clock.Now), memory.WithOwner(name))
			if err != nil {
				return err
			}
			o := &Orchestrator{Name: name, Provider: p, Evaluators: world.evaluators(),
				Jobs: world, Now: world.clock.Now, Out: out}
			g.Go(func() error { return o.RunDate(gctx, date) })
		}
		if err := g.Wait(); err != nil {
			return err
		}
	}
	return summary(ctx, out, admin, world, dates)
}

// Outcome is what one evaluation of a pipeline and date ended with.
type Outcome string

// Outcomes of Evaluate. The settled ones end the date for that pipeline.
const (
	Excluded   Outcome = "excluded by its calendar"              // settled
	Locked     Outcome = "locked by another orchestrator"        // try again
	Done       Outcome = "done: the run log says so"             // settled
	InProgress Outcome = "in progress: the run log says so"      // try again
	Waiting    Outcome = "waiting for upstream's cascade marker" // try again
	Blocked    Outcome = "blocked: an upstream run failed"       // settled
	NotReady   Outcome = "not ready"                             // try again
	Completed  Outcome = "completed"                             // settled
	Failed     Outcome = "failed after all attempts"             // settled
)

func (o Outcome) settled() bool {
	return o == Excluded || o == Done || o == Blocked || o == Completed || o == Failed
}

// skipped reports whether the evaluation stopped before evaluating traits.
func (o Outcome) skipped() bool { return o != NotReady && o != Completed && o != Failed }

// Evaluator evaluates one trait. It returns the trait's Status, and Value or Reason;
// an error (a timeout included) counts as FAIL.
type Evaluator func(ctx context.Context, pipelineID, traitType string, cfg types.TraitConfig) (types.TraitEvaluation, error)

// Jobs starts a pipeline's job and reports on it.
type Jobs interface {
	Trigger(ctx context.Context, pipelineID, runID string) error
	// Status returns RUNNING, COMPLETED or FAILED (with a message).
	Status(ctx context.Context, runID string) (types.RunStatus, string, error)
}

// Orchestrator evaluates pipelines over a Provider. Any number of Orchestrators,
// in one process or many, may share the Provider's storage.
type Orchestrator struct {
	Name       string               // shown in the transcript and the runs' metadata
	Provider   provider.Provider    // the shared state; its owner identity holds the locks
	Evaluators map[string]Evaluator // by TraitConfig.Evaluator
	Jobs       Jobs                 // starts and reports on the pipelines' jobs
	Now        func() time.Time     // the clock for SLA checks and timestamps
	Out        io.Writer            // the transcript; shared writers must be safe for concurrent use

	LockTTL      time.Duration // how long the evaluation lock lasts; default 2h, longer than any run
	TraitTimeout time.Duration // for traits without a Timeout; default 1s
	PollInterval time.Duration // between job status polls; default 1ms (a real one: seconds)
	Tick         time.Duration // between rounds of RunDate; default 1ms (a real one: a minute)
}

// RunDate evaluates every pipeline for date, round after round, until each one
// has settled. When a pipeline completes, its downstream pipelines are evaluated
// next: its cascade marker is what lets them go.
func (o *Orchestrator) RunDate(ctx context.Context, date string) error {
	last := map[string]Outcome{}
	for {
		cfgs, err := o.Provider.ListPipelines(ctx)
		if err != nil {
			return err
		}
		byID := map[string]types.PipelineConfig{}
		upstreams := map[string][]string{}
		var queue []string
		for _, c := range cfgs {
			byID[c.ID] = c
			queue = append(queue, c.ID)
			for _, d := range c.Downstream {
				upstreams[d] = append(upstreams[d], c.ID)
			}
		}
		for len(queue) > 0 {
			id := queue[0]
			queue = queue[1:]
			cfg, ok := byID[id]
			if !ok || last[id].settled() {
				continue
			}
			outcome, err := o.Evaluate(ctx, cfg, upstreams[id], date)
			if err != nil {
				return fmt.Errorf("%s: %s %s: %w", o.Name, id, date, err)
			}
			if outcome != last[id] && outcome.skipped() {
				o.logf(id, "%s", outcome) // once, not every round
			}
			last[id] = outcome
			if outcome == Completed {
				queue = append(slices.Clone(cfg.Downstream), queue...)
			}
		}
		settled := true
		for _, c := range cfgs {
			settled = settled && last[c.ID].settled()
		}
		if settled {
			return nil
		}
		if err := sleep(ctx, cmp.Or(o.Tick, time.Millisecond)); err != nil {
			return err
		}
	}
}

// Evaluate runs the whole flow once for one pipeline and date.
func (o *Orchestrator) Evaluate(ctx context.Context, cfg types.PipelineConfig, upstreams []string, date string) (Outcome, error) {
	day, err := time.Parse(time.DateOnly, date)
	if err != nil {
		return "", err
	}
	if cfg.Exclusions.Excludes(day) {
		return Excluded, nil
	}
	schedule := types.DefaultScheduleID

	// One orchestrator at a time per pipeline and schedule.
	lockKey := "eval:" + cfg.ID + ":" + schedule
	got, err := o.Provider.AcquireLock(ctx, lockKey, cmp.Or(o.LockTTL, 2*time.Hour))
	if err != nil || !got {
		return Locked, err
	}
	defer func() {
		// Release even when ctx is cancelled; a failed release only delays the next
		// holder until the lock's TTL.
		if err := o.Provider.ReleaseLock(context.WithoutCancel(ctx), lockKey); err != nil {
			o.logf(cfg.ID, "release %s: %v", lockKey, err)
		}
	}()

	// Under the lock, the run log is the truth about this date.
	entry, err := o.Provider.GetRunLog(ctx, cfg.ID, date, schedule)
	if err != nil {
		return "", err
	}
	if entry != nil {
		if entry.Status.Terminal() {
			return Done, nil
		}
		// A production orchestrator would resume polling entry.RunID here.
		return InProgress, nil
	}

	// A downstream pipeline waits for a cascade marker from its upstream.
	if len(upstreams) > 0 {
		if outcome, err := o.upstreamGate(ctx, cfg.ID, upstreams, date, schedule); err != nil || outcome != "" {
			return outcome, err
		}
	}

	o.checkSLA(ctx, cfg, date, "evaluation")
	traits, err := o.evaluateTraits(ctx, cfg)
	if err != nil {
		return "", err
	}
	ready := types.ReadinessResult{PipelineID: cfg.ID, Status: types.Ready, Traits: traits, EvaluatedAt: o.Now()}
	for _, t := range traits {
		if cfg.Traits[t.TraitType].Required && t.Status != types.TraitPass {
			ready.Status = types.NotReady
			ready.Blocking = append(ready.Blocking, t.TraitType)
		}
	}
	if err := o.Provider.PutReadiness(ctx, ready); err != nil {
		return "", err
	}
	if err := o.event(ctx, types.Event{Kind: "READINESS", PipelineID: cfg.ID, Status: string(ready.Status),
		Details: map[string]any{"blocking": ready.Blocking}}); err != nil {
		return "", err
	}
	if ready.Status != types.Ready {
		o.logf(cfg.ID, "NOT_READY, blocking: %v", ready.Blocking)
		return NotReady, nil
	}
	o.logf(cfg.ID, "READY")

	final, err := o.runWithRetries(ctx, cfg, date, schedule)
	if err != nil {
		return "", err
	}
	if final.Status != types.RunCompleted {
		return Failed, nil
	}
	for _, d := range cfg.Downstream {
		if err := o.Provider.WriteCascadeMarker(ctx, d, schedule, date, cfg.ID); err != nil {
			return "", err
		}
		o.logf(cfg.ID, "cascade marker written for %s", d)
	}
	return Completed, nil
}

// upstreamGate returns Waiting until a cascade marker for (pipelineID, schedule,
// date) exists, Blocked when an upstream's run failed, and "" to go ahead.
func (o *Orchestrator) upstreamGate(ctx context.Context, pipelineID string, upstreams []string, date, schedule string) (Outcome, error) {
	for _, u := range upstreams {
		e, err := o.Provider.GetRunLog(ctx, u, date, schedule)
		if err != nil {
			return "", err
		}
		if e != nil && e.Status.Terminal() && e.Status != types.RunCompleted {
			return Blocked, nil
		}
	}
	reader, ok := o.Provider.(provider.CascadeReader)
	if !ok {
		return "", nil // the backend cannot list markers: evaluate on schedule
	}
	markers, err := reader.ListCascadeMarkers(ctx, pipelineID, 100)
	if err != nil {
		return "", err
	}
	for _, m := range markers {
		if m.Date == date && m.ScheduleID == schedule {
			return "", nil
		}
	}
	return Waiting, nil
}

// evaluateTraits evaluates every trait of cfg at once, each under its timeout, and
// stores each result. It returns them sorted by trait type.
func (o *Orchestrator) evaluateTraits(ctx context.Context, cfg types.PipelineConfig) ([]types.TraitEvaluation, error) {
	names := make([]string, 0, len(cfg.Traits))
	for name := range cfg.Traits {
		names = append(names, name)
	}
	slices.Sort(names)
	results := make([]types.TraitEvaluation, len(names))
	g, gctx := errgroup.WithContext(ctx)
	for i, name := range names {
		tc := cfg.Traits[name]
		g.Go(func() error {
			timeout := cmp.Or(tc.Timeout, cmp.Or(o.TraitTimeout, time.Second))
			tctx, cancel := context.WithTimeout(gctx, timeout)
			defer cancel()
			ev, err := o.evaluator(tc.Evaluator)(tctx, cfg.ID, name, tc)
			switch {
			case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
				ev = types.TraitEvaluation{Status: types.TraitFail, FailureCategory: "TIMEOUT",
					Reason: fmt.Sprintf("timed out after %v", timeout)}
			case err != nil && ctx.Err() == nil:
				ev = types.TraitEvaluation{Status: types.TraitFail, FailureCategory: "ERROR", Reason: err.Error()}
			case err != nil:
				return err
			}
			ev.PipelineID, ev.TraitType, ev.EvaluatedAt = cfg.ID, name, o.Now()
			results[i] = ev
			return o.Provider.PutTrait(gctx, cfg.ID, ev, tc.TTL)
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for _, ev := range results {
		msg := ""
		if ev.Reason != "" {
			msg = " (" + ev.Reason + ")"
		}
		o.logf(cfg.ID, "trait %s %s%s", ev.TraitType, ev.Status, msg)
		if err := o.event(ctx, types.Event{Kind: "TRAIT_EVALUATED", PipelineID: cfg.ID, TraitType: ev.TraitType,
			Status: string(ev.Status), Message: ev.Reason}); err != nil {
			return nil, err
		}
	}
	return results, nil
}

func (o *Orchestrator) evaluator(name string) Evaluator {
	if e, ok := o.Evaluators[name]; ok {
		return e
	}
	return func(context.Context, string, string, types.TraitConfig) (types.TraitEvaluation, error) {
		return types.TraitEvaluation{}, fmt.Errorf("no evaluator %q", name)
	}
}

// runWithRetries runs the job until an attempt completes or the pipeline's
// RetryPolicy is used up (MaxAttempts counts every attempt; 0 means 1), keeping
// the run log current, and returns the final run log entry.
func (o *Orchestrator) runWithRetries(ctx context.Context, cfg types.PipelineConfig, date, schedule string) (types.RunLogEntry, error) {
	maxAttempts := 1
	if cfg.Retry != nil && cfg.Retry.MaxAttempts > 1 {
		maxAttempts = cfg.Retry.MaxAttempts
	}
	entry := types.RunLogEntry{PipelineID: cfg.ID, Date: date, ScheduleID: schedule, StartedAt: o.Now()}
	for attempt := 1; ; attempt++ {
		entry.AttemptNumber = attempt
		entry.RunID = fmt.Sprintf("%s-%s-%s-%d", cfg.ID, date, schedule, attempt)
		entry.Status, entry.UpdatedAt = types.RunRunning, o.Now()
		if err := o.Provider.PutRunLog(ctx, entry); err != nil { // claims the date
			return entry, err
		}
		run, err := o.runOnce(ctx, cfg.ID, entry.RunID, date, attempt)
		if err != nil {
			return entry, err
		}
		msg, _ := run.Metadata["message"].(string)
		if run.Status == types.RunCompleted || attempt >= maxAttempts {
			now := o.Now()
			entry.Status, entry.FailureMessage, entry.CompletedAt, entry.UpdatedAt = run.Status, msg, &now, now
			entry.AlertSent = o.checkSLA(ctx, cfg, date, "completion")
			o.logf(cfg.ID, "run log: %s after %d attempt(s)", entry.Status, attempt)
			return entry, o.Provider.PutRunLog(ctx, entry)
		}
		entry.RetryHistory = append(entry.RetryHistory, types.RetryRecord{Attempt: attempt, RunID: run.RunID,
			Status: run.Status, FailureMessage: msg, At: o.Now()})
		o.logf(cfg.ID, "attempt %d of %d failed (%s); retrying", attempt, maxAttempts, msg)
		if err := retryWait(ctx, cfg.Retry, attempt); err != nil {
			return entry, err
		}
	}
}

// runOnce triggers one attempt and polls it to its end, moving the run
// PENDING -> TRIGGERING -> RUNNING -> COMPLETED or FAILED with compare-and-swap.
func (o *Orchestrator) runOnce(ctx context.Context, pipelineID, runID, date string, attempt int) (types.RunState, error) {
	run := types.RunState{RunID: runID, PipelineID: pipelineID, Status: types.RunPending,
		Metadata: map[string]any{"date": date, "attempt": attempt, "orchestrator": o.Name}}
	if err := o.Provider.PutRunState(ctx, run); err != nil {
		return run, err
	}
	if err := o.transition(ctx, &run, types.RunTriggering, ""); err != nil {
		return run, err
	}
	if err := o.Jobs.Trigger(ctx, pipelineID, runID); err != nil {
		return run, o.transition(ctx, &run, types.RunFailed, "trigger: "+err.Error())
	}
	if err := o.transition(ctx, &run, types.RunRunning, ""); err != nil {
		return run, err
	}
	o.logf(pipelineID, "run %s PENDING -> TRIGGERING -> RUNNING", runID)
	for {
		status, msg, err := o.Jobs.Status(ctx, runID)
		if err != nil {
			return run, err
		}
		if status == types.RunCompleted || status == types.RunFailed {
			o.logf(pipelineID, "run %s %s", runID, status)
			return run, o.transition(ctx, &run, status, msg)
		}
		if err := sleep(ctx, cmp.Or(o.PollInterval, time.Millisecond)); err != nil {
			return run, err
		}
	}
}

// transition moves run to status with compare-and-swap from the version it has,
// and appends a RUN_STATE_CHANGED event. Losing the swap is an error: under the
// evaluation lock nobody else writes this run.
func (o *Orchestrator) transition(ctx context.Context, run *types.RunState, status types.RunStatus, msg string) error {
	next := *run
	next.Status = status
	next.Metadata = map[string]any{}
	for k, v := range run.Metadata {
		next.Metadata[k] = v
	}
	if msg != "" {
		next.Metadata["message"] = msg
	}
	ok, err := o.Provider.CompareAndSwapRunState(ctx, run.RunID, run.Version, next)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("run %s: version %d changed under the evaluation lock", run.RunID, run.Version)
	}
	next.Version = run.Version + 1
	*run = next
	return o.event(ctx, types.Event{Kind: "RUN_STATE_CHANGED", PipelineID: run.PipelineID, RunID: run.RunID,
		Status: string(status), Message: msg})
}

// checkSLA appends an SLA_MISSED event and reports true when now is past the
// pipeline's evaluation or completion deadline on date.
func (o *Orchestrator) checkSLA(ctx context.Context, cfg types.PipelineConfig, date, which string) bool {
	deadline, ok := slaDeadline(cfg.SLA, date, which)
	if !ok || !o.Now().After(deadline) {
		return false
	}
	o.logf(cfg.ID, "SLA missed: %s deadline %s", which, deadline.Format("15:04"))
	err := o.event(ctx, types.Event{Kind: "SLA_MISSED", PipelineID: cfg.ID, Status: which,
		Message: which + " deadline " + deadline.Format(time.RFC3339)})
	if err != nil {
		o.logf(cfg.ID, "SLA event: %v", err)
	}
	return err == nil
}

// slaDeadline returns the evaluation or completion deadline of sla on date.
func slaDeadline(sla *types.SLAConfig, date, which string) (time.Time, bool) {
	if sla == nil {
		return time.Time{}, false
	}
	clock := sla.EvaluationDeadline
	if which == "completion" {
		clock = sla.CompletionDeadline
	}
	loc, err := time.LoadLocation(sla.Timezone) // "" is UTC
	if clock == "" || err != nil {
		return time.Time{}, false
	}
	t, err := time.ParseInLocation("2006-01-02 15:04", date+" "+clock, loc)
	return t, err == nil
}

func (o *Orchestrator) event(ctx context.Context, ev types.Event) error {
	ev.Timestamp = o.Now()
	return o.Provider.AppendEvent(ctx, ev)
}

func (o *Orchestrator) logf(pipelineID, format string, args ...any) {
	fmt.Fprintf(o.Out, "[%s %s] %s: %s\n", o.Now().Format("15:04"), o.Name, pipelineID, fmt.Sprintf(format, args...))
}
