package redis

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"

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
	err := scriptAppendOnce.Run(ctx, p.c, []string{key, p.k.appends(pid)}, kind, ids.Random(),
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
