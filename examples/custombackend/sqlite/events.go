package sqlite

import (
	"context"
	"iter"

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
// ReadEventsSince (so bad input fails as there, and events dropped by retention are
// skipped) and, between pages that find nothing, polls as the package doc says.
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

// ReadEventsSince implements provider.EventStore. The cursor is the event's seq
// (provider.ParseSeqCursor, provider.FormatSeqCursor); "" reads from the start.
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
	out := []types.EventRecord{}
	err = p.each(ctx, op,
		`SELECT seq, body FROM events WHERE pipeline_id = ? AND seq > ? AND `+liveSQL+` ORDER BY seq LIMIT ?`,
		[]any{pipelineID, since, sortTime(p.now()), count},
		func(scan func(...any) error) error {
			var seq int64
			var body string
			if err := scan(&seq, &body); err != nil {
				return p.fail(ctx, op, err)
			}
			ev, err := decode[types.Event](op, body)
			out = append(out, types.EventRecord{StreamID: provider.FormatSeqCursor(seq), Event: ev})
			return err
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}
