// Command orchestrator is an event-driven pipeline orchestrator over any
// provider.Provider with leases, create-once runs and the cascade-marker watch:
// the in-memory one by default, Redis with -redis ADDR, DynamoDB with -dynamodb URL.
// An Orchestrator evaluates a pipeline for a date like this:
//
//  1. skip the date if the pipeline's exclusion calendar says so;
//  2. AcquireLease("eval:" + pipeline + ":" + schedule + ":" + date), so one
//     orchestrator at a time evaluates it; provider.KeepAlive renews the lease while
//     the work goes on, and stops the work the moment the lease is lost;
//  3. under the lease, the run log says whether the date is done, or was left
//     mid-run by a holder whose lease ended: then take that run over where it stopped;
//  4. evaluate the traits in parallel (errgroup), each under its own timeout, and
//     store them (PutTrait); a late evaluation emits an SLA event;
//  5. store readiness (PutReadiness); stop here unless every required trait passed;
//  6. create the run with CreateRunState (an orchestrator that finds it created
//     backs off), trigger the job with the lease's fencing token, move the run
//     PENDING -> TRIGGERING -> RUNNING -> COMPLETED or FAILED with compare-and-swap,
//     and retry per the pipeline's RetryPolicy; a late completion emits an SLA event;
//  7. write a cascade marker for each downstream pipeline, then the run log, and
//     release the lease.
//
// On start, before anything else, an Orchestrator recovers (Recover): it finds
// the unfinished runs of its pipelines (Orchestrator.PipelinePrefix) through the
// store's active-runs index (provider.ActiveRunLister, ListActiveRuns), whoever
// wrote them, and settles each run's pipeline and date as above, so the run that
// a crashed orchestrator left mid-flight is taken over where it stopped once its
// lease expires, and a run left unfinished by a date that settled without it,
// or whose pipeline is gone, is failed. It reads the unfinished runs only, not
// every pipeline's history. A store without the index (DynamoDB, for now) skips
// this: the schedule and the router find such a run when they evaluate its date
// again.
//
// Two things start evaluations. The schedule (RunDate, once per date) starts the
// pipelines that are nobody's downstream. The stream-router (Route), which every
// orchestrator runs, watches the cascade markers of all pipelines
// (WatchCascadeMarkers) and starts the marker's pipeline for the marker's date.
// Every marker reaches every orchestrator, at least once, so an evaluation is
// idempotent: the lease, the run log and create-once make a repeated one end as
// done. A follower prints each pipeline's events as they are committed
// (FollowEvents), between the orchestrators' lines.
//
// The evaluators and the job service are simulated in world.go. The job service
// refuses a fence lower than the highest it has seen, so a lease holder that lost
// its lease without noticing cannot start a job after its successor did. Run two
// orchestrators at once on one store and each date still runs once:
//
//	go run ./examples/orchestrator
//	go run ./examples/orchestrator -orchestrators 2
//	go run ./examples/orchestrator -orchestrators 2 -redis 127.0.0.1:6379
//	go run ./examples/orchestrator -orchestrators 2 -dynamodb http://127.0.0.1:8000
//
// On Redis and DynamoDB the state outlives the command: run it again with another
// -prefix to start afresh, or with the same one to see every date end as done.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/pipestate/pipestate/types"

	"github.com/pipestate/pipestate/examples/internal/exbackend"
)

