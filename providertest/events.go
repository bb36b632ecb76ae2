package providertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// RunEventStore tests provider.EventStore: round trip, filled Timestamp, ListEvents
// (most recent, oldest first, commit order), ReadEventsSince (from the start,
// strictly after a cursor, count, paging), retention (Harness.ExpireEvents and
// Harness.OpenMaxEvents: dropped events invisible, a cursor whose successors were
// dropped expired with ErrCursorExpired, "" from the oldest event retained),
// exactly-once paging while 8 writers on two instances append, aliasing, sizes,
// adversarial pipeline IDs, bad input and cancellation.
func RunEventStore(t *testing.T, h Harness) {
	t.Helper()
	group(t, "EventStore", h, func(t *testing.T, s *suite) {
		s.probe = probeEvents
		s.run(t, "append_list_round_trip", testEventStoreAppendListRoundTrip)
		s.run(t, "append_fills_timestamp", testEventStoreAppendFillsTimestamp)
		s.run(t, "list_empty", testEventStoreListEmpty)
		s.run(t, "list_events_most_recent_oldest_first", testEventStoreListEventsMostRecentOldestFirst)
		s.run(t, "list_events_limit_above_count", testEventStoreListEventsLimitAboveCount)
		s.run(t, "order_is_commit_order", testEventStoreOrderIsCommitOrder)
		s.run(t, "read_since_start", testEventStoreReadSinceStart)
		s.run(t, "read_since_strictly_after", testEventStoreReadSinceStrictlyAfter)
		s.run(t, "read_since_count", testEventStoreReadSinceCount)
		s.run(t, "read_since_pages_exactly_once", testEventStoreReadSincePagesExactlyOnce)
		s.run(t, "read_since_last_cursor_empty", testEventStoreReadSinceLastCursorEmpty)
		s.run(t, "pipelines_independent", testEventStorePipelinesIndependent)
		s.run(t, "append_identical_appends", testEventStoreAppendIdenticalAppends)
		s.run(t, "retention_drops_old_events", testEventStoreRetentionDropsOldEvents)
		s.run(t, "retention_old_cursor_expired", testEventStoreRetentionOldCursorExpired)
		s.run(t, "retention_by_count_expires_old_cursor", testEventStoreRetentionByCountExpiresOldCursor)
		s.run(t, "concurrent_append_paging", testEventStoreConcurrentAppendPaging)
		s.run(t, "no_aliasing", testEventStoreNoAliasing)
		testEventStoreSizes(t, s)
		s.run(t, "adversarial_pipeline_ids", testEventStoreAdversarialPipelineIDs)
		testEventStoreBadInputAndCancelled(t, s)
	})
}

// testEventStoreSizes runs the size subtests (large_value_round_trips, huge_value_too_large_or_stored, huge_update_keeps_old_value) of the EventStore group.
func testEventStoreSizes(t *testing.T, s *suite) {
	s.checkSizes(t, sizeCheck{
		put: func(ctx context.Context, p provider.Provider, k ids, payload string) error {
			ev := newEvent(k.pipeline, 1)
			ev.Details["payload"] = payload
			return p.AppendEvent(ctx, ev)
		},
		read: func(t *testing.T, p provider.Provider, k ids) (string, bool) {
			list, err := p.ListEvents(t.Context(), k.pipeline, 1)
			noErr(t, err, "ListEvents")
			if len(list) == 0 {
				return "", false
			}
			return payloadOf(list[0].Details), true
		},
	})
}

