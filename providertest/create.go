package providertest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

func (s *suite) creator(t *testing.T) (provider.Provider, provider.RunCreator) {
	t.Helper()
	p := s.open(t)
	return p, p.(provider.RunCreator)
}

// RunRunCreator tests provider.RunCreator: a run is created once, concurrent
// creates of one RunID have exactly one winner whose run is stored and listed once,
// an existing run is left alone, and bad input writes nothing. It skips when the
// provider is not a RunCreator.
func RunRunCreator(t *testing.T, h Harness) {
	t.Helper()
	group(t, "RunCreator", h, func(t *testing.T, s *suite) {
		if _, ok := s.open(t).(provider.RunCreator); !ok {
			t.Skip("provider is not a provider.RunCreator")
		}
		s.run(t, "create_once", testRunCreatorCreateOnce)
		s.run(t, "put_then_create", testRunCreatorPutThenCreate)
		s.run(t, "concurrent_creates_one_winner", testRunCreatorConcurrentCreatesOneWinner)
		testRunCreatorBadInput(t, s)
	})
}

// testRunCreatorBadInput runs the bad-input table (bad_input/...) of the RunCreator group.
func testRunCreatorBadInput(t *testing.T, s *suite) {
	s.checkBadInput(t, []badCase{
		{name: "nonzero_version", call: func(ctx context.Context, p provider.Provider, k ids) error {
			return createRun(ctx, p, types.RunState{RunID: k.run, PipelineID: k.pipeline, Status: types.RunPending, Version: 1})
		}},
		{name: "bad_status", call: func(ctx context.Context, p provider.Provider, k ids) error {
			return createRun(ctx, p, types.RunState{RunID: k.run, PipelineID: k.pipeline, Status: "NOPE"})
		}},
		{name: "bad_run_id", call: func(ctx context.Context, p provider.Provider, k ids) error {
			return createRun(ctx, p, types.RunState{RunID: "a:b", PipelineID: k.pipeline, Status: types.RunPending})
		}},
	}, func(t *testing.T, p provider.Provider, k ids) {
		t.Helper()
		r, err := p.GetRunState(t.Context(), k.run)
		wantNil(t, r, err, "GetRunState after a rejected create")
	})
}

func testRunCreatorCreateOnce(t *testing.T, s *suite) {
	p, c := s.creator(t)
	k := newIDs(t)
	run := types.RunState{RunID: k.run, PipelineID: k.pipeline, Status: types.RunPending, Metadata: map[string]any{"by": "first"}}
	created, err := c.CreateRunState(t.Context(), run)
	noErr(t, err, "CreateRunState")
	if !created {
		t.Fatal("CreateRunState of a new run: created = false")
	}
	got := getRun(t, p, k.run)
	if got.Version != 0 || got.Status != types.RunPending || got.CreatedAt.IsZero() || got.UpdatedAt.IsZero() {
		t.Errorf("created run %+v: want version 0, PENDING, filled times", got)
	}
	again := run
	again.Status, again.Metadata = types.RunRunning, map[string]any{"by": "second"}
	created, err = c.CreateRunState(t.Context(), again)
	noErr(t, err, "CreateRunState of an existing run")
	if created {
		t.Error("CreateRunState of an existing run: created = true")
	}
	same(t, "run after a second create", got, getRun(t, p, k.run))
	ok, err := p.CompareAndSwapRunState(t.Context(), k.run, 0, again)
	if noErr(t, err, "CAS after create"); !ok {
		t.Error("CAS from version 0 after create failed")
	}
}

func testRunCreatorPutThenCreate(t *testing.T, s *suite) {
	p, c := s.creator(t)
	k := newIDs(t)
	run := types.RunState{RunID: k.run, PipelineID: k.pipeline, Status: types.RunRunning, Version: 3}
	noErr(t, p.PutRunState(t.Context(), run), "PutRunState")
	created, err := c.CreateRunState(t.Context(), types.RunState{RunID: k.run, PipelineID: k.pipeline, Status: types.RunPending})
	noErr(t, err, "CreateRunState")
	if created {
		t.Error("CreateRunState over a run PutRunState stored: created = true")
	}
	if got := getRun(t, p, k.run); got.Version != 3 || got.Status != types.RunRunning {
		t.Errorf("run after the refused create: %+v, want version 3 RUNNING", got)
	}
}

func testRunCreatorConcurrentCreatesOneWinner(t *testing.T, s *suite) {
	p, _ := s.creator(t)
	k := newIDs(t)
	const n = 32
	instances := make([]provider.RunCreator, 4)
	for i := range instances {
		_, instances[i] = s.creator(t)
	}
	var wins atomic.Int64
	winner := make(chan int, n)
	var start, done sync.WaitGroup
	start.Add(1)
	for i := range n {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			run := types.RunState{RunID: k.run, PipelineID: k.pipeline, Status: types.RunPending, Metadata: map[string]any{"by": float64(i)}}
			created, err := instances[i%len(instances)].CreateRunState(context.Background(), run)
			if err != nil {
				t.Errorf("CreateRunState %d: %v", i, err)
				return
			}
			if created {
				wins.Add(1)
				winner <- i
			}
		}()
	}
	start.Done()
	done.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d creates reported created, want exactly 1", wins.Load())
	}
	w := <-winner
	if got := getRun(t, p, k.run); got.Metadata["by"] != float64(w) {
		t.Errorf("stored run was written by %v, but create %d reported created", got.Metadata["by"], w)
	}
	list, err := p.ListRuns(t.Context(), k.pipeline, listAll)
	wantLen(t, list, err, 1, "ListRuns after concurrent creates")
}

// createRun calls CreateRunState on p, a RunCreator (the group skips otherwise).
func createRun(ctx context.Context, p provider.Provider, run types.RunState) error {
	_, err := p.(provider.RunCreator).CreateRunState(ctx, run)
	return err
}

// getRun returns the stored run runID, failing the test when it is missing.
func getRun(t *testing.T, p provider.Provider, runID string) types.RunState {
	t.Helper()
	r, err := p.GetRunState(t.Context(), runID)
	return mustGet(t, r, err, "GetRunState")
}
