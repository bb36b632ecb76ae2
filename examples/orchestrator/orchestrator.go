package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/pipestate/pipestate/examples/internal/routing"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// Store is what an Orchestrator needs of a provider: the Provider and four of its
// optional interfaces — leases with fencing tokens, runs created exactly once, the
// cascade-marker watch of the stream-router, and (for the demo's follower) events
// followed as they are written.
type Store interface {
	provider.Provider
	provider.Leaser
	provider.RunCreator
	provider.MarkerWatcher
	provider.EventFollower
}

// needStore returns p as a Store, or an error naming each optional interface p
// lacks.
func needStore(p provider.Provider) (Store, error) {
	if s, ok := p.(Store); ok {
		return s, nil
	}
	var missing []string
	for _, need := range []struct {
		name string
		has  bool
	}{
		{"provider.Leaser (AcquireLease)", implements[provider.Leaser](p)},
		{"provider.RunCreator (CreateRunState)", implements[provider.RunCreator](p)},
		{"provider.MarkerWatcher (WatchCascadeMarkers)", implements[provider.MarkerWatcher](p)},
		{"provider.EventFollower (FollowEvents)", implements[provider.EventFollower](p)},
	} {
		if !need.has {
			missing = append(missing, need.name)
		}
	}
	return nil, fmt.Errorf("provider %T lacks optional interfaces the orchestrator needs: %s",
		p, strings.Join(missing, ", "))
}

func implements[T any](p provider.Provider) bool {
	_, ok := p.(T)
	return ok
}

// Outcome is what one evaluation of a pipeline and date ended with.
type Outcome string

// Outcomes of Evaluate. The settled ones end the evaluations of a date.
const (
	Excluded   Outcome = "excluded by its calendar"                             // settled
	Locked     Outcome = "leased by another orchestrator"                       // try again
	Done       Outcome = "done: the run log says so"                            // settled
	BackedOff  Outcome = "backed off: another orchestrator created the run"     // try again
	Superseded Outcome = "superseded: the lease passed to another orchestrator" // try again
	NotReady   Outcome = "not ready"                                            // try again
	Completed  Outcome = "completed"                                            // settled
	Failed     Outcome = "failed after all attempts"                            // settled
)

func (o Outcome) settled() bool {
	return o == Excluded || o == Done || o == Completed || o == Failed
}

// skipped reports whether the evaluation stopped before it evaluated traits or
// ran the job; settle logs these outcomes.
func (o Outcome) skipped() bool { return o != NotReady && o != Completed && o != Failed }

// Evaluator evaluates one trait. It returns the trait's Status, and Value or Reason;
// an error (a timeout included) counts as FAIL.
type Evaluator func(ctx context.Context, pipelineID, traitType string, cfg types.TraitConfig) (types.TraitEvaluation, error)

// Job asks the job service to start the job of one run of a pipeline and date.
type Job struct {
	PipelineID, Date, RunID string
	Fence                   int64 // the fencing token of the evaluation's lease
}

// ErrStaleFence is the job service's answer to a Job whose fence is lower than one
// it has already seen for the pipeline and date: a newer lease holder has taken
// over, and the stale holder must write nothing more.
var ErrStaleFence = errors.New("stale fence")

// Jobs starts a pipeline's jobs and reports on them.
type Jobs interface {
	// Trigger starts the job of job.RunID; triggering a run ID that has started
	// starts nothing new (a takeover triggers again to present its fence). It
	// returns an error wrapping ErrStaleFence when job.Fence is lower than the
	// highest fence seen for the pipeline and date.
	Trigger(ctx context.Context, job Job) error
	// Status returns RUNNING, COMPLETED or FAILED (with a message).
	Status(ctx context.Context, runID string) (types.RunStatus, string, error)
}

