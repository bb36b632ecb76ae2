package main

// This file is the simulated world the orchestrator works against — a clock,
// trait evaluators and a batch-job service — and small helpers. Replace it with
// your own evaluators and job client.

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// simClock is the demo's time: it only moves when the world says so (each job
// poll is ten minutes), so the transcript is the same on every run.
type simClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *simClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *simClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Set moves the clock to hh:mm UTC on date.
func (c *simClock) Set(date, hhmm string) {
	t, err := time.Parse("2006-01-02 15:04", date+" "+hhmm)
	if err != nil {
		panic(err) // the demo's own constants
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// world simulates what the orchestrator talks to. Its evaluators and its job
// service are shared by every orchestrator, as the real ones would be.
type world struct {
	clock *simClock

	mu          sync.Mutex
	evaluations map[string]int   // by pipeline/trait
	triggers    map[string]int   // accepted Trigger calls by run ID
	polls       map[string]int   // by run ID
	fences      map[string]int64 // the highest fence seen by pipeline/date
}

func newWorld(start time.Time) *world {
	return &world{
		clock:       &simClock{t: start},
		evaluations: map[string]int{},
		triggers:    map[string]int{},
		polls:       map[string]int{},
		fences:      map[string]int64{},
	}
}

// evaluators: object-exists hangs on its first call (so the trait's timeout turns
// it into FAIL) and passes after; row-count and schema-check pass.
func (w *world) evaluators() map[string]Evaluator {
	return map[string]Evaluator{
		"object-exists": func(ctx context.Context, pipelineID, traitType string, _ types.TraitConfig) (types.TraitEvaluation, error) {
			if w.count(w.evaluations, pipelineID+"/"+traitType) == 1 {
				<-ctx.Done() // the object store does not answer
				return types.TraitEvaluation{}, ctx.Err()
			}
			return types.TraitEvaluation{Status: types.TraitPass,
				Value: map[string]any{"object": "raw/orders/_SUCCESS"}}, nil
		},
		"row-count": func(_ context.Context, _, _ string, cfg types.TraitConfig) (types.TraitEvaluation, error) {
			rows := 1234.0
			if minRows, _ := cfg.Config["min"].(float64); rows < minRows {
				return types.TraitEvaluation{Status: types.TraitFail, Reason: fmt.Sprintf("%v rows < %v", rows, minRows)}, nil
			}
			return types.TraitEvaluation{Status: types.TraitPass, Value: map[string]any{"rows": rows}}, nil
		},
		"schema-check": func(context.Context, string, string, types.TraitConfig) (types.TraitEvaluation, error) {
			return types.TraitEvaluation{Status: types.TraitPass}, nil
		},
	}
}

// count increments m[key] and returns the new value.
func (w *world) count(m map[string]int, key string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	m[key]++
	return m[key]
}

// Trigger implements Jobs: a job's state is its run ID's, so triggering a run ID
// again starts nothing new. A fence below the highest seen for the pipeline and
// date is refused, as a job that writes the date's data would refuse a stale
// writer.
func (w *world) Trigger(_ context.Context, job Job) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := job.PipelineID + "/" + job.Date
	if job.Fence < w.fences[key] {
		return fmt.Errorf("%w: %s %s: fence %d, but %d has been seen", ErrStaleFence, job.PipelineID, job.Date, job.Fence, w.fences[key])
	}
	w.fences[key] = job.Fence
	w.triggers[job.RunID]++
	return nil
}

// Status implements Jobs. Each poll is ten minutes of simulated time. The first
// orders-raw job of each date fails on its second poll; the others complete on
// their third.
func (w *world) Status(_ context.Context, runID string) (types.RunStatus, string, error) {
	w.clock.Advance(10 * time.Minute)
	n := w.count(w.polls, runID)
	switch {
	case strings.HasPrefix(runID, "orders-raw-") && strings.HasSuffix(runID, "-1") && n >= 2:
		return types.RunFailed, "executor lost", nil
	case n >= 3:
		return types.RunCompleted, "", nil
	}
	return types.RunRunning, "", nil
}

// triggered returns how many times jobs of pipelineID for date were triggered.
func (w *world) triggered(pipelineID, date string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for runID, c := range w.triggers {
		if strings.HasPrefix(runID, pipelineID+"-"+date+"-") {
			n += c
		}
	}
	return n
}

// summary prints, from the store, what happened to each pipeline and date, and
// from the world, how many jobs were started.
func summary(ctx context.Context, w io.Writer, p provider.Provider, world *world, dates []string) error {
	fmt.Fprintln(w, "== summary")
	cfgs, err := p.ListPipelines(ctx)
	if err != nil {
		return err
	}
	for _, cfg := range cfgs {
		runs, err := p.ListRuns(ctx, cfg.ID, 100)
		if err != nil {
			return err
		}
		for _, date := range dates {
			entry, err := p.GetRunLog(ctx, cfg.ID, date, "")
			if err != nil {
				return err
			}
			if entry == nil {
				fmt.Fprintf(w, "%s %s: no run, %d job(s) triggered\n", cfg.ID, date, world.triggered(cfg.ID, date))
				continue
			}
			var attempts []string
			for _, r := range slices.Backward(runs) { // oldest first
				if r.Metadata["date"] == date {
					attempts = append(attempts, fmt.Sprintf("%s %s", r.RunID, r.Status))
				}
			}
			fmt.Fprintf(w, "%s %s: %s at attempt %d, %d job(s) triggered; runs: %s\n", cfg.ID, date,
				entry.Status, entry.AttemptNumber, world.triggered(cfg.ID, date), strings.Join(attempts, ", "))
		}
		events, err := p.ListEvents(ctx, cfg.ID, 1000)
		if err != nil {
			return err
		}
		kinds := map[string]int{}
		for _, e := range events {
			kinds[e.Kind]++
		}
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(kinds)) {
			parts = append(parts, fmt.Sprintf("%s=%d", k, kinds[k]))
		}
		fmt.Fprintf(w, "%s events: %s\n", cfg.ID, strings.Join(parts, " "))
	}
	return nil
}

// retryWait waits before retry number attempt (1-based) per the pipeline's
// RetryPolicy, with capped exponential backoff and full jitter: a random time up to
// Backoff * 2^(attempt-1), capped at MaxBackoff.
func retryWait(ctx context.Context, policy *types.RetryPolicy, attempt int) error {
	if policy == nil {
		return ctx.Err()
	}
	ceiling := policy.Backoff
	for i := 1; i < attempt && ceiling < policy.MaxBackoff; i++ {
		ceiling += min(ceiling, policy.MaxBackoff-ceiling) // doubles up to the cap, never overflows
	}
	if ceiling = min(ceiling, policy.MaxBackoff); ceiling <= 0 {
		return ctx.Err()
	}
	return sleep(ctx, rand.N(ceiling+1))
}

// sleep waits for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// lockedWriter lets several orchestrators print whole lines to one writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
