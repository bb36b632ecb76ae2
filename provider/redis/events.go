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
	if err := p.writing(ctx, "append event"); err != nil {
		return err
	}
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
	return p.appendOnce(ctx, "append event", "x", p.k.events(ev.PipelineID), data)
}

// appendOnce appends data to the stream (kind "x") or list ("l") at key with one
// script, exactly once per call: the call's marker is kept for callMemory.
func (p *Provider) appendOnce(ctx context.Context, op, kind, key string, data []byte) error {
	err := p.run(ctx, scriptAppendOnce, []string{key, p.k.newCall(key)}, kind, callMemoryMS, data, p.maxEvents).Err()
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
	if err := provider.CheckID("pipeline ID", pipelineID); err != nil {
		return provider.Fail[types.EventRecord](err)
	}
	if _, _, ok := parseStreamID(cursor); cursor != "" && !ok {
		return provider.Fail[types.EventRecord](provider.Invalidf("malformed event cursor %q", cursor))
	}
	const op = "follow events"
	return provider.Follow(ctx, func() provider.Poller[types.EventRecord] {
		return streamPoller(p, op, p.k.events(pipelineID), cursor, func(m goredis.XMessage, _ string) (types.EventRecord, error) {
			r := types.EventRecord{StreamID: m.ID}
			return r, decodeEvent(op, m, &r.Event)
		})
	})
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

// streamPoller is the provider.Poller of a follow of the stream at key after
// cursor ("" is its start): Read is one XREAD BLOCK (see xreadBlock) and returns
// decode of each entry in stream order, so Wait returns at once. decode gets the
// entry and the cursor before it ("" for the first entry of a follow from the
// start); when it fails, Read returns the entries before the failing one, and the
// next Read, which starts at it, returns the error.
func streamPoller[R any](p *Provider, op, key, cursor string, decode func(m goredis.XMessage, prev string) (R, error)) provider.Poller[R] {
	return provider.Poller[R]{
		Read: func(ctx context.Context) ([]R, error) {
			msgs, err := p.xreadBlock(ctx, op, key, cmp.Or(cursor, "0-0"))
			if err != nil {
				return nil, err
			}
			out := make([]R, 0, len(msgs))
			for _, m := range msgs {
				r, err := decode(m, cursor)
				if err != nil {
					if len(out) > 0 {
						break
					}
					return nil, err
				}
				out = append(out, r)
				cursor = m.ID
			}
			return out, nil
		},
		Wait: func(context.Context, int) error { return nil },
	}
}

// xreadBlock reads up to followPage entries of the stream at key after the ID
// after, blocking up to followBlock on the server (nil when none came). It returns
// ctx's error when ctx ends and ErrClosed when p stops, both at once even while
// the read is blocked: go-redis does not interrupt a blocked read, so the read
// runs on a goroutine, and an abandoned one ends within followBlock and frees its
// connection.
func (p *Provider) xreadBlock(ctx context.Context, op, key, after string) ([]goredis.XMessage, error) {
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	type result struct {
		s   []goredis.XStream
		err error
	}
	read := make(chan result, 1)
	go func() {
		s, err := p.c.XRead(ctx, &goredis.XReadArgs{Streams: []string{key, after}, Count: followPage, Block: followBlock}).Result()
		read <- result{s, err}
	}()
	select {
	case r := <-read:
		switch {
		case errors.Is(r.err, goredis.Nil): // the block timed out
			return nil, nil
		case r.err != nil && ctx.Err() == nil:
			return nil, p.wrap(op, r.err)
		case r.err == nil && len(r.s) == 1:
			return r.s[0].Messages, nil
		case r.err == nil:
			return nil, nil
		}
	case <-ctx.Done():
	case <-p.stopped:
	}
	return nil, p.begin(ctx) // ctx's error or ErrClosed
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
