package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/pipestate/pipestate/examples/custombackend/sqlite"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// item is one value a sequence yielded.
type item[R any] struct {
	r   R
	err error
}

// consume iterates seq on a goroutine, sending what it yields; the channel closes
// when the sequence ends.
func consume[R any](seq iter.Seq2[R, error]) <-chan item[R] {
	out := make(chan item[R], 64)
	go func() {
		defer close(out)
		for r, err := range seq {
			out <- item[R]{r, err}
		}
	}()
	return out
}

// receive returns the next value of ch, failing the test when none comes within
// wait.
func receive[R any](t *testing.T, ch <-chan item[R], wait time.Duration, what string) item[R] {
	t.Helper()
	select {
	case it, ok := <-ch:
		if !ok {
			t.Fatalf("%s: the sequence ended", what)
		}
		return it
	case <-time.After(wait):
		t.Fatalf("%s: nothing within %v", what, wait)
	}
	panic("unreachable")
}

// records receives n records from ch, failing the test on an error.
func records[R any](t *testing.T, ch <-chan item[R], n int, what string) []R {
	t.Helper()
	var out []R
	for len(out) < n {
		it := receive(t, ch, 10*time.Second, what)
		if it.err != nil {
			t.Fatalf("%s: error after %d of %d records: %v", what, len(out), n, it.err)
		}
		out = append(out, it.r)
	}
	return out
}

// endsWith receives from ch until an error, which must wrap target, and checks
// that the sequence then ends.
func endsWith[R any](t *testing.T, ch <-chan item[R], target error, what string) {
	t.Helper()
	for {
		it := receive(t, ch, 10*time.Second, what)
		if it.err == nil {
			continue
		}
		if !errors.Is(it.err, target) {
			t.Errorf("%s: %v, want an error wrapping %v", what, it.err, target)
		}
		if _, ok := <-ch; ok {
			t.Errorf("%s: the sequence went on after its error", what)
		}
		return
	}
}

func open(t *testing.T, path string, opts ...sqlite.Option) *sqlite.Provider {
	t.Helper()
	p, err := sqlite.New(context.Background(), path, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	return p
}

func watch(ctx context.Context, p *sqlite.Provider, cursor string) <-chan item[types.CascadeMarkerRecord] {
	return consume(p.WatchCascadeMarkers(ctx, cursor))
}

// TestMarkerLogRetention: a marker write's expiry is set by its writer's
// retention (the contract's "from each write, under the retention in force when
// written"), whatever the reader's: a cursor before an expired or deleted row is
// expired, "" reads from the oldest retained write, a write without retention
// never expires, also for a reader with one, and the markers themselves stay.
// Before, the reading handle's retention judged every row: a reader without
// retention saw the expired writes of one with it.
func TestMarkerLogRetention(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "pipestate.db")
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	p := open(t, path, sqlite.WithClock(clock), sqlite.WithMarkerLogRetention(time.Hour))
	keep := open(t, path, sqlite.WithClock(clock), sqlite.WithMarkerLogRetention(0)) // its writes never expire
	write := func(p *sqlite.Provider, date string) {
		t.Helper()
		if err := p.WriteCascadeMarker(ctx, "orders", "", date, "upstream"); err != nil {
			t.Fatalf("WriteCascadeMarker: %v", err)
		}
	}
	dates := func(recs []types.CascadeMarkerRecord) []string {
		var out []string
		for _, r := range recs {
			out = append(out, r.Marker.Date)
		}
		return out
	}
	write(p, "2026-03-01")
	write(p, "2026-03-02")
	old := records(t, watch(ctx, p, ""), 2, "watch before the deletion")
	advance(2 * time.Hour)
	for name, r := range map[string]*sqlite.Provider{"with retention": p, "without retention": keep} {
		endsWith(t, watch(ctx, r, old[0].Cursor), provider.ErrCursorExpired, "watch "+name+" from a write past its writer's retention, before a write deleted it")
	}
	write(keep, "2026-03-03") // deletes the two writes of two hours ago
	for name, r := range map[string]*sqlite.Provider{"with retention": p, "without retention": keep} {
		if got := dates(records(t, watch(ctx, r, ""), 1, "watch "+name)); fmt.Sprint(got) != "[2026-03-03]" {
			t.Errorf("a watch %s yields %v, want [2026-03-03]: the others expired by their writer's retention", name, got)
		}
		for _, cursor := range []string{"0", old[0].Cursor} {
			endsWith(t, watch(ctx, r, cursor), provider.ErrCursorExpired, fmt.Sprintf("watch %s from %q", name, cursor))
		}
	}
	advance(100 * time.Hour)
	write(p, "2026-03-04")
	for _, cursor := range []string{"", old[1].Cursor} {
		if got := dates(records(t, watch(ctx, p, cursor), 2, "watch from "+cursor)); fmt.Sprint(got) != "[2026-03-03 2026-03-04]" {
			t.Errorf("watch from %q yields %v, want the two retained writes (the one without retention never expires)", cursor, got)
		}
	}
	if got, err := p.ListCascadeMarkers(ctx, "orders", 10); err != nil || len(got) != 4 {
		t.Errorf("ListCascadeMarkers = %d markers, %v; want all 4: retention deletes only the log", len(got), err)
	}
}

