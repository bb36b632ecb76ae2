package redis

import (
	"cmp"
	"context"
	"errors"
	"iter"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/ids"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// eventField is the stream entry field holding an event's JSON.
const eventField = "e"

// AppendEvent implements provider.EventStore with one script that runs XADD ...
// MAXLEN ~ maxEvents, exactly once per call even when go-redis retried it after a
// lost reply, filling a zero Timestamp from the clock. The entry's stream ID is its
// cursor; the order of stream IDs is the commit order every reader sees.
func (p *Provider) AppendEvent(ctx context.Context, ev types.Event) error {
	ev, err := provider.PrepareEvent(ev, p.now())
	if err != nil {
		return err
	}
	data, err := p.encode(ev)
	if err != nil {
		return err
	}
	if err := p.begin(ctx); err != nil {
		return err
	}
	return p.appendOnce(ctx, "append event", "x", ev.PipelineID, p.k.events(ev.PipelineID), data)
}

// appendOnce appends data to the stream (kind "x") or list ("l") at key of
// pipeline pid with one script, exactly once per call: a nonce unique to the call
// is kept for callMemory in the pipeline's append set.
func (p *Provider) appendOnce(ctx context.Context, op, kind, pid, key, data string) error {
	now := p.now().UnixMilli()
	mem := callMemory.Milliseconds()
	err := p.run(ctx, scriptAppendOnce, []string{key, p.k.appends(pid)}, kind, ids.Random(),
		now, now-mem, mem, data, p.maxEvents).Err()
	return p.wrap(op, err)
}

// ListEvents implements provider.EventStore with one XREVRANGE ... COUNT limit,
// returned oldest first.
func (p *Provider) ListEvents(ctx context.Context, pipelineID string, limit int) ([]types.Event, error) {
	if err := provider.CheckID("pipeline ID", pipelineID); err != nil {
		return nil, err
	}
	if err := provider.CheckLimit(limit); err != nil {
		return nil, err
	}
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	msgs, err := p.c.XRevRangeN(ctx, p.k.events(pipelineID), "+", "-", int64(limit)).Result()
	if err != nil {
		return nil, p.wrap("list events", err)
	}
	slices.Reverse(msgs)
	out := make([]types.Event, len(msgs))
	for i, m := range msgs {
		if err := decodeEvent("list events", m, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ReadEventsSince implements provider.EventStore with one XRANGE from the exclusive
// start "(sinceID". A cursor is a stream ID ("<ms>-<seq>", both decimal); anything
// else is ErrInvalidArgument.
func (p *Provider) ReadEventsSince(ctx context.Context, pipelineID, sinceID string, count int64) ([]types.EventRecord, error) {
	if err := provider.CheckID("pipeline ID", pipelineID); err != nil {
		return nil, err
	}
	if err := provider.CheckCount(count); err != nil {
		return nil, err
	}
	start := "-"
	if sinceID != "" {
		ms, seq, ok := parseStreamID(sinceID)
		if !ok {
			return nil, provider.Invalidf("malformed event cursor %q", sinceID)
		}
		if ms == math.MaxUint64 && seq == math.MaxUint64 {
			if err := p.begin(ctx); err != nil {
				return nil, err
			}
			return []types.EventRecord{}, nil // nothing can follow the largest ID
		}
		start = "(" + sinceID
	}
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	msgs, err := p.c.XRangeN(ctx, p.k.events(pipelineID), start, "+", count).Result()
	if err != nil {
		return nil, p.wrap("read events", err)
	}
	out := make([]types.EventRecord, len(msgs))
	for i, m := range msgs {
		out[i].StreamID = m.ID
		if err := decodeEvent("read events", m, &out[i].Event); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// FollowEvents implements provider.EventFollower: XREAD BLOCK on the pipeline's
// stream after the cursor (a stream ID; "" is the start of the log), one round trip
// per batch of up to followPage events, blocking at most followBlock when none is
// there. Each blocked read holds one connection of the client's pool. A cursor
// older than the retained log reads from the oldest retained event, as
// ReadEventsSince does. See "Following" in the package doc.
func (p *Provider) FollowEvents(ctx context.Context, pipelineID, cursor string) iter.Seq2[types.EventRecord, error] {
	return func(yield func(types.EventRecord, error) bool) {
		if err := provider.CheckID("pipeline ID", pipelineID); err != nil {
			yield(types.EventRecord{}, err)
			return
		}
		if _, _, ok := parseStreamID(cursor); cursor != "" && !ok {
			yield(types.EventRecord{}, provider.Invalidf("malformed event cursor %q", cursor))
			return
		}
		follow(ctx, p, "follow events", p.k.events(pipelineID), cursor, func(m goredis.XMessage, _ string) (types.EventRecord, error) {
			r := types.EventRecord{StreamID: m.ID}
			return r, decodeEvent("follow events", m, &r.Event)
		}, yield)
	}
}

// Following a stream (FollowEvents, WatchCascadeMarkers).
const (
	// followPage is the most entries one read of a follower returns.
	followPage = 256
	// followBlock is the longest a follower's read blocks on the server (XREAD
	// BLOCK) before it reads again; it also bounds how long the connection of a
	// read abandoned on cancel stays busy.
	followBlock = 5 * time.Second
)

// follow reads the stream at key after cursor ("" is its start) with XREAD BLOCK
// and yields decode of each entry in stream order; decode gets the entry and the
// cursor before it ("" for the first entry of a follow from the start). It ends
// after yielding an error: decode's, the read's, ctx's error when ctx ends or
// ErrClosed when p stops, both at once even while a read is blocked. The read runs
// on a goroutine, so that a follower returns on cancel without waiting for the
// server: an abandoned read ends within followBlock and frees its connection.
func follow[R any](ctx context.Context, p *Provider, op, key, cursor string, decode func(m goredis.XMessage, prev string) (R, error), yield func(R, error) bool) {
	var zero R
	type result struct {
		msgs []goredis.XMessage
		err  error
	}
	for {
		if err := p.begin(ctx); err != nil {
			yield(zero, err)
			return
		}
		read := make(chan result, 1)
		go func(after string) {
			s, err := p.c.XRead(ctx, &goredis.XReadArgs{Streams: []string{key, after}, Count: followPage, Block: followBlock}).Result()
			if len(s) == 1 {
				read <- result{s[0].Messages, err}
				return
			}
			read <- result{nil, err}
		}(cmp.Or(cursor, "0-0"))
		var r result
		select {
		case r = <-read:
		case <-ctx.Done():
			continue // begin reports it
		case <-p.stopped:
			continue
		}
		if r.err != nil && !errors.Is(r.err, goredis.Nil) { // Nil: the block timed out
			if ctx.Err() == nil {
				yield(zero, p.wrap(op, r.err))
				return
			}
			continue
		}
		for _, m := range r.msgs {
			rec, err := decode(m, cursor)
			if err != nil {
				yield(zero, err)
				return
			}
			if !yield(rec, nil) {
				return
			}
			cursor = m.ID
		}
	}
}

// parseStreamID parses "<ms>-<seq>" in canonical decimal form (no sign, no leading
// zeros), so that each cursor has one spelling.
func parseStreamID(s string) (ms, seq uint64, ok bool) {
	a, b, found := strings.Cut(s, "-")
	if !found {
		return 0, 0, false
	}
	parse := func(x string) (uint64, bool) {
		if x == "" || (len(x) > 1 && x[0] == '0') || x[0] == '+' {
			return 0, false
		}
		n, err := strconv.ParseUint(x, 10, 64)
		return n, err == nil
	}
	ms, ok1 := parse(a)
	seq, ok2 := parse(b)
	return ms, seq, ok1 && ok2
}

func decodeEvent(op string, m goredis.XMessage, ev *types.Event) error {
	s, _ := m.Values[eventField].(string)
	return decodeInto(op, s, ev)
}
