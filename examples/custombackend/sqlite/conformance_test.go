package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/pipestate/pipestate/examples/custombackend/sqlite"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/providertest"
	"github.com/pipestate/pipestate/providertest/sim"
	"github.com/pipestate/pipestate/types"
)

// TestConformance runs the providertest conformance suite. Each (sub)test gets its
// own database file and clock; the providers it opens share both.
func TestConformance(t *testing.T) {
	providertest.Run(t, conformanceHarness(false))
}

// TestSim simulates the backend against the reference model of package
// providertest/sim, from the conformance harness.
func TestSim(t *testing.T) {
	sim.Run(t, sim.Harness{Harness: conformanceHarness(true), Corpus: "testdata/sim/sqlite.seeds", Budget: 15 * time.Second,
		WatchWait: 5 * time.Second, WatchQuiet: 100 * time.Millisecond}) // polls up to 500ms apart, on a loaded machine
}

// conformanceHarness is the suite's harness: each (sub)test gets its own
// database file and clock, real time plus what Sleep added, or, frozen, a
// clock that moves only when Sleep moves it (as the simulation needs).
func conformanceHarness(frozen bool) providertest.Harness {
	var mu sync.Mutex
	envs := map[string]*testEnv{}
	env := func(t *testing.T) *testEnv {
		mu.Lock()
		defer mu.Unlock()
		e, ok := envs[t.Name()]
		if !ok {
			e = &testEnv{path: filepath.Join(t.TempDir(), "pipestate.db")}
			if frozen {
				e.start = time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)
			}
			envs[t.Name()] = e
		}
		return e
	}
	const retention = 30 * 24 * time.Hour
	open := func(t *testing.T, opts ...sqlite.Option) provider.Provider {
		e := env(t)
		opts = append([]sqlite.Option{sqlite.WithClock(e.now), sqlite.WithEventRetention(retention)}, opts...)
		p, err := sqlite.New(context.Background(), e.path, opts...)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		t.Cleanup(func() { _ = p.Stop(context.Background()) })
		return p
	}
	// The marker log keeps writes for markerRetention; the next write deletes
	// older ones.
	const markerRetention = 24 * time.Hour
	keepMarkers := sqlite.WithMarkerLogRetention(markerRetention)
	return providertest.Harness{
		Open: func(t *testing.T) provider.Provider { return open(t, keepMarkers) },
		OpenOwner: func(t *testing.T, owner string) provider.Provider {
			return open(t, keepMarkers, sqlite.WithOwner(owner))
		},
		Sleep: func(t *testing.T, d time.Duration) { env(t).sleep(d) },
		Now:   func(t *testing.T) time.Time { return env(t).now() },
		// Retention is by time: moving the test's clock past it drops every
		// event appended so far.
		ExpireEvents:  func(t *testing.T, _ string) { env(t).sleep(retention) },
		ExpireMarkers: func(t *testing.T) { env(t).sleep(markerRetention) },
		Corrupt: func(t *testing.T, kind provider.RecordKind, id ...string) {
			corruptRow(t, env(t).path, kind, id...)
		},
		DropActiveEntry: func(t *testing.T, runID string) { dropActiveEntry(t, env(t).path, runID) },
		Retention:       provider.DefaultRetention(), // the default, whose Events and MarkerLog are the two above
		OpenReadOnly:    func(t *testing.T) provider.Provider { return open(t, keepMarkers, sqlite.WithReadOnly()) },
	}
}

// dropActiveEntry takes run runID out of the partial index runs_active by
// setting its runs.unfinished to 0, through a connection of its own, as an
// operator with the sqlite3 shell would (Harness.DropActiveEntry).
func dropActiveEntry(t *testing.T, path, runID string) {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE runs SET unfinished = 0 WHERE run_id = ?`, runID); err != nil {
		t.Fatalf("drop the active-runs entry of %s: %v", runID, err)
	}
}

// corruptBody is what corruptRow stores: JSON cut short.
const corruptBody = `{"corrupt": tru`

// corruptRow is the harness's Harness.Corrupt: an SQL UPDATE of a row's body
// (a lock's holder) to corruptBody, or an INSERT of a row with that body into a
// log, through a connection of its own to the test's database file, as an
// operator with the sqlite3 shell would.
func corruptRow(t *testing.T, path string, kind provider.RecordKind, id ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sched := func() string { return types.ScheduleOrDefault(id[2]) }
	var q string
	var args []any
	switch kind {
	case provider.KindPipeline:
		q, args = `UPDATE pipelines SET body = ? WHERE id = ?`, []any{corruptBody, id[0]}
	case provider.KindTrait:
		q, args = `UPDATE traits SET body = ? WHERE pipeline_id = ? AND trait_type = ?`, []any{corruptBody, id[0], id[1]}
	case provider.KindRunState:
		q, args = `UPDATE runs SET body = ? WHERE run_id = ?`, []any{corruptBody, id[0]}
	case provider.KindEvent:
		q, args = `INSERT INTO events (pipeline_id, body) VALUES (?, ?)`, []any{id[0], corruptBody}
	case provider.KindRunLog:
		q, args = `UPDATE run_logs SET body = ? WHERE pipeline_id = ? AND date = ? AND schedule_id = ?`, []any{corruptBody, id[0], id[1], sched()}
	case provider.KindRerun:
		q, args = `UPDATE reruns SET body = ? WHERE rerun_id = ?`, []any{corruptBody, id[0]}
	case provider.KindReplay:
		q, args = `UPDATE replays SET body = ? WHERE pipeline_id = ? AND date = ? AND schedule_id = ?`, []any{corruptBody, id[0], id[1], sched()}
	case provider.KindLateArrival:
		q, args = `INSERT INTO late_arrivals (pipeline_id, date, schedule_id, detected_at, body) VALUES (?, ?, ?, '', ?)`,
			[]any{id[0], id[1], sched(), corruptBody}
	case provider.KindCascadeMarker:
		q, args = `UPDATE cascade_markers SET body = ? WHERE pipeline_id = ? AND date = ? AND schedule_id = ?`,
			[]any{corruptBody, id[0], id[1], sched()}
	case provider.KindMarkerWrite:
		q, args = `INSERT INTO marker_log (pipeline_id, schedule_id, date, written_at, body)
			SELECT pipeline_id, schedule_id, date, written_at, ? FROM marker_log ORDER BY seq DESC LIMIT 1`, []any{corruptBody}
	case provider.KindReadiness:
		q, args = `UPDATE readiness SET body = ? WHERE pipeline_id = ?`, []any{corruptBody, id[0]}
	case provider.KindLock:
		q, args = `UPDATE locks SET holder = ? WHERE key = ?`, []any{corruptBody, id[0]}
	default:
		t.Fatalf("corrupt: unknown kind %q", kind)
	}
	res, err := db.ExecContext(context.Background(), q, args...)
	if err != nil {
		t.Fatalf("corrupt %s %v: %v", kind, id, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("corrupt %s %v: %d rows changed, want 1", kind, id, n)
	}
}

// testEnv is one test's database file and clock. The clock is real time plus an
// offset that Sleep advances, so time moves forward as usual and jumps on Sleep.
type testEnv struct {
	path string

	mu     sync.Mutex
	offset time.Duration
	start  time.Time // when not zero, the clock is start + offset: frozen between sleeps
}

func (e *testEnv) now() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.start.IsZero() {
		return e.start.Add(e.offset)
	}
	return time.Now().Add(e.offset)
}

func (e *testEnv) sleep(d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.offset += d
}
