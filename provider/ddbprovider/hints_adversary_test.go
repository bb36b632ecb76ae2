package ddbprovider_test

// Adversarial tests of the list-copy hints of putPair (p.lists): each test
// tries to leave a truth item with no list copy, two, or a list that shows a
// record other than once and newest, or to break a cost the package doc
// promises for hinted writes.

import (
	"context"
	"errors"
	"testing"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/pipestate/pipestate/internal/testkit/faults"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/types"
)

// advWantRun checks that run id has exactly one list copy, in pipeline pid
// (none in any of others), that GetRunState finds it created at created, and
// that ListRuns shows it once.
func advWantRun(t *testing.T, e *env, p *ddbprovider.Provider, id, pid string, created time.Time, others ...string) {
	t.Helper()
	ctx := context.Background()
	if n := listCopies(t, e, "PIPELINE#"+pid, "RUN#"); len(n) != 1 {
		t.Fatalf("run %s: list copies %q in %s; want one", id, n, pid)
	}
	for _, o := range others {
		if n := listCopies(t, e, "PIPELINE#"+o, "RUN#"); len(n) != 0 {
			t.Fatalf("run %s: list copies %q in %s; want none", id, n, o)
		}
	}
	got, err := p.GetRunState(ctx, id)
	if err != nil || got == nil || got.PipelineID != pid || !got.CreatedAt.Equal(created) {
		t.Fatalf("GetRunState(%s) = %+v, %v; want pipeline %s, created %v", id, got, err, pid, created)
	}
	list, err := p.ListRuns(ctx, pid, 10)
	if err != nil || len(list) != 1 || list[0].RunID != id || !list[0].CreatedAt.Equal(created) {
		t.Fatalf("ListRuns(%s) = %+v, %v; want run %s once, created %v", pid, list, err, id, created)
	}
}

// TestHintAdversaryMarkerRewriteAfterLostClaim: an instance rewrites a marker
// it wrote last, but another instance wrote another marker since, so its
// marker-log counter hint is stale. The package doc's round trips: "1 ... for
// one this instance wrote last ... +1 unless this instance made the last
// marker write", so 2. The hinted first attempt is refused only for the log's
// counter (its truth condition held): the hint must survive that refusal (it
// was dropped after any refusal, and a third request moved the copy).
func TestHintAdversaryMarkerRewriteAfterLostClaim(t *testing.T) {
	hc, n := testenv.CountingHTTPClient()
	e := testEnv(t, func(o *ddb.Options) { o.HTTPClient = hc })
	p, other := openOn(t, e.client, e), openOn(t, e.client, e)
	ctx := context.Background()
	if err := p.WriteCascadeMarker(ctx, "pa", "", "2026-01-01", "a"); err != nil {
		t.Fatal(err)
	}
	if err := other.WriteCascadeMarker(ctx, "pb", "", "2026-01-01", "b"); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Second)
	n.Reset()
	if err := p.WriteCascadeMarker(ctx, "pa", "", "2026-01-01", "a2"); err != nil {
		t.Fatal(err)
	}
	if got := n.Load(); got != 2 {
		t.Errorf("rewrite of a marker this instance wrote last, after another instance's marker: %d requests, budget 2", got)
	}
	if sks := listCopies(t, e, "MARKER#pa", "#BYTIME#"); len(sks) != 1 {
		t.Fatalf("list copies %q; want one", sks)
	}
}

// TestHintAdversaryPutRunAfterOwnCreate: an instance creates a run
// (CreateRunState) and then re-puts it with another CreatedAt. It made the
// record's last write, so the package doc's round trips ("PutRunState 1; 2
// when CreatedAt ... changed and another instance made the record's last
// write") say 1: CreateRunState, which writes the truth item and its copy
// too, must record the hint as putPair does (it did not: 2 requests).
func TestHintAdversaryPutRunAfterOwnCreate(t *testing.T) {
	hc, n := testenv.CountingHTTPClient()
	e := testEnv(t, func(o *ddb.Options) { o.HTTPClient = hc })
	p := openOn(t, e.client, e)
	ctx := context.Background()
	now := e.clock.Now()
	run := types.RunState{RunID: "cr", PipelineID: "cp", Status: types.RunPending, CreatedAt: now}
	if created, err := p.CreateRunState(ctx, run); !created || err != nil {
		t.Fatalf("CreateRunState = %v, %v", created, err)
	}
	run.CreatedAt = now.Add(time.Second)
	n.Reset()
	if err := p.PutRunState(ctx, run); err != nil {
		t.Fatal(err)
	}
	if got := n.Load(); got != 1 {
		t.Errorf("PutRunState moving a run this instance created: %d requests, budget 1", got)
	}
	advWantRun(t, e, p, "cr", "cp", run.CreatedAt)
}

