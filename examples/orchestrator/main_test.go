package main

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/google/go-cmp/cmp"

	"github.com/pipestate/pipestate/examples/internal/exbackend"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// testBackends are the stores the tests run on: memory, an embedded miniredis,
// and the real servers that REDIS_ADDR and DYNAMODB_ENDPOINT name (skipped when
// unset). leaseTTL is short, for a fast takeover, yet long enough for renewals on
// a busy server; rounds is how often TestTwoOrchestrators races the demo.
var testBackends = []struct {
	name     string
	leaseTTL time.Duration
	rounds   int
	config   func(t *testing.T) exbackend.Config
}{
	{"memory", 300 * time.Millisecond, 20, func(*testing.T) exbackend.Config { return exbackend.Config{} }},
	{"miniredis", 300 * time.Millisecond, 5, func(t *testing.T) exbackend.Config {
		return exbackend.Config{Redis: runMiniredis(t), Prefix: "orchestrator"}
	}},
	{"redis", time.Second, 5, func(t *testing.T) exbackend.Config {
		return exbackend.Config{Redis: testenv.RedisAddr(t), Prefix: testenv.RedisPrefix(t)}
	}},
	{"dynamodb", 5 * time.Second, 1, func(t *testing.T) exbackend.Config {
		return exbackend.Config{DynamoDB: testenv.DynamoDBEndpoint(t), Prefix: testenv.DynamoDBPrefix(t),
			// DynamoDB Local on a loaded test machine can take seconds a call (creating
			// tables); TestDeadServer tests the timeout itself.
			Timeout: time.Minute}
	}},
}

// TestRun checks the whole transcript of one orchestrator on memory: the simulated
// world and clock make it the same on every run, but for where the followers'
// lines fall between the orchestrator's, so each source's lines are compared in
// their order.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(testContext(t), &out, 1, openTestBackend(t, exbackend.Config{})); err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, out.String())
	}
	if diff := cmp.Diff(bySource(wantTranscript), bySource(out.String())); diff != "" {
		t.Errorf("transcript differs (-want +got):\n%s\ngot:\n%s", diff, out.String())
	}
}

// bySource splits a transcript into the follower lines of each pipeline and the
// rest (key "").
func bySource(transcript string) map[string][]string {
	m := map[string][]string{}
	for line := range strings.Lines(transcript) {
		source := ""
		if _, rest, ok := strings.Cut(line, " events] "); ok {
			source, _, _ = strings.Cut(rest, ":")
		}
		m[source] = append(m[source], line)
	}
	return m
}

// TestTwoOrchestrators races two orchestrators on one store, round after round, on
// every backend: the lease, the run log and create-once keep each date's runs
// single, so the summary is the one of a single orchestrator (which counts the
// jobs triggered), each run started once, and the downstream job was triggered only
// once the upstream's cascade marker was in the store.
func TestTwoOrchestrators(t *testing.T) {
	wantSummary := wantTranscript[strings.Index(wantTranscript, "== summary"):]
	for _, tb := range testBackends {
		t.Run(tb.name, func(t *testing.T) {
			for round := range tb.rounds {
				ctx := testContext(t)
				var out bytes.Buffer
				d, err := newDemo(ctx, &out, 2, openTestBackend(t, tb.config(t)))
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range d.orchs {
					o.LeaseTTL = tb.leaseTTL
					o.Jobs = markerFirst{t: t, Jobs: o.Jobs, markers: d.admin.(provider.CascadeReader)}
				}
				if err := d.run(ctx, demoDates...); err != nil {
					t.Fatalf("round %d: run: %v\noutput:\n%s", round, err, out.String())
				}
				got := out.String()
				if s := got[strings.Index(got, "== summary"):]; s != wantSummary {
					t.Fatalf("round %d: summary differs\ngot:\n%s\nwant:\n%s\nfull output:\n%s", round, s, wantSummary, got)
				}
				for _, runID := range []string{"orders-raw-2026-11-23-daily-1", "orders-raw-2026-11-23-daily-2", "orders-daily-2026-11-23-daily-1"} {
					if n := strings.Count(got, "run "+runID+" PENDING -> TRIGGERING -> RUNNING"); n != 1 {
						t.Fatalf("round %d: run %s started %d times\noutput:\n%s", round, runID, n, got)
					}
				}
			}
		})
	}
}

// markerFirst refuses, and reports, a trigger of orders-daily's job for a date
// on which orders-raw's cascade marker is not in the store yet.
type markerFirst struct {
	Jobs
	t       *testing.T
	markers provider.CascadeReader
}

