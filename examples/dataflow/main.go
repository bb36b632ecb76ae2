// Command dataflow runs a flow of tasks that declare the datasets they consume and
// produce (flow.yaml); the DAG is inferred from them. Ready tasks run at once, a
// failed task is retried with backoff, and a task that exhausts its retries marks
// everything downstream of it skipped. Run state (with compare-and-swap), events
// and the run log go through a provider.Provider, so a restarted process finds a
// run its predecessor left RUNNING and marks it FAILED.
//
// The demo kills "process 1" mid-run, then "process 2" recovers and runs the date
// again. Both keep their state in memory by default; -redis host:port puts it on a
// Redis server (provider/redisprovider, keys under -prefix) and -dynamodb URL in DynamoDB
// (provider/ddbprovider, the table -prefix, created when missing), each process with
// a client of its own:
//
//	go run ./examples/dataflow
//	go run ./examples/dataflow -redis localhost:6379
//	go run ./examples/dataflow -dynamodb http://127.0.0.1:8000
//	go run ./examples/dataflow -flow my-flow.yaml -date 2026-11-24
package main

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/provider/memprovider"
	"github.com/pipestate/pipestate/provider/redisprovider"
	"github.com/pipestate/pipestate/types"

	"github.com/pipestate/pipestate/examples/internal/exbackend"
)

//go:embed flow.yaml
var defaultFlow []byte

