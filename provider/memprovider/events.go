package memprovider

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

type eventLog struct {
	seq     int64 // last sequence number handed out
	dropped int64 // the events pruned from the front: event n is records[n-1-dropped]
	records []record
}

// dropExpired removes the expired events at the front of the log (the others
// wait for the ones before them: handles with different retentions only delay
// it).
func (l *eventLog) dropExpired(now time.Time) {
	n := 0
	for n < len(l.records) && !provider.Live(l.records[n].expires, now) {
		n++
	}
	l.records = slices.Delete(l.records, 0, n)
	l.dropped += int64(n)
}

type record struct {
	seq     int64
	ev      types.Event
	raw     []byte    // when not nil, the stored form a test wrote, decoded on read
	expires time.Time // zero: kept forever
}

// event returns r's event as a read returns it, or false for a record that does
// not decode, after reporting it (provider.DecodeOrSkip).
func (p *Provider) event(ctx context.Context, pipelineID string, r record) (types.Event, bool) {
	if r.raw == nil {
		return mustClone(r.ev), true
	}
	var ev types.Event
	name := func() (string, string) {
		id := pipelineID + ":" + provider.FormatSeqCursor(r.seq)
		return id, "memory event " + id
	}
	return ev, provider.DecodeOrSkip(ctx, p.sig, provider.KindEvent, r.raw, &ev, name)
}

// AppendEvent implements provider.EventStore.
func (p *Provider) AppendEvent(ctx context.Context, ev types.Event) error {
	e, err := stored(provider.PrepareEvent(ev, p.now()))
	if err = p.enterWrite(ctx, "append event", err); err != nil {
		return err
	}
	defer p.s.mu.Unlock()
	return p.fenced(ctx, rawKey{kind: provider.KindEvent, a: e.PipelineID}, func(s *data) {
		log := s.events[e.PipelineID]
		if log == nil {
			log = &eventLog{}
			s.events[e.PipelineID] = log
		}
		now := p.now()
		log.seq++
		exp := provider.Expiry(now, p.retention.Events)
		log.records = append(log.records, record{seq: log.seq, ev: e, expires: exp})
		s.retain(exp, func(_ *data, at time.Time) { log.dropExpired(at) })
		s.prune(now)
		s.wake()
	})
}

// FollowEvents implements provider.EventFollower: it reads what ReadEventsSince
// reads, then waits for the next write (a wake-up, not a poll). A read that fails
// with provider.ErrCursorExpired ends the follow with that error.
func (p *Provider) FollowEvents(ctx context.Context, pipelineID, cursor string) iter.Seq2[types.EventRecord, error] {
	_, err := provider.ParseSeqCursor(cursor)
	if err = p.life.Enter(ctx, provider.CheckID("pipeline ID", pipelineID), err); err != nil {
		return provider.Fail[types.EventRecord](err)
	}
	return provider.Follow(ctx, func() provider.Poller[types.EventRecord] {
		since := cursor
		var written <-chan struct{}
		return provider.Poller[types.EventRecord]{
			Read: func(ctx context.Context) ([]types.EventRecord, error) {
				written = p.s.writes()
				if err := p.enter(ctx); err != nil {
					return nil, err
				}
				defer p.s.mu.Unlock()
				for {
					recs, last, err := p.readEvents(ctx, pipelineID, since, followPage)
					moved := last != since
					since = last // past the records skipped as corrupt too
					if len(recs) > 0 || err != nil || !moved {
						return recs, err
					}
					// Only corrupt records were skipped: read on from past
					// them now, rather than wait for a write.
				}
			},
			Wait: func(ctx context.Context, _ int) error { return wait(ctx, written) },
		}
	})
}

// followPage is how many records a follower or watcher reads at a time.
const followPage = 256