func (m markerFirst) Trigger(ctx context.Context, job Job) error {
	if job.PipelineID == "orders-daily" {
		markers, err := m.markers.ListCascadeMarkers(ctx, job.PipelineID, 100)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(markers, func(c types.CascadeMarker) bool { return c.Date == job.Date && c.Source == "orders-raw" }) {
			m.t.Errorf("job %s triggered before orders-raw's cascade marker for %s", job.RunID, job.Date)
			return errors.New("no upstream marker")
		}
	}
	return m.Jobs.Trigger(ctx, job)
}

// TestTakeover stops an orchestrator mid-evaluation, on every backend: A holds the
// lease of orders-raw and has sent its job's trigger, which the network holds.
// Then A's client stops, so its lease is neither renewed nor released, and A is
// either killed (its context ends too) or partitioned (it runs on, and KeepAlive
// cancels its work when the lease expires). B takes over once the lease expires,
// goes on with A's run and completes the date, orders-daily included. A's trigger,
// arriving last, carries a fence lower than B's, and the job service refuses it.
func TestTakeover(t *testing.T) {
	for _, tb := range testBackends {
		for _, killed := range []bool{true, false} {
			name := tb.name + "/partitioned"
			if killed {
				name = tb.name + "/killed"
			}
			t.Run(name, func(t *testing.T) { testTakeover(t, tb.config(t), tb.leaseTTL, killed) })
		}
	}
}

func testTakeover(t *testing.T, cfg exbackend.Config, ttl time.Duration, killed bool) {
	const date = "2026-11-23"
	r := newTakeoverRig(t, cfg, ttl)
	ctx, admin, w, storeA := r.ctx, r.admin, r.w, r.storeA
	held := &heldTrigger{Jobs: w, sent: make(chan Job, 1), deliver: make(chan struct{}), answer: make(chan error, 1)}
	orchA := r.orchestrator("orch-A", storeA, held, &r.outA)
	orchB := r.orchestrator("orch-B", client(t, r.b), w, &r.outB)
	outA, outB := &r.outA, &r.outB

	ctxA, killA := context.WithCancel(ctx)
	defer killA()
	doneA := make(chan error, 1)
	go func() { doneA <- orchA.RunDate(ctxA, date) }()
	var sent Job
	select {
	case sent = <-held.sent:
	case <-ctx.Done():
		t.Fatal("A never triggered its job")
	}
	if err := storeA.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if killed {
		killA()
	}
	stopped := time.Now()
	r.complete(t, orchB, date)
	if took := time.Since(stopped); took < ttl/2 {
		t.Errorf("B completed the date %v after A stopped, before A's lease (ttl %v) could expire", took, ttl)
	}

	close(held.deliver) // A's trigger arrives
	if err := <-held.answer; !errors.Is(err, ErrStaleFence) {
		t.Errorf("the job service answered A's trigger with fence %d: %v; want %v", sent.Fence, err, ErrStaleFence)
	}
	errA := <-doneA
	if killed && !errors.Is(errA, ErrStaleFence) {
		t.Errorf("killed A: RunDate: %v; want its refused trigger", errA)
	}
	if !killed {
		// A learns it was superseded, tries again and fails on its stopped client.
		if !errors.Is(errA, provider.ErrClosed) {
			t.Errorf("partitioned A: RunDate: %v; want %v", errA, provider.ErrClosed)
		}
		if want := "orders-raw: " + string(Superseded); !strings.Contains(outA.String(), want) {
			t.Errorf("A's output lacks %q", want)
		}
	}

	if want := "orders-raw: taking over run orders-raw-2026-11-23-daily-1 at attempt 1"; !strings.Contains(outB.String(), want) {
		t.Errorf("B's output lacks %q", want)
	}
	for runID, want := range map[string]int{"orders-raw-2026-11-23-daily-1": 1, "orders-raw-2026-11-23-daily-2": 1,
		"orders-daily-2026-11-23-daily-1": 1} {
		if got := w.triggers[runID]; got != want {
			t.Errorf("job %s triggered %d times, want %d", runID, got, want)
		}
	}
	for id, attempt := range map[string]int{"orders-raw": 2, "orders-daily": 1} {
		entry, err := admin.GetRunLog(ctx, id, date, "")
		if err != nil || entry == nil || entry.Status != types.RunCompleted || entry.AttemptNumber != attempt {
			t.Errorf("run log of %s = %+v, %v; want COMPLETED at attempt %d", id, entry, err, attempt)
		}
	}
}

