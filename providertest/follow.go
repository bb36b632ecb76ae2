package providertest

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// deliveryWait bounds how long a follower or watcher may take to deliver a record
// that was committed: generous, for backends that poll (DynamoDB Streams).
const deliveryWait = 20 * time.Second

// item is one value a sequence yielded.
type item[R any] struct {
	r   R
	err error
}

// consume iterates seq on a goroutine until ctx ends or the sequence does, sending
// what it yields; the channel closes when the sequence ends.
func consume[R any](seq iter.Seq2[R, error]) <-chan item[R] {
	out := make(chan item[R], 1024)
	go func() {
		defer close(out)
		for r, err := range seq {
			out <- item[R]{r, err}
		}
	}()
	return out
}

// take receives n records from ch, failing the test on an error, an early end or a
// wait longer than deliveryWait.
func take[R any](t *testing.T, ch <-chan item[R], n int, what string) []R {
	t.Helper()
	return takeWithin(t, ch, n, deliveryWait, what)
}

// takeWithin is take with a wait of at most wait.
func takeWithin[R any](t *testing.T, ch <-chan item[R], n int, wait time.Duration, what string) []R {
	t.Helper()
	var out []R
	timeout := time.After(wait)
	for len(out) < n {
		select {
		case it, ok := <-ch:
			if !ok {
				t.Fatalf("%s: sequence ended after %d of %d records", what, len(out), n)
			}
			if it.err != nil {
				t.Fatalf("%s: error after %d of %d records: %v", what, len(out), n, it.err)
			}
			out = append(out, it.r)
		case <-timeout:
			t.Fatalf("%s: %d of %d records after %v", what, len(out), n, wait)
		}
	}
	return out
}

// endsWith waits for the sequence to yield an error wrapping target and end.
func endsWith[R any](t *testing.T, ch <-chan item[R], target error, what string) {
	t.Helper()
	timeout := time.After(deliveryWait)
	var last error
	for {
		select {
		case it, ok := <-ch:
			if !ok {
				if !errors.Is(last, target) {
					t.Errorf("%s: ended with %v, want an error wrapping %v", what, last, target)
				}
				return
			}
			if it.err != nil {
				last = it.err
			}
		case <-timeout:
			t.Fatalf("%s: did not end within %v", what, deliveryWait)
		}
	}
}

func followEvents(t *testing.T, ctx context.Context, p provider.Provider, pipelineID, cursor string) <-chan item[types.EventRecord] {
	return consume(p.(provider.EventFollower).FollowEvents(ctx, pipelineID, cursor))
}

func appendEventsN(t *testing.T, p provider.Provider, pipelineID string, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		noErr(t, p.AppendEvent(t.Context(), types.Event{Kind: "K", PipelineID: pipelineID, Details: map[string]any{"i": float64(i)}}), "AppendEvent")
	}
}

// readLog reads the whole log with ReadEventsSince, the order every reader sees.
func readLog(t *testing.T, p provider.Provider, pipelineID string) []types.EventRecord {
	t.Helper()
	recs, err := p.ReadEventsSince(t.Context(), pipelineID, "", listAll)
	noErr(t, err, "ReadEventsSince")
	return recs
}

// RunEventFollower tests provider.EventFollower: following from the start and from
// a cursor, events appended while following (by 8 concurrent writers: each once, in
// the log's order), resuming after a cancel, two followers agreeing, followers
// of prefix-related pipelines that yield nothing of each other's, neither
// before their own last event nor after it (a sentinel comes next), a cursor
// whose successors retention dropped failing with ErrCursorExpired
// (Harness.ExpireEvents, and Harness.OpenMaxEvents for a log kept by count), the
// end on cancel, and bad input. It skips when the provider is not an EventFollower.
func RunEventFollower(t *testing.T, h Harness) {
	t.Helper()
	group(t, "EventFollower", h, func(t *testing.T, s *suite) {
		if _, ok := s.open(t).(provider.EventFollower); !ok {
			t.Skip("provider is not a provider.EventFollower")
		}
		s.run(t, "from_start_then_live", testEventFollowerFromStartThenLive)
		s.run(t, "from_cursor", testEventFollowerFromCursor)
		s.run(t, "concurrent_writers", testEventFollowerConcurrentWriters)
		s.run(t, "resume_after_cancel", testEventFollowerResumeAfterCancel)
		s.run(t, "two_followers_agree", testEventFollowerTwoFollowersAgree)
		s.run(t, "no_neighbour_events", testEventFollowerNoNeighbourEvents)
		s.run(t, "expired_cursor_fails", testEventFollowerExpiredCursorFails)
		s.run(t, "count_retention_expires_old_cursor", testEventFollowerCountRetentionExpiresOldCursor)
		s.run(t, "ends_on_cancel", testEventFollowerEndsOnCancel)
		s.run(t, "bad_input", testEventFollowerBadInput)
	})
}

