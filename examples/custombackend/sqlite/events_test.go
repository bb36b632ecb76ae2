package sqlite_test

import (
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the driver the provider uses, for the test's own statements

	"github.com/pipestate/pipestate/examples/custombackend/sqlite"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// readSeqs returns the cursors ReadEventsSince returns from cursor, and its error.
func readSeqs(t *testing.T, p *sqlite.Provider, cursor string) ([]string, error) {
	t.Helper()
	recs, err := p.ReadEventsSince(t.Context(), "orders", cursor, 10)
	var out []string
	for _, r := range recs {
		out = append(out, r.StreamID)
	}
	return out, err
}

// checkRead checks what ReadEventsSince returns from each cursor: the cursors of
// the events, or nil for ErrCursorExpired (and no events).
func checkRead(t *testing.T, p *sqlite.Provider, want map[string][]string) {
	t.Helper()
	for cursor, w := range want {
		got, err := readSeqs(t, p, cursor)
		switch {
		case w == nil && (!errors.Is(err, provider.ErrCursorExpired) || len(got) > 0):
			t.Errorf("ReadEventsSince(%q) = %v, %v; want ErrCursorExpired", cursor, got, err)
		case w != nil && (err != nil || !slices.Equal(got, w)):
			t.Errorf("ReadEventsSince(%q) = %v, %v; want %v", cursor, got, err, w)
		}
	}
}

// TestEventCursorExpiry: retention hides rows out of order (writers with different
// retentions) and a reader stops before the first hidden one; rows deleted by
// hand, as ../README.md suggests for expired ones, expire every cursor before
// them, also other pipelines' rows interleaved in seq left aside.
func TestEventCursorExpiry(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "pipestate.db")
	now := time.Now()
	clock := func() time.Time { return now } // only this goroutine reads it
	short := open(t, path, sqlite.WithClock(clock), sqlite.WithEventRetention(time.Minute))
	long := open(t, path, sqlite.WithClock(clock), sqlite.WithEventRetention(time.Hour))
	for i, p := range []*sqlite.Provider{long, short, long, short, long} {
		if err := p.AppendEvent(ctx, types.Event{Kind: "K", PipelineID: "orders", Message: strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
		// Another pipeline's event between each: seqs of one pipeline have gaps.
		if err := p.AppendEvent(ctx, types.Event{Kind: "K", PipelineID: "other"}); err != nil {
			t.Fatal(err)
		}
	}
	// orders' events are seqs 1, 3, 5, 7, 9; 3 and 7 expire.
	now = now.Add(2 * time.Minute)
	checkRead(t, long, map[string][]string{
		"": {"1"}, "0": {"1"}, "1": nil, "2": nil, "3": {"5"}, "5": nil, "7": {"9"}, "9": {}, "10": {},
	})
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `DELETE FROM events WHERE pipeline_id = 'orders' AND seq <= 3`); err != nil {
		t.Fatal(err)
	}
	// Rows 1 and 3 are deleted: every cursor below 3 is expired; "" starts
	// after the deleted rows.
	checkRead(t, long, map[string][]string{"": {"5"}, "0": nil, "2": nil, "3": {"5"}, "5": nil, "7": {"9"}})
	if _, err := db.ExecContext(ctx, `DELETE FROM events WHERE pipeline_id = 'orders' AND seq <= 9`); err != nil {
		t.Fatal(err)
	}
	checkRead(t, long, map[string][]string{"": {}, "5": nil, "8": nil, "9": {}})
	if err := long.AppendEvent(ctx, types.Event{Kind: "K", PipelineID: "orders"}); err != nil {
		t.Fatal(err)
	}
	checkRead(t, long, map[string][]string{"": {"11"}, "7": nil, "9": {"11"}})
	checkRead(t, short, map[string][]string{"": {"11"}, "9": {"11"}})
}

// TestAppendsPruneExpiredEvents: appends delete expired events (so the table
// stops growing at about one retention of appends), and a cursor before a
// deleted event is expired.
func TestAppendsPruneExpiredEvents(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "pipestate.db")
	now := time.Now()
	clock := func() time.Time { return now } // only this goroutine reads it
	p := open(t, path, sqlite.WithClock(clock), sqlite.WithEventRetention(time.Minute))
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows := func() int {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM events`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// 10 minutes of 20 appends a minute: at most the last minute's 20 rows
	// stay, plus the one that expires at the instant of the next prune.
	for range 10 {
		for range 20 {
			if err := p.AppendEvent(ctx, types.Event{Kind: "K", PipelineID: "orders"}); err != nil {
				t.Fatal(err)
			}
		}
		now = now.Add(time.Minute)
	}
	if n := rows(); n > 20 {
		t.Fatalf("%d event rows after 200 appends over 10 minutes with a minute's retention, want at most 20", n)
	}
	checkRead(t, p, map[string][]string{"0": nil, "100": nil})
}
