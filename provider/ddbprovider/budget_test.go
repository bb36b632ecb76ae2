package ddbprovider_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"testing"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// TestRoundTripBudget holds every call to the round-trip budget of the package doc,
// counting HTTP requests. The steps run in order on one table.
func TestRoundTripBudget(t *testing.T) {
	hc, n := testenv.CountingHTTPClient()
	var units testenv.Capacity
	e := testEnv(t, func(o *ddb.Options) { o.HTTPClient = hc }, units.Option())
	p := openOn(t, e.client, e)
	other := openOn(t, e.client, e)
	ctx := context.Background()
	now := e.clock.Now()
	run := types.RunState{RunID: "r1", PipelineID: "p1", Status: types.RunPending, CreatedAt: now}
	rerun := types.RerunRecord{RerunID: "x1", PipelineID: "p1", OriginalDate: "2026-01-01", Status: types.RequestPending, RequestedAt: now}
	var lease *types.Lease
	frun := types.RunState{RunID: "r3", PipelineID: "p1", Status: types.RunPending, CreatedAt: now}
	frerun := types.RerunRecord{RerunID: "x3", PipelineID: "p1", OriginalDate: "2026-01-01", Status: types.RequestPending, RequestedAt: now}
	// fenced is p seen by a lease of key "fk" with fence f.
	fenced := func(f int64) provider.Provider {
		fp, err := provider.Fenced(p, types.Lease{Key: "fk", Token: "t", Fence: f})
		if err != nil {
			t.Fatal(err)
		}
		return fp
	}
	steps := []budgetStep{
		{"register pipeline", 1, func() error { return p.RegisterPipeline(ctx, types.PipelineConfig{ID: "p1"}) }},
		{"get pipeline", 1, func() error { _, err := p.GetPipeline(ctx, "p1"); return err }},
		{"list pipelines", 1, func() error { _, err := p.ListPipelines(ctx); return err }},
		{"put trait", 1, func() error {
			return p.PutTrait(ctx, "p1", types.TraitEvaluation{TraitType: "t", Status: types.TraitPass}, time.Minute)
		}},
		{"get trait", 1, func() error { _, err := p.GetTrait(ctx, "p1", "t"); return err }},
		{"get traits", 1, func() error { _, err := p.GetTraits(ctx, "p1"); return err }},
		{"put readiness", 1, func() error {
			return p.PutReadiness(ctx, types.ReadinessResult{PipelineID: "p1", Status: types.Ready})
		}},
		{"get readiness", 1, func() error { _, err := p.GetReadiness(ctx, "p1"); return err }},
		{"put run new", 1, func() error { return p.PutRunState(ctx, run) }},
		{"put run again", 1, func() error { return p.PutRunState(ctx, run) }},
		{"put run moved", 1, func() error { run.CreatedAt = now.Add(time.Second); return p.PutRunState(ctx, run) }},
		{"put run moved other instance", 2, func() error {
			run.CreatedAt = now.Add(2 * time.Second)
			return other.PutRunState(ctx, run)
		}},
		{"get run", 1, func() error { _, err := p.GetRunState(ctx, "r1"); return err }},
		{"list runs", 1, func() error { _, err := p.ListRuns(ctx, "p1", 10); return err }},
		{"create run", 1, func() error {
			return createdOK(p.CreateRunState(ctx, types.RunState{RunID: "r2", PipelineID: "p1", Status: types.RunPending}))
		}},
		{"create run existing", 1, func() error {
			return casLost(p.CreateRunState(ctx, types.RunState{RunID: "r2", PipelineID: "p1", Status: types.RunPending}))
		}},
		{"cas", 1, func() error { return casOK(p.CompareAndSwapRunState(ctx, "r1", 0, run)) }},
		{"cas lost", 1, func() error { return casLost(p.CompareAndSwapRunState(ctx, "r1", 0, run)) }},
		{"cas zero created", 2, func() error {
			r := run
			r.CreatedAt = time.Time{}
			return casOK(p.CompareAndSwapRunState(ctx, "r1", 1, r))
		}},
		{"cas other created", 2, func() error {
			r := run
			r.CreatedAt = now.Add(time.Hour)
			return casOK(p.CompareAndSwapRunState(ctx, "r1", 2, r))
		}},
		// Two unfinished runs (r1, r2): a Query of each of the 16 shards of
		// ACTIVE, then a GetItem of each run's truth.
		{"list active runs", 18, func() error {
			runs, _, err := p.ListActiveRuns(ctx, provider.ActiveRunFilter{}, "", 10)
			if err == nil && len(runs) != 2 {
				err = fmt.Errorf("%d active runs, want 2", len(runs))
			}
			return err
		}},
		{"cas finished", 1, func() error {
			r := run
			r.Status = types.RunCompleted
			return casOK(p.CompareAndSwapRunState(ctx, "r1", 3, r))
		}},
		{"cas finished again", 1, func() error {
			r := run
			r.Status = types.RunCompleted
			return casOK(p.CompareAndSwapRunState(ctx, "r1", 4, r))
		}},
		// A first append reads the counter and the newest event (the
		// counter never goes below it), then commits.
		{"append first", 2, func() error { return p.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p1"}) }},
		{"append next", 1, func() error { return p.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p1"}) }},
		{"append other instance", 2, func() error { return other.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p1"}) }},
		{"list events", 1, func() error { _, err := p.ListEvents(ctx, "p1", 10); return err }},
		{"read events since", 1, func() error { _, err := p.ReadEventsSince(ctx, "p1", "1", 10); return err }},
		{"put run log", 1, func() error {
			return p.PutRunLog(ctx, types.RunLogEntry{PipelineID: "p1", Date: "2026-01-01", Status: types.RunRunning})
		}},
		{"get run log", 1, func() error { _, err := p.GetRunLog(ctx, "p1", "2026-01-01", ""); return err }},
		{"list run logs", 1, func() error { _, err := p.ListRunLogs(ctx, "p1", 10); return err }},
		{"put rerun new", 1, func() error { return p.PutRerun(ctx, rerun) }},
		{"put rerun again", 1, func() error { return p.PutRerun(ctx, rerun) }},
		{"put rerun moved", 2, func() error { rerun.PipelineID = "p2"; return p.PutRerun(ctx, rerun) }},
		{"get rerun", 1, func() error { _, err := p.GetRerun(ctx, "x1"); return err }},
		{"list reruns", 1, func() error { _, err := p.ListReruns(ctx, "p2", 10); return err }},
		{"list all reruns", 1, func() error { _, err := p.ListAllReruns(ctx, 10); return err }},
		{"put replay", 1, func() error {
			return p.PutReplay(ctx, types.ReplayRequest{PipelineID: "p1", Date: "2026-01-01", Status: types.RequestPending})
		}},
		{"get replay", 1, func() error { _, err := p.GetReplay(ctx, "p1", "2026-01-01", ""); return err }},
		{"list replays", 1, func() error { _, err := p.ListReplays(ctx, 10); return err }},
		{"put late arrival", 1, func() error {
			return p.PutLateArrival(ctx, types.LateArrival{PipelineID: "p1", Date: "2026-01-01"})
		}},
		{"list late arrivals", 1, func() error { _, err := p.ListLateArrivals(ctx, "p1", "2026-01-01", ""); return err }},
		{"write marker new", 1, func() error { return p.WriteCascadeMarker(ctx, "p1", "", "2026-01-01", "up") }},
		// The marker's list copy moves (it is keyed by WrittenAt); p wrote it last,
		// so it moves the copy in its first attempt.
		{"write marker again", 1, func() error {
			e.clock.Advance(time.Second)
			return p.WriteCascadeMarker(ctx, "p1", "", "2026-01-01", "up")
		}},
		{"write marker next", 1, func() error { return p.WriteCascadeMarker(ctx, "p2", "", "2026-01-01", "up") }},
		{"write marker other instance", 2, func() error { return other.WriteCascadeMarker(ctx, "p3", "", "2026-01-01", "up") }},
		// other did not: its first attempt (which knows the marker log's number) is
		// refused: it assumed a new marker. The refusal carries where the copy
		// is, and the second attempt moves it.
		{"write marker again other instance", 2, func() error {
			e.clock.Advance(time.Second)
			return other.WriteCascadeMarker(ctx, "p1", "", "2026-01-01", "up")
		}},
		{"follow events, first page", 1, func() error { return first(p.FollowEvents(ctx, "p1", "")) }},
		{"watch markers, first page", 1, func() error { return first(p.WatchCascadeMarkers(ctx, "")) }},
		{"list markers", 1, func() error { _, err := p.ListCascadeMarkers(ctx, "p1", 10); return err }},
		{"acquire lock", 1, func() error { _, err := p.AcquireLock(ctx, "k", time.Minute); return err }},
		{"release lock", 1, func() error { return p.ReleaseLock(ctx, "k") }},
		{"acquire lease", 1, func() error { var err error; lease, err = p.AcquireLease(ctx, "k", time.Minute); return err }},
		{"inspect lease", 1, func() error { _, err := p.GetLockInfo(ctx, "k"); return err }},
		{"renew lease", 1, func() error { _, err := p.RenewLease(ctx, *lease, time.Minute); return err }},
		{"release lease", 1, func() error { return p.ReleaseLease(ctx, *lease) }},
		{"inspect free", 1, func() error { _, err := p.GetLockInfo(ctx, "k"); return err }},
		// Fenced writes (provider.Fenced): the same round trips as unfenced.
		{"fenced put run new", 1, func() error { return fenced(2).PutRunState(ctx, frun) }},
		{"fenced put run again", 1, func() error { return fenced(2).PutRunState(ctx, frun) }},
		{"fenced put run moved", 1, func() error { frun.CreatedAt = now.Add(time.Second); return fenced(2).PutRunState(ctx, frun) }},
		{"fenced put run refused", 1, func() error { return wantFencedErr(fenced(1).PutRunState(ctx, frun)) }},
		{"unfenced put run after fenced", 1, func() error { return p.PutRunState(ctx, frun) }},
		{"fenced create run", 1, func() error {
			return createdOK(fenced(2).(provider.RunCreator).CreateRunState(ctx, types.RunState{RunID: "r4", PipelineID: "p1", Status: types.RunPending}))
		}},
		{"fenced create run existing", 1, func() error {
			return casLost(fenced(2).(provider.RunCreator).CreateRunState(ctx, types.RunState{RunID: "r4", PipelineID: "p1", Status: types.RunPending}))
		}},
		{"fenced create run refused", 1, func() error {
			_, err := fenced(1).(provider.RunCreator).CreateRunState(ctx, types.RunState{RunID: "r4", PipelineID: "p1", Status: types.RunPending})
			return wantFencedErr(err)
		}},
		{"fenced cas", 1, func() error { return casOK(fenced(2).CompareAndSwapRunState(ctx, "r3", 0, frun)) }},
		{"fenced cas lost", 1, func() error { return casLost(fenced(2).CompareAndSwapRunState(ctx, "r3", 0, frun)) }},
		{"fenced cas refused", 1, func() error {
			_, err := fenced(1).CompareAndSwapRunState(ctx, "r3", 1, frun)
			return wantFencedErr(err)
		}},
		{"fenced cas zero created", 2, func() error {
			r := frun
			r.CreatedAt = time.Time{}
			return casOK(fenced(2).CompareAndSwapRunState(ctx, "r3", 1, r))
		}},
		{"fenced cas zero created refused", 1, func() error {
			r := frun
			r.CreatedAt = time.Time{}
			_, err := fenced(1).CompareAndSwapRunState(ctx, "r3", 2, r)
			return wantFencedErr(err)
		}},
		{"fenced append first", 2, func() error { return fenced(2).AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p5"}) }},
		{"fenced append next", 1, func() error { return fenced(2).AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p5"}) }},
		{"fenced append refused", 1, func() error {
			return wantFencedErr(fenced(1).AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p5"}))
		}},
		{"fenced put run log", 1, func() error {
			return fenced(2).PutRunLog(ctx, types.RunLogEntry{PipelineID: "p1", Date: "2026-01-02", Status: types.RunRunning})
		}},
		{"fenced put run log refused", 1, func() error {
			return wantFencedErr(fenced(1).PutRunLog(ctx, types.RunLogEntry{PipelineID: "p1", Date: "2026-01-02", Status: types.RunRunning}))
		}},
		{"fenced put rerun new", 1, func() error { return fenced(2).PutRerun(ctx, frerun) }},
		{"fenced put rerun again", 1, func() error { return fenced(2).PutRerun(ctx, frerun) }},
		{"fenced put replay", 1, func() error {
			return fenced(2).PutReplay(ctx, types.ReplayRequest{PipelineID: "p1", Date: "2026-01-02", Status: types.RequestPending})
		}},
		{"fenced put late arrival", 1, func() error {
			return fenced(2).PutLateArrival(ctx, types.LateArrival{PipelineID: "p1", Date: "2026-01-02"})
		}},
		{"fenced put late arrival refused", 1, func() error {
			return wantFencedErr(fenced(1).PutLateArrival(ctx, types.LateArrival{PipelineID: "p1", Date: "2026-01-02"}))
		}},
		// p's hint of the marker log's counter is stale after the other instance's
		// marker: one lost race, as for "write marker other instance".
		{"fenced write marker new", 2, func() error { return fenced(2).WriteCascadeMarker(ctx, "p1", "", "2026-01-02", "up") }},
		{"fenced write marker again", 1, func() error {
			e.clock.Advance(time.Second)
			return fenced(2).WriteCascadeMarker(ctx, "p1", "", "2026-01-02", "up")
		}},
		{"delete pipeline", 1, func() error { return p.DeletePipeline(ctx, "p1") }},
		{"ping", 1, func() error { return p.Ping(ctx) }},
		{"start", 0, func() error { return p.Start(ctx) }},
		{"bad input", 0, func() error {
			if _, err := p.ListRuns(ctx, "p#1", 10); !errors.Is(err, provider.ErrInvalidArgument) {
				return fmt.Errorf("bad pipeline ID: err %v", err)
			}
			return nil
		}},
		{"stop", 0, func() error { return p.Stop(ctx) }},
		{"after stop", 0, func() error {
			if _, err := p.GetRunState(ctx, "r1"); !errors.Is(err, provider.ErrClosed) {
				return fmt.Errorf("after Stop: err %v", err)
			}
			return nil
		}},
	}
	checkBudget(t, steps, capacityBudget, n, &units)
}

// budgetStep is a step of a round-trip budget test: a call and the requests it
// may make.
type budgetStep struct {
	name string
	want int64
	call func() error
}

// checkBudget runs steps in order and fails each one that makes other than its
// requests (counted by n) or consumes more than its capacity units in budgets
// (counted by units).
func checkBudget(t *testing.T, steps []budgetStep, budgets map[string]float64, n *testenv.Counter, units *testenv.Capacity) {
	t.Helper()
	for _, s := range steps {
		n.Reset()
		units.Reset()
		if err := s.call(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := n.Load(); got != s.want {
			t.Errorf("%s: %d requests, budget %d", s.name, got, s.want)
		}
		budget, ok := budgets[s.name]
		t.Logf("%-34s %d requests, %v capacity units", s.name, n.Load(), units.Load())
		switch got := units.Load(); {
		case !ok:
			t.Errorf("%s: no capacity budget (it consumed %v units)", s.name, got)
		case got > budget:
			t.Errorf("%s: %v capacity units, budget %v", s.name, got, budget)
		}
	}
}

// capacityBudget is the capacity units each step of TestRoundTripBudget
// consumes, as testenv.Capacity counts them on DynamoDB Local (AWS's figures
// for items up to 1 KB, but for a transaction that writes an index copy, which
// Local reports at 12 where AWS charges 2 per action and 1 per index write: a
// PutRerun is 5 on AWS): a step that consumes more fails the test.
var capacityBudget = map[string]float64{
	"register pipeline":                 2,
	"get pipeline":                      1,
	"list pipelines":                    0.5,
	"put trait":                         1,
	"get trait":                         1,
	"get traits":                        1,
	"put readiness":                     1,
	"get readiness":                     1,
	"put run new":                       12, // the run enters ACTIVE: AWS charges 5 (see the package doc)
	"put run again":                     4,
	"put run moved":                     6,
	"put run moved other instance":      10,
	"get run":                           1,
	"list runs":                         1,
	"create run":                        12,
	"create run existing":               4,
	"cas":                               4,
	"cas lost":                          4,
	"cas zero created":                  5,
	"cas other created":                 8,
	"list active runs":                  10,
	"cas finished":                      12,
	"cas finished again":                4,
	"append first":                      4,
	"append next":                       4,
	"append other instance":             5, // a read of the counter, then the transaction
	"list events":                       1,
	"read events since":                 1,
	"put run log":                       1,
	"get run log":                       1,
	"list run logs":                     1,
	"put rerun new":                     12,
	"put rerun again":                   4,
	"put rerun moved":                   16,
	"get rerun":                         1,
	"list reruns":                       1,
	"list all reruns":                   0.5,
	"put replay":                        2,
	"get replay":                        1,
	"list replays":                      0.5,
	"put late arrival":                  4, // with the list's guard item (see the fenced writes)
	"list late arrivals":                1,
	"write marker new":                  8,
	"write marker again":                10,
	"write marker again other instance": 18,
	"write marker next":                 8,
	"write marker other instance":       16,
	"follow events, first page":         1,
	"watch markers, first page":         1,
	"list markers":                      1,
	"acquire lock":                      1,
	"release lock":                      1,
	"acquire lease":                     1,
	"inspect lease":                     1,
	"renew lease":                       1,
	"release lease":                     1,
	"inspect free":                      1,
	// Fenced writes: what their unfenced counterparts consume (the fence
	// attribute adds len(lease key)+4 bytes or so to the item, which changes
	// the units only when it crosses a 1 KB boundary). PutLateArrival, fenced
	// or not, is a transaction of the list's guard item and the record (2 items
	// at 2 units each): the guard lives as long as the list.
	// A refused write consumes nothing on Local, as a failed condition does.
	"fenced put run new":              12,
	"fenced put run again":            4,
	"fenced put run moved":            6,
	"fenced put run refused":          4,
	"unfenced put run after fenced":   4,
	"fenced create run":               12,
	"fenced create run existing":      4,
	"fenced create run refused":       4,
	"fenced cas":                      4,
	"fenced cas lost":                 4,
	"fenced cas refused":              4,
	"fenced cas zero created":         5,
	"fenced cas zero created refused": 1,
	"fenced append first":             4,
	"fenced append next":              4,
	"fenced append refused":           4,
	"fenced put run log":              1,
	"fenced put run log refused":      1,
	"fenced put rerun new":            12,
	"fenced put rerun again":          4,
	"fenced put replay":               2,
	"fenced put late arrival":         4,
	"fenced put late arrival refused": 4,
	"fenced write marker new":         16,
	"fenced write marker again":       10,
	"delete pipeline":                 2,
	"ping":                            0,
	"start":                           0,
	"bad input":                       0,
	"stop":                            0,
	"after stop":                      0,
}

// first takes the first record of a follower or watcher, which reads one page,
// and stops it.
func first[R any](seq iter.Seq2[R, error]) error {
	for _, err := range seq {
		return err
	}
	return errors.New("the sequence ended without a record")
}

// wantFencedErr turns a refusal (ErrFenced) into nil and anything else into an
// error.
func wantFencedErr(err error) error {
	if !errors.Is(err, provider.ErrFenced) {
		return fmt.Errorf("err %v, want ErrFenced", err)
	}
	return nil
}

func createdOK(created bool, err error) error {
	if err == nil && !created {
		return errors.New("not created, want created")
	}
	return err
}

func casOK(ok bool, err error) error {
	if err == nil && !ok {
		return errors.New("cas lost, want won")
	}
	return err
}

func casLost(ok bool, err error) error {
	if err == nil && ok {
		return errors.New("cas won, want lost")
	}
	return err
}

// TestFirstAppendReadsCounterOnly: an instance that does not know a pipeline's
// counter reads the counter alone before its first append, so the read costs
// 1 unit however large the events are. Before, the Query read the counter and
// the newest event in full (about 75 units after a 300 KB event).
func TestFirstAppendReadsCounterOnly(t *testing.T) {
	var units testenv.Capacity
	e := testEnv(t, units.Option())
	p := openOn(t, e.client, e)
	ctx := context.Background()
	big := make([]byte, 150_000) // as 300 KB of random hex: compresses to no less than 150 KB
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	if err := p.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p", Message: hex.EncodeToString(big)}); err != nil {
		t.Fatal(err)
	}
	other := openOn(t, e.client, e)
	units.Reset()
	if err := other.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p"}); err != nil {
		t.Fatal(err)
	}
	if got, budget := units.Load(), capacityBudget["append other instance"]; got > budget {
		t.Errorf("first append of another instance after a 300 KB event: %v capacity units, budget %v", got, budget)
	}
	if got, err := other.ReadEventsSince(ctx, "p", "1", 10); err != nil || len(got) != 1 || got[0].StreamID != "2" {
		t.Fatalf("ReadEventsSince(1) = %v, %v; want the event numbered 2", got, err)
	}
}