func testEventFollowerFromStartThenLive(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	appendEventsN(t, p, k.pipeline, 0, 3)
	ch := followEvents(t, t.Context(), p, k.pipeline, "")
	got := take(t, ch, 3, "follow from the start")
	writer := s.open(t)
	appendEventsN(t, writer, k.pipeline, 3, 2)
	got = append(got, take(t, ch, 2, "follow live")...)
	same(t, "followed events", readLog(t, p, k.pipeline), got)
}

func testEventFollowerFromCursor(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	appendEventsN(t, p, k.pipeline, 0, 4)
	all := readLog(t, p, k.pipeline)
	got := take(t, followEvents(t, t.Context(), p, k.pipeline, all[1].StreamID), 2, "follow from the 2nd cursor")
	same(t, "events after the cursor", all[2:], got)
}

func testEventFollowerConcurrentWriters(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	ch := followEvents(t, t.Context(), p, k.pipeline, "")
	const writers, each = 8, 10
	var wg sync.WaitGroup
	start := time.Now()
	for w := range writers {
		q := s.open(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := q.AppendEvent(t.Context(), types.Event{Kind: "K", PipelineID: k.pipeline, Details: map[string]any{"w": float64(w), "i": float64(i)}}); err != nil {
					t.Errorf("AppendEvent: %v", err)
				}
			}
		}()
	}
	// The follower delivers while the writers append. Contended appends
	// can take long on a slow server (80 took 44 s on a loaded DynamoDB
	// Local), and the follower reads on the same server: the records still
	// missing when the writers are done get deliveryWait plus as long as
	// the writes took.
	wg.Wait()
	if t.Failed() {
		t.FailNow() // a write failed: the follower cannot deliver it
	}
	got := takeWithin(t, ch, writers*each, deliveryWait+time.Since(start), "follow while 8 writers append")
	same(t, "followed events (each once, in log order)", readLog(t, p, k.pipeline), got)
}

func testEventFollowerResumeAfterCancel(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	appendEventsN(t, p, k.pipeline, 0, 5)
	ctx, cancel := context.WithCancel(t.Context())
	ch := followEvents(t, ctx, p, k.pipeline, "")
	first := take(t, ch, 2, "follow before the cancel")
	cancel()
	for range ch { // drain to the end
	}
	appendEventsN(t, p, k.pipeline, 5, 2)
	rest := take(t, followEvents(t, t.Context(), p, k.pipeline, first[1].StreamID), 5, "resumed follow")
	same(t, "events across the cancel", readLog(t, p, k.pipeline), append(first, rest...))
}

func testEventFollowerTwoFollowersAgree(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	a := followEvents(t, t.Context(), p, k.pipeline, "")
	b := followEvents(t, t.Context(), s.open(t), k.pipeline, "")
	appendEventsN(t, s.open(t), k.pipeline, 0, 6)
	same(t, "the second follower's events", take(t, a, 6, "follower a"), take(t, b, 6, "follower b"))
}

