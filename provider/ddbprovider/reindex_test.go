package ddbprovider_test

import (
	"context"
	"errors"
	"testing"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/types"
)

// interleavedAPI calls before ahead of every UpdateItem it passes on.
type interleavedAPI struct {
	ddbprovider.API
	before func()
}

func (a *interleavedAPI) UpdateItem(ctx context.Context, in *ddb.UpdateItemInput, o ...func(*ddb.Options)) (*ddb.UpdateItemOutput, error) {
	if a.before != nil {
		a.before()
	}
	return a.API.UpdateItem(ctx, in, o...)
}

// TestReindexRunUnderWrites rewrites a run between ReindexRun's read and its
// repair, as a writer of a version before the index would during a rolling
// upgrade (a new version, no entry): once, and ReindexRun repairs from the
// run as it is now; before every attempt, and it gives up with ErrContention,
// having written nothing.
func TestReindexRunUnderWrites(t *testing.T) {
	e := testEnv(t)
	ctx := t.Context()
	api := &interleavedAPI{API: e.client}
	p, writer := openOn(t, api, e), openOn(t, e.client, e)
	const id = "r-1"
	version := 0
	oldWrite := func(st types.RunStatus) {
		version++
		if err := writer.PutRunState(ctx, types.RunState{RunID: id, PipelineID: "p", Status: st, Version: version}); err != nil {
			t.Fatal(err)
		}
		dropActiveEntry(t, e, id)
	}
	active := func() []types.RunState {
		t.Helper()
		runs, _, err := p.ListActiveRuns(ctx, provider.ActiveRunFilter{}, "", 10)
		if err != nil {
			t.Fatal(err)
		}
		return runs
	}
	oldWrite(types.RunRunning)

	updates := 0
	api.before = func() {
		if updates++; updates == 1 {
			oldWrite(types.RunPending)
		}
	}
	if changed, err := p.ReindexRun(ctx, id); !changed || err != nil {
		t.Fatalf("ReindexRun with one write between its read and its repair = (%v, %v), want (true, nil)", changed, err)
	}
	if updates != 2 {
		t.Errorf("ReindexRun made %d UpdateItems, want 2 (the repair the write beat, then the repair)", updates)
	}
	if runs := active(); len(runs) != 1 || runs[0].Version != version || runs[0].Status != types.RunPending {
		t.Errorf("ListActiveRuns after the repair = %+v, want %s v%d PENDING (the run as the write left it)", runs, id, version)
	}

	oldWrite(types.RunRunning)
	updates = 0
	api.before = func() { updates++; oldWrite(types.RunRunning) }
	if changed, err := p.ReindexRun(ctx, id); changed || !errors.Is(err, provider.ErrContention) {
		t.Fatalf("ReindexRun with a write before every repair = (%v, %v), want (false, ErrContention)", changed, err)
	}
	api.before = nil
	if updates != ddbprovider.ReindexAttempts {
		t.Errorf("ReindexRun gave up after %d UpdateItems, want %d (one an attempt, each read again after the write that beat it)", updates, ddbprovider.ReindexAttempts)
	}
	if got, err := p.GetRunState(ctx, id); err != nil || got == nil || got.Version != version || got.Status != types.RunRunning {
		t.Errorf("GetRunState after ErrContention = %+v, %v; want v%d RUNNING (the last write's)", got, err, version)
	}
	if runs := active(); len(runs) != 0 {
		t.Errorf("ListActiveRuns after ErrContention = %+v, want none (the last write dropped the entry; ReindexRun wrote nothing)", runs)
	}
	if changed, err := p.ReindexRun(ctx, id); !changed || err != nil {
		t.Errorf("ReindexRun once the writes stopped = (%v, %v), want (true, nil)", changed, err)
	}
}