// testEventStoreBadInputAndCancelled runs the bad-input table (bad_input/...) and the cancelled-context subtest of the EventStore group.
func testEventStoreBadInputAndCancelled(t *testing.T, s *suite) {
	setupEvent := func(t *testing.T, p provider.Provider, k ids) {
		t.Helper()
		ev := newEvent(k.pipeline, 0)
		ev.Message = "setup"
		noErr(t, p.AppendEvent(t.Context(), ev), "AppendEvent")
	}
	var bad []badCase
	for _, b := range badIDs {
		bad = append(bad,
			badCase{name: "append_pipeline_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				return p.AppendEvent(ctx, newEvent(b.id, 1))
			}},
			badCase{name: "list_pipeline_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				_, err := p.ListEvents(ctx, b.id, 10)
				return err
			}},
			badCase{name: "read_pipeline_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				_, err := p.ReadEventsSince(ctx, b.id, "", 10)
				return err
			}})
	}
	for _, c := range []struct{ name, cursor string }{{"words", "not a cursor!"}, {"nul", "\x00"}, {"delimiters", "{}#:|"}} {
		cursor := c.cursor
		bad = append(bad, badCase{name: "read_malformed_cursor_" + c.name, setup: setupEvent,
			call: func(ctx context.Context, p provider.Provider, k ids) error {
				_, err := p.ReadEventsSince(ctx, k.pipeline, cursor, 10)
				return err
			}})
	}
	bad = append(bad,
		badCase{name: "append_empty_kind", call: func(ctx context.Context, p provider.Provider, k ids) error {
			ev := newEvent(k.pipeline, 1)
			ev.Kind = ""
			return p.AppendEvent(ctx, ev)
		}},
		badCase{name: "append_kind_too_long", call: func(ctx context.Context, p provider.Provider, k ids) error {
			ev := newEvent(k.pipeline, 1)
			ev.Kind = strings.Repeat("K", types.MaxEventKindLen+1)
			return p.AppendEvent(ctx, ev)
		}},
		badCase{name: "append_bad_run_id", call: func(ctx context.Context, p provider.Provider, k ids) error {
			ev := newEvent(k.pipeline, 1)
			ev.RunID = "run#1"
			return p.AppendEvent(ctx, ev)
		}},
		badCase{name: "list_limit_zero", setup: setupEvent, call: func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.ListEvents(ctx, k.pipeline, 0)
			return err
		}},
		badCase{name: "read_count_zero", setup: setupEvent, call: func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.ReadEventsSince(ctx, k.pipeline, "", 0)
			return err
		}},
		badCase{name: "read_count_negative", setup: setupEvent, call: func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.ReadEventsSince(ctx, k.pipeline, "", -1)
			return err
		}},
	)
	s.checkBadInput(t, bad, func(t *testing.T, p provider.Provider, k ids) {
		t.Helper()
		list, err := p.ListEvents(t.Context(), k.pipeline, 10)
		noErr(t, err, "ListEvents")
		for _, ev := range list {
			if ev.Message != "setup" {
				t.Errorf("a rejected call appended %+v", ev)
			}
		}
	})
	s.checkCancelled(t, []call{
		{"AppendEvent", func(ctx context.Context, p provider.Provider, k ids) error {
			return p.AppendEvent(ctx, newEvent(k.pipeline, 1))
		}},
		{"ListEvents", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.ListEvents(ctx, k.pipeline, 10)
			return err
		}},
		{"ReadEventsSince", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.ReadEventsSince(ctx, k.pipeline, "", 10)
			return err
		}},
	}, nil, func(t *testing.T, p provider.Provider, k ids) {
		t.Helper()
		list, err := p.ListEvents(t.Context(), k.pipeline, 10)
		wantLen(t, list, err, 0, "ListEvents after a cancelled AppendEvent")
	})
}

func testEventStoreAppendListRoundTrip(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	ev := newEvent(k.pipeline, 1)
	noErr(t, p.AppendEvent(t.Context(), ev), "AppendEvent")
	list, err := p.ListEvents(t.Context(), k.pipeline, 10)
	noErr(t, err, "ListEvents")
	same(t, "ListEvents", []types.Event{jsonRoundTrip(t, ev)}, list)
	recs, err := p.ReadEventsSince(t.Context(), k.pipeline, "", 10)
	wantLen(t, recs, err, 1, "ReadEventsSince")
	same(t, "ReadEventsSince", jsonRoundTrip(t, ev), recs[0].Event)
}