func testEventFollowerExpiredCursorFails(t *testing.T, s *suite) {
	if s.h.ExpireEvents == nil {
		t.Skip("Harness.ExpireEvents is nil")
	}
	p, k := s.open(t), newIDs(t)
	appendEventsN(t, p, k.pipeline, 0, 3)
	old := readLog(t, p, k.pipeline)
	s.h.ExpireEvents(t, k.pipeline)
	// Events after the first two cursors were dropped: a follow from one
	// fails before it yields anything, also while the log is empty, and
	// never yields the events after the gap as if nothing were missing.
	wantExpired(t, followEvents(t, t.Context(), s.open(t), k.pipeline, old[0].StreamID),
		"follow from the cursor of a dropped event whose successors were dropped, the log empty")
	appendEventsN(t, p, k.pipeline, 3, 2)
	wantExpired(t, followEvents(t, t.Context(), s.open(t), k.pipeline, old[1].StreamID),
		"follow from the cursor of a dropped event whose successors were dropped, after new appends")
	// Nothing after the newest dropped event was dropped: its follow goes on
	// with the new events, as does a follow from "" (the oldest retained).
	kept := readLog(t, p, k.pipeline)
	same(t, "follow from the cursor of the newest dropped event", kept,
		take(t, followEvents(t, t.Context(), s.open(t), k.pipeline, old[2].StreamID), 2, "follow from the newest dropped event"))
	same(t, `follow from "" after retention`, kept, take(t, followEvents(t, t.Context(), p, k.pipeline, ""), 2, `follow from ""`))
}

func testEventFollowerCountRetentionExpiresOldCursor(t *testing.T, s *suite) {
	if s.h.OpenMaxEvents == nil {
		t.Skip("Harness.OpenMaxEvents is nil: the provider does not retain events by count")
	}
	p, k := s.h.OpenMaxEvents(t, maxEventsKept), newIDs(t)
	appendEventsN(t, p, k.pipeline, 0, 1)
	first := readLog(t, p, k.pipeline)[0].StreamID
	total := 3*maxEventsKept + 100
	appendEventsN(t, p, k.pipeline, 1, total)
	wantExpired(t, followEvents(t, t.Context(), s.h.OpenMaxEvents(t, maxEventsKept), k.pipeline, first),
		fmt.Sprintf("follow from the first of %d events, with a retention of %d", total+1, maxEventsKept))
}

func testEventFollowerEndsOnCancel(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	ctx, cancel := context.WithCancel(t.Context())
	ch := followEvents(t, ctx, p, k.pipeline, "")
	time.AfterFunc(50*time.Millisecond, cancel)
	endsWith(t, ch, context.Canceled, "follow after cancel")
}

// testEventFollowerBadInput runs the bad-input table (bad_input/...) of the EventFollower group.
func testEventFollowerBadInput(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	for _, b := range badIDs {
		endsWith(t, followEvents(t, t.Context(), p, b.id, ""), provider.ErrInvalidArgument, fmt.Sprintf("follow pipeline %q", b.id))
	}
	endsWith(t, followEvents(t, t.Context(), p, k.pipeline, "not a cursor"), provider.ErrInvalidArgument, "follow from a malformed cursor")
}

func watchMarkers(ctx context.Context, p provider.Provider, cursor string) <-chan item[types.CascadeMarkerRecord] {
	return consume(p.(provider.MarkerWatcher).WatchCascadeMarkers(ctx, cursor))
}

// untilMarkers receives records until every marker key of want was seen at least
// want[key] times, and returns the records.
func untilMarkers(t *testing.T, ch <-chan item[types.CascadeMarkerRecord], want map[string]int, what string) []types.CascadeMarkerRecord {
	t.Helper()
	seen := map[string]int{}
	var out []types.CascadeMarkerRecord
	timeout := time.After(deliveryWait)
	missing := func() int {
		n := 0
		for key, w := range want {
			n += max(0, w-seen[key])
		}
		return n
	}
	for missing() > 0 {
		select {
		case it, ok := <-ch:
			if !ok || it.err != nil {
				t.Fatalf("%s: ended (%v) with %d writes missing", what, it.err, missing())
			}
			if it.r.Cursor == "" {
				t.Errorf("%s: record without a cursor: %+v", what, it.r)
			}
			seen[markerKey(it.r.Marker)]++
			out = append(out, it.r)
		case <-timeout:
			t.Fatalf("%s: %d writes missing after %v (seen %v)", what, missing(), deliveryWait, seen)
		}
	}
	return out
}

