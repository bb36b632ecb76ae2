package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"iter"
	"strconv"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// Event paging: the page size of the reads that find the end of a log, and the
// poll interval bounds of a follow on a backend without provider.EventFollower.
const (
	eventPage    = 1000
	pollFirst    = 100 * time.Millisecond
	pollMost     = 2 * time.Second
	followedPage = 100
	// tailAttempts bounds the reads of the retained log from the start that
	// finding the newest events may take while retention drops the oldest.
	tailAttempts = 3
)

var eventsCmd = &spec{
	name:    "events",
	args:    "PIPELINE",
	summary: "a pipeline's events (--since CURSOR, --limit, --follow, --from-end)",
	about: "Without --since: the newest --limit events, oldest first, without cursors.\n" +
		"With --since CURSOR: at most --limit events strictly after CURSOR, with their cursors, and\n" +
		"the --since of the next page; --since '' starts at the oldest retained event. A CURSOR\n" +
		"older than the events the backend keeps (retention dropped events after it) is an error\n" +
		"(exit 3): events after it may have been lost, and --since '' goes on from the oldest kept.\n" +
		"--follow prints events as they are committed until interrupted (Ctrl-C): those after\n" +
		"CURSOR with --since, with --from-end only those committed from now on, otherwise the\n" +
		"newest --limit first. It uses the backend's follower (provider.EventFollower) when it\n" +
		"has one and polls otherwise (every " + pollFirst.String() + " to " + pollMost.String() + "). Each followed event is one\n" +
		"line: its time, kind, run, trait, status, message and cursor.\n" +
		"--json prints one types.EventRecord (streamId: the cursor, and event) per line, whatever\n" +
		"the flags.\n" +
		"Cost: cursors are the backend's own, so finding the newest events with their cursors\n" +
		"(--json or --follow without --since, and --follow --from-end) reads the whole retained\n" +
		"log from the oldest event, 1 read per " + strconv.Itoa(eventPage) + " events; with --since, a read is one\n" +
		"page, and plain 'events P' is one read.",
	example: "pipestate events orders --limit 50 --redis localhost:6379\n" +
		"pipestate events orders --since '' --limit 100 --redis localhost:6379\n" +
		"pipestate events orders --follow --redis localhost:6379\n" +
		"pipestate events orders --follow --from-end --json --redis localhost:6379",
	define: func(in *inv, fs *flag.FlagSet) action {
		since := fs.String("since", "", "print the events after this cursor (an event's cursor; '' for the start), with cursors")
		limit := fs.Int("limit", 20, "the most events to print (with --follow: before following)")
		follow := fs.Bool("follow", false, "keep printing events as they are committed, until interrupted")
		fromEnd := fs.Bool("from-end", false, "with --follow: print only the events committed from now on")
		return func(ctx context.Context, pos []string) error {
			a, err := args(pos, "PIPELINE")
			if err != nil {
				return err
			}
			switch {
			case *fromEnd && !*follow:
				return usagef("--from-end starts a follow at the newest event: add --follow")
			case *fromEnd && isSet(fs, "since"):
				return usagef("give --since CURSOR or --from-end, not both")
			case *fromEnd && isSet(fs, "limit"):
				return usagef("--from-end prints no earlier events: drop --limit")
			}
			if err := checkLimit(*limit); err != nil {
				return err
			}
			p, err := in.provider(ctx)
			if err != nil {
				return err
			}
			id := a[0]
			switch {
			case *follow && *fromEnd:
				return followEvents(ctx, in, p, id, *since, false, 0)
			case *follow:
				return followEvents(ctx, in, p, id, *since, isSet(fs, "since"), *limit)
			case isSet(fs, "since"):
				return eventsSince(ctx, in, p, id, *since, *limit)
			case in.json:
				return newestEvents(ctx, in, p, id, *limit)
			}
			evs, err := p.ListEvents(ctx, id, *limit)
			if err != nil {
				return err
			}
			if len(evs) == 0 {
				if err := requirePipeline(ctx, p, id, "events"); err != nil {
					return err
				}
			}
			if len(evs) == 0 {
				in.say("no events of pipeline %s", id)
				return nil
			}
			t := in.table("TIME", "KIND", "RUN", "TRAIT", "STATUS", "MESSAGE")
			for _, e := range evs {
				t.row(in.ago(e.Timestamp), e.Kind, e.RunID, e.TraitType, e.Status, e.Message)
			}
			return t.flush()
		}
	},
}

// expiredError is a read or follow from a cursor that the backend reported
// expired (provider.ErrCursorExpired): it says what happened, exits 3 as not
// found (the events after the cursor are gone), and its hint says how to go on.
type expiredError struct{ cursor, hint string }

func (e *expiredError) Error() string {
	return fmt.Sprintf("cursor %s is older than the events this backend keeps (retention): events after it may have been lost", e.cursor)
}

// expired is the expiredError of cursor with the hint goOn.
func expired(cursor, goOn string) error { return &expiredError{cursor, goOn} }

