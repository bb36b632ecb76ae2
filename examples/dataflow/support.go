package main

// This file holds what a copy of main.go replaces with its own: the simulated
// work, the simulated crash, the retry wait and the final report.

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// Sim is a task's simulated work: it takes Duration, and its first Failures
// attempts fail.
type Sim struct {
	Duration time.Duration `yaml:"duration"`
	Failures int           `yaml:"failures"`
}

// simulate is the ExecFunc of the demo: it waits for the task's Duration (or
// ctx) and fails the first Sim.Failures attempts.
func simulate(ctx context.Context, t Task, attempt int) error {
	if err := sleep(ctx, t.Sim.Duration); err != nil {
		return err
	}
	if attempt <= t.Sim.Failures {
		return fmt.Errorf("simulated failure of attempt %d", attempt)
	}
	return nil
}

// killAfter wraps exec so that kill is called as soon as the task named task
// succeeds, before the runner hears of it: the process dies at that moment.
func killAfter(task string, kill func(), exec ExecFunc) ExecFunc {
	return func(ctx context.Context, t Task, attempt int) error {
		err := exec(ctx, t, attempt)
		if err == nil && t.Name == task {
			kill()
		}
		return err
	}
}

// retryWait waits before retry number attempt (1-based) of t, with capped
// exponential backoff and full jitter: a random time up to
// RetryDelay * 2^(attempt-1), capped at MaxRetryDelay (default 8 * RetryDelay).
func retryWait(ctx context.Context, t Task, attempt int) error {
	limit := cmp.Or(t.MaxRetryDelay, 8*t.RetryDelay)
	ceiling := t.RetryDelay
	for i := 1; i < attempt && ceiling < limit; i++ {
		ceiling += min(ceiling, limit-ceiling) // doubles up to the cap, never overflows
	}
	if ceiling = min(ceiling, limit); ceiling <= 0 {
		return ctx.Err()
	}
	return sleep(ctx, rand.N(ceiling+1))
}

// sleep waits for d or until ctx is done, returning ctx.Err() then.
func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// report prints the final run, the date's run log and the run's events, all read
// back from the provider.
func report(ctx context.Context, w io.Writer, p provider.Provider, run types.RunState) error {
	got, err := p.GetRunState(ctx, run.RunID)
	if err != nil || got == nil {
		return cmp.Or(err, fmt.Errorf("run %s is missing", run.RunID))
	}
	fmt.Fprintf(w, "== run %s: %s (version %d)\n", got.RunID, got.Status, got.Version)
	tasks, _ := got.Metadata["tasks"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(tasks)) {
		fmt.Fprintf(w, "  %-17s %v\n", name, tasks[name])
	}
	date, _ := got.Metadata["date"].(string)
	entry, err := p.GetRunLog(ctx, got.PipelineID, date, "")
	if err != nil || entry == nil {
		return cmp.Or(err, fmt.Errorf("run log of %s is missing", date))
	}
	fmt.Fprintf(w, "run log %s %s: %s at attempt %d (%s)\n", entry.PipelineID, entry.Date, entry.Status,
		entry.AttemptNumber, entry.FailureMessage)
	for _, h := range entry.RetryHistory {
		fmt.Fprintf(w, "  earlier: attempt %d, run %s %s (%s)\n", h.Attempt, h.RunID, h.Status, h.FailureMessage)
	}
	events, err := p.ListEvents(ctx, got.PipelineID, 1000)
	if err != nil {
		return err
	}
	kinds := map[string]int{}
	for _, e := range events {
		if e.RunID == got.RunID {
			kinds[e.Kind]++
		}
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, kinds[k]))
	}
	fmt.Fprintf(w, "events of %s: %s\n", got.RunID, strings.Join(parts, " "))
	return nil
}