func main() {
	var ex exbackend.Config
	n := flag.Int("orchestrators", 1, "how many orchestrators run at once on one store")
	ex.Register(flag.CommandLine, "orchestrator", false)
	flag.Parse()
	end := ex.Begin(flag.CommandLine)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b, err := openBackend(ctx, ex)
	if err == nil {
		err = run(ctx, os.Stdout, *n, b)
	}
	if err := errors.Join(err, end(ctx, os.Stdout)); err != nil {
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

// run runs the demo with n orchestrators over demoDates, prints what each did
// and a summary from the store, and closes b.
func run(ctx context.Context, w io.Writer, n int, b *backend) error {
	defer b.close()
	d, err := newDemo(ctx, w, n, b)
	if err != nil {
		return err
	}
	return d.run(ctx, demoDates...)
}

// demoDates are the dates the demo runs: a Sunday and a Monday.
var demoDates = []string{"2026-11-22", "2026-11-23"}

// demo is one run of the demo: the simulated world, and the orchestrators and
// followers on clients of one store.
type demo struct {
	world     *world
	out       io.Writer
	admin     Store // registers the pipelines and reads the summary
	pipelines []types.PipelineConfig
	orchs     []*Orchestrator
	followers []*follower
}

// newDemo registers the pipelines and opens a client of b for each of n
// orchestrators, as if each ran in a process of its own.
func newDemo(ctx context.Context, w io.Writer, n int, b *backend) (*demo, error) {
	d := &demo{world: newWorld(time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC)), out: &lockedWriter{w: w},
		pipelines: pipelines()}
	var err error
	if d.admin, err = b.client(); err != nil {
		return nil, err
	}
	for _, cfg := range d.pipelines {
		if err := d.admin.RegisterPipeline(ctx, cfg); err != nil {
			return nil, err
		}
		d.followers = append(d.followers, &follower{store: d.admin, pipeline: cfg.ID, out: d.out})
	}
	for i := 1; i <= n; i++ {
		s, err := b.client()
		if err != nil {
			return nil, err
		}
		d.orchs = append(d.orchs, &Orchestrator{Name: fmt.Sprintf("orch-%d", i), Store: s,
			Evaluators: d.world.evaluators(), Jobs: d.world, Now: d.world.clock.Now, Out: d.out})
	}
	return d, nil
}

// run starts the followers and every orchestrator's router, then for each date
// runs every orchestrator's schedule at 05:00 and waits until the date is done;
// it ends with the summary.
func (d *demo) run(ctx context.Context, dates ...string) error {
	g, gctx := errgroup.WithContext(ctx)
	background, stop := context.WithCancel(gctx)
	for _, f := range d.followers {
		g.Go(func() error { return f.run(background) })
	}
	for _, o := range d.orchs {
		g.Go(func() error { return o.Route(background) })
	}
	g.Go(func() error {
		defer stop()
		for _, o := range d.orchs {
			if _, err := o.Recover(gctx); errors.Is(err, ErrNoActiveIndex) {
				fmt.Fprintf(d.out, "== %v: in-flight runs of a crash are found when their dates are evaluated again\n", err)
			} else if err != nil {
				return err
			}
		}
		for _, date := range dates {
			d.world.clock.Set(date, "05:00")
			fmt.Fprintf(d.out, "== %s\n", date)
			schedules, sctx := errgroup.WithContext(gctx)
			for _, o := range d.orchs {
				schedules.Go(func() error { return o.RunDate(sctx, date) })
			}
			if err := schedules.Wait(); err != nil {
				return err
			}
			if err := awaitDate(gctx, d.admin, d.pipelines, date); err != nil {
				return err
			}
		}
		for _, f := range d.followers {
			if err := f.caughtUp(gctx); err != nil {
				return err
			}
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return err
	}
	return summary(ctx, d.out, d.admin, d.world, dates)
}

// awaitDate waits until every pipeline that date reaches has settled: the
// pipelines that are nobody's downstream, and the downstream pipelines of each
// pipeline that completed. An excluded pipeline settles at once, the others when
// the run log says they finished.
func awaitDate(ctx context.Context, s Store, cfgs []types.PipelineConfig, date string) error {
	day, err := time.Parse(time.DateOnly, date)
	if err != nil {
		return err
	}
	byID := map[string]types.PipelineConfig{}
	for _, c := range cfgs {
		byID[c.ID] = c
	}
	queue := roots(cfgs)
	for len(queue) > 0 {
		cfg := queue[0]
		queue = queue[1:]
		if cfg.Exclusions.Excludes(day) {
			continue
		}
		for {
			entry, err := s.GetRunLog(ctx, cfg.ID, date, types.DefaultScheduleID)
			if err != nil {
				return err
			}
			if entry != nil && entry.Status.Terminal() {
				if entry.Status == types.RunCompleted {
					for _, id := range cfg.Downstream {
						queue = append(queue, byID[id])
					}
				}
				break
			}
			if err := sleep(ctx, 2*time.Millisecond); err != nil {
				return err
			}
		}
	}
	return nil
}

// follower prints one pipeline's events as they are committed (FollowEvents) and
// keeps the cursor of the last one printed.
type follower struct {
	store    Store
	pipeline string
	out      io.Writer

	mu     sync.Mutex
	cursor string
}

// run prints events until ctx ends (nil) or following fails. A production
// follower would resume from f.cursor after a transient error.
func (f *follower) run(ctx context.Context) error {
	for rec, err := range f.store.FollowEvents(ctx, f.pipeline, "") {
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("follow %s: %w", f.pipeline, err)
		}
		e := rec.Event
		what := []string{e.Kind}
		for _, field := range []string{e.TraitType, e.RunID, e.Status} {
			if field != "" {
				what = append(what, field)
			}
		}
		if e.Message != "" {
			what = append(what, "("+e.Message+")")
		}
		fmt.Fprintf(f.out, "[%s events] %s: %s\n", e.Timestamp.UTC().Format("15:04"), e.PipelineID, strings.Join(what, " "))
		f.mu.Lock()
		f.cursor = rec.StreamID
		f.mu.Unlock()
	}
	return nil
}

// caughtUp waits until f has printed the pipeline's last event: nothing is
// written after its cursor.
func (f *follower) caughtUp(ctx context.Context) error {
	for {
		f.mu.Lock()
		cursor := f.cursor
		f.mu.Unlock()
		recs, err := f.store.ReadEventsSince(ctx, f.pipeline, cursor, 1)
		if err != nil || len(recs) == 0 {
			return err
		}
		if err := sleep(ctx, 2*time.Millisecond); err != nil {
			return err
		}
	}
}
