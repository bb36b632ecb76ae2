package redisprovider_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/signal/signaltest"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/redisprovider"
	"github.com/pipestate/pipestate/types"
)

// corruptValue is what corruptRecord writes: JSON cut short, as a flipped or
// lost byte leaves it.
const corruptValue = `{"corrupt": tru`

// corruptRecord is the harnesses' Harness.Corrupt: it writes corruptValue over
// a record's JSON by hand, with the raw commands an operator would use (HSET,
// SET, RPUSH, XADD) on the keys of the schema in the package doc, leaving the
// record's other fields and its list entries as they are.
func corruptRecord(t *testing.T, c goredis.UniversalClient, prefix string, kind provider.RecordKind, id ...string) {
	t.Helper()
	ctx := context.Background()
	pipe := func(pid string) string { return prefix + ":{" + pid + "}" }
	slot := func() string { return id[1] + "\x00" + types.ScheduleOrDefault(id[2]) }
	var err error
	switch kind {
	case provider.KindPipeline:
		err = c.HSet(ctx, pipe(id[0])+":config", "j", corruptValue).Err()
	case provider.KindTrait:
		// No expiry prefix and no expiry index entry: a value written by hand.
		err = c.HSet(ctx, pipe(id[0])+":traits", id[1], corruptValue).Err()
	case provider.KindRunState:
		err = c.HSet(ctx, prefix+":{run:"+id[0]+"}", "j", corruptValue).Err()
	case provider.KindEvent:
		err = c.XAdd(ctx, &goredis.XAddArgs{Stream: pipe(id[0]) + ":events", Values: []any{"e", corruptValue}}).Err()
	case provider.KindRunLog:
		err = c.HSet(ctx, pipe(id[0])+":runlogs", slot(), corruptValue).Err()
	case provider.KindRerun:
		err = c.HSet(ctx, prefix+":{rerun:"+id[0]+"}", "j", corruptValue).Err()
	case provider.KindReplay:
		err = c.HSet(ctx, pipe(id[0])+":replay:"+id[1]+":"+types.ScheduleOrDefault(id[2]), "j", corruptValue).Err()
	case provider.KindLateArrival:
		err = c.RPush(ctx, pipe(id[0])+":late:"+id[1]+":"+types.ScheduleOrDefault(id[2]), corruptValue).Err()
	case provider.KindCascadeMarker:
		err = c.HSet(ctx, pipe(id[0])+":markers", slot(), corruptValue).Err()
	case provider.KindMarkerWrite:
		log := prefix + ":{:markers}"
		info, ierr := c.XInfoStream(ctx, log).Result()
		if ierr != nil {
			t.Fatalf("corrupt %s: %v", kind, ierr)
		}
		// The entry keeps the field a watcher's gap check reads; its marker is corrupt.
		err = c.XAdd(ctx, &goredis.XAddArgs{Stream: log, Values: []any{"m", corruptValue, "p", info.LastGeneratedID}}).Err()
	case provider.KindReadiness:
		err = c.SetArgs(ctx, pipe(id[0])+":readiness", corruptValue, goredis.SetArgs{KeepTTL: true}).Err()
	case provider.KindLock:
		err = c.SetArgs(ctx, prefix+":{lock:"+id[0]+"}", corruptValue, goredis.SetArgs{KeepTTL: true}).Err()
	default:
		t.Fatalf("corrupt: unknown kind %q", kind)
	}
	if err != nil {
		t.Fatalf("corrupt %s %v: %v", kind, id, err)
	}
}