func testEventStoreAppendFillsTimestamp(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	ev := newEvent(k.pipeline, 1)
	ev.Timestamp = time.Time{}
	before := s.now(t, p)
	noErr(t, p.AppendEvent(t.Context(), ev), "AppendEvent")
	after := s.now(t, p)
	list, err := p.ListEvents(t.Context(), k.pipeline, 10)
	wantLen(t, list, err, 1, "ListEvents")
	wantWithin(t, "Timestamp", list[0].Timestamp, before, after)
}

func testEventStoreListEmpty(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	list, err := p.ListEvents(t.Context(), k.pipeline, 10)
	wantLen(t, list, err, 0, "ListEvents of a pipeline without events")
	recs, err := p.ReadEventsSince(t.Context(), k.pipeline, "", 10)
	wantLen(t, recs, err, 0, "ReadEventsSince of a pipeline without events")
}

func testEventStoreListEventsMostRecentOldestFirst(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	appendEvents(t, p, k.pipeline, 0, 10)
	list, err := p.ListEvents(t.Context(), k.pipeline, 3)
	noErr(t, err, "ListEvents")
	same(t, "ListEvents(limit 3)", []string{eventName(7), eventName(8), eventName(9)}, eventNames(list))
}

func testEventStoreListEventsLimitAboveCount(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	appendEvents(t, p, k.pipeline, 0, 4)
	list, err := p.ListEvents(t.Context(), k.pipeline, 50)
	noErr(t, err, "ListEvents")
	same(t, "ListEvents(limit 50)", names(0, 4), eventNames(list))
}

func testEventStoreOrderIsCommitOrder(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	for i := range 5 {
		ev := newEvent(k.pipeline, i)
		ev.Timestamp = at(-i) // each event is older than the one before
		noErr(t, p.AppendEvent(t.Context(), ev), "AppendEvent")
	}
	list, err := p.ListEvents(t.Context(), k.pipeline, 10)
	noErr(t, err, "ListEvents")
	same(t, "ListEvents order (append order, not Timestamp order)", names(0, 5), eventNames(list))
	recs := readAll(t, p, k.pipeline, "", 2)
	same(t, "ReadEventsSince order (append order, not Timestamp order)", names(0, 5), recordNames(recs))
}

func testEventStoreReadSinceStart(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	appendEvents(t, p, k.pipeline, 0, 5)
	recs, err := p.ReadEventsSince(t.Context(), k.pipeline, "", 100)
	noErr(t, err, "ReadEventsSince")
	same(t, `ReadEventsSince("")`, names(0, 5), recordNames(recs))
	seen := map[string]bool{}
	for _, r := range recs {
		if r.StreamID == "" || seen[r.StreamID] {
			t.Errorf("StreamID %q is empty or repeated", r.StreamID)
		}
		seen[r.StreamID] = true
	}
}

func testEventStoreReadSinceStrictlyAfter(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	appendEvents(t, p, k.pipeline, 0, 6)
	all := readAll(t, p, k.pipeline, "", 100)
	for i, r := range all {
		recs, err := p.ReadEventsSince(t.Context(), k.pipeline, r.StreamID, 100)
		noErr(t, err, "ReadEventsSince")
		same(t, fmt.Sprintf("ReadEventsSince(cursor of event %d)", i), names(i+1, 6), recordNames(recs))
	}
}

func testEventStoreReadSinceCount(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	appendEvents(t, p, k.pipeline, 0, 10)
	recs, err := p.ReadEventsSince(t.Context(), k.pipeline, "", 3)
	noErr(t, err, "ReadEventsSince")
	same(t, "ReadEventsSince(count 3)", names(0, 3), recordNames(recs))
	recs, err = p.ReadEventsSince(t.Context(), k.pipeline, recs[2].StreamID, 1)
	noErr(t, err, "ReadEventsSince")
	same(t, "ReadEventsSince(count 1)", names(3, 4), recordNames(recs))
}