// RunMarkerWatcher tests provider.MarkerWatcher: writes from two instances to
// several pipelines are all delivered (at least once), a rewrite is delivered again,
// a watch resumed from a cursor delivers every later write, a cursor whose
// successors retention dropped fails with ErrCursorExpired, at once, also before
// anything newer is written (Harness.ExpireMarkers,
// and Harness.MaxMarkerWrites for a log kept by count), and bad input. It skips
// when the provider is not a MarkerWatcher.
func RunMarkerWatcher(t *testing.T, h Harness) {
	t.Helper()
	group(t, "MarkerWatcher", h, func(t *testing.T, s *suite) {
		if _, ok := s.open(t).(provider.MarkerWatcher); !ok {
			t.Skip("provider is not a provider.MarkerWatcher")
		}
		s.run(t, "writes_from_two_instances", testMarkerWatcherWritesFromTwoInstances)
		s.run(t, "rewrite_delivered_again", testMarkerWatcherRewriteDeliveredAgain)
		s.run(t, "resume_from_cursor", testMarkerWatcherResumeFromCursor)
		s.run(t, "expired_cursor_fails", testMarkerWatcherExpiredCursorFails)
		s.run(t, "expired_cursor_fails_before_next_write", testMarkerWatcherExpiredCursorFailsBeforeNextWrite)
		s.run(t, "count_retention_expires_old_cursor", testMarkerWatcherCountRetentionExpiresOldCursor)
		s.run(t, "ends_on_cancel", testMarkerWatcherEndsOnCancel)
		s.run(t, "bad_cursor", testMarkerWatcherBadCursor)
	})
}

func testMarkerWatcherWritesFromTwoInstances(t *testing.T, s *suite) {
	a, b, k := s.open(t), s.open(t), newIDs(t)
	ch := watchMarkers(t.Context(), a, "")
	want := map[string]int{}
	for i := range 3 {
		for j, p := range []provider.Provider{a, b} {
			pipeline := fmt.Sprintf("%s-%d", k.pipeline, j)
			date := fmt.Sprintf("2026-03-0%d", i+1)
			noErr(t, p.WriteCascadeMarker(t.Context(), pipeline, "", date, k.other), "WriteCascadeMarker")
			want[markerKey(types.CascadeMarker{PipelineID: pipeline, ScheduleID: types.DefaultScheduleID, Date: date, Source: k.other})] = 1
		}
	}
	recs := untilMarkers(t, ch, want, "watch from the start")
	for _, r := range recs {
		if r.Marker.WrittenAt.IsZero() {
			t.Errorf("delivered marker without WrittenAt: %+v", r)
		}
	}
}

func testMarkerWatcherRewriteDeliveredAgain(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	ch := watchMarkers(t.Context(), p, "")
	noErr(t, p.WriteCascadeMarker(t.Context(), k.pipeline, "", k.date, k.other), "WriteCascadeMarker")
	s.sleep(t, markerGap)
	noErr(t, p.WriteCascadeMarker(t.Context(), k.pipeline, "", k.date, k.other), "WriteCascadeMarker again")
	key := markerKey(types.CascadeMarker{PipelineID: k.pipeline, ScheduleID: types.DefaultScheduleID, Date: k.date, Source: k.other})
	recs := untilMarkers(t, ch, map[string]int{key: 2}, "watch a rewritten marker")
	if recs[0].Marker.WrittenAt.Equal(recs[len(recs)-1].Marker.WrittenAt) {
		t.Errorf("the rewrite was delivered with the first write's WrittenAt %v", recs[0].Marker.WrittenAt)
	}
}

func testMarkerWatcherResumeFromCursor(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	key := func(date string) string {
		return markerKey(types.CascadeMarker{PipelineID: k.pipeline, ScheduleID: types.DefaultScheduleID, Date: date, Source: k.other})
	}
	noErr(t, p.WriteCascadeMarker(t.Context(), k.pipeline, "", "2026-03-01", k.other), "WriteCascadeMarker")
	first := untilMarkers(t, watchMarkers(t.Context(), p, ""), map[string]int{key("2026-03-01"): 1}, "first watch")
	cursor := first[len(first)-1].Cursor
	noErr(t, p.WriteCascadeMarker(t.Context(), k.pipeline, "", "2026-03-02", k.other), "WriteCascadeMarker")
	noErr(t, p.WriteCascadeMarker(t.Context(), k.pipeline, "", "2026-03-03", k.other), "WriteCascadeMarker")
	untilMarkers(t, watchMarkers(t.Context(), s.open(t), cursor), map[string]int{key("2026-03-02"): 1, key("2026-03-03"): 1}, "resumed watch")
}