// TestCorruptSignals: each corrupt record a listing skips is counted, logged
// with its key and put on the listing's span, on miniredis and the real servers.
func TestCorruptSignals(t *testing.T) {
	for _, c := range []struct {
		name   string
		client func(t *testing.T) goredis.UniversalClient
	}{
		{"miniredis", func(t *testing.T) goredis.UniversalClient {
			return goredis.NewClient(&goredis.Options{Addr: miniredis.RunT(t).Addr()})
		}},
		{"redis", func(t *testing.T) goredis.UniversalClient { return realClient(t) }},
		{"cluster", func(t *testing.T) goredis.UniversalClient { return clusterClient(t) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			client := c.client(t)
			prefix := "pst:" + testenv.RedisPrefix(t)
			sig := signaltest.NewSignals()
			p := openProvider(t, client, redisprovider.WithKeyPrefix(prefix), redisprovider.WithMeterProvider(sig.Meter), redisprovider.WithLogger(sig.Log))
			sig.CheckCorrupt(t, "redis", p, func(kind provider.RecordKind, id ...string) {
				corruptRecord(t, client, prefix, kind, id...)
			})
		})
	}
}

// TestCorruptReadOnlyListing: a read-only provider's listing (which repairs
// nothing) skips a corrupt record as a writer's does: the good records, limit of
// them when there are that many, and one report.
func TestCorruptReadOnlyListing(t *testing.T) {
	ctx := context.Background()
	client := goredis.NewClient(&goredis.Options{Addr: miniredis.RunT(t).Addr()})
	w := openProvider(t, client, redisprovider.WithKeyPrefix("t"))
	r := openProvider(t, client, redisprovider.WithKeyPrefix("t"), redisprovider.WithReadOnly())
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 4 {
		run := types.RunState{RunID: fmt.Sprintf("r%d", i), PipelineID: "p", Status: types.RunPending, CreatedAt: at.Add(time.Duration(i) * time.Minute)}
		if err := w.PutRunState(ctx, run); err != nil {
			t.Fatal(err)
		}
	}
	corruptRecord(t, client, "t", provider.KindRunState, "r2") // second newest
	for _, c := range []struct {
		limit int
		want  string
	}{{10, "[r3 r1 r0]"}, {2, "[r3 r1]"}} {
		var reported []*provider.CorruptError
		list, err := r.ListRuns(provider.OnCorrupt(ctx, func(e *provider.CorruptError) { reported = append(reported, e) }), "p", c.limit)
		var got []string
		for _, run := range list {
			got = append(got, run.RunID)
		}
		if err != nil || fmt.Sprint(got) != c.want || len(reported) != 1 || reported[0].ID != "r2" {
			t.Errorf("read-only ListRuns(%d): %v, %v, reported %v; want %s and r2 reported once", c.limit, got, err, reported, c.want)
		}
	}
}