// TestMarkerLogMigrated: a file whose marker_log predates its expires_at column
// opens (New adds the column), its rows never expire, and new writes expire by
// their writer's retention.
func TestMarkerLogMigrated(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "pipestate.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE marker_log (
		seq INTEGER PRIMARY KEY AUTOINCREMENT, pipeline_id TEXT NOT NULL, schedule_id TEXT NOT NULL,
		date TEXT NOT NULL, written_at TEXT NOT NULL, body TEXT NOT NULL);
		CREATE INDEX marker_log_by_time ON marker_log (written_at);
		INSERT INTO marker_log (pipeline_id, schedule_id, date, written_at, body)
		VALUES ('orders', 'daily', '2026-03-01', '2000-01-01T00:00:00.000000000Z',
		  '{"pipelineId":"orders","scheduleId":"daily","date":"2026-03-01","source":"old"}')`); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	p := open(t, path, sqlite.WithClock(func() time.Time { return now }), sqlite.WithMarkerLogRetention(time.Hour))
	if err := p.WriteCascadeMarker(ctx, "orders", "", "2026-03-02", "upstream"); err != nil {
		t.Fatal(err)
	}
	got := records(t, watch(ctx, p, ""), 2, "watch of a migrated log")
	if got[0].Marker.Date != "2026-03-01" || got[1].Marker.Date != "2026-03-02" {
		t.Errorf("watch of a migrated log = %+v, want the old write and the new one", got)
	}
}

// TestMarkerWatchOvertaken: a watch whose next write is deleted before it reads it
// ends with ErrCursorExpired instead of skipping the write.
func TestMarkerWatchOvertaken(t *testing.T) {
	ctx := t.Context()
	now := time.Now()
	p := open(t, filepath.Join(t.TempDir(), "pipestate.db"),
		sqlite.WithClock(func() time.Time { return now }), sqlite.WithMarkerLogRetention(time.Hour))
	write := func(date string) {
		t.Helper()
		if err := p.WriteCascadeMarker(ctx, "orders", "", date, "upstream"); err != nil {
			t.Fatalf("WriteCascadeMarker: %v", err)
		}
	}
	write("2026-03-01")
	// Pulled one at a time, the watch stays inside the yield of the first write
	// while the next two are written and the second one's row is deleted.
	next, stop := iter.Pull2(p.WatchCascadeMarkers(ctx, ""))
	defer stop()
	if r, err, ok := next(); err != nil || !ok || r.Marker.Date != "2026-03-01" {
		t.Fatalf("first write: %+v, %v, %v", r, err, ok)
	}
	now = now.Add(2 * time.Hour)
	write("2026-03-02")
	now = now.Add(2 * time.Hour)
	write("2026-03-03") // deletes the 2026-03-02 row, the watch's next write
	if r, err, ok := next(); !errors.Is(err, provider.ErrCursorExpired) {
		t.Fatalf("watch after its next write was deleted: %+v, %v, %v; want ErrCursorExpired", r, err, ok)
	}
	if _, _, ok := next(); ok {
		t.Error("the watch went on after ErrCursorExpired")
	}
}

// TestFollowWakesInProcess: with polls an hour apart, a follower and a watcher
// still get a write through another Provider on the same path at once, and end
// with ErrClosed as soon as their Provider stops.
func TestFollowWakesInProcess(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "pipestate.db")
	p := open(t, path, sqlite.WithMaxPollInterval(time.Hour))
	writer := open(t, path)
	events := consume(p.FollowEvents(ctx, "orders", ""))
	markers := watch(ctx, p, "")
	// Idle for 1.5s, the next polls are at about 1.27s and 2.55s.
	time.Sleep(1500 * time.Millisecond)
	const prompt = 800 * time.Millisecond // before the next poll, with room for a loaded machine
	if err := writer.AppendEvent(ctx, types.Event{Kind: "K", PipelineID: "orders"}); err != nil {
		t.Fatal(err)
	}
	if it := receive(t, events, prompt, "follower woken by an append"); it.err != nil || it.r.Event.PipelineID != "orders" {
		t.Errorf("follower: %+v, %v", it.r, it.err)
	}
	// The append woke the watcher too, which read nothing and waits for its next
	// poll, a second or more away.
	if err := writer.WriteCascadeMarker(ctx, "orders", "", "2026-03-01", "upstream"); err != nil {
		t.Fatal(err)
	}
	if it := receive(t, markers, prompt, "watcher woken by a marker write"); it.err != nil || it.r.Marker.Date != "2026-03-01" {
		t.Errorf("watcher: %+v, %v", it.r, it.err)
	}
	time.Sleep(100 * time.Millisecond) // both wait again
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	endsWith(t, events, provider.ErrClosed, "follower of a stopped provider")
	endsWith(t, markers, provider.ErrClosed, "watcher of a stopped provider")
}

// writerEnv names the database file TestWriterProcess writes to.
const writerEnv = "PIPESTATE_SQLITE_WRITER_DB"

// TestFollowAcrossProcesses: a follower and a watcher get, by polling, every write
// that another process (TestWriterProcess) makes, in order.
func TestFollowAcrossProcesses(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "pipestate.db")
	p := open(t, path)
	events := consume(p.FollowEvents(ctx, "orders", ""))
	markers := watch(ctx, p, "")
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestWriterProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), writerEnv+"="+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("writer process: %v\n%s", err, out)
	}
	for i, r := range records(t, events, writerEvents, "events from another process") {
		if r.Event.Details["i"] != float64(i) {
			t.Errorf("event %d has details %v", i, r.Event.Details)
		}
	}
	for i, r := range records(t, markers, writerMarkers, "markers from another process") {
		if want := fmt.Sprintf("2026-03-%02d", i+1); r.Marker.Date != want {
			t.Errorf("marker %d has date %s, want %s", i, r.Marker.Date, want)
		}
	}
}

// What TestWriterProcess writes.
const writerEvents, writerMarkers = 20, 3

// TestWriterProcess is the other process of TestFollowAcrossProcesses; it skips
// unless that test runs it.
func TestWriterProcess(t *testing.T) {
	path := os.Getenv(writerEnv)
	if path == "" {
		t.Skip("the writer process of TestFollowAcrossProcesses")
	}
	p := open(t, path)
	for i := range writerEvents {
		if err := p.AppendEvent(t.Context(), types.Event{Kind: "K", PipelineID: "orders", Details: map[string]any{"i": i}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range writerMarkers {
		if err := p.WriteCascadeMarker(t.Context(), "orders", "", fmt.Sprintf("2026-03-%02d", i+1), "upstream"); err != nil {
			t.Fatal(err)
		}
	}
}