func testMarkerWatcherExpiredCursorFails(t *testing.T, s *suite) {
	if s.h.ExpireMarkers == nil {
		t.Skip("Harness.ExpireMarkers is nil")
	}
	p, k := s.open(t), newIDs(t)
	key := func(date string) string {
		return markerKey(types.CascadeMarker{PipelineID: k.pipeline, ScheduleID: types.DefaultScheduleID, Date: date, Source: k.other})
	}
	dropped := []string{"2026-03-01", "2026-03-02", "2026-03-03"}
	want := map[string]int{}
	for _, date := range dropped {
		noErr(t, p.WriteCascadeMarker(t.Context(), k.pipeline, "", date, k.other), "WriteCascadeMarker")
		want[key(date)] = 1
	}
	recs := untilMarkers(t, watchMarkers(t.Context(), p, ""), want, "watch before the retention")
	first := recs[slices.IndexFunc(recs, func(r types.CascadeMarkerRecord) bool { return r.Marker.Date == dropped[0] })].Cursor
	s.h.ExpireMarkers(t)
	const kept = "2026-03-04"
	noErr(t, p.WriteCascadeMarker(t.Context(), k.pipeline, "", kept, k.other), "WriteCascadeMarker after the retention")
	// The writes after the first one's cursor are gone: resuming from it
	// fails, and never yields the write after the gap as if nothing were
	// missing.
	wantExpired(t, watchMarkers(t.Context(), s.open(t), first), "watch from the cursor of a write whose successors retention dropped")
	// "" is the oldest write retained: the one after the retention.
	for _, r := range untilMarkers(t, watchMarkers(t.Context(), p, ""), map[string]int{key(kept): 1}, "watch from the start after the retention") {
		if slices.Contains(dropped, r.Marker.Date) {
			t.Errorf("watch from the start delivered %+v, a write that retention dropped", r)
		}
	}
}

func testMarkerWatcherCountRetentionExpiresOldCursor(t *testing.T, s *suite) {
	n := s.h.MaxMarkerWrites
	if n <= 0 {
		t.Skip("Harness.MaxMarkerWrites is zero: the provider does not retain marker writes by count")
	}
	p, k := s.open(t), newIDs(t)
	date := func(i int) string { return fmt.Sprintf("d%05d", i) }
	noErr(t, p.WriteCascadeMarker(t.Context(), k.pipeline, "", date(0), k.other), "WriteCascadeMarker")
	recs := untilMarkers(t, watchMarkers(t.Context(), p, ""), map[string]int{markerKey(types.CascadeMarker{PipelineID: k.pipeline,
		ScheduleID: types.DefaultScheduleID, Date: date(0), Source: k.other}): 1}, "watch the first write")
	first := recs[len(recs)-1].Cursor
	total := max(3*n+100, 301)
	for i := 1; i <= total; i++ {
		noErr(t, p.WriteCascadeMarker(t.Context(), k.pipeline, "", date(i), k.other), "WriteCascadeMarker")
	}
	wantExpired(t, watchMarkers(t.Context(), s.open(t), first),
		fmt.Sprintf("watch from the first of %d writes, with a retention of %d writes", total+1, n))
	// From the start: the writes retained, consecutive up to the last.
	last := markerKey(types.CascadeMarker{PipelineID: k.pipeline, ScheduleID: types.DefaultScheduleID, Date: date(total), Source: k.other})
	var dates []string
	for _, r := range untilMarkers(t, watchMarkers(t.Context(), p, ""), map[string]int{last: 1}, "watch from the start") {
		dates = append(dates, r.Marker.Date)
	}
	if first := dates[0]; first == date(0) || !slices.Equal(dates, datesFrom(first, date, total)) {
		t.Errorf("watch from the start delivered %d writes from %s, want the retained writes (not the first), consecutive up to %s",
			len(dates), first, date(total))
	}
}

func testMarkerWatcherEndsOnCancel(t *testing.T, s *suite) {
	ctx, cancel := context.WithCancel(t.Context())
	ch := watchMarkers(ctx, s.open(t), "")
	time.AfterFunc(50*time.Millisecond, cancel)
	endsWith(t, ch, context.Canceled, "watch after cancel")
}