// Orchestrator evaluates pipelines over a Store. Any number of Orchestrators, in
// one process or many, may share the Store's storage.
type Orchestrator struct {
	Name       string               // shown in the transcript and the runs' metadata
	Store      Store                // the shared state
	Evaluators map[string]Evaluator // by TraitConfig.Evaluator
	Jobs       Jobs                 // starts and reports on the pipelines' jobs
	Now        func() time.Time     // the clock for SLA checks and timestamps
	Out        io.Writer            // the transcript; shared writers must be safe for concurrent use

	// LeaseTTL is the evaluation lease's; default 10s. KeepAlive renews the lease
	// every LeaseTTL/3; a dead holder's lease passes on within LeaseTTL.
	LeaseTTL     time.Duration
	TraitTimeout time.Duration // for traits without a Timeout; default 1s
	PollInterval time.Duration // between job status polls; default 1ms (a real one: seconds)
	Tick         time.Duration // between evaluations of an unsettled pipeline; default 1ms (a real one: a minute)

	// PipelinePrefix names the pipelines whose in-flight runs Recover looks
	// for: those whose IDs start with it ("": every pipeline).
	PipelinePrefix string
}

// RunDate is the schedule's trigger: it settles, for date, every pipeline that is
// nobody's downstream. Their downstream pipelines are the router's (see Route).
func (o *Orchestrator) RunDate(ctx context.Context, date string) error {
	cfgs, err := o.Store.ListPipelines(ctx)
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, c := range roots(cfgs) {
		g.Go(func() error { return o.settle(gctx, c, date) })
	}
	return g.Wait()
}

// roots returns the pipelines of cfgs that are nobody's downstream.
func roots(cfgs []types.PipelineConfig) []types.PipelineConfig {
	downstream := map[string]bool{}
	for _, c := range cfgs {
		for _, d := range c.Downstream {
			downstream[d] = true
		}
	}
	var out []types.PipelineConfig
	for _, c := range cfgs {
		if !downstream[c.ID] {
			out = append(out, c)
		}
	}
	return out
}

// Route is the stream-router: it watches the cascade markers of every pipeline
// (WatchCascadeMarkers) and settles each marker's pipeline for the marker's date,
// each in a goroutine of its own, until ctx ends (nil) or the watch or an evaluation
// fails. Every orchestrator runs one, so every marker reaches every orchestrator,
// and a watch delivers at least once: the lease lets one orchestrator at a time
// evaluate, and the run log ends every later evaluation of a settled date as Done.
//
// The demo's pipelines have one upstream each; a pipeline with several would, on
// each marker, check that every upstream has completed the date before going on.
// A production router would also keep its cursor (rec.Cursor) to resume from after
// a restart or a transient error, instead of watching from the oldest marker
// write the backend retains.
func (o *Orchestrator) Route(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	var mu sync.Mutex
	settling := map[string]bool{} // pipeline and date of this router's running settles
	var watchErr error
	for rec, err := range o.Store.WatchCascadeMarkers(gctx, "") {
		if err != nil {
			watchErr = err
			break
		}
		m := rec.Marker
		target := routing.TargetOf(m)
		key := target.PipelineID + " " + target.Date
		mu.Lock()
		busy := settling[key]
		settling[key] = true
		mu.Unlock()
		if busy {
			continue // delivered again while the first delivery is being settled
		}
		o.logf(m.PipelineID, "cascade marker from %s for %s", m.Source, m.Date)
		g.Go(func() error {
			defer func() {
				mu.Lock()
				delete(settling, key)
				mu.Unlock()
			}()
			cfg, err := o.Store.GetPipeline(gctx, target.PipelineID)
			if err != nil || cfg == nil {
				return err // no such pipeline (any more): nothing to evaluate
			}
			return o.settle(gctx, *cfg, target.Date)
		})
	}
	err := g.Wait()
	switch {
	case ctx.Err() != nil:
		return nil
	case err != nil:
		return err
	}
	return fmt.Errorf("%s: watch cascade markers: %w", o.Name, watchErr)
}

// settle evaluates cfg for date until the outcome settles, logging each
// unsettled outcome once, not every round.
func (o *Orchestrator) settle(ctx context.Context, cfg types.PipelineConfig, date string) error {
	var last Outcome
	for {
		outcome, err := o.Evaluate(ctx, cfg, date)
		if err != nil {
			return fmt.Errorf("%s: %s %s: %w", o.Name, cfg.ID, date, err)
		}
		if outcome != last && outcome.skipped() {
			o.logf(cfg.ID, "%s", outcome)
		}
		if outcome.settled() {
			return nil
		}
		last = outcome
		if err := sleep(ctx, cmp.Or(o.Tick, time.Millisecond)); err != nil {
			return err
		}
	}
}

