package sqlite_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/pipestate/pipestate/examples/custombackend/sqlite"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// TestRecordFencesPrunedWithRecords: what a record remembers of fences is
// deleted with the record, so fenced runs written every minute for ten minutes
// with a minute's retention leave about a minute's rows in record_fences, not
// all of them.
func TestRecordFencesPrunedWithRecords(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "pipestate.db")
	now := time.Now()
	clock := func() time.Time { return now } // only this goroutine reads it
	p := open(t, path, sqlite.WithClock(clock), sqlite.WithRetention(provider.Retention{Runs: time.Minute}))
	fp, err := provider.Fenced(p, types.Lease{Key: "job", Token: "t", Fence: 1})
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for minute := range 10 {
		for i := range 20 {
			run := types.RunState{RunID: fmt.Sprintf("r%d-%d", minute, i), PipelineID: "orders", Status: types.RunPending}
			if err := fp.PutRunState(ctx, run); err != nil {
				t.Fatal(err)
			}
		}
		now = now.Add(time.Minute)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM record_fences`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n == 0 || n > 21 {
		t.Fatalf("%d rows in record_fences after 200 fenced runs over 10 minutes with a minute's retention, want 1 to 21", n)
	}
}
