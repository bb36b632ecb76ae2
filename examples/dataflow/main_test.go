package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider/memprovider"
	"github.com/pipestate/pipestate/types"

	"github.com/pipestate/pipestate/examples/internal/exbackend"
)

// backends are the servers the tests run on: memory, the real Redis in REDIS_ADDR
// and DynamoDB Local at DYNAMODB_ENDPOINT (`make test` sets them). Without them the
// real-server cases are skipped, or fail under PIPESTATE_REQUIRE_SERVERS=1.
var backends = []struct {
	name string
	cfg  func(t *testing.T) exbackend.Config
}{
	{"memory", func(*testing.T) exbackend.Config { return exbackend.Config{Prefix: "dataflow"} }},
	{"redis", func(t *testing.T) exbackend.Config {
		return exbackend.Config{Redis: testenv.RedisAddr(t), Prefix: testenv.RedisPrefix(t)}
	}},
	{"dynamodb", func(t *testing.T) exbackend.Config {
		// DynamoDB Local on a loaded machine can take seconds a call (creating the table).
		return exbackend.Config{DynamoDB: testenv.DynamoDBEndpoint(t), Prefix: testenv.DynamoDBPrefix(t), Timeout: time.Minute}
	}},
}

// TestRun runs the demo on each backend: process-1 is killed, process-2 recovers
// its run and runs the date again, and what process-2 leaves in the store is the
// same on every backend.
func TestRun(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := connectAndRun(testContext(t), &out, b.cfg(t), defaultFlow, "2026-11-23"); err != nil {
				t.Fatalf("run: %v\noutput:\n%s", err, out.String())
			}
			checkRun(t, out.String(), 2)
		})
	}
}

// TestRerun runs the demo twice on one server, as a second deployment of it would:
// the date's run log already says FAILED at attempt 2, so process-1 runs attempt 3,
// is killed, and process-2 recovers it and runs attempt 4, with the three earlier
// attempts in the run log's history.
func TestRerun(t *testing.T) {
	for _, b := range backends[1:] {
		t.Run(b.name, func(t *testing.T) {
			cfg := b.cfg(t)
			for i, attempt := range []int{2, 4} {
				var out bytes.Buffer
				if err := connectAndRun(testContext(t), &out, cfg, defaultFlow, "2026-11-23"); err != nil {
					t.Fatalf("run %d: %v\noutput:\n%s", i+1, err, out.String())
				}
				checkRun(t, out.String(), attempt)
			}
		})
	}
}

// checkRun checks the output of one demo whose process-2 ran the given attempt.
func checkRun(t *testing.T, got string, attempt int) {
	t.Helper()
	killed := fmt.Sprintf("orders-etl-2026-11-23-%d", attempt-1)
	for _, want := range []string{
		"  level 0: extract-customers, extract-orders, fx-rates\n  level 1: clean-orders\n  level 2: enrich-orders\n  level 3: orders-dashboard, revenue-report\n",
		"== process-1 was killed\n",
		"[process-2] recovered run " + killed + ": RUNNING -> FAILED (" + RecoveredReason + ")\n",
		"[process-2] clean-orders attempt 1 failed (simulated failure of attempt 1); retrying\n",
		"[process-2] fx-rates failed for good (simulated failure of attempt 2); skipped downstream: [revenue-report]\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q\noutput:\n%s", want, got)
		}
	}
	var earlier strings.Builder
	for a := 1; a < attempt; a++ {
		msg := RecoveredReason
		if a%2 == 0 { // the attempts process-2 ran
			msg = "failed: fx-rates; skipped: revenue-report"
		}
		fmt.Fprintf(&earlier, "  earlier: attempt %d, run orders-etl-2026-11-23-%d FAILED (%s)\n", a, a, msg)
	}
	// What process-2 leaves in the store is the same on every run.
	wantReport := fmt.Sprintf(`== run orders-etl-2026-11-23-%d: FAILED (version 2)
  clean-orders      SUCCEEDED
  enrich-orders     SUCCEEDED
  extract-customers SUCCEEDED
  extract-orders    SUCCEEDED
  fx-rates          FAILED
  orders-dashboard  SUCCEEDED
  revenue-report    SKIPPED
run log orders-etl 2026-11-23: FAILED at attempt %d (failed: fx-rates; skipped: revenue-report)
%sevents of orders-etl-2026-11-23-%d: RUN_STATE_CHANGED=2 TASK_FAILED=1 TASK_RETRYING=2 TASK_SKIPPED=1 TASK_STARTED=8 TASK_SUCCEEDED=5
`, attempt, attempt, earlier.String(), attempt)
	i := strings.Index(got, "== run ")
	if i < 0 || got[i:] != wantReport {
		t.Errorf("report differs (-want +got):\n%s\noutput:\n%s", cmp.Diff(wantReport, got[max(i, 0):]), got)
	}
}