// takeoverRig is what the takeover tests share: the demo's pipelines registered
// on one backend, A's client (which a test stops to end A's renewals), the
// simulated world, and A's and B's transcripts, logged when the test fails.
type takeoverRig struct {
	ctx           context.Context
	b             *backend
	admin, storeA Store
	w             *world
	ttl           time.Duration
	outA, outB    bytes.Buffer
}

func newTakeoverRig(t *testing.T, cfg exbackend.Config, ttl time.Duration) *takeoverRig {
	t.Helper()
	r := &takeoverRig{ctx: testContext(t), ttl: ttl, w: newWorld(time.Date(2026, 11, 23, 5, 0, 0, 0, time.UTC))}
	r.b = openTestBackend(t, cfg)
	r.admin, r.storeA = client(t, r.b), client(t, r.b)
	for _, cfg := range pipelines() {
		if err := r.admin.RegisterPipeline(r.ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("A's output:\n%s\nB's output:\n%s", r.outA.String(), r.outB.String())
		}
	})
	return r
}

// orchestrator returns the orchestrator name over s and jobs, writing to out.
func (r *takeoverRig) orchestrator(name string, s Store, jobs Jobs, out *bytes.Buffer) *Orchestrator {
	return &Orchestrator{Name: name, Store: s, Evaluators: r.w.evaluators(), Jobs: jobs,
		Now: r.w.clock.Now, Out: &lockedWriter{w: out}, LeaseTTL: r.ttl}
}

// complete has o route and run date until every pipeline has settled it.
func (r *takeoverRig) complete(t *testing.T, o *Orchestrator, date string) {
	t.Helper()
	ctxB, stopB := context.WithCancel(r.ctx)
	routed := make(chan error, 1)
	go func() { routed <- o.Route(ctxB) }()
	if err := o.RunDate(r.ctx, date); err != nil {
		t.Fatalf("%s: RunDate: %v", o.Name, err)
	}
	if err := awaitDate(r.ctx, r.admin, pipelines(), date); err != nil {
		t.Fatalf("awaitDate: %v", err)
	}
	stopB()
	if err := <-routed; err != nil {
		t.Errorf("%s: Route: %v", o.Name, err)
	}
}

// heldTrigger holds a Trigger in flight, as a slow network or a paused process
// would: it sends the job on sent, and once deliver is closed, passes it on and
// sends the job service's answer on answer.
type heldTrigger struct {
	Jobs
	sent    chan Job
	deliver chan struct{}
	answer  chan error
}

func (h *heldTrigger) Trigger(_ context.Context, job Job) error {
	h.sent <- job
	<-h.deliver
	err := h.Jobs.Trigger(context.Background(), job) // already on its way: ctx no longer matters
	h.answer <- err
	return err
}

