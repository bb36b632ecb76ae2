package redisprovider_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/redisprovider"
	"github.com/pipestate/pipestate/types"
)

// followTargets returns a client of miniredis and, when REDIS_ADDR is set, of the
// real server, each with a fresh key prefix.
func followTargets(t *testing.T) map[string]func(t *testing.T) (*goredis.Client, string) {
	targets := map[string]func(t *testing.T) (*goredis.Client, string){
		"miniredis": func(t *testing.T) (*goredis.Client, string) {
			m := miniredis.RunT(t)
			c := goredis.NewClient(&goredis.Options{Addr: m.Addr()})
			t.Cleanup(func() { _ = c.Close() })
			return c, "f"
		},
	}
	if testenv.RedisWanted() {
		targets["redis"] = func(t *testing.T) (*goredis.Client, string) {
			c := realClient(t)
			prefix := "pst:" + testenv.RedisPrefix(t)
			return c, prefix
		}
	}
	return targets
}

// followed is one value a sequence yielded.
type followed[R any] struct {
	r   R
	err error
}

// drain iterates seq on a goroutine, sending what it yields; the channel closes
// when the sequence ends.
func drain[R any](seq iter.Seq2[R, error]) <-chan followed[R] {
	ch := make(chan followed[R], 64)
	go func() {
		defer close(ch)
		for r, err := range seq {
			ch <- followed[R]{r, err}
		}
	}()
	return ch
}

// lastErr drains the sequence's channel and returns when the channel closed and
// the last error.
func lastErr[R any](t *testing.T, ch <-chan followed[R]) (time.Time, error) {
	t.Helper()
	var err error
	timeout := time.After(10 * time.Second)
	for {
		select {
		case it, ok := <-ch:
			if !ok {
				return time.Now(), err
			}
			if it.err != nil {
				err = it.err
			}
		case <-timeout:
			t.Fatal("the sequence did not end within 10s")
		}
	}
}

// TestFollowBlocksAndEndsAtOnce: an idle follower sends one blocking read (no
// polling), returns within milliseconds of a cancel although its read is blocked
// on the server, and a Stop ends another follower with ErrClosed just as fast.
func TestFollowBlocksAndEndsAtOnce(t *testing.T) {
	for name, target := range followTargets(t) {
		t.Run(name, func(t *testing.T) {
			c, prefix := target(t)
			counter := testenv.CountRedis(c)
			p := openProvider(t, c, redisprovider.WithKeyPrefix(prefix))
			counter.Reset() // Start's script load
			ctx, cancel := context.WithCancel(t.Context())
			ch := drain(p.FollowEvents(ctx, "pipe", ""))
			time.Sleep(300 * time.Millisecond)
			if n := counter.Load(); n != 1 {
				t.Errorf("an idle follower sent %d requests in 300ms, want 1 blocked read", n)
			}
			if err := p.AppendEvent(t.Context(), types.Event{Kind: "K", PipelineID: "pipe"}); err != nil {
				t.Fatal(err)
			}
			if it := <-ch; it.err != nil || it.r.Event.Kind != "K" {
				t.Fatalf("followed %+v, %v; want the appended event", it.r, it.err)
			}
			time.Sleep(50 * time.Millisecond) // the next read blocks
			start := time.Now()
			cancel()
			end, err := lastErr(t, ch)
			if !errors.Is(err, context.Canceled) {
				t.Errorf("follow ended with %v, want context.Canceled", err)
			}
			if d := end.Sub(start); d > 500*time.Millisecond {
				t.Errorf("follow ended %v after the cancel, want at once", d)
			}

			q := openProvider(t, c, redisprovider.WithKeyPrefix(prefix))
			ch = drain(q.FollowEvents(t.Context(), "pipe", ""))
			time.Sleep(50 * time.Millisecond)
			start = time.Now()
			if err := q.Stop(t.Context()); err != nil {
				t.Fatal(err)
			}
			end, err = lastErr(t, ch)
			if !errors.Is(err, provider.ErrClosed) {
				t.Errorf("follow ended with %v after Stop, want ErrClosed", err)
			}
			if d := end.Sub(start); d > 500*time.Millisecond {
				t.Errorf("follow ended %v after Stop, want at once", d)
			}
		})
	}
}

