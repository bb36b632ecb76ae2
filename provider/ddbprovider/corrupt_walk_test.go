package ddbprovider_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/internal/testkit/ddbwalk"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/types"
)

// TestCorruptEveryAttribute writes one record of every kind, then, item by
// item and attribute by attribute (every attribute the provider stores but the
// keys), corrupts the attribute (ddbwalk: a value of the other type, a number
// past int64, the attribute removed) and runs every
// read: a Get* returns the record or an error wrapping ErrCorrupt, a List*,
// ReadEventsSince and ListLocks never fail, and at least one read notices an
// attribute of the other type (an ErrCorrupt, or a report to OnCorrupt). The
// item is then restored for the next case.
func TestCorruptEveryAttribute(t *testing.T) {
	e := testEnv(t)
	p := openOn(t, e.client, e, ddbprovider.WithEventRetention(time.Hour))
	ctx := t.Context()
	at := e.clock.Now()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(p.RegisterPipeline(ctx, types.PipelineConfig{ID: "p"}))
	must(p.PutTrait(ctx, "p", types.TraitEvaluation{TraitType: "t", Status: types.TraitPass}, time.Hour))
	must(p.PutReadiness(ctx, types.ReadinessResult{PipelineID: "p", Status: types.Ready}))
	must(p.PutRunState(ctx, types.RunState{RunID: "r", PipelineID: "p", Status: types.RunPending, CreatedAt: at}))
	must(p.PutRunLog(ctx, types.RunLogEntry{PipelineID: "p", Date: "2026-01-01", RunID: "r", Status: types.RunPending}))
	must(p.PutRerun(ctx, types.RerunRecord{RerunID: "x", PipelineID: "p", OriginalDate: "2026-01-01", Status: types.RequestPending, RequestedAt: at}))
	must(p.PutReplay(ctx, types.ReplayRequest{PipelineID: "p", Date: "2026-01-01", Status: types.RequestPending, CreatedAt: at}))
	must(p.PutLateArrival(ctx, types.LateArrival{PipelineID: "p", Date: "2026-01-01", DetectedAt: at, RecordDelta: 1}))
	must(p.WriteCascadeMarker(ctx, "p", "", "2026-01-01", "s"))
	for range 2 {
		must(p.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p"}))
	}
	ok, err := p.AcquireLock(ctx, "k", time.Hour)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, err := p.AcquireLease(ctx, "l", time.Hour); err != nil {
		t.Fatal(err)
	}

	// reads runs the reads of the item (pk, sk), returning what failed them
	// and how many noticed corruption (an ErrCorrupt, or a report).
	reads := func(pk, sk string) (bad []string, noticed int) {
		rctx := provider.OnCorrupt(ctx, func(*provider.CorruptError) { noticed++ })
		get := func(name string, err error) {
			switch {
			case errors.Is(err, provider.ErrCorrupt):
				noticed++
			case err != nil:
				bad = append(bad, fmt.Sprintf("%s: %v", name, err))
			}
		}
		list := func(name string, err error) {
			if err != nil {
				bad = append(bad, fmt.Sprintf("%s: %v", name, err))
			}
		}
		has := func(prefix string) bool { return strings.HasPrefix(sk, prefix) }
		var err error
		switch {
		case pk == "PIPELINE#p" && sk == "CONFIG":
			_, err = p.GetPipeline(rctx, "p")
			get("GetPipeline", err)
			_, err = p.ListPipelines(rctx)
			list("ListPipelines", err)
		case has("TRAIT#"):
			_, err = p.GetTrait(rctx, "p", "t")
			get("GetTrait", err)
			_, err = p.GetTraits(rctx, "p")
			list("GetTraits", err)
		case sk == "READINESS":
			_, err = p.GetReadiness(rctx, "p")
			get("GetReadiness", err)
		case pk == "RUN#r" || has("RUN#"):
			_, err = p.GetRunState(rctx, "r")
			get("GetRunState", err)
			_, err = p.ListRuns(rctx, "p", 10)
			list("ListRuns", err)
			_, _, err = p.ListActiveRuns(rctx, provider.ActiveRunFilter{}, "", 10)
			list("ListActiveRuns", err)
		case has("RUNLOG#"):
			_, err = p.GetRunLog(rctx, "p", "2026-01-01", "")
			get("GetRunLog", err)
			_, err = p.ListRunLogs(rctx, "p", 10)
			list("ListRunLogs", err)
		case pk == "RERUN#x" || has("RERUN#"):
			_, err = p.GetRerun(rctx, "x")
			get("GetRerun", err)
			_, err = p.ListReruns(rctx, "p", 10)
			list("ListReruns", err)
			_, err = p.ListAllReruns(rctx, 10)
			list("ListAllReruns", err)
		case has("REPLAY#"):
			_, err = p.GetReplay(rctx, "p", "2026-01-01", "")
			get("GetReplay", err)
			_, err = p.ListReplays(rctx, 10)
			list("ListReplays", err)
		case has("LATE#"):
			_, err = p.ListLateArrivals(rctx, "p", "2026-01-01", "")
			list("ListLateArrivals", err)
		case has("#BYTIME#"):
			_, err = p.ListCascadeMarkers(rctx, "p", 10)
			list("ListCascadeMarkers", err)
		case has("EVENT#"):
			_, err = p.ListEvents(rctx, "p", 10)
			list("ListEvents", err)
			for _, cursor := range []string{"", "1"} {
				_, err = p.ReadEventsSince(rctx, "p", cursor, 10)
				list("ReadEventsSince("+cursor+")", err)
			}
		case has("LOCK"):
			_, err = p.GetLockInfo(rctx, strings.TrimPrefix(pk, "LOCK#"))
			get("GetLockInfo", err)
			_, err = p.ListLocks(rctx, "*", 10)
			list("ListLocks", err)
		default:
			return nil, -1 // no read reads it (a marker's truth, a counter, a fence item)
		}
		return bad, noticed
	}

	// The values numbering, ordering and expiry are most sensitive to (every
	// value, 5 per attribute, takes minutes on DynamoDB Local).
	values := []string{"other type", "huge", "missing"}
	n := ddbwalk.Walk(t, e.client, e.table, []string{"PK", "SK"}, values, func(cs ddbwalk.Case) {
		pk, sk := cs.Item["PK"].(*ddbtypes.AttributeValueMemberS).Value, cs.Item["SK"].(*ddbtypes.AttributeValueMemberS).Value
		bad, noticed := reads(pk, sk)
		// Another type must be noticed; a value of the right type, or none, may
		// read as a valid record.
		if len(bad) > 0 || (noticed == 0 && cs.Value == "other type") {
			t.Errorf("item %s %s, attribute %s := %s: failed reads %v, %d noticed (want none failed, at least one noticed)",
				pk, sk, cs.Attr, cs.Value, bad, noticed)
		}
	})
	t.Logf("%d attribute corruptions", n)
}
