package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"iter"
	"slices"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// AppendEvent implements provider.EventStore. The event is kept for the provider's
// event retention (WithEventRetention), forever by default. Once it is committed,
// the followers of the file in this process are woken.
func (p *Provider) AppendEvent(ctx context.Context, ev types.Event) error {
	now := p.now()
	e, err := provider.PrepareEvent(ev, now)
	if err != nil {
		return err
	}
	err = p.put(ctx, "append event", e, `INSERT INTO events (pipeline_id, expires_at, body) VALUES (?, ?, ?)`,
		e.PipelineID, expiresAt(after(now, p.eventRetention)))
	if err == nil {
		p.wake.notify()
	}
	return err
}

// FollowEvents implements provider.EventFollower: it reads pages with
// ReadEventsSince (so bad input fails as there, and an expired cursor ends the
// follow with provider.ErrCursorExpired) and, between pages that find nothing,
// polls as the package doc says.
// Since seq order is commit order, a follower never skips an event.
func (p *Provider) FollowEvents(ctx context.Context, pipelineID, cursor string) iter.Seq2[types.EventRecord, error] {
	return provider.Follow(ctx, func() provider.Poller[types.EventRecord] {
		since := cursor
		return poll(p, func(ctx context.Context) ([]types.EventRecord, error) {
			recs, err := p.ReadEventsSince(ctx, pipelineID, since, followPage)
			if len(recs) > 0 {
				since = recs[len(recs)-1].StreamID
			}
			return recs, err
		})
	})
}

// ListEvents implements provider.EventStore.
func (p *Provider) ListEvents(ctx context.Context, pipelineID string, limit int) ([]types.Event, error) {
	if err := provider.CheckID("pipeline ID", pipelineID); err != nil {
		return nil, err
	}
	if err := provider.CheckLimit(limit); err != nil {
		return nil, err
	}
	return getAll[types.Event](ctx, p, "list events",
		`SELECT body FROM (SELECT seq, body FROM events WHERE pipeline_id = ? AND `+liveSQL+` ORDER BY seq DESC LIMIT ?)
		 ORDER BY seq`,
		pipelineID, sortTime(p.now()), limit)
}

// trimmedSQL is the highest seq deleted from the events of a pipeline (its one
// argument), 0 when none was.
const trimmedSQL = `(SELECT COALESCE(MAX(seq), 0) FROM events_trimmed WHERE pipeline_id = ?)`

// ReadEventsSince implements provider.EventStore. The cursor is the event's seq
// (provider.ParseSeqCursor, provider.FormatSeqCursor). Retention hides rows
// without deleting them, and events_trimmed keeps the highest seq ever deleted
// per pipeline (by hand: see ../README.md, step 6), so one statement tells
// exactly whether an event after the cursor is gone: the cursor is expired —
// an error wrapping provider.ErrCursorExpired — when the pipeline's first row
// after it is no longer live, or when a row after it was deleted. "" reads from
// the oldest live row after the last deleted one. A read stops before the first
// row that is no longer live (rows of writers with different retentions expire
// out of order), and the read from there fails.
func (p *Provider) ReadEventsSince(ctx context.Context, pipelineID, sinceID string, count int64) ([]types.EventRecord, error) {
	const op = "read events"
	if err := provider.CheckID("pipeline ID", pipelineID); err != nil {
		return nil, err
	}
	if err := provider.CheckCount(count); err != nil {
		return nil, err
	}
	since, err := provider.ParseSeqCursor(sinceID)
	if err != nil {
		return nil, err
	}
	// One statement, so the deleted seq and the rows come from one snapshot: a
	// first row with the highest seq deleted (trimmedSQL), then the rows after
	// the cursor (for "", from the oldest live row after the deleted seq), each
	// with whether it is live, read in seq order from the index.
	now := sortTime(p.now())
	start, args := `seq > ?`, []any{since}
	if sinceID == "" {
		start = `seq >= (SELECT MIN(seq) FROM events WHERE pipeline_id = ? AND seq > ` + trimmedSQL + ` AND ` + liveSQL + `)`
		args = []any{pipelineID, pipelineID, now}
	}
	out := []types.EventRecord{}
	done := false
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
				if sinceID != "" && since < trimmed.Int64 {
					return fmt.Errorf("sqlite: %s: %w: events of pipeline %s after cursor %d were deleted (up to %d)",
						op, provider.ErrCursorExpired, pipelineID, since, trimmed.Int64)
				}
				return nil
			case done:
				return nil
			case !live.Bool && len(out) == 0 && sinceID != "":
				return fmt.Errorf("sqlite: %s: %w: event %d, the next after cursor %d, is no longer retained",
					op, provider.ErrCursorExpired, seq.Int64, since)
			case !live.Bool:
				done = true // stop before it: the read from the event before it fails
				return nil
			}
			ev, err := decode[types.Event](op, body.String)
			out = append(out, types.EventRecord{StreamID: provider.FormatSeqCursor(seq.Int64), Event: ev})
			return err
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}