// TestMissingInterfaces: a provider without the optional interfaces is refused at
// start, with each missing one named.
func TestMissingInterfaces(t *testing.T) {
	mem, err := openBackend(testContext(t), exbackend.Config{})
	if err != nil {
		t.Fatal(err)
	}
	bare := &backend{open: func() (provider.Provider, error) {
		p, err := mem.open()
		return struct{ provider.Provider }{p}, err // hides every optional interface
	}}
	var out bytes.Buffer
	err = run(testContext(t), &out, 1, bare)
	if err == nil {
		t.Fatal("run succeeded on a provider without the optional interfaces")
	}
	for _, name := range []string{"provider.Leaser", "provider.RunCreator", "provider.MarkerWatcher", "provider.EventFollower"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
	if out.Len() != 0 {
		t.Errorf("run printed before failing:\n%s", out.String())
	}
}

// TestBackOff: an orchestrator whose new attempt's run was already created by
// another backs off without triggering the job, and the other's run is untouched.
func TestBackOff(t *testing.T) {
	ctx := testContext(t)
	b := openTestBackend(t, exbackend.Config{})
	other := client(t, b)
	const runID = "orders-daily-2026-11-23-daily-1"
	if created, err := other.CreateRunState(ctx, types.RunState{RunID: runID, PipelineID: "orders-daily", Status: types.RunPending}); err != nil || !created {
		t.Fatalf("CreateRunState = %v, %v", created, err)
	}
	w := newWorld(time.Date(2026, 11, 23, 5, 0, 0, 0, time.UTC))
	var out bytes.Buffer
	o := &Orchestrator{Name: "t", Store: client(t, b), Evaluators: w.evaluators(), Jobs: w, Now: w.clock.Now, Out: &out}
	got, err := o.Evaluate(ctx, pipelines()[1], "2026-11-23")
	if err != nil || got != BackedOff {
		t.Fatalf("Evaluate = %q, %v; want %q\noutput:\n%s", got, err, BackedOff, out.String())
	}
	if n := w.triggers[runID]; n != 0 {
		t.Errorf("job %s triggered %d times by an orchestrator that backed off", runID, n)
	}
	if run, err := other.GetRunState(ctx, runID); err != nil || run == nil || run.Status != types.RunPending || run.Version != 0 {
		t.Errorf("GetRunState = %+v, %v; want the other's run untouched", run, err)
	}
}

// TestRetriesExhausted: a job that always fails is tried MaxAttempts times, the run
// log says FAILED with the retry history, and no cascade marker starts the
// downstream pipeline.
func TestRetriesExhausted(t *testing.T) {
	ctx := testContext(t)
	b := openTestBackend(t, exbackend.Config{})
	p := client(t, b)
	for _, cfg := range pipelines() {
		if err := p.RegisterPipeline(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	w := newWorld(time.Date(2026, 11, 23, 5, 0, 0, 0, time.UTC))
	var out bytes.Buffer
	o := &Orchestrator{Name: "t", Store: p, Evaluators: w.evaluators(), Jobs: failingJobs{}, Now: w.clock.Now, Out: &out}
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
		"orders-raw: FAILED after 3 attempt(s): run log",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q\noutput:\n%s", want, out.String())
		}
	}
	if markers, err := p.(provider.CascadeReader).ListCascadeMarkers(ctx, "orders-daily", 10); err != nil || len(markers) != 0 {
		t.Errorf("a failed pipeline wrote cascade markers: %+v, %v", markers, err)
	}
}

// TestEvaluatorError: an evaluator error is a FAIL with the error as reason, and a
// failing required trait keeps the pipeline from triggering.
func TestEvaluatorError(t *testing.T) {
	ctx := testContext(t)
	p := client(t, openTestBackend(t, exbackend.Config{}))
	w := newWorld(time.Date(2026, 11, 23, 5, 0, 0, 0, time.UTC))
	cfg := types.PipelineConfig{ID: "broken", Traits: map[string]types.TraitConfig{
		"probe": {Evaluator: "missing", Required: true}}}
	var out bytes.Buffer
	o := &Orchestrator{Name: "t", Store: p, Jobs: w, Now: w.clock.Now, Out: &out}
	got, err := o.Evaluate(ctx, cfg, "2026-11-23")
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

func (failingJobs) Trigger(context.Context, Job) error { return nil }
func (failingJobs) Status(context.Context, string) (types.RunStatus, string, error) {
	return types.RunFailed, "out of memory", nil
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func openTestBackend(t *testing.T, cfg exbackend.Config) *backend {
	t.Helper()
	b, err := openBackend(testContext(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.close)
	return b
}

func client(t *testing.T, b *backend) Store {
	t.Helper()
	s, err := b.client()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// runMiniredis starts a miniredis whose TTLs pass with real time, as a real
// server's do (miniredis's own move only on FastForward), and returns its address.
func runMiniredis(t *testing.T) string {
	m := miniredis.RunT(t)
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for last := time.Now(); ; {
			select {
			case <-stop:
				return
			case now := <-tick.C:
				m.FastForward(now.Sub(last))
				last = now
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-stopped
	})
	return m.Addr()
}

const wantTranscript = `== 2026-11-22
[05:00 orch-1] orders-raw: excluded by its calendar
== 2026-11-23
[05:00 orch-1] orders-raw: trait row-count PASS
[05:00 orch-1] orders-raw: trait source-landed FAIL (timed out after 5ms)
[05:00 orch-1] orders-raw: NOT_READY, blocking: [source-landed]
[05:00 events] orders-raw: TRAIT_EVALUATED row-count PASS
[05:00 events] orders-raw: TRAIT_EVALUATED source-landed FAIL (timed out after 5ms)
[05:00 events] orders-raw: READINESS NOT_READY
[05:00 orch-1] orders-raw: trait row-count PASS
[05:00 orch-1] orders-raw: trait source-landed PASS
[05:00 events] orders-raw: TRAIT_EVALUATED row-count PASS
[05:00 events] orders-raw: TRAIT_EVALUATED source-landed PASS
[05:00 orch-1] orders-raw: READY
[05:00 events] orders-raw: READINESS READY
[05:00 orch-1] orders-raw: run orders-raw-2026-11-23-daily-1 PENDING -> TRIGGERING -> RUNNING (fence 2)
[05:00 events] orders-raw: RUN_STATE_CHANGED orders-raw-2026-11-23-daily-1 TRIGGERING
[05:00 events] orders-raw: RUN_STATE_CHANGED orders-raw-2026-11-23-daily-1 RUNNING
[05:20 orch-1] orders-raw: run orders-raw-2026-11-23-daily-1 FAILED
[05:20 orch-1] orders-raw: attempt 1 of 3 failed (executor lost); retrying
[05:20 events] orders-raw: RUN_STATE_CHANGED orders-raw-2026-11-23-daily-1 FAILED (executor lost)
[05:20 orch-1] orders-raw: run orders-raw-2026-11-23-daily-2 PENDING -> TRIGGERING -> RUNNING (fence 2)
[05:20 events] orders-raw: RUN_STATE_CHANGED orders-raw-2026-11-23-daily-2 TRIGGERING
[05:20 events] orders-raw: RUN_STATE_CHANGED orders-raw-2026-11-23-daily-2 RUNNING
[05:50 orch-1] orders-raw: run orders-raw-2026-11-23-daily-2 COMPLETED
[05:50 orch-1] orders-raw: COMPLETED after 2 attempt(s): cascade marker for orders-daily, then run log
[05:50 events] orders-raw: RUN_STATE_CHANGED orders-raw-2026-11-23-daily-2 COMPLETED
[05:50 orch-1] orders-daily: cascade marker from orders-raw for 2026-11-23
[05:50 orch-1] orders-daily: SLA missed: evaluation deadline 05:45
[05:50 orch-1] orders-daily: trait schema PASS
[05:50 orch-1] orders-daily: READY
[05:50 orch-1] orders-daily: run orders-daily-2026-11-23-daily-1 PENDING -> TRIGGERING -> RUNNING (fence 1)
[05:50 events] orders-daily: SLA_MISSED evaluation (evaluation deadline 2026-11-23T05:45:00Z)
[05:50 events] orders-daily: TRAIT_EVALUATED schema PASS
[05:50 events] orders-daily: READINESS READY
[05:50 events] orders-daily: RUN_STATE_CHANGED orders-daily-2026-11-23-daily-1 TRIGGERING
[05:50 events] orders-daily: RUN_STATE_CHANGED orders-daily-2026-11-23-daily-1 RUNNING
[06:20 orch-1] orders-daily: run orders-daily-2026-11-23-daily-1 COMPLETED
[06:20 orch-1] orders-daily: SLA missed: completion deadline 06:00
[06:20 orch-1] orders-daily: COMPLETED after 1 attempt(s): run log
[06:20 events] orders-daily: RUN_STATE_CHANGED orders-daily-2026-11-23-daily-1 COMPLETED
[06:20 events] orders-daily: SLA_MISSED completion (completion deadline 2026-11-23T06:00:00Z)
== summary
orders-daily 2026-11-22: no run, 0 job(s) triggered
orders-daily 2026-11-23: COMPLETED at attempt 1, 1 job(s) triggered; runs: orders-daily-2026-11-23-daily-1 COMPLETED
orders-daily events: READINESS=1 RUN_STATE_CHANGED=3 SLA_MISSED=2 TRAIT_EVALUATED=1
orders-raw 2026-11-22: no run, 0 job(s) triggered
orders-raw 2026-11-23: COMPLETED at attempt 2, 2 job(s) triggered; runs: orders-raw-2026-11-23-daily-1 FAILED, orders-raw-2026-11-23-daily-2 COMPLETED
orders-raw events: READINESS=2 RUN_STATE_CHANGED=6 TRAIT_EVALUATED=4
`

// TestMain fails the package when its tests leave tables or keys behind.
func TestMain(m *testing.M) { testenv.Main(m) }

// TestDeadServer: on a Redis or DynamoDB endpoint that accepts connections and
// never answers, the orchestrator fails within its timeout instead of hanging
// (4s of slack for a loaded machine; without a timeout it hung on DynamoDB and
// took 5s, go-redis's default dial timeout, on Redis).
func TestDeadServer(t *testing.T) {
	const timeout = 300 * time.Millisecond
	addr := testenv.BlackHole(t)
	for name, cfg := range map[string]exbackend.Config{
		"redis":    {Redis: addr, Prefix: "orchestrator", Timeout: timeout},
		"dynamodb": {DynamoDB: "http://" + addr, Prefix: "orchestrator", Timeout: timeout},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			b, err := openBackend(testContext(t), cfg)
			if err == nil {
				defer b.close()
				err = run(testContext(t), &bytes.Buffer{}, 1, b)
			}
			if took := time.Since(start); err == nil || took > timeout+4*time.Second {
				t.Errorf("took %v, error %v; want an error within %v", took, err, timeout+4*time.Second)
			}
		})
	}
}
