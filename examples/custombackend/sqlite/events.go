package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// AppendEvent implements provider.EventStore. The event is kept for the provider's
// event retention (WithRetention's Events); the append then deletes up to
// pruneBatch expired events of any pipeline (events_trimmed remembers them, so
// cursors before them are expired). Once it is committed, the followers of the
// file in this process are woken.
func (p *Provider) AppendEvent(ctx context.Context, ev types.Event) error {
	now := p.now()
	e, err := provider.PrepareEvent(ev, now)
	if err = p.enterWrite(ctx, "AppendEvent", err); err != nil {
		return err
	}
	err = p.putRetained(ctx, "append event", "events", record{kind: "events", a: e.PipelineID}, e, now, p.retention.Events,
		`INSERT INTO events (pipeline_id, body, expires_at) VALUES (?, ?, ?)`, e.PipelineID)
	if err == nil {
		p.wake.notify()
	}
	return err
}

// FollowEvents implements provider.EventFollower: it reads pages as
// ReadEventsSince does (bad input fails as there, an expired cursor ends the
// follow with provider.ErrCursorExpired, and rows that do not decode are skipped
// and reported once) and, between pages that find nothing, polls as the package
// doc says. Since seq order is commit order, a follower never skips an event.
func (p *Provider) FollowEvents(ctx context.Context, pipelineID, cursor string) iter.Seq2[types.EventRecord, error] {
	start, err := provider.ParseSeqCursor(cursor)
	if err = p.enter(ctx, provider.CheckID("pipeline ID", pipelineID), err); err != nil {
		return provider.Fail[types.EventRecord](err)
	}
	return provider.Follow(ctx, func() provider.Poller[types.EventRecord] {
		since, fromOldest := start, cursor == ""
		return poll(p, func(ctx context.Context) ([]types.EventRecord, error) {
			recs, last, err := p.readEvents(ctx, pipelineID, fromOldest, since, followPage)
			if last > since {
				since, fromOldest = last, false // past corrupt rows too
			}
			return recs, err
		})
	})
}

// ListEvents implements provider.EventStore.
func (p *Provider) ListEvents(ctx context.Context, pipelineID string, limit int) ([]types.Event, error) {
	if err := p.enter(ctx, provider.CheckID("pipeline ID", pipelineID), provider.CheckLimit(limit)); err != nil {
		return nil, err
	}
	out, err := getAll[types.Event](ctx, p, "list events", provider.KindEvent, "events", limit,
		`SELECT pipeline_id || ':' || seq, body FROM events WHERE pipeline_id = ? AND `+liveSQL+` ORDER BY seq DESC`,
		pipelineID, sortTime(p.now()))
	slices.Reverse(out)
	return out, err
}

// trimmedSQL is the highest seq deleted from the events of a pipeline (its one
// argument), 0 when none was.
const trimmedSQL = `(SELECT COALESCE(MAX(seq), 0) FROM events_trimmed WHERE pipeline_id = ?)`

// ReadEventsSince implements provider.EventStore. The cursor is the event's seq
// (provider.ParseSeqCursor, provider.FormatSeqCursor). Retention hides rows
// until an append deletes them, and events_trimmed keeps the highest seq ever
// deleted per pipeline (by appends, or by hand), so one statement tells
// exactly whether an event after the cursor is gone: the cursor is expired —
// an error wrapping provider.ErrCursorExpired — when the pipeline's first row
// after it is no longer live, or when a row after it was deleted. "" reads from
// the oldest live row after the last deleted one. A read stops before the first
// row that is no longer live (rows of writers with different retentions expire
// out of order), and the read from there fails. A row whose body does not decode
// is skipped and reported, and the read goes on past it for as many more.
func (p *Provider) ReadEventsSince(ctx context.Context, pipelineID, sinceID string, count int64) ([]types.EventRecord, error) {
	since, err := provider.ParseSeqCursor(sinceID)
	if err = p.enter(ctx, provider.CheckID("pipeline ID", pipelineID), provider.CheckCount(count), err); err != nil {
		return nil, err
	}
	out, _, err := p.readEvents(ctx, pipelineID, sinceID == "", since, count)
	return out, err
}

