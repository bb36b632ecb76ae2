// Package foreignbody checks that a backend isolates a run whose stored body
// names another run (a flipped byte in its runId, a body copied by hand): the
// record is corrupt, as provider.Decode reports it, and no reader or repair may
// trust the ID it names.
package foreignbody

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// Provider is what Check drives.
type Provider interface {
	provider.RunStore
	provider.ActiveRunLister
	provider.ActiveRunReindexer
}

// Check stores the unfinished runs r1 to r5 through p, then has rename make
// the stored body of run "r4" name run "r2" and stored return the raw record
// of r4 (compared before and after ReindexRun). It checks that a paging of
// ListActiveRuns one run a page lists r1, r2, r3 and r5 and ends (a backend
// that pages on from the body's ID pages forever), reporting r4 as corrupt;
// that GetRunState of r4 fails with ErrCorrupt; and that ReindexRun of r4
// fails with ErrCorrupt, writing nothing.
func Check(t *testing.T, p Provider, rename func(ctx context.Context, id, to string), stored func(ctx context.Context, id string) any) {
	t.Helper()
	ctx := t.Context()
	ids := []string{"r1", "r2", "r3", "r4", "r5"}
	for _, id := range ids {
		if err := p.PutRunState(ctx, types.RunState{RunID: id, PipelineID: "p", Status: types.RunRunning}); err != nil {
			t.Fatal(err)
		}
	}
	rename(ctx, "r4", "r2")
	before := stored(ctx, "r4")
	var reported []string
	rctx := provider.OnCorrupt(ctx, func(c *provider.CorruptError) { reported = append(reported, c.ID) })
	var listed []string
	cursor := ""
	for page := 0; ; page++ {
		if page > len(ids) {
			t.Fatalf("paging did not end after %d pages: %v", page, listed)
		}
		runs, next, err := p.ListActiveRuns(rctx, provider.ActiveRunFilter{}, cursor, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			listed = append(listed, r.RunID)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if want := []string{"r1", "r2", "r3", "r5"}; !slices.Equal(listed, want) {
		t.Errorf("listed %v, want %v", listed, want)
	}
	if !slices.Contains(reported, "r4") {
		t.Errorf("reported %v as corrupt, want r4", reported)
	}
	if _, err := p.GetRunState(ctx, "r4"); !errors.Is(err, provider.ErrCorrupt) {
		t.Errorf("GetRunState r4 = %v, want ErrCorrupt", err)
	}
	if _, err := p.ReindexRun(ctx, "r4"); !errors.Is(err, provider.ErrCorrupt) {
		t.Errorf("ReindexRun r4 = %v, want ErrCorrupt", err)
	}
	if after := stored(ctx, "r4"); !reflect.DeepEqual(after, before) {
		t.Errorf("ReindexRun wrote the corrupt run: %v, was %v", after, before)
	}
}