// TestDeadServer: on a Redis or DynamoDB endpoint that accepts connections and
// never answers, the demo fails within its timeout instead of hanging (4s of slack
// for a loaded machine).
func TestDeadServer(t *testing.T) {
	const timeout = 300 * time.Millisecond
	addr := testenv.BlackHole(t)
	for name, cfg := range map[string]exbackend.Config{
		"redis":    {Redis: addr, Prefix: "dataflow", Timeout: timeout},
		"dynamodb": {DynamoDB: "http://" + addr, Prefix: "dataflow", Timeout: timeout},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			err := connectAndRun(testContext(t), io.Discard, cfg, defaultFlow, "2026-11-23")
			if took := time.Since(start); err == nil || took > timeout+4*time.Second {
				t.Errorf("took %v, error %v; want an error within %v", took, err, timeout+4*time.Second)
			}
		})
	}
}

// TestMain fails the package when its tests leave tables or keys behind.
func TestMain(m *testing.M) { testenv.Main(m) }

func TestLoadInfersDAG(t *testing.T) {
	f, err := Load(defaultFlow)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want []string
	}{
		{"upstream of enrich-orders", f.Upstream("enrich-orders"), []string{"clean-orders", "extract-customers"}},
		{"upstream of fx-rates (external input)", f.Upstream("fx-rates"), nil},
		{"downstream of enrich-orders", f.Downstream("enrich-orders"), []string{"orders-dashboard", "revenue-report"}},
		{"downstream of a leaf", f.Downstream("revenue-report"), nil},
		{"descendants of extract-orders", f.Descendants("extract-orders"),
			[]string{"clean-orders", "enrich-orders", "orders-dashboard", "revenue-report"}},
	}
	for _, c := range checks {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	wantLevels := [][]string{
		{"extract-customers", "extract-orders", "fx-rates"},
		{"clean-orders"},
		{"enrich-orders"},
		{"orders-dashboard", "revenue-report"},
	}
	if diff := cmp.Diff(wantLevels, f.Levels()); diff != "" {
		t.Errorf("Levels (-want +got):\n%s", diff)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string // substrings of the error
	}{
		{"ambiguous producer", `
pipeline: p
tasks:
  - {name: load-a, produces: [raw/x]}
  - {name: load-b, produces: [raw/y, raw/x]}
  - {name: use, consumes: [raw/x]}`, []string{`"raw/x"`, "load-a", "load-b"}},
		{"cycle", `
pipeline: p
tasks:
  - {name: start, produces: [s]}
  - {name: a, consumes: [s, c], produces: [a]}
  - {name: b, consumes: [a], produces: [b]}
  - {name: c, consumes: [b], produces: [c]}`, []string{"cycle between tasks: a -> b -> c -> a"}},
		{"self cycle", `
pipeline: p
tasks:
  - {name: loop, consumes: [x], produces: [x]}`, []string{"cycle between tasks: loop -> loop"}},
		{"duplicate name", `
pipeline: p
tasks:
  - {name: a, produces: [x]}
  - {name: a, produces: [y]}`, []string{`two tasks are named "a"`}},
		{"unnamed task", `
pipeline: p
tasks:
  - {produces: [x]}`, []string{"a task has no name"}},
		{"unknown field", `
pipeline: p
tasks:
  - {name: a, prodcues: [x]}`, []string{"prodcues"}},
		{"negative retries", `
pipeline: p
tasks:
  - {name: a, retries: -1}`, []string{"task a: negative retries"}},
		{"bad pipeline ID", `
pipeline: "has space"
tasks:
  - {name: a}`, []string{"pipeline"}},
		{"no tasks", `pipeline: p`, []string{"no tasks"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load([]byte(tt.yaml))
			if !errors.Is(err, ErrInvalidFlow) {
				t.Fatalf("Load error = %v, want one wrapping ErrInvalidFlow", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestIndependentTasksOverlap: a and b do not depend on each other, so they run at
// once: each waits until the other has started. c waits for both.
func TestIndependentTasksOverlap(t *testing.T) {
	flow := mustLoad(t, `
pipeline: p
tasks:
  - {name: a, produces: [x]}
  - {name: b, produces: [y]}
  - {name: c, consumes: [x, y]}`)
	var started sync.WaitGroup
	started.Add(2)
	both := make(chan struct{})
	go func() { started.Wait(); close(both) }()
	var cStartedAfter atomic.Int32
	var done atomic.Int32
	exec := func(ctx context.Context, task Task, _ int) error {
		switch task.Name {
		case "a", "b":
			started.Done()
			select {
			case <-both:
			case <-time.After(5 * time.Second):
				return fmt.Errorf("%s ran alone: the other independent task never started", task.Name)
			}
			done.Add(1)
		case "c":
			cStartedAfter.Store(done.Load())
		}
		return nil
	}
	r, _ := newRunner(t, flow, exec)
	run, err := r.Run(testContext(t), "2026-11-23")
	if err != nil || run.Status != types.RunCompleted {
		t.Fatalf("Run = %s, %v; want COMPLETED", run.Status, err)
	}
	if n := cStartedAfter.Load(); n != 2 {
		t.Errorf("c started after %d of its 2 upstream tasks finished", n)
	}
}

// TestParallelLimit: with Parallel 1, independent tasks run one at a time.
func TestParallelLimit(t *testing.T) {
	flow := mustLoad(t, `
pipeline: p
tasks:
  - {name: a}
  - {name: b}
  - {name: c}
  - {name: d}`)
	var inFlight, most atomic.Int32
	exec := func(ctx context.Context, _ Task, _ int) error {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(time.Millisecond)
		return nil
	}
	r, _ := newRunner(t, flow, exec)
	r.Parallel = 1
	if run, err := r.Run(testContext(t), "2026-11-23"); err != nil || run.Status != types.RunCompleted {
		t.Fatalf("Run = %s, %v; want COMPLETED", run.Status, err)
	}
	if m := most.Load(); m != 1 {
		t.Errorf("%d tasks ran at once with Parallel 1", m)
	}
}

// TestRetryThenSkipDownstream: flaky succeeds on its retry and its downstream runs;
// broken exhausts its retries and everything downstream of it is skipped, never
// executed; the independent task still runs; the run is FAILED.
func TestRetryThenSkipDownstream(t *testing.T) {
	flow := mustLoad(t, `
pipeline: p
tasks:
  - {name: flaky, produces: [f], retries: 1, retry_delay: 1ms}
  - {name: after-flaky, consumes: [f]}
  - {name: broken, produces: [x], retries: 2, retry_delay: 1ms}
  - {name: child, consumes: [x], produces: [y]}
  - {name: grandchild, consumes: [y, f]}
  - {name: independent}`)
	var mu sync.Mutex
	attempts := map[string]int{}
	exec := func(ctx context.Context, task Task, attempt int) error {
		mu.Lock()
		attempts[task.Name]++
		mu.Unlock()
		if task.Name == "broken" || (task.Name == "flaky" && attempt == 1) {
			return errors.New("boom")
		}
		return nil
	}
	r, p := newRunner(t, flow, exec)
	ctx := testContext(t)
	run, err := r.Run(ctx, "2026-11-23")
	if err != nil || run.Status != types.RunFailed {
		t.Fatalf("Run = %s, %v; want FAILED", run.Status, err)
	}
	wantAttempts := map[string]int{"flaky": 2, "after-flaky": 1, "broken": 3, "independent": 1}
	if diff := cmp.Diff(wantAttempts, attempts); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}
	stored, err := p.GetRunState(ctx, run.RunID)
	if err != nil || stored == nil {
		t.Fatalf("GetRunState = %v, %v", stored, err)
	}
	wantTasks := map[string]any{"flaky": TaskSucceeded, "after-flaky": TaskSucceeded, "broken": TaskFailed,
		"child": TaskSkipped, "grandchild": TaskSkipped, "independent": TaskSucceeded}
	if diff := cmp.Diff(wantTasks, stored.Metadata["tasks"]); diff != "" {
		t.Errorf("stored task states (-want +got):\n%s", diff)
	}
	events, err := p.ListEvents(ctx, "p", 1000)
	if err != nil {
		t.Fatal(err)
	}
	var skipped []string
	retries := 0
	for _, e := range events {
		switch e.Kind {
		case "TASK_SKIPPED":
			skipped = append(skipped, e.Details["task"].(string))
		case "TASK_RETRYING":
			retries++
		}
	}
	slices.Sort(skipped)
	if !slices.Equal(skipped, []string{"child", "grandchild"}) || retries != 3 {
		t.Errorf("events: skipped %v and %d retries; want [child grandchild] and 3", skipped, retries)
	}
	entry, err := p.GetRunLog(ctx, "p", "2026-11-23", "")
	if err != nil || entry == nil || entry.Status != types.RunFailed ||
		entry.FailureMessage != "failed: broken; skipped: child, grandchild" {
		t.Errorf("run log = %+v, %v", entry, err)
	}
}

// TestRestartRecovery: a run whose process died is left RUNNING; a new runner
// refuses to run the date until Recover marks it FAILED with a reason, and then
// runs it as attempt 2.
func TestRestartRecovery(t *testing.T) {
	flow := mustLoad(t, `
pipeline: p
tasks:
  - {name: slow}`)
	p1, err := memprovider.New()
	if err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t)
	ctx1, kill := context.WithCancel(ctx)
	hang := func(ctx context.Context, _ Task, _ int) error { kill(); <-ctx.Done(); return ctx.Err() }
	r1 := &Runner{Name: "one", Provider: p1, Flow: flow, Exec: hang, Out: &bytes.Buffer{}}
	if _, err := r1.Run(ctx1, "2026-11-23"); !errors.Is(err, context.Canceled) {
		t.Fatalf("killed Run error = %v, want context.Canceled", err)
	}

	p2, err := p1.NewHandle()
	if err != nil {
		t.Fatal(err)
	}
	ok := func(context.Context, Task, int) error { return nil }
	r2 := &Runner{Name: "two", Provider: p2, Flow: flow, Exec: ok, Out: &bytes.Buffer{}}
	if left, err := p2.GetRunState(ctx, "p-2026-11-23-1"); err != nil || left == nil || left.Status != types.RunRunning {
		t.Fatalf("after the crash GetRunState = %+v, %v; want RUNNING", left, err)
	}
	if _, err := r2.Run(ctx, "2026-11-23"); err == nil || !strings.Contains(err.Error(), "still RUNNING") {
		t.Fatalf("Run before Recover error = %v, want one saying the run is still RUNNING", err)
	}
	recovered, err := r2.Recover(ctx)
	if err != nil || !slices.Equal(recovered, []string{"p-2026-11-23-1"}) {
		t.Fatalf("Recover = %v, %v; want [p-2026-11-23-1]", recovered, err)
	}
	failed, err := p2.GetRunState(ctx, "p-2026-11-23-1")
	if err != nil || failed.Status != types.RunFailed || failed.Metadata["reason"] != RecoveredReason {
		t.Errorf("recovered run = %+v, %v; want FAILED with the reason in Metadata", failed, err)
	}
	if entry, err := p2.GetRunLog(ctx, "p", "2026-11-23", ""); err != nil || entry.Status != types.RunFailed ||
		entry.FailureMessage != RecoveredReason || entry.CompletedAt == nil {
		t.Errorf("run log after Recover = %+v, %v; want FAILED with the reason", entry, err)
	}
	if again, err := r2.Recover(ctx); err != nil || len(again) != 0 {
		t.Errorf("second Recover = %v, %v; want nothing", again, err)
	}

	run, err := r2.Run(ctx, "2026-11-23")
	if err != nil || run.Status != types.RunCompleted || run.RunID != "p-2026-11-23-2" {
		t.Fatalf("Run after Recover = %s %s, %v; want p-2026-11-23-2 COMPLETED", run.RunID, run.Status, err)
	}
	entry, err := p2.GetRunLog(ctx, "p", "2026-11-23", "")
	if err != nil || entry.AttemptNumber != 2 || len(entry.RetryHistory) != 1 ||
		entry.RetryHistory[0].FailureMessage != RecoveredReason {
		t.Errorf("run log = %+v, %v; want attempt 2 with the recovered attempt in its history", entry, err)
	}
	// A completed date is not run again.
	again, err := r2.Run(ctx, "2026-11-23")
	if err != nil || again.RunID != run.RunID {
		t.Errorf("second Run = %s, %v; want the completed %s", again.RunID, err, run.RunID)
	}
}

func mustLoad(t *testing.T, yaml string) *Flow {
	t.Helper()
	f, err := Load([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func newRunner(t *testing.T, flow *Flow, exec ExecFunc) (*Runner, *memprovider.Provider) {
	t.Helper()
	p, err := memprovider.New()
	if err != nil {
		t.Fatal(err)
	}
	return &Runner{Name: "test", Provider: p, Flow: flow, Exec: exec, Out: &bytes.Buffer{}}, p
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