func testEventStoreReadSincePagesExactlyOnce(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	appendEvents(t, p, k.pipeline, 0, 10)
	recs := readAll(t, q, k.pipeline, "", 3)
	same(t, "paging with count 3", names(0, 10), recordNames(recs))
	appendEvents(t, q, k.pipeline, 10, 12)
	more := readAll(t, p, k.pipeline, recs[len(recs)-1].StreamID, 3)
	same(t, "paging on from the last cursor", names(10, 12), recordNames(more))
}

func testEventStoreReadSinceLastCursorEmpty(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	appendEvents(t, p, k.pipeline, 0, 3)
	all := readAll(t, p, k.pipeline, "", 10)
	recs, err := p.ReadEventsSince(t.Context(), k.pipeline, all[len(all)-1].StreamID, 10)
	wantLen(t, recs, err, 0, "ReadEventsSince(the last cursor)")
}

func testEventStorePipelinesIndependent(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	for i := range 6 {
		pid := []string{k.pipeline, k.other}[i%2]
		noErr(t, p.AppendEvent(t.Context(), newEvent(pid, i)), "AppendEvent")
	}
	for j, pid := range []string{k.pipeline, k.other} {
		want := []string{eventName(j), eventName(j + 2), eventName(j + 4)}
		list, err := p.ListEvents(t.Context(), pid, 10)
		noErr(t, err, "ListEvents")
		same(t, "ListEvents of "+pid, want, eventNames(list))
		same(t, "ReadEventsSince of "+pid, want, recordNames(readAll(t, p, pid, "", 10)))
	}
}

func testEventStoreAppendIdenticalAppends(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	ev := newEvent(k.pipeline, 1) // the same event, Timestamp included, three times
	for range 3 {
		noErr(t, p.AppendEvent(t.Context(), ev), "AppendEvent")
	}
	list, err := p.ListEvents(t.Context(), k.pipeline, 10)
	noErr(t, err, "ListEvents")
	want := jsonRoundTrip(t, ev)
	same(t, "ListEvents after appending one event three times", []types.Event{want, want, want}, list)
	recs := readAll(t, p, k.pipeline, "", 10) // fails on a repeated cursor
	wantLen(t, recs, nil, 3, "ReadEventsSince after appending one event three times")
}

func testEventStoreRetentionDropsOldEvents(t *testing.T, s *suite) {
	if s.h.ExpireEvents == nil {
		t.Skip("Harness.ExpireEvents is nil")
	}
	p, q, k := s.open(t), s.open(t), newIDs(t)
	appendEvents(t, p, k.pipeline, 0, 5)
	s.h.ExpireEvents(t, k.pipeline)
	for _, inst := range []provider.Provider{p, q} {
		list, err := inst.ListEvents(t.Context(), k.pipeline, 10)
		wantLen(t, list, err, 0, "ListEvents after retention dropped every event")
		recs, err := inst.ReadEventsSince(t.Context(), k.pipeline, "", 10)
		wantLen(t, recs, err, 0, `ReadEventsSince("") after retention dropped every event`)
	}
	appendEvents(t, q, k.pipeline, 5, 8)
	for _, inst := range []provider.Provider{p, q} {
		list, err := inst.ListEvents(t.Context(), k.pipeline, 10)
		noErr(t, err, "ListEvents")
		same(t, "ListEvents after retention and new appends", names(5, 8), eventNames(list))
		list, err = inst.ListEvents(t.Context(), k.pipeline, 2)
		noErr(t, err, "ListEvents")
		same(t, "ListEvents(limit 2) after retention", names(6, 8), eventNames(list))
		same(t, `ReadEventsSince("") after retention`, names(5, 8), recordNames(readAll(t, inst, k.pipeline, "", 2)))
	}
}