// Evaluate runs the whole flow once for one pipeline and date, under a lease of
// the evaluation key that provider.KeepAlive keeps alive. Every run, run-log,
// event and marker write goes through provider.Fenced with the lease, so the
// storage refuses it (provider.ErrFenced) once a newer holder has written the
// record, even when it was sent before the lease was lost and arrives after;
// the job service refuses the lease's fence once it has seen a newer holder's.
// The work stops the moment the lease is lost or a write or trigger is refused;
// the outcome is then Superseded.
func (o *Orchestrator) Evaluate(ctx context.Context, cfg types.PipelineConfig, date string) (outcome Outcome, err error) {
	day, err := time.Parse(time.DateOnly, date)
	if err != nil {
		return "", err
	}
	if cfg.Exclusions.Excludes(day) {
		return Excluded, nil
	}

	// One orchestrator at a time per pipeline, schedule and date.
	key := "eval:" + cfg.ID + ":" + types.DefaultScheduleID + ":" + date
	ttl := cmp.Or(o.LeaseTTL, 10*time.Second)
	lease, err := o.Store.AcquireLease(ctx, key, ttl)
	if errors.Is(err, provider.ErrLockHeld) {
		return Locked, nil
	}
	if err != nil {
		return "", err
	}
	work, stop, err := provider.KeepAlive(ctx, o.Store, *lease, ttl)
	if err != nil {
		return "", err
	}
	// The holder is this orchestrator writing through the fenced view.
	holder := *o
	fenced, err := provider.Fenced(o.Store, *lease)
	if err == nil {
		holder.Store, err = needStore(fenced)
	}
	if err != nil {
		_ = stop()
		return "", err
	}
	defer func() {
		lost := stop() // releases the lease, or says why it was lost
		switch {
		case ctx.Err() != nil: // the orchestrator is stopping; err says so
		case errors.Is(lost, provider.ErrLockNotHeld) || errors.Is(err, ErrStaleFence) || errors.Is(err, provider.ErrFenced):
			o.logf(cfg.ID, "lease with fence %d lost: %v", lease.Fence, cmp.Or(lost, err))
			outcome, err = Superseded, nil
		case lost != nil:
			o.logf(cfg.ID, "release lease: %v", lost) // it expires after ttl
		}
	}()
	return holder.evaluate(work, cfg, date, lease.Fence)
}

// evaluate is Evaluate's work under the lease with the given fence.
func (o *Orchestrator) evaluate(ctx context.Context, cfg types.PipelineConfig, date string, fence int64) (Outcome, error) {
	// Under the lease, the run log is the truth about this date.
	entry, err := o.Store.GetRunLog(ctx, cfg.ID, date, types.DefaultScheduleID)
	if err != nil {
		return "", err
	}
	switch {
	case entry != nil && entry.Status.Terminal():
		return Done, nil
	case entry != nil:
		// The previous holder's lease ended mid-run: take its run over where it stopped.
		o.logf(cfg.ID, "taking over run %s at attempt %d", entry.RunID, entry.AttemptNumber)
	default:
		ready, err := o.ready(ctx, cfg, date)
		if err != nil {
			return "", err
		}
		if !ready {
			return NotReady, nil
		}
		entry = &types.RunLogEntry{PipelineID: cfg.ID, Date: date, ScheduleID: types.DefaultScheduleID, StartedAt: o.Now()}
	}
	final, err := o.runWithRetries(ctx, cfg, *entry, fence)
	if err != nil {
		return "", err
	}
	if final == nil {
		return BackedOff, nil
	}
	return o.finish(ctx, cfg, *final)
}