func main() {
	flowPath := flag.String("flow", "", "flow YAML file (default: the embedded flow.yaml)")
	date := flag.String("date", "2026-11-23", "the date to run")
	var cfg exbackend.Config
	cfg.Register(flag.CommandLine, "dataflow", false)
	flag.Parse()
	end := cfg.Begin(flag.CommandLine)
	data := defaultFlow
	if *flowPath != "" {
		var err error
		if data, err = os.ReadFile(*flowPath); err != nil {
			log.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := connectAndRun(ctx, os.Stdout, cfg, data, *date)
	if err := errors.Join(err, end(ctx, os.Stdout)); err != nil {
		log.Fatal(err)
	}
}

// connectAndRun runs the demo on the backend cfg names (in memory by default).
func connectAndRun(ctx context.Context, w io.Writer, cfg exbackend.Config, flowYAML []byte, date string) error {
	connect, closeAll, err := backend(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeAll()
	return run(ctx, w, flowYAML, date, connect)
}

// backend returns connect, which opens a provider as a process starting would: a
// handle of one in-memory store, or a provider on a client of its own of the Redis
// server cfg.Redis (keys under cfg.Prefix) or of DynamoDB at cfg.DynamoDB (the
// table cfg.Prefix, created here when missing). closeAll closes the clients.
func backend(ctx context.Context, cfg exbackend.Config) (connect func() (provider.Provider, error), closeAll func(), err error) {
	var closers []func()
	closeAll = func() {
		for _, c := range slices.Backward(closers) {
			c()
		}
	}
	switch {
	case cfg.DynamoDB != "":
		if err := ddbprovider.CreateTable(ctx, cfg.DynamoDBClient(), cfg.Prefix); err != nil {
			return nil, nil, fmt.Errorf("create table: %w", err)
		}
		return func() (provider.Provider, error) {
			return ddbprovider.New(cfg.DynamoDBClient(), cfg.Prefix)
		}, closeAll, nil
	case cfg.Redis != "":
		return func() (provider.Provider, error) {
			client, closeClient, err := cfg.RedisClient()
			if err != nil {
				return nil, err
			}
			closers = append(closers, closeClient)
			return redisprovider.New(client, redisprovider.WithKeyPrefix(cfg.Prefix))
		}, closeAll, nil
	}
	var first *memprovider.Provider // the shared state, like a server
	return func() (provider.Provider, error) {
		if first == nil {
			var err error
			first, err = memprovider.New()
			return first, err
		}
		return first.NewHandle() // a second client of the same state
	}, closeAll, nil
}

// run loads the flow, runs it in a process that gets killed, then in a restarted
// process that recovers the dead run first. connect opens each process's provider.
func run(ctx context.Context, w io.Writer, flowYAML []byte, date string, connect func() (provider.Provider, error)) error {
	flow, err := Load(flowYAML)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "flow %s: %d tasks\n", flow.Pipeline, len(flow.Tasks))
	for i, level := range flow.Levels() {
		fmt.Fprintf(w, "  level %d: %s\n", i, strings.Join(level, ", "))
	}

	// Process 1 is killed right after extract-orders succeeds.
	p1, err := connect()
	if err != nil {
		return err
	}
	ctx1, kill := context.WithCancel(ctx)
	defer kill()
	r1 := &Runner{Name: "process-1", Provider: p1, Flow: flow, Out: w,
		Exec: killAfter("extract-orders", kill, simulate)}
	fmt.Fprintln(w, "== process-1 starts")
	if _, err := r1.Run(ctx1, date); !errors.Is(err, context.Canceled) {
		return fmt.Errorf("process-1 should have been killed, got %v", err)
	}
	fmt.Fprintln(w, "== process-1 was killed")

	// Process 2 starts on the same state: it recovers, then runs the date again.
	p2, err := connect()
	if err != nil {
		return err
	}
	r2 := &Runner{Name: "process-2", Provider: p2, Flow: flow, Out: w, Exec: simulate}
	fmt.Fprintln(w, "== process-2 starts")
	if _, err := r2.Recover(ctx); err != nil {
		return err
	}
	final, err := r2.Run(ctx, date)
	if err != nil {
		return err
	}
	return report(ctx, w, p2, final)
}

// Task states, as kept in the run's Metadata["tasks"].
const (
	TaskPending   = "PENDING"
	TaskRunning   = "RUNNING"
	TaskSucceeded = "SUCCEEDED"
	TaskFailed    = "FAILED"
	TaskSkipped   = "SKIPPED"
)

// RecoveredReason is the Metadata["reason"] of a run Recover marked FAILED.
const RecoveredReason = "left RUNNING by a process that stopped; marked FAILED on restart"

// ExecFunc does one attempt (1-based) of a task.
type ExecFunc func(ctx context.Context, t Task, attempt int) error

// Runner runs a Flow and keeps its state in a Provider. One Runner at a time
// may run a given pipeline (a second process would guard Run with a lock or lease).
type Runner struct {
	Name     string
	Provider provider.Provider
	Flow     *Flow
	Exec     ExecFunc
	Out      io.Writer
	Parallel int // the most tasks at once; 0 means no limit

	mu sync.Mutex // serializes writes to Out
}

// Recover marks FAILED every run of the flow's pipeline that a stopped process
// left PENDING or RUNNING, with RecoveredReason in its Metadata, and fixes the
// run log. Call it when the process starts. It returns the recovered run IDs.
func (r *Runner) Recover(ctx context.Context) ([]string, error) {
	runs, err := r.Provider.ListRuns(ctx, r.Flow.Pipeline, 1000)
	if err != nil {
		return nil, err
	}
	var recovered []string
	for _, run := range runs {
		if run.Status != types.RunPending && run.Status != types.RunRunning {
			continue
		}
		failed := withMetadata(run, map[string]any{"reason": RecoveredReason, "recoveredBy": r.Name})
		failed.Status = types.RunFailed
		ok, err := r.Provider.CompareAndSwapRunState(ctx, run.RunID, run.Version, failed)
		if err != nil {
			return recovered, err
		}
		if !ok {
			continue // it changed since we listed it: not ours to recover
		}
		recovered = append(recovered, run.RunID)
		r.logf("recovered run %s: %s -> FAILED (%s)", run.RunID, run.Status, RecoveredReason)
		if err := r.event(ctx, run.RunID, "RUN_RECOVERED", "", string(types.RunFailed), RecoveredReason, 0); err != nil {
			return recovered, err
		}
		date, _ := run.Metadata["date"].(string)
		if date == "" {
			continue
		}
		entry, err := r.Provider.GetRunLog(ctx, r.Flow.Pipeline, date, "")
		if err != nil {
			return recovered, err
		}
		if entry == nil || entry.RunID != run.RunID || entry.Status.Terminal() {
			continue
		}
		now := time.Now()
		entry.Status, entry.FailureMessage, entry.CompletedAt, entry.UpdatedAt = types.RunFailed, RecoveredReason, &now, now
		if err := r.Provider.PutRunLog(ctx, *entry); err != nil {
			return recovered, err
		}
	}
	return recovered, nil
}

// Run runs the flow for date and returns the final run state. A date whose run
// log says COMPLETED is not run again; a date whose run is still RUNNING is an
// error (call Recover first if its process is gone). If ctx is cancelled, Run
// returns at once and leaves the run RUNNING, as a crash would.
func (r *Runner) Run(ctx context.Context, date string) (types.RunState, error) {
	p, pipeline := r.Provider, r.Flow.Pipeline
	prev, err := p.GetRunLog(ctx, pipeline, date, "")
	if err != nil {
		return types.RunState{}, err
	}
	entry := types.RunLogEntry{PipelineID: pipeline, Date: date, AttemptNumber: 1, StartedAt: time.Now()}
	if prev != nil {
		switch {
		case prev.Status == types.RunCompleted:
			r.logf("%s %s already completed by run %s", pipeline, date, prev.RunID)
			run, err := p.GetRunState(ctx, prev.RunID)
			if err != nil || run == nil {
				return types.RunState{}, cmp.Or(err, fmt.Errorf("run %s is missing", prev.RunID))
			}
			return *run, nil
		case !prev.Status.Terminal():
			return types.RunState{}, fmt.Errorf("run %s of %s is still %s", prev.RunID, date, prev.Status)
		}
		entry.AttemptNumber = prev.AttemptNumber + 1
		entry.RetryHistory = append(prev.RetryHistory, types.RetryRecord{Attempt: prev.AttemptNumber,
			RunID: prev.RunID, Status: prev.Status, FailureMessage: prev.FailureMessage, At: prev.UpdatedAt})
	}
	entry.RunID = fmt.Sprintf("%s-%s-%d", pipeline, date, entry.AttemptNumber)

	// PENDING, then RUNNING with compare-and-swap, and the run log says so.
	run := types.RunState{RunID: entry.RunID, PipelineID: pipeline, Status: types.RunPending,
		Metadata: map[string]any{"date": date, "attempt": entry.AttemptNumber, "runner": r.Name}}
	if err := p.PutRunState(ctx, run); err != nil {
		return run, err
	}
	if err := r.transition(ctx, &run, types.RunRunning, nil); err != nil {
		return run, err
	}
	entry.Status, entry.UpdatedAt = types.RunRunning, time.Now()
	if err := p.PutRunLog(ctx, entry); err != nil {
		return run, err
	}
	r.logf("run %s RUNNING", run.RunID)

	states, err := r.schedule(ctx, run.RunID)
	if err != nil {
		return run, err // killed: leave the run RUNNING, as a crash would
	}

	// COMPLETED or FAILED, with every task's state in the metadata.
	var failed, skipped []string
	for _, name := range slices.Sorted(maps.Keys(states)) {
		switch states[name] {
		case TaskFailed:
			failed = append(failed, name)
		case TaskSkipped:
			skipped = append(skipped, name)
		}
	}
	final := types.RunCompleted
	if len(failed) > 0 {
		final = types.RunFailed
		entry.FailureMessage = fmt.Sprintf("failed: %s; skipped: %s", strings.Join(failed, ", "), strings.Join(skipped, ", "))
	}
	tasks := map[string]any{}
	for name, s := range states {
		tasks[name] = s
	}
	if err := r.transition(ctx, &run, final, map[string]any{"tasks": tasks}); err != nil {
		return run, err
	}
	now := time.Now()
	entry.Status, entry.CompletedAt, entry.UpdatedAt = final, &now, now
	if err := p.PutRunLog(ctx, entry); err != nil {
		return run, err
	}
	r.logf("run %s %s", run.RunID, final)
	return run, nil
}

// result is the end of one task's attempts.
type result struct {
	task string
	err  error
}

// schedule runs the tasks: every task whose upstream tasks all succeeded starts at
// once (up to Parallel); a task that fails for good marks its descendants skipped.
// It returns each task's final state, or ctx's error after waiting for the tasks
// in flight.
func (r *Runner) schedule(ctx context.Context, runID string) (map[string]string, error) {
	states := map[string]string{}
	for _, t := range r.Flow.Tasks {
		states[t.Name] = TaskPending
	}
	results := make(chan result, len(r.Flow.Tasks)) // a task never blocks on sending
	inFlight := 0
	for {
		for _, level := range r.Flow.Levels() {
			for _, name := range level {
				if states[name] != TaskPending || !r.upstreamDone(states, name) ||
					(r.Parallel > 0 && inFlight >= r.Parallel) || ctx.Err() != nil {
					continue
				}
				states[name] = TaskRunning
				inFlight++
				task := r.Flow.byName[name]
				go func() { results <- result{name, r.attempts(ctx, runID, task)} }()
			}
		}
		if inFlight == 0 {
			return states, ctx.Err()
		}
		res := <-results
		inFlight--
		if ctx.Err() != nil {
			continue // killed: record nothing more, wait for the rest
		}
		if res.err == nil {
			states[res.task] = TaskSucceeded
			r.logf("%s succeeded", res.task)
			continue
		}
		states[res.task] = TaskFailed
		var skipped []string
		for _, d := range r.Flow.Descendants(res.task) {
			if states[d] == TaskPending {
				states[d] = TaskSkipped
				skipped = append(skipped, d)
				if err := r.event(ctx, runID, "TASK_SKIPPED", d, TaskSkipped, "upstream "+res.task+" failed", 0); err != nil {
					return states, err
				}
			}
		}
		r.logf("%s failed for good (%v); skipped downstream: [%s]", res.task, res.err, strings.Join(skipped, " "))
	}
}

// upstreamDone reports whether every task name waits for has succeeded.
func (r *Runner) upstreamDone(states map[string]string, name string) bool {
	for _, u := range r.Flow.Upstream(name) {
		if states[u] != TaskSucceeded {
			return false
		}
	}
	return true
}

// attempts runs task until it succeeds or has used 1+Retries attempts, waiting
// with capped exponential backoff and full jitter between them.
func (r *Runner) attempts(ctx context.Context, runID string, t Task) error {
	for attempt := 1; ; attempt++ {
		if err := r.event(ctx, runID, "TASK_STARTED", t.Name, TaskRunning, "", attempt); err != nil {
			return err
		}
		r.logf("%s started (attempt %d)", t.Name, attempt)
		err := r.Exec(ctx, t, attempt)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err == nil:
			return r.event(ctx, runID, "TASK_SUCCEEDED", t.Name, TaskSucceeded, "", attempt)
		case attempt > t.Retries:
			if evErr := r.event(ctx, runID, "TASK_FAILED", t.Name, TaskFailed, err.Error(), attempt); evErr != nil {
				return evErr
			}
			return err
		}
		r.logf("%s attempt %d failed (%v); retrying", t.Name, attempt, err)
		if err := r.event(ctx, runID, "TASK_RETRYING", t.Name, TaskFailed, err.Error(), attempt); err != nil {
			return err
		}
		if err := retryWait(ctx, t, attempt); err != nil {
			return err
		}
	}
}

// transition moves run to status with compare-and-swap, merging meta into its
// Metadata, and appends a RUN_STATE_CHANGED event. This runner is the run's only
// writer, so losing the swap means someone else (Recover in another process)
// took the run over: that is an error.
func (r *Runner) transition(ctx context.Context, run *types.RunState, status types.RunStatus, meta map[string]any) error {
	next := withMetadata(*run, meta)
	next.Status = status
	ok, err := r.Provider.CompareAndSwapRunState(ctx, run.RunID, run.Version, next)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("run %s changed under its runner (version %d)", run.RunID, run.Version)
	}
	next.Version = run.Version + 1
	*run = next
	return r.event(ctx, run.RunID, "RUN_STATE_CHANGED", "", string(status), "", 0)
}

// withMetadata returns run with a copy of its Metadata with meta merged in.
func withMetadata(run types.RunState, meta map[string]any) types.RunState {
	m := maps.Clone(run.Metadata)
	if m == nil {
		m = map[string]any{}
	}
	maps.Copy(m, meta)
	run.Metadata = m
	return run
}

// event appends an event of the flow's pipeline; task and attempt go in Details.
func (r *Runner) event(ctx context.Context, runID, kind, task, status, msg string, attempt int) error {
	ev := types.Event{Kind: kind, PipelineID: r.Flow.Pipeline, RunID: runID, Status: status, Message: msg}
	if task != "" {
		ev.Details = map[string]any{"task": task, "attempt": attempt}
	}
	return r.Provider.AppendEvent(ctx, ev)
}

func (r *Runner) logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.Out, "[%s] %s\n", r.Name, fmt.Sprintf(format, args...))
}