// TestCorruptFields: besides a record's JSON (the conformance suite's
// Harness.Corrupt), a truth's sequence, an event entry without its field and a
// marker log entry whose link to the entry before it is not a stream ID are
// corrupt records too: skipped and reported, never fatal to the listing.
func TestCorruptFields(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		put    func(p *redisprovider.Provider) error
		raw    func(c goredis.UniversalClient) error
		list   func(ctx context.Context, p *redisprovider.Provider) (int, error)
		listed int
	}{
		{"run sequence", func(p *redisprovider.Provider) error {
			for _, id := range []string{"r1", "r2"} {
				if err := p.PutRunState(ctx, types.RunState{RunID: id, PipelineID: "p", Status: types.RunPending}); err != nil {
					return err
				}
			}
			return nil
		}, func(c goredis.UniversalClient) error { return c.HSet(ctx, "t:{run:r1}", "s", "seven").Err() },
			func(ctx context.Context, p *redisprovider.Provider) (int, error) {
				l, err := p.ListRuns(ctx, "p", 10)
				return len(l), err
			}, 1},
		{"event without its field", func(p *redisprovider.Provider) error {
			return p.AppendEvent(ctx, types.Event{Kind: "K", PipelineID: "p"})
		}, func(c goredis.UniversalClient) error {
			return c.XAdd(ctx, &goredis.XAddArgs{Stream: "t:{p}:events", Values: []any{"x", "y"}}).Err()
		}, func(ctx context.Context, p *redisprovider.Provider) (int, error) {
			l, err := p.ListEvents(ctx, "p", 10)
			return len(l), err
		}, 1},
		{"marker write without its link", func(p *redisprovider.Provider) error {
			return p.WriteCascadeMarker(ctx, "p", "", "2026-01-01", "up")
		}, func(c goredis.UniversalClient) error {
			return c.XAdd(ctx, &goredis.XAddArgs{Stream: "t:{:markers}", Values: []any{"m", "{}"}}).Err()
		}, func(ctx context.Context, p *redisprovider.Provider) (int, error) {
			if err := p.WriteCascadeMarker(ctx, "p", "", "2026-01-02", "up"); err != nil {
				return 0, err
			}
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			n := 0
			for _, err := range p.WatchCascadeMarkers(ctx, "") {
				if err != nil {
					return n, err
				}
				if n++; n == 2 {
					break
				}
			}
			return n, nil
		}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			client := goredis.NewClient(&goredis.Options{Addr: miniredis.RunT(t).Addr()})
			p := openProvider(t, client, redisprovider.WithKeyPrefix("t"))
			if err := c.put(p); err != nil {
				t.Fatal(err)
			}
			if err := c.raw(client); err != nil {
				t.Fatal(err)
			}
			var reported []*provider.CorruptError
			n, err := c.list(provider.OnCorrupt(ctx, func(e *provider.CorruptError) { reported = append(reported, e) }), p)
			if err != nil || n != c.listed || len(reported) != 1 {
				t.Errorf("listing: %d records, %v, reported %v; want %d, nil and one report", n, err, reported, c.listed)
			}
		})
	}
}