// readEvents is ReadEventsSince after its checks: at most count events after seq
// since (fromOldest: from the oldest live row), and the seq of the last row it
// read, skipped ones included (since when none): one statement, and one more
// after the last row read for as many rows as it skipped because they do not
// decode.
func (p *Provider) readEvents(ctx context.Context, pipelineID string, fromOldest bool, since, count int64) ([]types.EventRecord, int64, error) {
	out := []types.EventRecord{}
	last, oldest := since, fromOldest
	for {
		want := count - int64(len(out))
		page, rows, pageLast, stopped, err := p.readEventsOnce(ctx, pipelineID, fromOldest, last, want)
		if err != nil {
			if (len(out) > 0 || oldest) && errors.Is(err, provider.ErrCursorExpired) {
				// The read from the last event returned fails; "" is never
				// expired (past rows skipped as corrupt it returns none).
				return out, last, nil
			}
			return nil, since, err
		}
		out, last = append(out, page...), max(last, pageLast)
		if int64(len(out)) == count || rows < want || stopped {
			return out, last, nil
		}
		fromOldest = false
	}
}

// readEventsOnce is one statement of readEvents: the good events among the
// first count rows after since, how many rows it read, the seq of the last, and
// whether it stopped before a row that is no longer live.
func (p *Provider) readEventsOnce(ctx context.Context, pipelineID string, fromOldest bool, since, count int64) (out []types.EventRecord, rows, last int64, done bool, err error) {
	const op = "read events"
	// One statement, so the deleted seq and the rows come from one snapshot: a
	// first row with the highest seq deleted (trimmedSQL), then the rows after
	// the cursor (for "", from the oldest live row after the deleted seq), each
	// with whether it is live, read in seq order from the index.
	now := sortTime(p.now())
	start, args := `seq > ?`, []any{since}
	if fromOldest {
		start = `seq >= (SELECT MIN(seq) FROM events WHERE pipeline_id = ? AND seq > ` + trimmedSQL + ` AND ` + liveSQL + `)`
		args = []any{pipelineID, pipelineID, now}
	}
	last = since
	err = p.each(ctx, op,
		`SELECT t, seq, body, live FROM (
		   SELECT 0 AS k, `+trimmedSQL+` AS t, NULL AS seq, NULL AS body, NULL AS live
		   UNION ALL
		   SELECT 1, NULL, seq, body, live FROM (
		     SELECT seq, body, (expires_at IS NULL OR expires_at > ?) AS live FROM events
		     WHERE pipeline_id = ? AND `+start+` ORDER BY seq LIMIT ?))
		 ORDER BY k, seq`,
		slices.Concat([]any{pipelineID, now, pipelineID}, args, []any{count}),
		func(scan func(...any) error) error {
			var trimmed, seq sql.NullInt64
			var body sql.NullString
			var live sql.NullBool
			if err := scan(&trimmed, &seq, &body, &live); err != nil {
				return p.fail(ctx, op, err)
			}
			switch {
			case trimmed.Valid: // the first row
				if !fromOldest && since < trimmed.Int64 {
					return fmt.Errorf("sqlite: %s: %w: events of pipeline %s after cursor %d were deleted (up to %d)",
						op, provider.ErrCursorExpired, pipelineID, since, trimmed.Int64)
				}
				return nil
			case done:
				return nil
			case !live.Bool && len(out) == 0 && !fromOldest:
				// The next row after the cursor, or after rows skipped as
				// corrupt (held, not dropped: skipping them hides no gap).
				return fmt.Errorf("sqlite: %s: %w: event %d after cursor %d is no longer retained",
					op, provider.ErrCursorExpired, seq.Int64, since)
			case !live.Bool:
				done = true // stop before it: the read from the event before it fails
				return nil
			}
			rows, last = rows+1, seq.Int64
			r := types.EventRecord{StreamID: provider.FormatSeqCursor(seq.Int64)}
			if decodeOrSkip(ctx, p, provider.KindEvent, "events", pipelineID+":"+r.StreamID, body.String, &r.Event) {
				out = append(out, r)
			}
			return nil
		})
	if err != nil {
		return nil, 0, since, false, err
	}
	return out, rows, last, done, nil
}
