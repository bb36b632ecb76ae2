package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/pipestate/pipestate/examples/custombackend/sqlite"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// indexed is the run IDs in the partial index runs_active of the file at path,
// expired rows included, in run_id order.
func indexed(t *testing.T, path string) []string {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT run_id FROM runs INDEXED BY runs_active WHERE unfinished = 1 ORDER BY run_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func activeIDs(t *testing.T, p *sqlite.Provider) []string {
	t.Helper()
	runs, next, err := p.ListActiveRuns(t.Context(), provider.ActiveRunFilter{}, "", 100)
	if err != nil || next != "" {
		t.Fatalf("ListActiveRuns = %v, next %q, %v", runs, next, err)
	}
	out := []string{}
	for _, r := range runs {
		out = append(out, r.RunID)
	}
	return out
}

// TestActiveIndexHoldsOnlyUnfinished: every run write keeps the row's index
// entry as its status is (the index holds no finished run, which readers would
// filter out but still read); a file written before the index existed gets
// the column and the index from New, which backfills them from the bodies (a
// read-only New refuses the file first); and a row an older version writes
// afterwards (unfinished NULL) is indexed by the next writable New.
func TestActiveIndexHoldsOnlyUnfinished(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "pipestate.db")
	p, err := sqlite.New(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Stop(ctx) }()
	put := func(id string, s types.RunStatus) {
		t.Helper()
		if err := p.PutRunState(ctx, types.RunState{RunID: id, PipelineID: "orders", Status: s}); err != nil {
			t.Fatal(err)
		}
	}
	put("run-a", types.RunRunning)
	put("run-b", types.RunCompleted)
	put("run-c", types.RunPending)
	put("run-d", types.RunRunning)
	put("run-d", types.RunFailed) // a put that finishes
	a, err := p.GetRunState(ctx, "run-a")
	if err != nil || a == nil {
		t.Fatalf("GetRunState: %v, %v", a, err)
	}
	done := *a
	done.Status = types.RunCompleted
	if ok, err := p.CompareAndSwapRunState(ctx, "run-a", a.Version, done); !ok || err != nil {
		t.Fatalf("CAS to COMPLETED = %v, %v", ok, err)
	}
	if ok, err := p.CreateRunState(ctx, types.RunState{RunID: "run-e", PipelineID: "orders", Status: types.RunRunning}); !ok || err != nil {
		t.Fatalf("CreateRunState = %v, %v", ok, err)
	}
	if got, want := indexed(t, path), []string{"run-c", "run-e"}; !slices.Equal(got, want) {
		t.Fatalf("runs_active = %q, want %q", got, want)
	}
	if got, want := activeIDs(t, p), []string{"run-c", "run-e"}; !slices.Equal(got, want) {
		t.Fatalf("ListActiveRuns = %q, want %q", got, want)
	}
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	// The file as a version before the index left it.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DROP INDEX runs_active`, `DROP INDEX runs_unknown`, `ALTER TABLE runs DROP COLUMN unfinished`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.New(ctx, path, sqlite.WithReadOnly()); err == nil {
		t.Fatal("a read-only New of a file without runs.unfinished succeeded; want it refused")
	}
	p, err = sqlite.New(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := activeIDs(t, p), []string{"run-c", "run-e"}; !slices.Equal(got, want) {
		t.Fatalf("ListActiveRuns of a migrated file = %q, want %q (New backfills the index)", got, want)
	}
	if got, want := indexed(t, path), []string{"run-c", "run-e"}; !slices.Equal(got, want) {
		t.Fatalf("runs_active of a migrated file = %q, want %q", got, want)
	}
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	// An older version, still running during the upgrade, writes run-f.
	db, err = sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO runs (run_id, pipeline_id, version, created_at, body) VALUES ('run-f', 'orders', 0, '2026-11-21T00:00:00.000000000Z',
		'{"runId":"run-f","pipelineId":"orders","status":"RUNNING","version":0}')`); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	p, err = sqlite.New(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := activeIDs(t, p), []string{"run-c", "run-e", "run-f"}; !slices.Equal(got, want) {
		t.Fatalf("ListActiveRuns after an older version's write and a New = %q, want %q", got, want)
	}
}

// TestSelfSwap: CompareAndSwapRunState(run, run), the backfill's rewrite, is
// accepted for a run a fenced write wrote and changes only the version and
// UpdatedAt.
func TestSelfSwap(t *testing.T) {
	ctx := context.Background()
	p, err := sqlite.New(ctx, filepath.Join(t.TempDir(), "pipestate.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Stop(ctx) }()
	lease, err := p.AcquireLease(ctx, "sched:orders", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	fenced, err := provider.Fenced(p, *lease)
	if err != nil {
		t.Fatal(err)
	}
	if err := fenced.PutRunState(ctx, types.RunState{RunID: "run-f", PipelineID: "orders", Status: types.RunRunning,
		Metadata: map[string]any{"host": "w-1"}}); err != nil {
		t.Fatal(err)
	}
	before, err := p.GetRunState(ctx, "run-f")
	if err != nil || before == nil {
		t.Fatalf("GetRunState = %v, %v", before, err)
	}
	if ok, err := p.CompareAndSwapRunState(ctx, "run-f", before.Version, *before); !ok || err != nil {
		t.Fatalf("CAS(run, run) of a fenced run = %v, %v; want it accepted", ok, err)
	}
	after, err := p.GetRunState(ctx, "run-f")
	if err != nil || after == nil {
		t.Fatalf("GetRunState = %v, %v", after, err)
	}
	want := *before
	want.Version++
	want.UpdatedAt = after.UpdatedAt
	if !reflect.DeepEqual(*after, want) || after.UpdatedAt.Before(before.UpdatedAt) {
		t.Errorf("after CAS(run, run) = %+v, want %+v", *after, want)
	}
}