// eventsSince prints one page of events after cursor.
func eventsSince(ctx context.Context, in *inv, p provider.Provider, id, cursor string, limit int) error {
	recs, err := p.ReadEventsSince(ctx, id, cursor, int64(limit))
	if errors.Is(err, provider.ErrCursorExpired) {
		return expired(cursor, "start again with --since '' to read from the oldest kept event")
	}
	if err != nil {
		return err
	}
	if len(recs) == 0 && cursor == "" {
		if err := requirePipeline(ctx, p, id, "events"); err != nil {
			return err
		}
	}
	switch {
	case in.json:
		return emitAll(in, recs)
	case len(recs) == 0 && cursor == "":
		in.say("no events of pipeline %s", id)
		return nil
	case len(recs) == 0:
		in.say("no events of pipeline %s after cursor %s", id, cursor)
		return nil
	}
	t := in.table("TIME", "KIND", "RUN", "TRAIT", "STATUS", "MESSAGE", "CURSOR")
	for _, r := range recs {
		e := r.Event
		t.row(in.ago(e.Timestamp), e.Kind, e.RunID, e.TraitType, e.Status, e.Message, r.StreamID)
	}
	if err := t.flush(); err != nil {
		return err
	}
	if len(recs) == limit {
		in.say("next page: --since %s", recs[len(recs)-1].StreamID)
	}
	return nil
}

// newestEvents prints the newest limit events as JSON records, with their cursors.
func newestEvents(ctx context.Context, in *inv, p provider.Provider, id string, limit int) error {
	recs, _, err := tail(ctx, p, id, limit)
	if err != nil {
		return err
	}
	if len(recs) == 0 {
		if err := requirePipeline(ctx, p, id, "events"); err != nil {
			return err
		}
	}
	return emitAll(in, recs)
}

// followEvents prints the events after cursor (hasCursor) or the newest limit,
// then each new one, until ctx ends.
func followEvents(ctx context.Context, in *inv, p provider.Provider, id, cursor string, hasCursor bool, limit int) error {
	if !hasCursor {
		recs, end, err := tail(ctx, p, id, limit)
		if err != nil {
			return err
		}
		if end == "" { // no events at all (with --from-end, recs is always empty)
			if err := requirePipeline(ctx, p, id, "events"); err != nil {
				return err
			}
		}
		for _, r := range recs {
			if err := printFollowed(in, r); err != nil {
				return err
			}
		}
		cursor = end
	}
	in.head()
	for r, err := range follow(ctx, p, id, cursor) {
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return nil // interrupted: the normal end of a follow
			case errors.Is(err, provider.ErrCursorExpired):
				// From the given cursor, or after the last event printed when
				// the follower fell behind a log kept by count.
				return expired(cursor, "follow again with --since '' to start from the oldest kept event")
			}
			return err
		}
		if err := printFollowed(in, r); err != nil {
			return err
		}
		cursor = r.StreamID
	}
	return nil
}

// printFollowed prints one followed event: a JSON line, or a log line ending in its
// cursor, its message always quoted.
func printFollowed(in *inv, r types.EventRecord) error {
	if in.json {
		return in.emit(r)
	}
	e := r.Event
	format, args := "%s %s", []any{e.Timestamp.UTC().Format(time.RFC3339), e.Kind}
	for _, kv := range [][2]string{{"run", e.RunID}, {"trait", e.TraitType}, {"status", e.Status}} {
		if kv[1] != "" {
			format += " " + kv[0] + "=%s"
			args = append(args, kv[1])
		}
	}
	if e.Message != "" {
		format += " %q"
		args = append(args, e.Message)
	}
	in.say(format+" cursor=%s", append(args, r.StreamID)...)
	return nil
}

// tail returns the newest n events of a pipeline and the cursor after the
// newest, reading the retained log from the start: O(log length) reads, as no
// provider API returns the newest events with their cursors (ListEvents has
// none, and cursors are opaque). When retention drops events
// under it (its cursor expires), it reads the retained log again from the start,
// up to tailAttempts times: only the newest events matter.
func tail(ctx context.Context, p provider.Provider, id string, n int) ([]types.EventRecord, string, error) {
	var last []types.EventRecord
	cursor := ""
	for attempt := 1; ; {
		page, err := p.ReadEventsSince(ctx, id, cursor, eventPage)
		if errors.Is(err, provider.ErrCursorExpired) && attempt < tailAttempts {
			last, cursor = nil, ""
			attempt++
			continue
		}
		if err != nil {
			return nil, "", err
		}
		if len(page) > 0 {
			cursor = page[len(page)-1].StreamID
		}
		last = append(last, page...)
		last = last[max(0, len(last)-n):]
		if len(page) < eventPage {
			return last, cursor, nil
		}
	}
}

// follow is p's FollowEvents when it has one, otherwise a polling follow over
// ReadEventsSince.
func follow(ctx context.Context, p provider.Provider, id, cursor string) iter.Seq2[types.EventRecord, error] {
	if f, ok := p.(provider.EventFollower); ok {
		return f.FollowEvents(ctx, id, cursor)
	}
	return provider.Follow(ctx, func() provider.Poller[types.EventRecord] {
		at := cursor
		return provider.Poller[types.EventRecord]{
			Read: func(ctx context.Context) ([]types.EventRecord, error) {
				recs, err := p.ReadEventsSince(ctx, id, at, followedPage)
				if len(recs) > 0 {
					at = recs[len(recs)-1].StreamID
				}
				return recs, err
			},
			Wait: provider.PollWait(pollFirst, pollMost),
		}
	})
}