// watchN takes n records from a watch of p from cursor, failing on an error.
func watchN(t *testing.T, p *redisprovider.Provider, cursor string, n int) []types.CascadeMarkerRecord {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var out []types.CascadeMarkerRecord
	for r, err := range p.WatchCascadeMarkers(ctx, cursor) {
		if err != nil {
			t.Fatalf("watch from %q: %v after %d records", cursor, err, len(out))
		}
		if out = append(out, r); len(out) == n {
			break
		}
	}
	return out
}

// watchErr returns the error a watch of p from cursor ends with, failing if it
// yields a record first.
func watchErr(t *testing.T, p *redisprovider.Provider, cursor string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for r, err := range p.WatchCascadeMarkers(ctx, cursor) {
		if err == nil {
			t.Fatalf("watch from %q yielded %+v, want an error", cursor, r)
		}
		return err
	}
	return nil
}

// TestWatchCursorExpired trims the marker log exactly: a cursor whose own write
// was trimmed but none after it resumes; one with trimmed writes after it yields
// ErrCursorExpired, also after the log was trimmed to nothing and written again.
func TestWatchCursorExpired(t *testing.T) {
	for name, target := range followTargets(t) {
		t.Run(name, func(t *testing.T) {
			c, prefix := target(t)
			p := openProvider(t, c, redisprovider.WithKeyPrefix(prefix))
			ctx := t.Context()
			log := prefix + ":{:markers}"
			write := func(date string) {
				t.Helper()
				if err := p.WriteCascadeMarker(ctx, "pipe", "", date, "up"); err != nil {
					t.Fatal(err)
				}
			}
			trim := func(n int64) {
				t.Helper()
				if err := c.XTrimMaxLen(ctx, log, n).Err(); err != nil {
					t.Fatal(err)
				}
			}
			date := func(r types.CascadeMarkerRecord) string { return r.Marker.Date }
			for _, d := range []string{"2026-01-01", "2026-01-02", "2026-01-03"} {
				write(d)
			}
			all := watchN(t, p, "", 3)
			trim(2) // the first write
			if got := watchN(t, p, all[0].Cursor, 1); date(got[0]) != "2026-01-02" {
				t.Errorf("watch from the trimmed first cursor = %s, want 2026-01-02", date(got[0]))
			}
			trim(1) // the second write
			if err := watchErr(t, p, all[0].Cursor); !errors.Is(err, provider.ErrCursorExpired) {
				t.Errorf("watch from a cursor with a trimmed write after it: %v, want ErrCursorExpired", err)
			}
			if got := watchN(t, p, all[1].Cursor, 1); date(got[0]) != "2026-01-03" {
				t.Errorf("watch from the second cursor = %s, want 2026-01-03", date(got[0]))
			}
			trim(0)
			write("2026-01-04")
			if got := watchN(t, p, all[2].Cursor, 1); date(got[0]) != "2026-01-04" {
				t.Errorf("watch from the last cursor after a trim to nothing = %s, want 2026-01-04", date(got[0]))
			}
			if err := watchErr(t, p, all[1].Cursor); !errors.Is(err, provider.ErrCursorExpired) {
				t.Errorf("watch from a cursor whose next write was trimmed: %v, want ErrCursorExpired", err)
			}
			if got := watchN(t, p, "", 1); date(got[0]) != "2026-01-04" {
				t.Errorf("watch from the oldest retained write = %s, want 2026-01-04", date(got[0]))
			}
		})
	}
}