// ready checks the evaluation deadline, evaluates the traits, stores the
// readiness result and reports whether every required trait passed.
func (o *Orchestrator) ready(ctx context.Context, cfg types.PipelineConfig, date string) (bool, error) {
	o.checkSLA(ctx, cfg, date, "evaluation")
	traits, err := o.evaluateTraits(ctx, cfg)
	if err != nil {
		return false, err
	}
	ready := types.ReadinessResult{PipelineID: cfg.ID, Status: types.Ready, Traits: traits, EvaluatedAt: o.Now()}
	for _, t := range traits {
		if cfg.Traits[t.TraitType].Required && t.Status != types.TraitPass {
			ready.Status = types.NotReady
			ready.Blocking = append(ready.Blocking, t.TraitType)
		}
	}
	if err := o.Store.PutReadiness(ctx, ready); err != nil {
		return false, err
	}
	if err := o.event(ctx, types.Event{Kind: "READINESS", PipelineID: cfg.ID, Status: string(ready.Status),
		Details: map[string]any{"blocking": ready.Blocking}}); err != nil {
		return false, err
	}
	if ready.Status != types.Ready {
		o.logf(cfg.ID, "NOT_READY, blocking: %v", ready.Blocking)
		return false, nil
	}
	o.logf(cfg.ID, "READY")
	return true, nil
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
			return o.Store.PutTrait(gctx, cfg.ID, ev, tc.TTL)
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
// the run log current, and returns the final run log entry for finish to write.
// A takeover's entry names the run of its current attempt, which goes on where
// the previous holder left it; a new entry starts at attempt 1. It returns nil when
// another orchestrator created the run of a new attempt: this one backs off.
func (o *Orchestrator) runWithRetries(ctx context.Context, cfg types.PipelineConfig, entry types.RunLogEntry, fence int64) (*types.RunLogEntry, error) {
	maxAttempts := 1
	if cfg.Retry != nil && cfg.Retry.MaxAttempts > 1 {
		maxAttempts = cfg.Retry.MaxAttempts
	}
	takeover := entry.RunID != ""
	for {
		if !takeover {
			entry.AttemptNumber++
			entry.RunID = routing.RunID(routing.Target{PipelineID: cfg.ID, Date: entry.Date, ScheduleID: entry.ScheduleID}, entry.AttemptNumber)
			entry.Status, entry.UpdatedAt = types.RunRunning, o.Now()
			if err := o.Store.PutRunLog(ctx, entry); err != nil { // claims the date
				return nil, err
			}
		}
		run, err := o.createRun(ctx, entry, takeover)
		if err != nil || run == nil {
			return nil, err
		}
		takeover = false
		job := Job{PipelineID: cfg.ID, Date: entry.Date, RunID: run.RunID, Fence: fence}
		if err := o.drive(ctx, run, job); err != nil {
			return nil, err
		}
		msg, _ := run.Metadata["message"].(string)
		if run.Status == types.RunCompleted || entry.AttemptNumber >= maxAttempts {
			now := o.Now()
			entry.Status, entry.FailureMessage, entry.CompletedAt, entry.UpdatedAt = run.Status, msg, &now, now
			entry.AlertSent = o.checkSLA(ctx, cfg, entry.Date, "completion")
			return &entry, nil
		}
		entry.RetryHistory = append(entry.RetryHistory, types.RetryRecord{Attempt: entry.AttemptNumber,
			RunID: run.RunID, Status: run.Status, FailureMessage: msg, At: o.Now()})
		o.logf(cfg.ID, "attempt %d of %d failed (%s); retrying", entry.AttemptNumber, maxAttempts, msg)
		if err := retryWait(ctx, cfg.Retry, entry.AttemptNumber); err != nil {
			return nil, err
		}
	}
}

// createRun creates the run of entry's attempt, PENDING, with CreateRunState:
// exactly once however many orchestrators try. A run another orchestrator created
// is adopted on a takeover (as the previous holder left it) and otherwise left
// alone: createRun returns nil, and this orchestrator backs off.
func (o *Orchestrator) createRun(ctx context.Context, entry types.RunLogEntry, takeover bool) (*types.RunState, error) {
	run := types.RunState{RunID: entry.RunID, PipelineID: entry.PipelineID, Status: types.RunPending,
		Metadata: map[string]any{"date": entry.Date, "attempt": entry.AttemptNumber, "orchestrator": o.Name}}
	created, err := o.Store.CreateRunState(ctx, run)
	switch {
	case err != nil:
		return nil, err
	case created:
		return &run, nil
	case !takeover:
		return nil, nil
	}
	existing, err := o.Store.GetRunState(ctx, run.RunID)
	if err == nil && existing == nil {
		err = fmt.Errorf("run %s exists but cannot be read", run.RunID)
	}
	return existing, err
}

// drive moves run on from where it is — PENDING -> TRIGGERING -> RUNNING ->
// COMPLETED or FAILED, each step a compare-and-swap — triggering its job with the
// lease's fence and polling the job to its end. A run that is already TRIGGERING
// or RUNNING (a takeover) is triggered again, which starts nothing new but shows
// the job service the new fence. When the job service refuses the fence, drive
// returns its ErrStaleFence and writes nothing more.
func (o *Orchestrator) drive(ctx context.Context, run *types.RunState, job Job) error {
	if run.Status.Terminal() {
		return nil
	}
	path := string(run.Status)
	if run.Status == types.RunPending {
		if err := o.transition(ctx, run, types.RunTriggering, ""); err != nil {
			return err
		}
		path += " -> " + string(types.RunTriggering)
	}
	if err := o.Jobs.Trigger(ctx, job); errors.Is(err, ErrStaleFence) {
		return err
	} else if err != nil {
		return o.transition(ctx, run, types.RunFailed, "trigger: "+err.Error())
	}
	if run.Status == types.RunTriggering {
		if err := o.transition(ctx, run, types.RunRunning, ""); err != nil {
			return err
		}
		path += " -> " + string(types.RunRunning)
	}
	o.logf(job.PipelineID, "run %s %s (fence %d)", run.RunID, path, job.Fence)
	for {
		status, msg, err := o.Jobs.Status(ctx, run.RunID)
		if err != nil {
			return err
		}
		if status == types.RunCompleted || status == types.RunFailed {
			o.logf(job.PipelineID, "run %s %s", run.RunID, status)
			return o.transition(ctx, run, status, msg)
		}
		if err := sleep(ctx, cmp.Or(o.PollInterval, time.Millisecond)); err != nil {
			return err
		}
	}
}

// errSwapLost is transition's error when the run's version changed.
var errSwapLost = errors.New("changed under the evaluation lease")

// transition moves run to status with compare-and-swap from the version it has,
// and appends a RUN_STATE_CHANGED event. Losing the swap is an error wrapping
// errSwapLost: under the evaluation lease nobody else writes this run.
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
	ok, err := o.Store.CompareAndSwapRunState(ctx, run.RunID, run.Version, next)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("run %s: version %d: %w", run.RunID, run.Version, errSwapLost)
	}
	next.Version = run.Version + 1
	*run = next
	return o.event(ctx, types.Event{Kind: "RUN_STATE_CHANGED", PipelineID: run.PipelineID, RunID: run.RunID,
		Status: string(status), Message: msg})
}