// TestHintAdversaryLostHintedReply drops the reply of a hinted first attempt
// (it carries the Delete of the hinted copy) after DynamoDB applied it, and
// lets another instance move the record before the SDK retries: the call
// reports success, one list copy is left, and the instance's next write, whose
// hint is now stale, still leaves one. Holds.
func TestHintAdversaryLostHintedReply(t *testing.T) {
	ft := faults.NewTransport()
	e := faultEnv(t, ft, 3)
	p := openOn(t, e.client, e)
	other := openOn(t, testenv.DynamoDBClient(t), e)
	ctx := context.Background()
	base := e.clock.Now()

	t.Run("run", func(t *testing.T) {
		run := types.RunState{RunID: "lr", PipelineID: "lp", Status: types.RunPending, CreatedAt: base}
		if err := p.PutRunState(ctx, run); err != nil {
			t.Fatal(err)
		}
		var otherErr error
		ft.DropReplyThen(faults.Op("TransactWriteItems", "RUN#lr", `"Delete"`), func() {
			r := run
			r.CreatedAt = base.Add(3 * time.Second)
			otherErr = other.PutRunState(ctx, r)
		})
		run.CreatedAt = base.Add(2 * time.Second)
		if err := p.PutRunState(ctx, run); err != nil {
			t.Fatalf("hinted PutRunState whose reply was lost: %v", err)
		}
		if ft.Dropped() == 0 {
			t.Fatal("the fault did not fire: the first attempt was not hinted")
		}
		if otherErr != nil {
			t.Fatal(otherErr)
		}
		truth, err := p.GetRunState(ctx, "lr")
		if err != nil || truth == nil {
			t.Fatalf("GetRunState = %+v, %v", truth, err)
		}
		advWantRun(t, e, p, "lr", "lp", truth.CreatedAt)
		run.CreatedAt = base.Add(4 * time.Second)
		if err := p.PutRunState(ctx, run); err != nil {
			t.Fatal(err)
		}
		advWantRun(t, e, p, "lr", "lp", run.CreatedAt)
	})
	t.Run("marker", func(t *testing.T) {
		if err := p.WriteCascadeMarker(ctx, "lm", "", "2026-01-01", "a"); err != nil {
			t.Fatal(err)
		}
		before := ft.Dropped()
		var otherErr error
		ft.DropReplyThen(faults.Op("TransactWriteItems", "MARKER#lm", `"Delete"`), func() {
			e.clock.Advance(time.Second)
			otherErr = other.WriteCascadeMarker(ctx, "lm", "", "2026-01-01", "other")
		})
		e.clock.Advance(time.Second)
		if err := p.WriteCascadeMarker(ctx, "lm", "", "2026-01-01", "b"); err != nil {
			t.Fatalf("hinted WriteCascadeMarker whose reply was lost: %v", err)
		}
		if ft.Dropped() == before {
			t.Fatal("the fault did not fire: the first attempt was not hinted")
		}
		if otherErr != nil {
			t.Fatal(otherErr)
		}
		for i, src := range []string{"", "c"} {
			if src != "" {
				e.clock.Advance(time.Second)
				if err := p.WriteCascadeMarker(ctx, "lm", "", "2026-01-01", src); err != nil {
					t.Fatal(err)
				}
			}
			if sks := listCopies(t, e, "MARKER#lm", "#BYTIME#"); len(sks) != 1 {
				t.Fatalf("step %d: list copies %q; want one", i, sks)
			}
			got, err := p.ListCascadeMarkers(ctx, "lm", 10)
			if err != nil || len(got) != 1 {
				t.Fatalf("step %d: ListCascadeMarkers = %+v, %v; want one", i, got, err)
			}
			if src != "" && got[0].Source != src {
				t.Fatalf("step %d: ListCascadeMarkers = %+v; want source %s", i, got, src)
			}
		}
	})
}