func testEventStoreRetentionOldCursorExpired(t *testing.T, s *suite) {
	if s.h.ExpireEvents == nil {
		t.Skip("Harness.ExpireEvents is nil")
	}
	p, q, k := s.open(t), s.open(t), newIDs(t)
	appendEvents(t, p, k.pipeline, 0, 4)
	old := readAll(t, p, k.pipeline, "", 10)
	newest := old[len(old)-1].StreamID
	s.h.ExpireEvents(t, k.pipeline)
	check := func(when string, kept []string) {
		t.Helper()
		for _, inst := range []provider.Provider{p, q} {
			// Events after these cursors were dropped: reading on from one
			// fails, and never returns the events after the gap as if
			// nothing were missing, also when the log is empty.
			for i, r := range old[:len(old)-1] {
				recs, err := inst.ReadEventsSince(t.Context(), k.pipeline, r.StreamID, 2)
				wantExpiredRead(t, recs, err, fmt.Sprintf("%s: ReadEventsSince(cursor of dropped event %d, whose successors were dropped)", when, i))
			}
			// Nothing after the newest event was dropped, though it was
			// itself: its cursor is not expired, and the events appended
			// since follow it (new events never reuse old positions).
			same(t, when+": paging from the cursor of the newest dropped event", kept,
				recordNames(readAll(t, inst, k.pipeline, newest, 2)))
			// "" is never expired: the oldest event retained on.
			same(t, when+`: paging from ""`, kept, recordNames(readAll(t, inst, k.pipeline, "", 2)))
		}
	}
	check("after retention dropped every event", nil)
	appendEvents(t, q, k.pipeline, 4, 7)
	check("after retention and new appends", names(4, 7))
	kept := readAll(t, p, k.pipeline, "", 10)
	for _, inst := range []provider.Provider{p, q} {
		recs, err := inst.ReadEventsSince(t.Context(), k.pipeline, kept[len(kept)-1].StreamID, 10)
		wantLen(t, recs, err, 0, "ReadEventsSince(the cursor of the newest event)")
		// The documented way to the oldest event retained and its cursor.
		first, err := inst.ReadEventsSince(t.Context(), k.pipeline, "", 1)
		noErr(t, err, `ReadEventsSince("", 1)`)
		same(t, `ReadEventsSince("", 1) after retention`, names(4, 5), recordNames(first))
		same(t, "paging from the oldest retained event's cursor", names(5, 7),
			recordNames(readAll(t, inst, k.pipeline, first[0].StreamID, 1)))
	}
}

func testEventStoreRetentionByCountExpiresOldCursor(t *testing.T, s *suite) {
	if s.h.OpenMaxEvents == nil {
		t.Skip("Harness.OpenMaxEvents is nil: the provider does not retain events by count")
	}
	const n = maxEventsKept
	p, k := s.h.OpenMaxEvents(t, n), newIDs(t)
	appendEvents(t, p, k.pipeline, 0, 1)
	first := readAll(t, p, k.pipeline, "", 1)[0].StreamID
	total := 3*n + 100
	appendEvents(t, p, k.pipeline, 1, total+1)
	q := s.h.OpenMaxEvents(t, n)
	for _, inst := range []provider.Provider{p, q} {
		recs, err := inst.ReadEventsSince(t.Context(), k.pipeline, first, 10)
		wantExpiredRead(t, recs, err, fmt.Sprintf("ReadEventsSince(the first of %d events, with a retention of %d)", total+1, n))
		// From "": the events retained, consecutive up to the last.
		kept := recordNames(readAll(t, inst, k.pipeline, "", 64))
		if len(kept) == 0 || len(kept) > total || !slices.Equal(kept, names(total+1-len(kept), total+1)) {
			t.Fatalf(`paging from "" returned %d events from %v: want the retained events (not the first), consecutive up to %s`,
				len(kept), kept[:min(1, len(kept))], eventName(total))
		}
		recs, err = inst.ReadEventsSince(t.Context(), k.pipeline, "", 1)
		noErr(t, err, `ReadEventsSince("", 1)`)
		more, err := inst.ReadEventsSince(t.Context(), k.pipeline, recs[0].StreamID, 2)
		noErr(t, err, "ReadEventsSince(the cursor of the oldest event retained)")
		same(t, "ReadEventsSince(the cursor of the oldest event retained)", kept[1:min(3, len(kept))], recordNames(more))
	}
}

