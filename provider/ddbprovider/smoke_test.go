package ddbprovider_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

func TestSmoke(t *testing.T) {
	ctx := context.Background()
	p := open(t)
	r := types.RunState{RunID: "r1", PipelineID: "p1", Status: types.RunPending, Metadata: map[string]any{"n": 1}}
	if err := p.PutRunState(ctx, r); err != nil {
		t.Fatal(err)
	}
	got, err := p.GetRunState(ctx, "r1")
	if err != nil || got == nil || got.Metadata["n"] != float64(1) {
		t.Fatalf("get: %+v %v", got, err)
	}
	ok, err := p.CompareAndSwapRunState(ctx, "r1", 0, types.RunState{RunID: "r1", PipelineID: "p1", Status: types.RunRunning})
	if !ok || err != nil {
		t.Fatalf("cas: %v %v", ok, err)
	}
	ok, err = p.CompareAndSwapRunState(ctx, "r1", 0, *got)
	if ok || err != nil {
		t.Fatalf("stale cas: %v %v", ok, err)
	}
	_, err = p.CompareAndSwapRunState(ctx, "r1", 1, types.RunState{RunID: "r1", PipelineID: "p2", Status: types.RunRunning, CreatedAt: got.CreatedAt})
	if !errors.Is(err, provider.ErrInvalidArgument) {
		t.Fatalf("other pipeline: %v", err)
	}
	runs, err := p.ListRuns(ctx, "p1", 10)
	if err != nil || len(runs) != 1 || runs[0].Version != 1 || runs[0].Status != types.RunRunning {
		t.Fatalf("list: %+v %v", runs, err)
	}
	for i := range 5 {
		if err := p.AppendEvent(ctx, types.Event{Kind: "K", PipelineID: "p1", Message: strings.Repeat("x", i)}); err != nil {
			t.Fatal(err)
		}
	}
	q := open(t)
	if err := q.AppendEvent(ctx, types.Event{Kind: "K", PipelineID: "p1", Message: "other"}); err != nil {
		t.Fatal(err)
	}
	recs, err := p.ReadEventsSince(ctx, "p1", "2", 100)
	if err != nil || len(recs) != 4 || recs[0].StreamID != "3" || recs[3].Event.Message != "other" {
		t.Fatalf("read since: %+v %v", recs, err)
	}
	ok, err = p.AcquireLock(ctx, "k", time.Minute)
	if !ok || err != nil {
		t.Fatalf("lock: %v %v", ok, err)
	}
	if ok, _ := q.AcquireLock(ctx, "k", time.Minute); ok {
		t.Fatal("lock twice")
	}
	if err := q.ReleaseLock(ctx, "k"); !errors.Is(err, provider.ErrLockNotHeld) {
		t.Fatalf("release by other: %v", err)
	}
	if err := p.ReleaseLock(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	l1, err := q.AcquireLease(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.ReleaseLease(ctx, *l1); err != nil {
		t.Fatal(err)
	}
	l2, err := p.AcquireLease(ctx, "k", time.Minute)
	if err != nil || l2.Fence <= l1.Fence {
		t.Fatalf("fence %v then %v, %v", l1, l2, err)
	}
	if err := p.WriteCascadeMarker(ctx, "p1", "", "2026-01-01", "up"); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteCascadeMarker(ctx, "p1", "", "2026-01-01", "up2"); err != nil {
		t.Fatal(err)
	}
	ms, err := p.ListCascadeMarkers(ctx, "p1", 10)
	if err != nil || len(ms) != 1 || ms[0].Source != "up2" {
		t.Fatalf("markers %+v %v", ms, err)
	}
}