// TestMarkerRetention: WithMaxMarkerWrites bounds the marker log, and a watcher
// left behind by it gets ErrCursorExpired.
func TestMarkerRetention(t *testing.T) {
	for name, target := range followTargets(t) {
		t.Run(name, func(t *testing.T) {
			c, prefix := target(t)
			p := openProvider(t, c, redisprovider.WithKeyPrefix(prefix), redisprovider.WithMaxMarkerWrites(10))
			ctx := t.Context()
			const writes = 300
			var first string
			for i := range writes {
				if err := p.WriteCascadeMarker(ctx, "pipe", "", "2026-01-01", "up"); err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					first = watchN(t, p, "", 1)[0].Cursor
				}
			}
			if n, err := c.XLen(ctx, prefix+":{:markers}").Result(); err != nil || n >= writes {
				t.Errorf("the marker log holds %d of %d writes (%v), want it trimmed", n, writes, err)
			}
			if err := watchErr(t, p, first); !errors.Is(err, provider.ErrCursorExpired) {
				t.Errorf("watch from the first write's cursor: %v, want ErrCursorExpired", err)
			}
		})
	}
}

// TestEventCursorExpired trims a pipeline's stream exactly: a cursor whose own
// event was trimmed but none after it reads on; one with trimmed events after it
// fails with ErrCursorExpired in ReadEventsSince and FollowEvents, also after the
// stream was trimmed to nothing; and an event deleted from the middle (XDEL) ends
// a read before it, whose next read fails.
func TestEventCursorExpired(t *testing.T) {
	for name, target := range followTargets(t) {
		t.Run(name, func(t *testing.T) {
			c, prefix := target(t)
			p := openProvider(t, c, redisprovider.WithKeyPrefix(prefix))
			ctx := t.Context()
			stream := prefix + ":{pipe}:events"
			appendN := func(from, to int) {
				t.Helper()
				for i := from; i < to; i++ {
					if err := p.AppendEvent(ctx, types.Event{Kind: "K", PipelineID: "pipe", Message: strconv.Itoa(i)}); err != nil {
						t.Fatal(err)
					}
				}
			}
			trim := func(n int64) {
				t.Helper()
				if err := c.XTrimMaxLen(ctx, stream, n).Err(); err != nil {
					t.Fatal(err)
				}
			}
			read := func(cursor string) ([]string, error) {
				t.Helper()
				recs, err := p.ReadEventsSince(ctx, "pipe", cursor, 10)
				var out []string
				for _, r := range recs {
					out = append(out, r.Event.Message)
				}
				return out, err
			}
			expired := func(cursor, what string) {
				t.Helper()
				if got, err := read(cursor); !errors.Is(err, provider.ErrCursorExpired) || len(got) > 0 {
					t.Errorf("ReadEventsSince(%s) = %v, %v; want ErrCursorExpired", what, got, err)
				}
				if err := followErr(t, p, cursor); !errors.Is(err, provider.ErrCursorExpired) {
					t.Errorf("FollowEvents(%s): %v, want ErrCursorExpired", what, err)
				}
			}
			reads := func(cursor, what string, want ...string) {
				t.Helper()
				if got, err := read(cursor); err != nil || !slices.Equal(got, want) {
					t.Errorf("ReadEventsSince(%s) = %v, %v; want %v", what, got, err, want)
				}
			}
			appendN(0, 4)
			recs, err := p.ReadEventsSince(ctx, "pipe", "", 10)
			if err != nil || len(recs) != 4 {
				t.Fatalf("ReadEventsSince = %+v, %v", recs, err)
			}
			cursor := func(i int) string { return recs[i].StreamID }
			if name == "miniredis" { // not on a shared server: the others would reload theirs
				if err := c.ScriptFlush(ctx).Err(); err != nil {
					t.Fatal(err)
				}
				reads(cursor(3), "the newest event's cursor, after SCRIPT FLUSH") // the pipelined check reloads
			}
			trim(3) // event 0
			reads(cursor(0), "the trimmed first event's cursor", "1", "2", "3")
			expired("0-1", "0-1, before the trimmed first event")
			trim(2) // event 1
			expired(cursor(0), "a cursor with a trimmed event after it")
			reads(cursor(1), "the trimmed second event's cursor", "2", "3")
			reads(cursor(3), "the newest event's cursor")
			trim(0)
			expired(cursor(1), "a cursor with trimmed events after it, the stream empty")
			reads(cursor(3), "the newest event's cursor, the stream empty")
			reads("", `"", the stream empty`)
			appendN(4, 6)
			reads(cursor(3), "the newest trimmed event's cursor after new appends", "4", "5")
			expired(cursor(2), "a cursor with a trimmed event after it, after new appends")
			reads("", `""`, "4", "5")
			// An entry deleted from the middle: a read stops before the gap.
			appendN(6, 9)
			all, err := p.ReadEventsSince(ctx, "pipe", "", 10)
			if err != nil || len(all) != 5 {
				t.Fatalf("ReadEventsSince = %+v, %v", all, err)
			}
			if err := c.XDel(ctx, stream, all[2].StreamID).Err(); err != nil { // event 6
				t.Fatal(err)
			}
			reads("", `"" with event 6 deleted`, "4", "5")
			expired(all[1].StreamID, "the cursor before a deleted event")
			reads(all[2].StreamID, "the deleted event's cursor", "7", "8")
		})
	}
}