func testMarkerWatcherBadCursor(t *testing.T, s *suite) {
	endsWith(t, watchMarkers(t.Context(), s.open(t), "not a cursor"), provider.ErrInvalidArgument, "watch from a malformed cursor")
}

// wantExpired receives from a watch or follow that must fail with
// ErrCursorExpired before it yields any record: its cursor's successors are no
// longer retained.
func wantExpired[R any](t *testing.T, ch <-chan item[R], what string) {
	t.Helper()
	select {
	case it, ok := <-ch:
		switch {
		case !ok:
			t.Errorf("%s: ended without an error, want one wrapping ErrCursorExpired", what)
		case it.err == nil:
			t.Errorf("%s: yielded %+v, want an error wrapping ErrCursorExpired first: it never skips records silently", what, it.r)
		case !errors.Is(it.err, provider.ErrCursorExpired):
			t.Errorf("%s: %v, want an error wrapping ErrCursorExpired", what, it.err)
		}
	case <-time.After(deliveryWait):
		t.Errorf("%s: nothing after %v, want an error wrapping ErrCursorExpired", what, deliveryWait)
	}
}

// datesFrom returns date(i) for i from the one that is from to last.
func datesFrom(from string, date func(int) string, last int) []string {
	var out []string
	for i := 0; i <= last; i++ {
		if d := date(i); d >= from {
			out = append(out, d)
		}
	}
	return out
}

// markerKey names a marker write by what identifies the marker and its source.
func markerKey(m types.CascadeMarker) string {
	return m.PipelineID + "|" + m.ScheduleID + "|" + m.Date + "|" + m.Source
}

// testEventFollowerNoNeighbourEvents follows each pipeline of prefixFamily,
// from before and from after the writes, while every pipeline of the family
// appends a tagged event and then its last one. Each follower yields its own
// two events, and nothing of a neighbour's: neither before its own last event
// nor after it. For the second, once every follower has yielded its last
// event, every pipeline appends a sentinel, and each follower's next item must
// be its own sentinel (a follower that reads its pipeline and then every
// pipeline its ID prefixes, page by page, yields the neighbours' events first).
func testEventFollowerNoNeighbourEvents(t *testing.T, s *suite) {
	f := s.open(t).(provider.EventFollower)
	var followers []<-chan item[types.EventRecord]
	for _, id := range prefixFamily {
		followers = append(followers, consume(f.FollowEvents(t.Context(), id, "")))
	}
	w := s.open(t)
	for _, last := range []bool{false, true} {
		for tag, id := range prefixFamily {
			ev := newEvent(id, tag)
			ev.Message = strconv.Itoa(tag)
			if last {
				ev.Message = "end"
			}
			noErr(t, w.AppendEvent(t.Context(), ev), fmt.Sprintf("AppendEvent(%q)", id))
		}
	}
	for _, id := range prefixFamily {
		followers = append(followers, consume(f.FollowEvents(t.Context(), id, "")))
	}
	for i, ch := range followers {
		what := "FollowEvents started before the writes"
		if i >= len(prefixFamily) {
			what = "FollowEvents started after the writes"
		}
		checkFollowed(t, ch, i%len(prefixFamily), what)
	}
	for tag, id := range prefixFamily {
		ev := newEvent(id, tag)
		ev.Message = "sentinel"
		noErr(t, w.AppendEvent(t.Context(), ev), fmt.Sprintf("AppendEvent(%q) of the sentinel", id))
	}
	for i, ch := range followers {
		id := prefixFamily[i%len(prefixFamily)]
		select {
		case it, ok := <-ch:
			switch {
			case !ok || it.err != nil:
				t.Errorf("FollowEvents(%q) ended (%v) after its own last event, want its sentinel next", id, it.err)
			case it.r.Event.PipelineID != id || it.r.Event.Message != "sentinel":
				t.Errorf("FollowEvents(%q) yielded %s:%s (pipeline:message) after its own last event, want %s:sentinel next: "+
					"a follower yields its own pipeline's events only, never a prefix-related neighbour's", id, it.r.Event.PipelineID, it.r.Event.Message, id)
			}
		case <-time.After(deliveryWait):
			t.Errorf("FollowEvents(%q): no sentinel %v after it was appended", id, deliveryWait)
		}
	}
}