// finish writes the cascade markers of a completed run, then the run log. The run
// log says COMPLETED only once every downstream pipeline has its marker, so a
// holder that dies in between leaves the run to the next holder, which writes the
// markers again (a redelivery the router is built for). It logs first: a router
// may act on a marker before the write returns.
func (o *Orchestrator) finish(ctx context.Context, cfg types.PipelineConfig, entry types.RunLogEntry) (Outcome, error) {
	writes := "run log"
	if entry.Status == types.RunCompleted && len(cfg.Downstream) > 0 {
		writes = "cascade marker for " + strings.Join(cfg.Downstream, ", ") + ", then run log"
	}
	o.logf(cfg.ID, "%s after %d attempt(s): %s", entry.Status, entry.AttemptNumber, writes)
	if entry.Status != types.RunCompleted {
		return Failed, o.Store.PutRunLog(ctx, entry)
	}
	for _, d := range cfg.Downstream {
		if err := o.Store.WriteCascadeMarker(ctx, d, entry.ScheduleID, entry.Date, cfg.ID); err != nil {
			return "", err
		}
	}
	return Completed, o.Store.PutRunLog(ctx, entry)
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
	return o.Store.AppendEvent(ctx, ev)
}

func (o *Orchestrator) logf(pipelineID, format string, args ...any) {
	fmt.Fprintf(o.Out, "[%s %s] %s: %s\n", o.Now().Format("15:04"), o.Name, pipelineID, fmt.Sprintf(format, args...))
}