// TestHintAdversaryExpired: hinted writes of a run that expired (by the
// provider's clock, DynamoDB not having deleted it). A hinted rewrite in the
// same pipeline moves the copy; another instance's put under another pipeline
// (allowed: the run is missing) leaves the first instance's hint stale in the
// old pipeline, and its hinted put there must be ErrInvalidArgument and change
// nothing. Holds.
func TestHintAdversaryExpired(t *testing.T) {
	e := testEnv(t)
	ret := ddbprovider.WithRetention(provider.Retention{Runs: time.Hour, Reruns: time.Hour})
	p, other := openOn(t, e.client, e, ret), openOn(t, e.client, e, ret)
	ctx := context.Background()
	base := e.clock.Now()
	run := types.RunState{RunID: "er", PipelineID: "ep1", Status: types.RunPending, CreatedAt: base}
	if err := p.PutRunState(ctx, run); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2 * time.Hour)
	run.CreatedAt = base.Add(time.Minute)
	if err := p.PutRunState(ctx, run); err != nil { // hinted, over the expired truth
		t.Fatal(err)
	}
	advWantRun(t, e, p, "er", "ep1", run.CreatedAt)
	e.clock.Advance(2 * time.Hour)
	moved := run
	moved.PipelineID, moved.CreatedAt = "ep2", base.Add(2*time.Minute)
	if err := other.PutRunState(ctx, moved); err != nil {
		t.Fatalf("another pipeline's put of an expired run: %v", err)
	}
	advWantRun(t, e, p, "er", "ep2", moved.CreatedAt, "ep1")
	run.CreatedAt = base.Add(3 * time.Minute) // p's hint: ep1, same partition
	if err := p.PutRunState(ctx, run); !errors.Is(err, provider.ErrInvalidArgument) {
		t.Fatalf("hinted put under the run's former pipeline = %v; want ErrInvalidArgument", err)
	}
	advWantRun(t, e, p, "er", "ep2", moved.CreatedAt, "ep1")
	moved.CreatedAt = base.Add(4 * time.Minute)
	if err := p.PutRunState(ctx, moved); err != nil {
		t.Fatal(err)
	}
	advWantRun(t, e, p, "er", "ep2", moved.CreatedAt, "ep1")

	// A rerun: pipeline changes back and forth between instances, after expiry.
	rr := types.RerunRecord{RerunID: "ex", PipelineID: "ep1", OriginalDate: "2026-01-01", Status: types.RequestPending, RequestedAt: base}
	if err := p.PutRerun(ctx, rr); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2 * time.Hour)
	rr2 := rr
	rr2.PipelineID, rr2.RequestedAt = "ep2", base.Add(time.Minute)
	if err := other.PutRerun(ctx, rr2); err != nil {
		t.Fatal(err)
	}
	rr.RequestedAt = base.Add(2 * time.Minute) // p's hint: ep1, stale
	if err := p.PutRerun(ctx, rr); err != nil {
		t.Fatal(err)
	}
	if a, b := listCopies(t, e, "PIPELINE#ep1", "RERUN#"), listCopies(t, e, "PIPELINE#ep2", "RERUN#"); len(a) != 1 || len(b) != 0 {
		t.Fatalf("rerun copies %q in ep1, %q in ep2; want one in ep1", a, b)
	}
}

