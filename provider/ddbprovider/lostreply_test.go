package ddbprovider_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/internal/testkit/faults"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/types"
)

// A write fault: drop the response of the matched request after DynamoDB applied it
// (the SDK retries), or reject it n times without reaching DynamoDB.
type writeFault struct {
	op     string   // DynamoDB operation of the request to hit
	parts  []string // strings its JSON body must contain
	reject string   // "" drops the reply; else the error type to reject with
	n      int      // rejections (with reject)
}

func drop(op string, parts ...string) writeFault { return writeFault{op: op, parts: parts} }

func rejected(n int, errType, op string, parts ...string) writeFault {
	return writeFault{op: op, parts: parts, reject: errType, n: n}
}

// TestLostReply runs every write method of Provider with a fault on its write
// request and checks the documented outcome: a write whose response was lost and
// which the SDK retried still reports its own result (a CAS true and the version
// +1 exactly, an acquire held, a release nil and the key free, an event appended
// once, an upsert stored once); a write rejected with a throttle or a transaction
// conflict is retried and succeeds, or fails with the SDK's error and writes
// nothing. Every exported write method needs a row: a new one fails the test.
func TestLostReply(t *testing.T) {
	ft := faults.NewTransport()
	e := faultEnv(t, ft, 3)
	p := openOn(t, e.client, e)
	other := openOn(t, e.client, e)
	ctx := context.Background()
	now := e.clock.Now()

	// ids returns a row's ID, from which its pipeline, run, key... IDs derive.
	ids := func(t *testing.T) string { return strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()) }
	run := func(id string, created time.Time) types.RunState {
		return types.RunState{RunID: "r-" + id, PipelineID: "p-" + id, Status: types.RunPending, CreatedAt: created}
	}
	must := func(t *testing.T, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// wantRun checks that pipeline id lists exactly one run, equal to its truth,
	// at version v.
	wantRun := func(t *testing.T, id string, v int) {
		t.Helper()
		truth, err := p.GetRunState(ctx, "r-"+id)
		must(t, err)
		list, err := p.ListRuns(ctx, "p-"+id, 10)
		must(t, err)
		if truth == nil || truth.Version != v || len(list) != 1 || !reflect.DeepEqual(*truth, list[0]) {
			t.Fatalf("run %+v listed as %+v; want version %d listed once", truth, list, v)
		}
		wantActiveAsTruth(t, p, "p-"+id, truth)
		wantIndexKey(t, e, "r-"+id, !truth.Status.Terminal())
	}
	wantNoRun := func(t *testing.T, id string) {
		t.Helper()
		truth, err := p.GetRunState(ctx, "r-"+id)
		must(t, err)
		list, err := p.ListRuns(ctx, "p-"+id, 10)
		must(t, err)
		if truth != nil || len(list) != 0 {
			t.Fatalf("run %+v listed as %+v; want nothing written", truth, list)
		}
		wantActiveAsTruth(t, p, "p-"+id, nil)
	}
	wantEvents := func(t *testing.T, id string, msgs ...string) {
		t.Helper()
		recs, err := p.ReadEventsSince(ctx, "p-"+id, "", 100)
		must(t, err)
		var got []string
		for i, r := range recs {
			if r.StreamID != strconv.Itoa(i+1) {
				t.Fatalf("event %d numbered %s", i+1, r.StreamID)
			}
			got = append(got, r.Event.Message)
		}
		if !slices.Equal(got, msgs) {
			t.Fatalf("events %q, want %q", got, msgs)
		}
	}
	appendMsg := func(pp provider.Provider, id, msg string) error {
		return pp.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p-" + id, Message: msg})
	}
	wantLock := func(t *testing.T, id string, heldByP bool) {
		t.Helper()
		ok, err := other.AcquireLock(ctx, "k-"+id, time.Minute)
		must(t, err)
		if ok == heldByP {
			t.Fatalf("another instance acquired %v; want the lock held by p: %v", ok, heldByP)
		}
		if ok {
			must(t, other.ReleaseLock(ctx, "k-"+id))
		}
	}
	leases := map[string]*types.Lease{}
	// forever keeps late arrivals forever: the guard items of the lists it
	// writes to never expire, so they outlive every record p writes.
	noLateExpiry := provider.DefaultRetention()
	noLateExpiry.LateArrivals = 0
	forever := openOn(t, e.client, e, ddbprovider.WithRetention(noLateExpiry))
	lateArrival := func(pp provider.Provider, id string, n int64) error {
		return pp.PutLateArrival(ctx, types.LateArrival{PipelineID: "p-" + id, Date: "2026-01-01", TraitType: "t", RecordDelta: n})
	}
	// wantLate checks that pipeline id's list holds exactly the records n.
	wantLate := func(t *testing.T, id string, n ...int64) {
		t.Helper()
		las, err := p.ListLateArrivals(ctx, "p-"+id, "2026-01-01", "")
		must(t, err)
		var got []int64
		for _, la := range las {
			got = append(got, la.RecordDelta)
		}
		if !slices.Equal(got, n) {
			t.Fatalf("late arrivals %v, want %v", got, n)
		}
	}

	// reindexed is ReindexRun's outcome as an error: it must report its change.
	reindexed := func(changed bool, err error) error {
		if err == nil && !changed {
			err = errors.New("ReindexRun reported no change")
		}
		return err
	}
	type row struct {
		method string // the Provider method the row covers
		name   string
		fault  writeFault
		setup  func(t *testing.T, id string)
		call   func(t *testing.T, id string) error
		check  func(t *testing.T, id string)
	}
	// markerRewrite is the row of p rewriting a marker that first wrote: the
	// rewrite moves the by-time copy (the transaction's Delete), whose reply is
	// lost.
	markerRewrite := func(name string, first *ddbprovider.Provider) row {
		return row{method: "WriteCascadeMarker", name: name, fault: drop("TransactWriteItems", `"Delete"`),
			setup: func(t *testing.T, id string) { must(t, first.WriteCascadeMarker(ctx, "p-"+id, "", "2026-01-01", "a")) },
			call: func(t *testing.T, id string) error {
				e.clock.Advance(time.Millisecond)
				return p.WriteCascadeMarker(ctx, "p-"+id, "", "2026-01-01", "b")
			},
			check: func(t *testing.T, id string) {
				if got, err := p.ListCascadeMarkers(ctx, "p-"+id, 10); err != nil || len(got) != 1 || got[0].Source != "b" {
					t.Fatalf("markers %+v, %v", got, err)
				}
				wantLogged(t, p, "p-"+id, "a", "b")
			}}
	}
	rows := []row{
		{method: "RegisterPipeline", fault: drop("PutItem"),
			call: func(t *testing.T, id string) error {
				return p.RegisterPipeline(ctx, types.PipelineConfig{ID: "p-" + id})
			},
			check: func(t *testing.T, id string) {
				got, err := p.GetPipeline(ctx, "p-"+id)
				if err != nil || got == nil {
					t.Fatalf("pipeline %+v, %v", got, err)
				}
			}},
		{method: "DeletePipeline", fault: drop("DeleteItem"),
			setup: func(t *testing.T, id string) { must(t, p.RegisterPipeline(ctx, types.PipelineConfig{ID: "p-" + id})) },
			call:  func(t *testing.T, id string) error { return p.DeletePipeline(ctx, "p-"+id) },
			check: func(t *testing.T, id string) {
				if got, err := p.GetPipeline(ctx, "p-"+id); err != nil || got != nil {
					t.Fatalf("pipeline %+v, %v; want deleted", got, err)
				}
			}},
		{method: "PutTrait", fault: drop("PutItem"),
			call: func(t *testing.T, id string) error {
				return p.PutTrait(ctx, "p-"+id, types.TraitEvaluation{TraitType: "t", Status: types.TraitPass}, time.Minute)
			},
			check: func(t *testing.T, id string) {
				got, err := p.GetTraits(ctx, "p-"+id)
				if err != nil || len(got) != 1 {
					t.Fatalf("traits %+v, %v", got, err)
				}
			}},
		{method: "PutReadiness", fault: drop("PutItem"),
			call: func(t *testing.T, id string) error {
				return p.PutReadiness(ctx, types.ReadinessResult{PipelineID: "p-" + id, Status: types.Ready})
			},
			check: func(t *testing.T, id string) {
				if got, err := p.GetReadiness(ctx, "p-"+id); err != nil || got == nil {
					t.Fatalf("readiness %+v, %v", got, err)
				}
			}},
		{method: "PutRunState", name: "new", fault: drop("TransactWriteItems"),
			call:  func(t *testing.T, id string) error { return p.PutRunState(ctx, run(id, now)) },
			check: func(t *testing.T, id string) { wantRun(t, id, 0) }},
		// p wrote the run, so its first attempt moves the copy (see putPair's
		// hints); written by another instance, a refused attempt comes first and
		// the reply of the second, which moves it, is lost.
		{method: "PutRunState", name: "moved", fault: drop("TransactWriteItems", `"Delete"`),
			setup: func(t *testing.T, id string) { must(t, p.PutRunState(ctx, run(id, now))) },
			call:  func(t *testing.T, id string) error { return p.PutRunState(ctx, run(id, now.Add(time.Second))) },
			check: func(t *testing.T, id string) { wantRun(t, id, 0) }},
		{method: "PutRunState", name: "moved from another writer", fault: drop("TransactWriteItems", `"Delete"`),
			setup: func(t *testing.T, id string) { must(t, other.PutRunState(ctx, run(id, now))) },
			call:  func(t *testing.T, id string) error { return p.PutRunState(ctx, run(id, now.Add(time.Second))) },
			check: func(t *testing.T, id string) { wantRun(t, id, 0) }},
		{method: "PutRunState", name: "conflict", fault: rejected(2, faults.TransactionConflict, "TransactWriteItems"),
			call:  func(t *testing.T, id string) error { return p.PutRunState(ctx, run(id, now)) },
			check: func(t *testing.T, id string) { wantRun(t, id, 0) }},
		{method: "PutRunState", name: "throttled out", fault: rejected(3, faults.Throttled, "TransactWriteItems"),
			call: func(t *testing.T, id string) error {
				err := p.PutRunState(ctx, run(id, now))
				if err == nil || errors.Is(err, provider.ErrInvalidArgument) || !strings.Contains(err.Error(), faults.Throttled) {
					t.Errorf("err %v, want the throttling error", err)
				}
				return nil
			},
			check: func(t *testing.T, id string) { wantNoRun(t, id) }},
		{method: "CreateRunState", fault: drop("TransactWriteItems"),
			call: func(t *testing.T, id string) error {
				if created, err := p.CreateRunState(ctx, run(id, now)); !created || err != nil {
					t.Errorf("CreateRunState = %v, %v; want created", created, err)
				}
				return nil
			},
			check: func(t *testing.T, id string) {
				wantRun(t, id, 0)
				if created, err := other.CreateRunState(ctx, run(id, now)); created || err != nil {
					t.Fatalf("another instance's CreateRunState = %v, %v; want not created", created, err)
				}
			}},
		{method: "CreateRunState", name: "conflict", fault: rejected(2, faults.TransactionConflict, "TransactWriteItems"),
			call: func(t *testing.T, id string) error {
				if created, err := p.CreateRunState(ctx, run(id, now)); !created || err != nil {
					t.Errorf("CreateRunState = %v, %v; want created", created, err)
				}
				return nil
			},
			check: func(t *testing.T, id string) { wantRun(t, id, 0) }},
		{method: "CompareAndSwapRunState", fault: drop("TransactWriteItems"),
			setup: func(t *testing.T, id string) { must(t, p.PutRunState(ctx, run(id, now))) },
			call: func(t *testing.T, id string) error {
				return casOK(p.CompareAndSwapRunState(ctx, "r-"+id, 0, run(id, now)))
			},
			check: func(t *testing.T, id string) { wantRun(t, id, 1) }},
		// The swap that finishes the run removes it from the index ACTIVE.
		{method: "CompareAndSwapRunState", name: "finishes", fault: drop("TransactWriteItems"),
			setup: func(t *testing.T, id string) { must(t, p.PutRunState(ctx, run(id, now))) },
			call: func(t *testing.T, id string) error {
				r := run(id, now)
				r.Status = types.RunFailed
				return casOK(p.CompareAndSwapRunState(ctx, "r-"+id, 0, r))
			},
			check: func(t *testing.T, id string) { wantRun(t, id, 1) }},
		{method: "PutRunState", name: "finishes", fault: drop("TransactWriteItems"),
			setup: func(t *testing.T, id string) { must(t, p.PutRunState(ctx, run(id, now))) },
			call: func(t *testing.T, id string) error {
				r := run(id, now)
				r.Status = types.RunCompleted
				return p.PutRunState(ctx, r)
			},
			check: func(t *testing.T, id string) { wantRun(t, id, 0) }},
		{method: "CompareAndSwapRunState", name: "zero created", fault: drop("TransactWriteItems"),
			setup: func(t *testing.T, id string) { must(t, p.PutRunState(ctx, run(id, now))) },
			call: func(t *testing.T, id string) error {
				return casOK(p.CompareAndSwapRunState(ctx, "r-"+id, 0, run(id, time.Time{})))
			},
			check: func(t *testing.T, id string) { wantRun(t, id, 1) }},
		{method: "CompareAndSwapRunState", name: "conflict", fault: rejected(3, faults.TransactionConflict, "TransactWriteItems"),
			setup: func(t *testing.T, id string) { must(t, p.PutRunState(ctx, run(id, now))) },
			call: func(t *testing.T, id string) error {
				return casOK(p.CompareAndSwapRunState(ctx, "r-"+id, 0, run(id, now)))
			},
			check: func(t *testing.T, id string) { wantRun(t, id, 1) }},
		{method: "CompareAndSwapRunState", name: "throttled", fault: rejected(1, faults.Throttled, "TransactWriteItems"),
			setup: func(t *testing.T, id string) { must(t, p.PutRunState(ctx, run(id, now))) },
			call: func(t *testing.T, id string) error {
				return casOK(p.CompareAndSwapRunState(ctx, "r-"+id, 0, run(id, now)))
			},
			check: func(t *testing.T, id string) { wantRun(t, id, 1) }},
		// ReindexRun: its one conditional UpdateItem restores a lost index key
		// (or removes a finished run's) once, and writes nothing of the run.
		{method: "ReindexRun", name: "restores", fault: drop("UpdateItem"),
			setup: func(t *testing.T, id string) {
				must(t, p.PutRunState(ctx, run(id, now)))
				dropActiveEntry(t, e, "r-"+id)
			},
			call:  func(t *testing.T, id string) error { return reindexed(p.ReindexRun(ctx, "r-"+id)) },
			check: func(t *testing.T, id string) { wantRun(t, id, 0) }},
		{method: "ReindexRun", name: "throttled", fault: rejected(1, faults.Throttled, "UpdateItem"),
			setup: func(t *testing.T, id string) {
				must(t, p.PutRunState(ctx, run(id, now)))
				dropActiveEntry(t, e, "r-"+id)
			},
			call:  func(t *testing.T, id string) error { return reindexed(p.ReindexRun(ctx, "r-"+id)) },
			check: func(t *testing.T, id string) { wantRun(t, id, 0) }},
		{method: "ReindexRun", name: "removes", fault: drop("UpdateItem"),
			setup: func(t *testing.T, id string) {
				r := run(id, now)
				r.Status = types.RunFailed
				must(t, p.PutRunState(ctx, r))
				must(t, setAttr(ctx, e, "RUN#r-"+id, "STATE", "activePK", sAV(ddbprovider.ActiveShard("r-"+id))))
				must(t, setAttr(ctx, e, "RUN#r-"+id, "STATE", "activeSK", sAV("r-"+id)))
			},
			call:  func(t *testing.T, id string) error { return reindexed(p.ReindexRun(ctx, "r-"+id)) },
			check: func(t *testing.T, id string) { wantRun(t, id, 0) }},
		{method: "AppendEvent", fault: drop("TransactWriteItems"),
			call: func(t *testing.T, id string) error {
				return p.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p-" + id, Message: "a"})
			},
			check: func(t *testing.T, id string) {
				must(t, p.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p-" + id, Message: "b"}))
				wantEvents(t, id, "a", "b")
			}},
		{method: "AppendEvent", name: "other instance", fault: drop("TransactWriteItems"),
			setup: func(t *testing.T, id string) {
				must(t, other.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p-" + id, Message: "a"}))
			},
			call: func(t *testing.T, id string) error {
				return p.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p-" + id, Message: "b"})
			},
			check: func(t *testing.T, id string) { wantEvents(t, id, "a", "b") }},
		// A counter behind the newest event (a log an unreleased build appended
		// to without it): an instance that does not know the counter reads it
		// and the newest event and commits after the newest (the reply lost).
		{method: "AppendEvent", name: "counter behind", fault: drop("TransactWriteItems", "EVENT#00000000000000000003"),
			setup: func(t *testing.T, id string) {
				must(t, appendMsg(other, id, "a"))
				must(t, appendMsg(other, id, "b"))
				must(t, setAttr(ctx, e, "PIPELINE#p-"+id, "EVENTSEQ", "seq", nAV(1)))
			},
			call:  func(t *testing.T, id string) error { return appendMsg(p, id, "c") },
			check: func(t *testing.T, id string) { wantEvents(t, id, "a", "b", "c") }},
		{method: "AppendEvent", name: "conflict", fault: rejected(2, faults.TransactionConflict, "TransactWriteItems"),
			call: func(t *testing.T, id string) error {
				return p.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p-" + id, Message: "a"})
			},
			check: func(t *testing.T, id string) { wantEvents(t, id, "a") }},
		{method: "PutRunLog", fault: drop("UpdateItem"),
			call: func(t *testing.T, id string) error {
				return p.PutRunLog(ctx, types.RunLogEntry{PipelineID: "p-" + id, Date: "2026-01-01", Status: types.RunRunning})
			},
			check: func(t *testing.T, id string) {
				if got, err := p.ListRunLogs(ctx, "p-"+id, 10); err != nil || len(got) != 1 {
					t.Fatalf("run logs %+v, %v", got, err)
				}
			}},
		{method: "PutRerun", fault: drop("TransactWriteItems"),
			call: func(t *testing.T, id string) error {
				return p.PutRerun(ctx, types.RerunRecord{RerunID: "x-" + id, PipelineID: "p-" + id, OriginalDate: "2026-01-01",
					Status: types.RequestPending, RequestedAt: now})
			},
			check: func(t *testing.T, id string) {
				if got, err := p.ListReruns(ctx, "p-"+id, 10); err != nil || len(got) != 1 {
					t.Fatalf("reruns %+v, %v", got, err)
				}
			}},
		markerRewrite("", p), markerRewrite("written by another", other),
		{method: "WriteCascadeMarker", name: "new", fault: drop("TransactWriteItems"),
			call: func(t *testing.T, id string) error { return p.WriteCascadeMarker(ctx, "p-"+id, "", "2026-01-01", "a") },
			check: func(t *testing.T, id string) {
				if got, err := p.ListCascadeMarkers(ctx, "p-"+id, 10); err != nil || len(got) != 1 || got[0].Source != "a" {
					t.Fatalf("markers %+v, %v", got, err)
				}
				wantLogged(t, p, "p-"+id, "a")
			}},
		{method: "WriteCascadeMarker", name: "conflict", fault: rejected(2, faults.TransactionConflict, "TransactWriteItems"),
			call:  func(t *testing.T, id string) error { return p.WriteCascadeMarker(ctx, "p-"+id, "", "2026-01-01", "a") },
			check: func(t *testing.T, id string) { wantLogged(t, p, "p-"+id, "a") }},
		{method: "PutLateArrival", fault: drop("TransactWriteItems"), // with the list's guard item
			call: func(t *testing.T, id string) error {
				return p.PutLateArrival(ctx, types.LateArrival{PipelineID: "p-" + id, Date: "2026-01-01", TraitType: "t"})
			},
			check: func(t *testing.T, id string) {
				if got, err := p.ListLateArrivals(ctx, "p-"+id, "2026-01-01", ""); err != nil || len(got) != 1 {
					t.Fatalf("late arrivals %+v, %v; want one", got, err)
				}
			}},
		// The list's guard outlives the record (an instance that keeps late
		// arrivals forever wrote to the list first): the transaction is
		// refused and a second request writes the record, whose reply is lost.
		{method: "PutLateArrival", name: "guard outlives record", fault: drop("PutItem"),
			setup: func(t *testing.T, id string) { must(t, lateArrival(forever, id, 1)) },
			call:  func(t *testing.T, id string) error { return lateArrival(p, id, 2) },
			check: func(t *testing.T, id string) { wantLate(t, id, 1, 2) }},
		{method: "PutLateArrival", name: "fenced guard outlives record", fault: drop("TransactWriteItems", `"UpdateExpression":"SET #f = :fence"`),
			setup: func(t *testing.T, id string) { must(t, lateArrival(fencedBy(t, forever, id, 5), id, 1)) },
			call:  func(t *testing.T, id string) error { return lateArrival(fencedBy(t, p, id, 5), id, 2) },
			check: func(t *testing.T, id string) {
				wantLate(t, id, 1, 2)
				if err := lateArrival(fencedBy(t, p, id, 4), id, 3); !errors.Is(err, provider.ErrFenced) {
					t.Fatalf("a write fenced 4 after the lost reply: err %v, want ErrFenced", err)
				}
				wantLate(t, id, 1, 2)
			}},
		{method: "PutReplay", fault: drop("UpdateItem"),
			call: func(t *testing.T, id string) error {
				return p.PutReplay(ctx, types.ReplayRequest{PipelineID: "p-" + id, Date: "2026-01-01", Status: types.RequestPending})
			},
			check: func(t *testing.T, id string) {
				if got, err := p.GetReplay(ctx, "p-"+id, "2026-01-01", ""); err != nil || got == nil {
					t.Fatalf("replay %+v, %v", got, err)
				}
			}},
		{method: "AcquireLock", fault: drop("UpdateItem"),
			call: func(t *testing.T, id string) error {
				if ok, err := p.AcquireLock(ctx, "k-"+id, time.Minute); !ok || err != nil {
					t.Errorf("AcquireLock = %v, %v; want true", ok, err)
				}
				return nil
			},
			check: func(t *testing.T, id string) { wantLock(t, id, true) }},
		{method: "AcquireLock", name: "throttled", fault: rejected(1, faults.Throttled, "UpdateItem"),
			call: func(t *testing.T, id string) error {
				if ok, err := p.AcquireLock(ctx, "k-"+id, time.Minute); !ok || err != nil {
					t.Errorf("AcquireLock = %v, %v; want true", ok, err)
				}
				return nil
			},
			check: func(t *testing.T, id string) { wantLock(t, id, true) }},
		{method: "ReleaseLock", fault: drop("UpdateItem"),
			setup: func(t *testing.T, id string) {
				if ok, err := p.AcquireLock(ctx, "k-"+id, time.Minute); !ok || err != nil {
					t.Fatalf("AcquireLock = %v, %v", ok, err)
				}
			},
			call:  func(t *testing.T, id string) error { return p.ReleaseLock(ctx, "k-"+id) },
			check: func(t *testing.T, id string) { wantLock(t, id, false) }},
		{method: "AcquireLease", fault: drop("UpdateItem"),
			setup: func(t *testing.T, id string) {
				l, err := other.AcquireLease(ctx, "k-"+id, time.Minute)
				must(t, err)
				must(t, other.ReleaseLease(ctx, *l))
				leases[id] = l
			},
			call: func(t *testing.T, id string) error {
				l, err := p.AcquireLease(ctx, "k-"+id, time.Minute)
				if err == nil && l.Fence != leases[id].Fence+1 {
					t.Errorf("fence %d after %d, want +1 exactly", l.Fence, leases[id].Fence)
				}
				return err
			},
			check: func(t *testing.T, id string) {
				if _, err := other.AcquireLease(ctx, "k-"+id, time.Minute); !errors.Is(err, provider.ErrLockHeld) {
					t.Fatalf("another instance: err %v, want ErrLockHeld", err)
				}
			}},
		{method: "RenewLease", fault: drop("UpdateItem"),
			setup: func(t *testing.T, id string) {
				l, err := p.AcquireLease(ctx, "k-"+id, time.Minute)
				must(t, err)
				leases[id] = l
			},
			call: func(t *testing.T, id string) error {
				_, err := p.RenewLease(ctx, *leases[id], time.Hour)
				return err
			},
			check: func(t *testing.T, id string) {
				e.clock.Advance(2 * time.Minute) // past the first ttl, within the renewed one
				if _, err := other.AcquireLease(ctx, "k-"+id, time.Minute); !errors.Is(err, provider.ErrLockHeld) {
					t.Fatalf("another instance: err %v, want ErrLockHeld", err)
				}
			}},
		{method: "ReleaseLease", fault: drop("UpdateItem"),
			setup: func(t *testing.T, id string) {
				l, err := p.AcquireLease(ctx, "k-"+id, time.Minute)
				must(t, err)
				leases[id] = l
			},
			call: func(t *testing.T, id string) error { return p.ReleaseLease(ctx, *leases[id]) },
			check: func(t *testing.T, id string) {
				l, err := other.AcquireLease(ctx, "k-"+id, time.Minute)
				if err != nil || l.Fence != leases[id].Fence+1 {
					t.Fatalf("another instance: %+v, %v; want the key free, fence +1", l, err)
				}
			}},
	}

	// Fenced writes: two rows each. "fenced": a write fenced 5 whose reply is
	// lost writes once and reports success, and remembers its fence (a write
	// fenced 4 is then refused). "fenced refused": a write fenced 4 after one
	// fenced 5, whose refusal is lost, is refused again on the SDK's retry, and
	// writes nothing.
	for _, w := range fencedLostWrites(ctx, p, now) {
		fault := drop(w.op, `"#f"`) // the fenced request itself
		rows = append(rows,
			row{method: w.method, name: "fenced", fault: fault,
				setup: func(t *testing.T, id string) {
					if w.pre != nil {
						must(t, w.pre(id))
					}
				},
				call: func(t *testing.T, id string) error { return w.write(fencedBy(t, p, id, 5), id, 1) },
				check: func(t *testing.T, id string) {
					w.wantOne(t, id)
					if err := w.write(fencedBy(t, p, id, 4), id, 2); !errors.Is(err, provider.ErrFenced) {
						t.Fatalf("a write fenced 4 after the lost reply: err %v, want ErrFenced", err)
					}
					w.wantOne(t, id)
				}},
			row{method: w.method, name: "fenced refused", fault: fault,
				setup: func(t *testing.T, id string) {
					if w.pre != nil {
						must(t, w.pre(id))
					}
					must(t, w.write(fencedBy(t, other, id, 5), id, 1))
				},
				call: func(t *testing.T, id string) error {
					if err := w.write(fencedBy(t, p, id, 4), id, 2); !errors.Is(err, provider.ErrFenced) {
						t.Errorf("err %v, want ErrFenced", err)
					}
					return nil
				},
				check: func(t *testing.T, id string) { w.wantOne(t, id) }})
	}

	covered := map[string]bool{}
	for _, r := range rows {
		covered[r.method] = true
	}
	typ := reflect.TypeFor[*ddbprovider.Provider]()
	for i := range typ.NumMethod() {
		m := typ.Method(i).Name
		switch {
		case strings.HasPrefix(m, "Get"), strings.HasPrefix(m, "List"), strings.HasPrefix(m, "Read"),
			m == "FollowEvents", m == "WatchCascadeMarkers",
			m == "Ping", m == "Start", m == "Stop", m == "Owner", m == "Table": // reads and accessors
		case !covered[m]:
			t.Errorf("write method %s has no row in the lost-reply table", m)
		}
	}

	for _, r := range rows {
		name := r.name
		if name == "" {
			name = "lost reply"
		}
		t.Run(r.method+"/"+name, func(t *testing.T) {
			id := ids(t)
			if r.setup != nil {
				r.setup(t, id)
			}
			dropped, rejectedN := ft.Dropped(), ft.Rejected()
			match := faults.Op(r.fault.op, r.fault.parts...)
			if r.fault.reject == "" {
				ft.DropReply(match)
			} else {
				ft.Reject(r.fault.n, match, r.fault.reject)
			}
			err := r.call(t, id)
			ft.DropReply(nil)
			if err != nil {
				t.Fatalf("%s: %v", r.method, err)
			}
			if r.fault.reject == "" && ft.Dropped() != dropped+1 {
				t.Fatalf("%d replies dropped, want 1: the fault did not fire", ft.Dropped()-dropped)
			}
			if r.fault.reject != "" && ft.Rejected() != rejectedN+r.fault.n {
				t.Fatalf("%d requests rejected, want %d", ft.Rejected()-rejectedN, r.fault.n)
			}
			r.check(t, id)
		})
	}
}

// fencedBy returns p fenced by a made-up lease of the row's key with fence f.
func fencedBy(t *testing.T, p provider.Provider, id string, f int64) provider.Provider {
	t.Helper()
	fp, err := provider.Fenced(p, types.Lease{Key: "lease-" + id, Token: "t", Fence: f})
	if err != nil {
		t.Fatal(err)
	}
	return fp
}

// fencedLostWrite is a fenced write of the lost-reply table: write makes the
// i-th write of the row's record through pp; wantOne checks that the record
// holds write 1 only, written once; pre (if set) makes what the write needs.
type fencedLostWrite struct {
	method, op string
	pre        func(id string) error
	write      func(pp provider.Provider, id string, i int) error
	wantOne    func(t *testing.T, id string)
}

func fencedLostWrites(ctx context.Context, p *ddbprovider.Provider, now time.Time) []fencedLostWrite {
	run := func(id string, i int) types.RunState {
		return types.RunState{RunID: "r-" + id, PipelineID: "p-" + id, Status: types.RunPending, CreatedAt: now,
			Metadata: map[string]any{"i": i}}
	}
	// wantRun: the run is write 1 at version v, listed once.
	wantRun := func(v int) func(t *testing.T, id string) {
		return func(t *testing.T, id string) {
			t.Helper()
			truth, err := p.GetRunState(ctx, "r-"+id)
			if err != nil || truth == nil {
				t.Fatalf("run %+v, %v", truth, err)
			}
			list, err := p.ListRuns(ctx, "p-"+id, 10)
			if err != nil || truth.Version != v || truth.Metadata["i"] != float64(1) || len(list) != 1 || !reflect.DeepEqual(*truth, list[0]) {
				t.Fatalf("run %+v listed as %+v (%v); want write 1 at version %d listed once", truth, list, err, v)
			}
			wantActiveAsTruth(t, p, "p-"+id, truth)
		}
	}
	// wantList: the record's list is exactly one entry, got.
	wantList := func(what string, got func(id string) ([]string, error)) func(t *testing.T, id string) {
		return func(t *testing.T, id string) {
			t.Helper()
			vs, err := got(id)
			if err != nil || !slices.Equal(vs, []string{"1"}) {
				t.Fatalf("%s %q, %v; want write 1 once", what, vs, err)
			}
		}
	}
	created := func(ok bool, err error) error {
		if err == nil && !ok {
			return errors.New("not created")
		}
		return err
	}
	swapped := func(ok bool, err error) error {
		if err == nil && !ok {
			return errors.New("not swapped")
		}
		return err
	}
	return []fencedLostWrite{
		{method: "PutRunState", op: "TransactWriteItems",
			write:   func(pp provider.Provider, id string, i int) error { return pp.PutRunState(ctx, run(id, i)) },
			wantOne: wantRun(0)},
		{method: "CreateRunState", op: "TransactWriteItems",
			write: func(pp provider.Provider, id string, i int) error {
				return created(pp.(provider.RunCreator).CreateRunState(ctx, run(id, i)))
			},
			wantOne: wantRun(0)},
		{method: "CompareAndSwapRunState", op: "TransactWriteItems",
			pre: func(id string) error { return p.PutRunState(ctx, run(id, 0)) },
			write: func(pp provider.Provider, id string, i int) error {
				return swapped(pp.CompareAndSwapRunState(ctx, "r-"+id, i-1, run(id, i)))
			},
			wantOne: wantRun(1)},
		{method: "AppendEvent", op: "TransactWriteItems",
			write: func(pp provider.Provider, id string, i int) error {
				return pp.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p-" + id, Message: strconv.Itoa(i)})
			},
			wantOne: wantList("events", func(id string) ([]string, error) {
				recs, err := p.ReadEventsSince(ctx, "p-"+id, "", 100)
				var out []string
				for _, r := range recs {
					out = append(out, r.Event.Message)
				}
				return out, err
			})},
		{method: "PutLateArrival", op: "TransactWriteItems",
			write: func(pp provider.Provider, id string, i int) error {
				return pp.PutLateArrival(ctx, types.LateArrival{PipelineID: "p-" + id, Date: "2026-01-01", TraitType: "t", RecordDelta: int64(i)})
			},
			wantOne: wantList("late arrivals", func(id string) ([]string, error) {
				las, err := p.ListLateArrivals(ctx, "p-"+id, "2026-01-01", "")
				var out []string
				for _, la := range las {
					out = append(out, strconv.FormatInt(la.RecordDelta, 10))
				}
				return out, err
			})},
		{method: "PutRunLog", op: "UpdateItem",
			write: func(pp provider.Provider, id string, i int) error {
				return pp.PutRunLog(ctx, types.RunLogEntry{PipelineID: "p-" + id, Date: "2026-01-01", Status: types.RunRunning, AttemptNumber: i})
			},
			wantOne: wantList("run log", func(id string) ([]string, error) {
				e, err := p.GetRunLog(ctx, "p-"+id, "2026-01-01", "")
				if e == nil {
					return nil, err
				}
				return []string{fmt.Sprint(e.AttemptNumber)}, err
			})},
		{method: "WriteCascadeMarker", op: "TransactWriteItems",
			write: func(pp provider.Provider, id string, i int) error {
				return pp.WriteCascadeMarker(ctx, "p-"+id, "", "2026-01-01", strconv.Itoa(i))
			},
			wantOne: wantList("markers", func(id string) ([]string, error) {
				ms, err := p.ListCascadeMarkers(ctx, "p-"+id, 10)
				var out []string
				for _, m := range ms {
					out = append(out, m.Source)
				}
				return out, err
			})},
		{method: "PutRerun", op: "TransactWriteItems",
			write: func(pp provider.Provider, id string, i int) error {
				return pp.PutRerun(ctx, types.RerunRecord{RerunID: "x-" + id, PipelineID: "p-" + id, OriginalDate: "2026-01-01",
					Status: types.RequestPending, RequestedAt: now, Reason: strconv.Itoa(i)})
			},
			wantOne: wantList("reruns", func(id string) ([]string, error) {
				rs, err := p.ListReruns(ctx, "p-"+id, 10)
				var out []string
				for _, r := range rs {
					out = append(out, r.Reason)
				}
				return out, err
			})},
		{method: "PutReplay", op: "UpdateItem",
			write: func(pp provider.Provider, id string, i int) error {
				return pp.PutReplay(ctx, types.ReplayRequest{PipelineID: "p-" + id, Date: "2026-01-01", Status: types.RequestPending, Reason: strconv.Itoa(i)})
			},
			wantOne: wantList("replay", func(id string) ([]string, error) {
				r, err := p.GetReplay(ctx, "p-"+id, "2026-01-01", "")
				if r == nil {
					return nil, err
				}
				return []string{r.Reason}, err
			})},
	}
}

// wantActiveAsTruth checks that ListActiveRuns shows of pipeline pipelineID's
// runs exactly what the truth says: truth when it is unfinished, else none.
func wantActiveAsTruth(t *testing.T, p *ddbprovider.Provider, pipelineID string, truth *types.RunState) {
	t.Helper()
	var got []types.RunState
	for cursor := ""; ; {
		runs, next, err := p.ListActiveRuns(context.Background(), provider.ActiveRunFilter{PipelinePrefix: pipelineID}, cursor, 100)
		if err != nil {
			t.Fatalf("ListActiveRuns: %v", err)
		}
		for _, r := range runs {
			if r.PipelineID == pipelineID {
				got = append(got, r)
			}
		}
		if cursor = next; cursor == "" {
			break
		}
	}
	var want []types.RunState
	if truth != nil && !truth.Status.Terminal() {
		want = append(want, *truth)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ListActiveRuns shows %+v of pipeline %s; want %+v (the truth)", got, pipelineID, want)
	}
}

// wantIndexKey checks that the stored truth item of run runID carries its key
// in the index ACTIVE (activePK, activeSK) exactly when want.
func wantIndexKey(t *testing.T, e *env, runID string, want bool) {
	t.Helper()
	out, err := e.client.GetItem(context.Background(), &ddb.GetItemInput{TableName: &e.table, ConsistentRead: aws.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{"PK": sAV("RUN#" + runID), "SK": sAV("STATE")}})
	if err != nil {
		t.Fatal(err)
	}
	_, pk := out.Item["activePK"]
	sk, ok := out.Item["activeSK"].(*ddbtypes.AttributeValueMemberS)
	if pk != want || ok != want || (ok && sk.Value != runID) {
		t.Fatalf("run %s stored with activePK %v, activeSK %v; want the index key: %v", runID, out.Item["activePK"], out.Item["activeSK"], want)
	}
}