// TestCorruptStreamEntryFields walks every field of an event entry (e, p) and
// of a marker-log entry (m, p), each missing or not what it should be, in an
// entry between two good ones: only that entry is skipped and reported, every
// reader (ReadEventsSince from "" and from the cursor before it, FollowEvents,
// WatchCascadeMarkers) moves past it, and no cursor looks expired. Before, an
// event entry whose p was not a stream ID was delivered as a good event.
func TestCorruptStreamEntryFields(t *testing.T) {
	ctx := context.Background()
	good := `{"kind":"K","pipelineId":"p","message":"hand"}`
	for _, c := range []struct {
		name   string
		values func(prev string) []any
	}{
		{"e missing", func(prev string) []any { return []any{"p", prev} }},
		{"e not JSON", func(prev string) []any { return []any{"e", corruptValue, "p", prev} }},
		{"p not a stream ID", func(string) []any { return []any{"e", good, "p", "seven"} }},
		{"p empty", func(string) []any { return []any{"e", good, "p", ""} }},
	} {
		t.Run("event/"+c.name, func(t *testing.T) {
			client := goredis.NewClient(&goredis.Options{Addr: miniredis.RunT(t).Addr()})
			p := openProvider(t, client, redisprovider.WithKeyPrefix("t"))
			if err := p.AppendEvent(ctx, types.Event{Kind: "K", PipelineID: "p", Message: "1"}); err != nil {
				t.Fatal(err)
			}
			first, err := p.ReadEventsSince(ctx, "p", "", 1)
			if err != nil || len(first) != 1 {
				t.Fatal(first, err)
			}
			bad, err := client.XAdd(ctx, &goredis.XAddArgs{Stream: "t:{p}:events", Values: c.values(first[0].StreamID)}).Result()
			if err != nil {
				t.Fatal(err)
			}
			if err := p.AppendEvent(ctx, types.Event{Kind: "K", PipelineID: "p", Message: "3"}); err != nil {
				t.Fatal(err)
			}
			for _, cursor := range []string{"", first[0].StreamID} {
				var reported []string
				rctx := provider.OnCorrupt(ctx, func(e *provider.CorruptError) { reported = append(reported, e.ID) })
				recs, err := p.ReadEventsSince(rctx, "p", cursor, 10)
				var got []string
				for _, r := range recs {
					got = append(got, r.Event.Message)
				}
				want := "[1 3]"
				if cursor != "" {
					want = "[3]"
				}
				if err != nil || fmt.Sprint(got) != want || fmt.Sprint(reported) != "[p:"+bad+"]" {
					t.Errorf("ReadEventsSince(%q) = %v, %v, reported %v; want %s, nil, [p:%s]", cursor, got, err, reported, want, bad)
				}
			}
			var reported []string
			fctx, cancel := context.WithTimeout(provider.OnCorrupt(ctx, func(e *provider.CorruptError) { reported = append(reported, e.ID) }), 10*time.Second)
			defer cancel()
			for r, err := range p.FollowEvents(fctx, "p", first[0].StreamID) {
				if err != nil || r.Event.Message != "3" {
					t.Errorf("FollowEvents(cursor of 1) first yielded %+v, %v; want event 3", r, err)
				}
				break
			}
			if fmt.Sprint(reported) != "[p:"+bad+"]" {
				t.Errorf("FollowEvents reported %v, want [p:%s]", reported, bad)
			}
		})
	}
	// A corrupt entry, then a deleted (XDEL) one: a read from the cursor
	// before them skips the corrupt entry and meets the gap. Before, every
	// count above 1 returned no events and no error, for ever (gapFree cut the
	// page after the corrupt entry and the read stopped there).
	t.Run("event/corrupt then XDEL'd", func(t *testing.T) {
		client := goredis.NewClient(&goredis.Options{Addr: miniredis.RunT(t).Addr()})
		p := openProvider(t, client, redisprovider.WithKeyPrefix("t"))
		if err := p.AppendEvent(ctx, types.Event{Kind: "K", PipelineID: "p", Message: "1"}); err != nil {
			t.Fatal(err)
		}
		first, err := p.ReadEventsSince(ctx, "p", "", 1)
		if err != nil || len(first) != 1 {
			t.Fatal(first, err)
		}
		if err := client.XAdd(ctx, &goredis.XAddArgs{Stream: "t:{p}:events", Values: []any{"e", corruptValue, "p", first[0].StreamID}}).Err(); err != nil {
			t.Fatal(err)
		}
		if err := p.AppendEvent(ctx, types.Event{Kind: "K", PipelineID: "p", Message: "2"}); err != nil {
			t.Fatal(err)
		}
		gone, err := client.XRevRangeN(ctx, "t:{p}:events", "+", "-", 1).Result()
		if err != nil || len(gone) != 1 {
			t.Fatal(gone, err)
		}
		if err := p.AppendEvent(ctx, types.Event{Kind: "K", PipelineID: "p", Message: "3"}); err != nil {
			t.Fatal(err)
		}
		if err := client.XDel(ctx, "t:{p}:events", gone[0].ID).Err(); err != nil { // event 2, which 3's p names
			t.Fatal(err)
		}
		for _, count := range []int64{1, 2, 10} {
			recs, err := p.ReadEventsSince(ctx, "p", first[0].StreamID, count)
			if !errors.Is(err, provider.ErrCursorExpired) || len(recs) != 0 {
				t.Errorf("ReadEventsSince(cursor of 1, %d) = %d events, %v; want none, ErrCursorExpired", count, len(recs), err)
			}
			if err != nil && !strings.Contains(err.Error(), "XDEL") {
				t.Errorf("ReadEventsSince(cursor of 1, %d) error %q does not name XDEL", count, err)
			}
			recs, err = p.ReadEventsSince(ctx, "p", "", count)
			if err != nil || len(recs) != 1 || recs[0].Event.Message != "1" {
				t.Errorf("ReadEventsSince(\"\", %d) = %+v, %v; want event 1, nil", count, recs, err)
			}
		}
		fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		for r, err := range p.FollowEvents(fctx, "p", first[0].StreamID) {
			if !errors.Is(err, provider.ErrCursorExpired) {
				t.Errorf("FollowEvents(cursor of 1) first yielded %+v, %v; want ErrCursorExpired", r, err)
			}
			break
		}
	})
	for _, c := range []struct {
		name   string
		values func(prev string) []any
	}{
		{"m missing", func(prev string) []any { return []any{"p", prev} }},
		{"m not JSON", func(prev string) []any { return []any{"m", corruptValue, "p", prev} }},
		{"p not a stream ID", func(string) []any { return []any{"m", `{"pipelineId":"p"}`, "p", "seven"} }},
	} {
		t.Run("marker/"+c.name, func(t *testing.T) {
			client := goredis.NewClient(&goredis.Options{Addr: miniredis.RunT(t).Addr()})
			p := openProvider(t, client, redisprovider.WithKeyPrefix("t"))
			if err := p.WriteCascadeMarker(ctx, "p", "", "2026-01-01", "up"); err != nil {
				t.Fatal(err)
			}
			info, err := client.XInfoStream(ctx, "t:{:markers}").Result()
			if err != nil {
				t.Fatal(err)
			}
			if err := client.XAdd(ctx, &goredis.XAddArgs{Stream: "t:{:markers}", Values: c.values(info.LastGeneratedID)}).Err(); err != nil {
				t.Fatal(err)
			}
			if err := p.WriteCascadeMarker(ctx, "p", "", "2026-01-03", "up"); err != nil {
				t.Fatal(err)
			}
			var reported int
			wctx, cancel := context.WithTimeout(provider.OnCorrupt(ctx, func(*provider.CorruptError) { reported++ }), 10*time.Second)
			defer cancel()
			for r, err := range p.WatchCascadeMarkers(wctx, info.LastGeneratedID) {
				if err != nil || r.Marker.Date != "2026-01-03" {
					t.Errorf("WatchCascadeMarkers(cursor of the first) first yielded %+v, %v; want the third write", r, err)
				}
				break
			}
			if reported != 1 {
				t.Errorf("WatchCascadeMarkers reported %d corrupt entries, want 1", reported)
			}
		})
	}
}