func testEventStoreConcurrentAppendPaging(t *testing.T, s *suite) {
	insts := []provider.Provider{s.open(t), s.open(t)}
	k := newIDs(t)
	const writers, perWriter, pageSize = 8, 50, 7
	var writing sync.WaitGroup
	var finished atomic.Bool
	var e errs
	for w := range writers {
		writing.Add(1)
		go func() {
			defer writing.Done()
			for i := range perWriter {
				ev := newEvent(k.pipeline, 0)
				ev.Message, ev.Timestamp = fmt.Sprintf("w%d-%03d", w, i), time.Time{}
				if err := insts[w%2].AppendEvent(t.Context(), ev); err != nil {
					e.add("writer %d: AppendEvent: %v", w, err)
					return
				}
			}
		}()
	}
	seen := make([][]string, 2)
	var reading sync.WaitGroup
	for r := range seen {
		reading.Add(1)
		go func() {
			defer reading.Done()
			deadline := time.Now().Add(2 * time.Minute)
			cursor, ids := "", map[string]bool{}
			for time.Now().Before(deadline) {
				done := finished.Load() // read before the page: a page read after it is complete
				page, err := insts[r].ReadEventsSince(t.Context(), k.pipeline, cursor, pageSize)
				if err != nil {
					e.add("reader %d: ReadEventsSince: %v", r, err)
					return
				}
				for _, rec := range page {
					if ids[rec.StreamID] {
						e.add("reader %d: event %s (cursor %q) returned twice", r, rec.Event.Message, rec.StreamID)
						return
					}
					ids[rec.StreamID] = true
					seen[r] = append(seen[r], rec.Event.Message)
					cursor = rec.StreamID
				}
				if len(page) == 0 {
					if done {
						return
					}
					time.Sleep(time.Millisecond) // poll interval of a tailing reader
				}
			}
			e.add("reader %d: not done after 2 minutes (%d events seen)", r, len(seen[r]))
		}()
	}
	writing.Wait()
	finished.Store(true)
	reading.Wait()
	e.report(t)
	for r, got := range seen {
		checkExactlyOnce(t, fmt.Sprintf("reader %d", r), got, writers, perWriter)
	}
	same(t, "order seen by reader 1 vs reader 0", seen[0], seen[1])
	same(t, "order of a full read after the writers vs reader 0", seen[0], recordNames(readAll(t, insts[1], k.pipeline, "", 100)))
	list, err := insts[0].ListEvents(t.Context(), k.pipeline, writers*perWriter)
	noErr(t, err, "ListEvents")
	same(t, "order of ListEvents vs reader 0", seen[0], eventNames(list))
}

func testEventStoreNoAliasing(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	ev := newEvent(k.pipeline, 1)
	want := jsonRoundTrip(t, ev)
	noErr(t, p.AppendEvent(t.Context(), ev), "AppendEvent")
	ev.Details["i"], ev.Details["list"].([]any)[0] = -1, "mutated"
	list, err := p.ListEvents(t.Context(), k.pipeline, 10)
	wantLen(t, list, err, 1, "ListEvents")
	same(t, "ListEvents after mutating the appended value", want, list[0])
	list[0].Details["i"], list[0].Details["list"].([]any)[0] = -1, "mutated"
	recs, err := p.ReadEventsSince(t.Context(), k.pipeline, "", 10)
	wantLen(t, recs, err, 1, "ReadEventsSince")
	same(t, "ReadEventsSince after mutating returned values", want, recs[0].Event)
	recs[0].Event.Details["i"] = -1
	list, err = p.ListEvents(t.Context(), k.pipeline, 10)
	wantLen(t, list, err, 1, "ListEvents")
	same(t, "ListEvents after mutating returned values", want, list[0])
}

