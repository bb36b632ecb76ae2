// Package steadyload is the steady workload of the retention plateau tests and
// benchmarks (provider/redisprovider, provider/ddbprovider): every simulated day, a number
// of runs spread evenly over the day and over the pipelines, each created,
// swapped twice (running, then completed) and logged (a run log, an event, a
// cascade marker), and every tenth also rerun, replayed and given a late
// arrival — every record kind that grows with use.
package steadyload

import (
	"context"
	"fmt"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// Load is the size of the workload.
type Load struct {
	RunsPerDay, Pipelines, Days int
}

// Run writes the workload through p. After each run it calls advance with the
// time one run takes (a day over RunsPerDay), which moves the test's clock (and
// a server's TTLs with it); after each day it calls measure with the day's
// index. It stops at the first error.
func (l Load) Run(ctx context.Context, p provider.Provider, advance func(time.Duration), measure func(day int) error) error {
	c, ok := p.(provider.RunCreator)
	if !ok {
		return fmt.Errorf("steadyload: %T is not a provider.RunCreator", p)
	}
	step := 24 * time.Hour / time.Duration(l.RunsPerDay)
	for d := range l.Days {
		date := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, d).Format(time.DateOnly)
		for i := range l.RunsPerDay {
			if err := l.one(ctx, p, c, d, i, date); err != nil {
				return fmt.Errorf("steadyload: day %d run %d: %w", d, i, err)
			}
			advance(step)
		}
		if err := measure(d); err != nil {
			return err
		}
	}
	return nil
}

// one is the writes of run i of day d.
func (l Load) one(ctx context.Context, p provider.Provider, c provider.RunCreator, d, i int, date string) error {
	pipe := fmt.Sprintf("pipe-%d", i%l.Pipelines)
	id := fmt.Sprintf("r-%d-%d", d, i)
	schedule := fmt.Sprintf("s%d", i)
	run := types.RunState{RunID: id, PipelineID: pipe, Status: types.RunPending}
	if _, err := c.CreateRunState(ctx, run); err != nil {
		return err
	}
	for v, s := range []types.RunStatus{types.RunRunning, types.RunCompleted} {
		run.Status = s
		if _, err := p.CompareAndSwapRunState(ctx, id, v, run); err != nil {
			return err
		}
	}
	if err := p.PutRunLog(ctx, types.RunLogEntry{PipelineID: pipe, Date: date, ScheduleID: schedule, Status: types.RunCompleted,
		AttemptNumber: 1, RunID: id}); err != nil {
		return err
	}
	if err := p.AppendEvent(ctx, types.Event{Kind: "RUN_COMPLETED", PipelineID: pipe, RunID: id}); err != nil {
		return err
	}
	if err := p.WriteCascadeMarker(ctx, pipe, schedule, date, "upstream"); err != nil {
		return err
	}
	if i%10 != 0 {
		return nil
	}
	if err := p.PutRerun(ctx, types.RerunRecord{RerunID: "re-" + id, PipelineID: pipe, OriginalDate: date, Reason: "late data",
		Status: types.RequestPending}); err != nil {
		return err
	}
	if err := p.PutReplay(ctx, types.ReplayRequest{PipelineID: pipe, Date: date, ScheduleID: schedule, Reason: "late data",
		Status: types.RequestPending}); err != nil {
		return err
	}
	return p.PutLateArrival(ctx, types.LateArrival{PipelineID: pipe, Date: date, ScheduleID: schedule, RecordDelta: 5,
		TraitType: "volume"})
}

// Retention is the retention of every record kind the workload writes but the
// two logs (events and the marker log): d for each, or provider.Forever() for 0.
func Retention(d time.Duration) provider.Retention {
	return provider.Retention{Runs: d, RunLogs: d, Reruns: d, Replays: d, LateArrivals: d, CascadeMarkers: d}
}