// TestHintAdversaryRefusedWrites: a hinted write refused for another pipeline
// or for a fence changes nothing, and leaves the hint usable. Holds.
func TestHintAdversaryRefusedWrites(t *testing.T) {
	e := testEnv(t)
	p, other := openOn(t, e.client, e), openOn(t, e.client, e)
	ctx := context.Background()
	base := e.clock.Now()
	fenced := func(pp provider.Provider, f int64) provider.Provider {
		fp, err := provider.Fenced(pp, types.Lease{Key: "fk", Token: "t", Fence: f})
		if err != nil {
			t.Fatal(err)
		}
		return fp
	}

	run := types.RunState{RunID: "fr", PipelineID: "fp1", Status: types.RunPending, CreatedAt: base}
	if err := p.PutRunState(ctx, run); err != nil {
		t.Fatal(err)
	}
	wrong := run
	wrong.PipelineID, wrong.CreatedAt = "fp2", base.Add(time.Second)
	if err := p.PutRunState(ctx, wrong); !errors.Is(err, provider.ErrInvalidArgument) {
		t.Fatalf("put under another pipeline = %v; want ErrInvalidArgument", err)
	}
	advWantRun(t, e, p, "fr", "fp1", base, "fp2")
	// another instance moves it, then p's (stale-hinted) put under fp2 again
	run.CreatedAt = base.Add(2 * time.Second)
	if err := other.PutRunState(ctx, run); err != nil {
		t.Fatal(err)
	}
	wrong.CreatedAt = base.Add(3 * time.Second)
	if err := p.PutRunState(ctx, wrong); !errors.Is(err, provider.ErrInvalidArgument) {
		t.Fatalf("put under another pipeline = %v; want ErrInvalidArgument", err)
	}
	advWantRun(t, e, p, "fr", "fp1", run.CreatedAt, "fp2")

	// fences: p puts with fence 2, other raises the fence to 3 at the same
	// copy, p's hinted fence-2 move is refused and changes nothing.
	run.CreatedAt = base.Add(4 * time.Second)
	if err := fenced(p, 2).PutRunState(ctx, run); err != nil {
		t.Fatal(err)
	}
	if err := fenced(other, 3).PutRunState(ctx, run); err != nil {
		t.Fatal(err)
	}
	stale := run
	stale.CreatedAt = base.Add(5 * time.Second)
	if err := fenced(p, 2).PutRunState(ctx, stale); !errors.Is(err, provider.ErrFenced) {
		t.Fatalf("hinted put with a stale fence = %v; want ErrFenced", err)
	}
	advWantRun(t, e, p, "fr", "fp1", run.CreatedAt, "fp2")
	if err := fenced(p, 3).PutRunState(ctx, stale); err != nil {
		t.Fatal(err)
	}
	advWantRun(t, e, p, "fr", "fp1", stale.CreatedAt, "fp2")

	// a marker: fenced likewise.
	if err := fenced(p, 2).WriteCascadeMarker(ctx, "fm", "", "2026-01-01", "a"); err != nil {
		t.Fatal(err)
	}
	if err := fenced(other, 3).WriteCascadeMarker(ctx, "fm", "", "2026-01-01", "b"); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Second)
	if err := fenced(p, 2).WriteCascadeMarker(ctx, "fm", "", "2026-01-01", "c"); !errors.Is(err, provider.ErrFenced) {
		t.Fatalf("hinted marker write with a stale fence = %v; want ErrFenced", err)
	}
	got, err := p.ListCascadeMarkers(ctx, "fm", 10)
	if sks := listCopies(t, e, "MARKER#fm", "#BYTIME#"); len(sks) != 1 || err != nil || len(got) != 1 || got[0].Source != "b" {
		t.Fatalf("copies %q, ListCascadeMarkers = %+v, %v; want one, by b", sks, got, err)
	}
}

// TestHintAdversaryExpiredCopyHidesRun: a run expires (by the provider's clock,
// DynamoDB not having deleted it) and is created again (CreateRunState, which
// the Retention doc allows "as if it had never existed") with an earlier
// CreatedAt. CreateRunState leaves the expired copy ("DynamoDB's TTL deletes
// it"), which sorts first in ListRuns' newest-first query; query drops every
// later copy of the same run as a repeat before it checks expiry, so the live
// run was not listed. Only a live copy may claim its record in query's
// de-duplication. (Older than the hints; found while attacking them.)
func TestHintAdversaryExpiredCopyHidesRun(t *testing.T) {
	e := testEnv(t)
	p := openOn(t, e.client, e, ddbprovider.WithRetention(provider.Retention{Runs: time.Hour}))
	ctx := context.Background()
	base := e.clock.Now()
	run := types.RunState{RunID: "hr", PipelineID: "hp", Status: types.RunPending, CreatedAt: base}
	if err := p.PutRunState(ctx, run); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2 * time.Hour)
	run.CreatedAt = base.Add(-time.Minute)
	if created, err := p.CreateRunState(ctx, run); !created || err != nil {
		t.Fatalf("CreateRunState over the expired run = %v, %v; want created", created, err)
	}
	got, err := p.ListRuns(ctx, "hp", 10)
	if err != nil || len(got) != 1 || !got[0].CreatedAt.Equal(run.CreatedAt) {
		t.Errorf("ListRuns = %+v, %v; want the created run once (copies %q)", got, err, listCopies(t, e, "PIPELINE#hp", "RUN#"))
	}
}
