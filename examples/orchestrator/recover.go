package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"golang.org/x/sync/errgroup"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// ErrNoActiveIndex is Recover's error when the store has no active-runs index
// (provider.ActiveRunLister): in-flight runs are then found only when their
// dates are evaluated again (RunDate, the router).
var ErrNoActiveIndex = errors.New("the store has no active-runs index")

// recoverPage is the page size of Recover's reads of the active-runs index.
const recoverPage = 100

// Recover is what an orchestrator does first when it starts, after a crash or
// not: it finds, through the store's active-runs index, every unfinished run
// of the pipelines whose IDs start with o.PipelinePrefix ("" : every pipeline),
// whoever wrote it, and settles each one's pipeline and date as Evaluate does:
// under the evaluation lease, so a run that a live orchestrator is driving is
// left to it (Locked, tried again until the date settles), and a run whose
// holder died is taken over where it stopped (the run log names it) once its
// lease expires. A run that is still unfinished once its date has settled (the
// run log names another run or was never written: an orphan of a crash), or
// whose pipeline is no longer registered, is failed with a compare-and-swap and
// a RUN_STATE_CHANGED event; a run this orchestrator did not create (no "date"
// in its metadata) is left alone. It returns the run IDs it found, once every
// one is settled or failed, or an error wrapping ErrNoActiveIndex when the
// store has no index. Its cost is the unfinished runs, not the pipelines or
// their history.
func (o *Orchestrator) Recover(ctx context.Context) ([]string, error) {
	l, ok := o.Store.(provider.ActiveRunLister)
	if !ok {
		return nil, fmt.Errorf("%s: recover: %w", o.Name, ErrNoActiveIndex)
	}
	var found []types.RunState
	filter := provider.ActiveRunFilter{PipelinePrefix: o.PipelinePrefix}
	for cursor := ""; ; {
		page, next, err := l.ListActiveRuns(ctx, filter, cursor, recoverPage)
		if err != nil {
			return nil, fmt.Errorf("%s: recover: %w", o.Name, err)
		}
		found = append(found, page...)
		if next == "" {
			break
		}
		cursor = next
	}
	ids := make([]string, 0, len(found))
	dates := map[string][]types.RunState{} // by pipeline and date
	for _, run := range found {
		ids = append(ids, run.RunID)
		date, _ := run.Metadata["date"].(string)
		if date == "" {
			o.logf(run.PipelineID, "recovery: run %s (%s) has no date: not an orchestrator's run, left alone", run.RunID, run.Status)
			continue
		}
		o.logf(run.PipelineID, "recovery: run %s is %s (date %s, written by %v)", run.RunID, run.Status, date, run.Metadata["orchestrator"])
		key := run.PipelineID + " " + date
		dates[key] = append(dates[key], run)
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, key := range slices.Sorted(maps.Keys(dates)) {
		runs := dates[key]
		g.Go(func() error { return o.recoverDate(gctx, runs) })
	}
	return ids, g.Wait()
}

// recoverDate settles the pipeline and date of runs (all of one pipeline and
// date), then fails those of runs that are still unfinished.
func (o *Orchestrator) recoverDate(ctx context.Context, runs []types.RunState) error {
	pipelineID := runs[0].PipelineID
	date, _ := runs[0].Metadata["date"].(string)
	cfg, err := o.Store.GetPipeline(ctx, pipelineID)
	if err != nil {
		return err
	}
	why := "pipeline " + pipelineID + " is not registered"
	if cfg != nil {
		if err := o.settle(ctx, *cfg, date); err != nil {
			return err
		}
		why = "orphaned: its date settled without it"
	}
	for _, r := range runs {
		if err := o.failOrphan(ctx, r.RunID, why); err != nil {
			return err
		}
	}
	return nil
}

// failOrphan fails run id with a compare-and-swap when it is still unfinished
// (nobody drives it any more: its date settled, or its pipeline is gone); a run
// that changed under the swap is read again.
func (o *Orchestrator) failOrphan(ctx context.Context, id, why string) error {
	for {
		run, err := o.Store.GetRunState(ctx, id)
		if err != nil || run == nil || run.Status.Terminal() {
			return err // finished (or gone): settled
		}
		err = o.transition(ctx, run, types.RunFailed, "recovery: "+why)
		if err == nil {
			o.logf(run.PipelineID, "recovery: run %s FAILED (%s)", id, why)
			return nil
		}
		if !errors.Is(err, errSwapLost) {
			return err
		}
	}
}