// TestEventCursorLegacyEntries reads a stream whose entries an older version
// appended, without the ID of the entry before each: a cursor in or after the
// retained entries reads on, and one before the oldest entry retained is expired
// once the stream was trimmed (whether an event after it was trimmed is unknown),
// also where new entries follow the old ones.
func TestEventCursorLegacyEntries(t *testing.T) {
	for name, target := range followTargets(t) {
		t.Run(name, func(t *testing.T) {
			c, prefix := target(t)
			p := openProvider(t, c, redisprovider.WithKeyPrefix(prefix))
			ctx := t.Context()
			stream := prefix + ":{pipe}:events"
			var ids []string
			for i := range 4 {
				ev := fmt.Sprintf(`{"kind":"K","pipelineId":"pipe","message":"%d","timestamp":"2026-01-01T00:00:00Z"}`, i)
				id, err := c.XAdd(ctx, &goredis.XAddArgs{Stream: stream, Values: []any{"e", ev}}).Result()
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
			if err := p.AppendEvent(ctx, types.Event{Kind: "K", PipelineID: "pipe", Message: "4"}); err != nil {
				t.Fatal(err)
			}
			count := func(cursor string) (int, error) {
				recs, err := p.ReadEventsSince(ctx, "pipe", cursor, 10)
				return len(recs), err
			}
			if n, err := count(ids[0]); err != nil || n != 4 {
				t.Errorf("ReadEventsSince(a legacy cursor) = %d events, %v; want 4", n, err)
			}
			if err := c.XTrimMaxLen(ctx, stream, 3).Err(); err != nil { // events 0 and 1
				t.Fatal(err)
			}
			for _, i := range []int{0, 1} {
				if n, err := count(ids[i]); !errors.Is(err, provider.ErrCursorExpired) {
					t.Errorf("ReadEventsSince(trimmed legacy cursor %d) = %d events, %v; want ErrCursorExpired", i, n, err)
				}
			}
			if n, err := count(ids[2]); err != nil || n != 2 {
				t.Errorf("ReadEventsSince(a retained legacy cursor) = %d events, %v; want 2", n, err)
			}
		})
	}
}

// followErr returns the error a follow of pipe from cursor ends with, failing if
// it yields an event first.
func followErr(t *testing.T, p *redisprovider.Provider, cursor string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for r, err := range p.FollowEvents(ctx, "pipe", cursor) {
		if err == nil {
			t.Fatalf("follow from %q yielded %+v, want an error", cursor, r)
		}
		return err
	}
	return nil
}