// wait blocks until written is closed or ctx ends.
func wait(ctx context.Context, written <-chan struct{}) error {
	select {
	case <-written:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// retained returns the records of pipelineID's log that retention has not
// dropped; the store must be locked.
func (p *Provider) retained(pipelineID string) []record {
	log := p.s.events[pipelineID]
	if log == nil {
		return nil
	}
	now := p.now()
	var out []record
	for _, r := range log.records {
		if provider.Live(r.expires, now) {
			out = append(out, r)
		}
	}
	return out
}

// ListEvents implements provider.EventStore.
func (p *Provider) ListEvents(ctx context.Context, pipelineID string, limit int) ([]types.Event, error) {
	if err := p.enter(ctx, provider.CheckID("pipeline ID", pipelineID), provider.CheckLimit(limit)); err != nil {
		return nil, err
	}
	defer p.s.mu.Unlock()
	recs := p.retained(pipelineID)
	out := make([]types.Event, 0, min(limit, len(recs)))
	for i := len(recs) - 1; i >= 0 && len(out) < limit; i-- { // newest first, past corrupt ones
		if ev, ok := p.event(ctx, pipelineID, recs[i]); ok {
			out = append(out, ev)
		}
	}
	slices.Reverse(out)
	return out, nil
}

// ReadEventsSince implements provider.EventStore. Cursors are decimal sequence
// numbers, without gaps: the cursor n is expired when event n+1 was appended and
// retention dropped it (WithEventRetention); the read then fails with
// provider.ErrCursorExpired. Each handle's retention applies to what it
// appends, so events may expire out of order: a read stops before the first
// dropped event after the cursor, and the read from there fails. "" reads from
// the oldest event retained.
func (p *Provider) ReadEventsSince(ctx context.Context, pipelineID, sinceID string, count int64) ([]types.EventRecord, error) {
	_, err := provider.ParseSeqCursor(sinceID)
	if err = p.enter(ctx, provider.CheckID("pipeline ID", pipelineID), provider.CheckCount(count), err); err != nil {
		return nil, err
	}
	defer p.s.mu.Unlock()
	out, _, err := p.readEvents(ctx, pipelineID, sinceID, count)
	return out, err
}

// readEvents is ReadEventsSince after its opening: at most count events after
// the cursor sinceID (a valid one), skipping (and reporting) records that do not
// decode, and the cursor of the last record it read, skipped ones included
// (sinceID when it read none); the store must be locked.
func (p *Provider) readEvents(ctx context.Context, pipelineID, sinceID string, count int64) ([]types.EventRecord, string, error) {
	since, _ := provider.ParseSeqCursor(sinceID)
	log := p.s.events[pipelineID]
	if log == nil || since >= log.seq {
		return []types.EventRecord{}, sinceID, nil // nothing was appended after the cursor
	}
	// Sequence numbers start at 1 and have no gaps, so event n is
	// records[n-1-dropped]; those before were dropped, expired.
	if since < log.dropped {
		if sinceID != "" {
			return nil, sinceID, fmt.Errorf("memory: read events: %w: event %d after cursor %d is no longer retained",
				provider.ErrCursorExpired, since+1, since)
		}
		since = log.dropped
	}
	now, recs := p.now(), log.records[since-log.dropped:]
	if sinceID == "" {
		for len(recs) > 0 && !provider.Live(recs[0].expires, now) {
			recs = recs[1:] // "": from the oldest event retained
		}
	} else if !provider.Live(recs[0].expires, now) {
		return nil, sinceID, fmt.Errorf("memory: read events: %w: event %d after cursor %d is no longer retained",
			provider.ErrCursorExpired, since+1, since)
	}
	out := []types.EventRecord{}
	last := sinceID
	for _, r := range recs {
		if int64(len(out)) == count {
			break
		}
		if !provider.Live(r.expires, now) {
			// A dropped event: the read from the one before it fails. A
			// corrupt event is held, not dropped, so a read that skipped
			// only corrupt ones to get here fails now.
			if len(out) == 0 && sinceID != "" {
				return nil, sinceID, fmt.Errorf("memory: read events: %w: event %d after cursor %d is no longer retained",
					provider.ErrCursorExpired, r.seq, since)
			}
			break
		}
		last = provider.FormatSeqCursor(r.seq)
		if ev, ok := p.event(ctx, pipelineID, r); ok {
			out = append(out, types.EventRecord{StreamID: last, Event: ev})
		}
	}
	return out, last, nil
}