// TestCorruptPrevOnOldest: the oldest entry retained, after a trim, whose p is
// present but not a stream ID is reported as corrupt, not as an entry of an
// older version (that message, before, sent on-call looking for an old
// instance); the cursor before it is expired all the same (whether an event
// after it was trimmed is unknown).
func TestCorruptPrevOnOldest(t *testing.T) {
	ctx := context.Background()
	client := goredis.NewClient(&goredis.Options{Addr: miniredis.RunT(t).Addr()})
	p := openProvider(t, client, redisprovider.WithKeyPrefix("t"))
	if err := p.AppendEvent(ctx, types.Event{Kind: "K", PipelineID: "p", Message: "1"}); err != nil {
		t.Fatal(err)
	}
	first, err := p.ReadEventsSince(ctx, "p", "", 1)
	if err != nil || len(first) != 1 {
		t.Fatal(first, err)
	}
	if err := client.XAdd(ctx, &goredis.XAddArgs{Stream: "t:{p}:events", Values: []any{"e", `{"kind":"K","pipelineId":"p"}`, "p", "seven"}}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := p.AppendEvent(ctx, types.Event{Kind: "K", PipelineID: "p", Message: "3"}); err != nil {
		t.Fatal(err)
	}
	if err := client.XTrimMaxLen(ctx, "t:{p}:events", 2).Err(); err != nil { // event 1
		t.Fatal(err)
	}
	recs, err := p.ReadEventsSince(ctx, "p", first[0].StreamID, 10)
	if !errors.Is(err, provider.ErrCursorExpired) || len(recs) != 0 {
		t.Fatalf("ReadEventsSince(trimmed cursor) = %d events, %v; want ErrCursorExpired", len(recs), err)
	}
	if msg := err.Error(); !strings.Contains(msg, `corrupt field p "seven"`) || strings.Contains(msg, "older version") {
		t.Errorf("ReadEventsSince(trimmed cursor) error %q; want it to name the corrupt field p, not an older version", msg)
	}
}