func testEventStoreAdversarialPipelineIDs(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	checkDistinct(t, singles(adversarialIDs(k.pipeline)),
		func(key []string, tag int) error {
			ev := newEvent(key[0], tag)
			ev.Message = strconv.Itoa(tag)
			return p.AppendEvent(t.Context(), ev)
		},
		func(key []string) (int, bool, error) {
			list, err := p.ListEvents(t.Context(), key[0], 10)
			if err != nil || len(list) == 0 {
				return 0, false, err
			}
			if len(list) > 1 {
				return 0, false, fmt.Errorf("ListEvents(%q) has %d events, want 1", key[0], len(list))
			}
			tag, err := strconv.Atoi(list[0].Message)
			return tag, true, err
		})
}

// appendEvents appends events from..to-1 of the pipeline.
func appendEvents(t *testing.T, p provider.Provider, pipelineID string, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		noErr(t, p.AppendEvent(t.Context(), newEvent(pipelineID, i)), "AppendEvent")
	}
}

// maxEventsKept is the count of events the suite asks Harness.OpenMaxEvents to
// keep: small, so that the tests write a few hundred events past it.
const maxEventsKept = 100

// wantExpiredRead checks that a read from an expired cursor failed with
// ErrCursorExpired and returned no events.
func wantExpiredRead(t *testing.T, recs []types.EventRecord, err error, what string) {
	t.Helper()
	if !errors.Is(err, provider.ErrCursorExpired) {
		t.Errorf("%s = %d events (%v), %v; want an error wrapping ErrCursorExpired: a read never skips dropped events silently",
			what, len(recs), recordNames(recs), err)
	} else if len(recs) > 0 {
		t.Errorf("%s: ErrCursorExpired with %d events; want none", what, len(recs))
	}
}

// readAll pages through the log from cursor with count until an empty page.
func readAll(t *testing.T, p provider.Provider, pipelineID, cursor string, count int64) []types.EventRecord {
	t.Helper()
	var out []types.EventRecord
	seen := map[string]bool{}
	for {
		page, err := p.ReadEventsSince(t.Context(), pipelineID, cursor, count)
		noErr(t, err, "ReadEventsSince")
		if int64(len(page)) > count {
			t.Fatalf("ReadEventsSince(count %d) returned %d events", count, len(page))
		}
		if len(page) == 0 {
			return out
		}
		for _, r := range page {
			if seen[r.StreamID] {
				t.Fatalf("paging with cursors returned event %s (cursor %q) twice", r.Event.Message, r.StreamID)
			}
			seen[r.StreamID] = true
		}
		out = append(out, page...)
		cursor = page[len(page)-1].StreamID
	}
}

// names returns the names of events from..to-1.
func names(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, eventName(i))
	}
	return out
}

func eventNames(list []types.Event) []string {
	out := make([]string, len(list))
	for i, ev := range list {
		out[i] = ev.Message
	}
	return out
}

func recordNames(list []types.EventRecord) []string {
	out := make([]string, len(list))
	for i, r := range list {
		out[i] = r.Event.Message
	}
	return out
}

// checkExactlyOnce checks that got holds each writer's events exactly once, each
// writer's in the order it appended them.
func checkExactlyOnce(t *testing.T, who string, got []string, writers, perWriter int) {
	t.Helper()
	count := map[string]int{}
	next := make([]int, writers)
	for _, m := range got {
		count[m]++
		var w, i int
		if _, err := fmt.Sscanf(m, "w%d-%d", &w, &i); err != nil || w < 0 || w >= writers {
			t.Errorf("%s: unexpected event %q", who, m)
			continue
		}
		if i != next[w] && count[m] == 1 {
			t.Errorf("%s: writer %d's event %d came when %d was due (out of append order)", who, w, i, next[w])
		}
		next[w] = i + 1
	}
	for w := range writers {
		for i := range perWriter {
			m := fmt.Sprintf("w%d-%03d", w, i)
			if count[m] != 1 {
				t.Errorf("%s: saw event %s %d times, want exactly once", who, m, count[m])
			}
		}
	}
	if len(got) != writers*perWriter {
		t.Errorf("%s: saw %d events, want %d", who, len(got), writers*perWriter)
	}
}
