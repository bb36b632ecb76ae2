package redisprovider

import (
	"cmp"
	"context"
	"errors"
	"fmt"
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

// The fields of an event's stream entry (see lua/append_once.lua).
const (
	eventField = "e" // the event's JSON
	eventPrev  = "p" // the ID of the entry before it
)

// AppendEvent implements provider.EventStore with one script that runs XADD ...
// MAXLEN ~ maxEvents, exactly once per call even when go-redis retried it after a
// lost reply, filling a zero Timestamp from the clock. The entry's stream ID is its
// cursor; the order of stream IDs is the commit order every reader sees.
func (p *Provider) AppendEvent(ctx context.Context, ev types.Event) error {
	ev, err := provider.PrepareEvent(ev, p.now())
	if err = p.life.EnterWrite(ctx, "append event", err); err != nil {
		return err
	}
	data, err := p.encode(ev)
	if err != nil {
		return err
	}
	key := p.k.events(ev.PipelineID)
	return p.appendOnce(ctx, "append event", provider.KindEvent, ev.PipelineID, ev.PipelineID, key,
		"x", callMemoryMS, data, p.maxEvents)
}

// appendOnce runs append_once on key, a stream or list of pipelineID, with args
// after the key and the pipeline's fence memory (fenced when ctx carries a fence);
// record names it in a refusal.
func (p *Provider) appendOnce(ctx context.Context, op string, kind provider.RecordKind, pipelineID, record, key string, args ...any) error {
	keys, args, t, fenced := fenceArgs(ctx, p.k.fences(p.k.pipeline(pipelineID)), []string{key, p.k.newCall(key)}, args)
	c := p.run(ctx, scriptAppendOnce, keys, args...)
	if !fenced || c.Err() != nil {
		return p.wrap(op, c.Err())
	}
	_, err := fenceReply(op, c.Val(), t, kind, record)
	return err
}

// ListEvents implements provider.EventStore with one XREVRANGE ... COUNT limit,
// returned oldest first. Entries that do not decode are skipped and reported,
// and one more XREVRANGE, before the oldest entry read, reads as many more.
func (p *Provider) ListEvents(ctx context.Context, pipelineID string, limit int) ([]types.Event, error) {
	if err := p.life.Enter(ctx, provider.CheckID("pipeline ID", pipelineID), provider.CheckLimit(limit)); err != nil {
		return nil, err
	}
	key := p.k.events(pipelineID)
	out := make([]types.Event, 0, min(limit, 1024))
	for end := "+"; ; {
		want := limit - len(out)
		msgs, err := p.c.XRevRangeN(ctx, key, end, "-", int64(want)).Result()
		if err != nil {
			return nil, p.wrap("list events", err)
		}
		for _, m := range msgs {
			var ev types.Event
			if decodeEventOrSkip(ctx, p, pipelineID, key, m, &ev) {
				out = append(out, ev)
			}
		}
		if len(out) == limit || len(msgs) < want {
			break
		}
		end = "(" + msgs[len(msgs)-1].ID
	}
	slices.Reverse(out)
	return out, nil
}

// ReadEventsSince implements provider.EventStore with one XRANGE from the
// exclusive start "(sinceID", pipelined with a script that tells whether
// retention trimmed events after the cursor when no entry follows it (one round
// trip); "" is one XRANGE from the oldest entry retained. A cursor is a stream ID ("<ms>-<seq>", both decimal); anything
// else is ErrInvalidArgument. A cursor after which an event was trimmed fails with
// provider.ErrCursorExpired: see "Events" in the package doc for the exact rule.
// Entries that do not decode are skipped and reported, and one more read, after
// the last entry read, reads as many more.
func (p *Provider) ReadEventsSince(ctx context.Context, pipelineID, sinceID string, count int64) ([]types.EventRecord, error) {
	const op = "read events"
	if err := p.life.Enter(ctx, provider.CheckID("pipeline ID", pipelineID), provider.CheckCount(count), checkCursor("event", sinceID)); err != nil {
		return nil, err
	}
	key := p.k.events(pipelineID)
	out := []types.EventRecord{}
	for cursor := sinceID; ; {
		want := count - int64(len(out))
		msgs, cut, err := p.readEvents(ctx, op, key, cursor, want)
		if err != nil {
			if (len(out) > 0 || sinceID == "") && errors.Is(err, provider.ErrCursorExpired) {
				// The read from the last event returned fails; "" is never
				// expired (past entries skipped as corrupt it returns none).
				return out, nil
			}
			return nil, err
		}
		before := len(out)
		for _, m := range msgs {
			r := types.EventRecord{StreamID: m.ID}
			if decodeEventOrSkip(ctx, p, pipelineID, key, m, &r.Event) {
				out = append(out, r)
			}
		}
		// A short page ends the read, unless all it had was corrupt and a gap
		// cut it: a corrupt entry is held, not dropped, so the read goes on
		// after it and fails with ErrCursorExpired at the gap.
		if int64(len(out)) == count || (int64(len(msgs)) < want && (!cut || len(out) > before)) {
			return out, nil
		}
		cursor = msgs[len(msgs)-1].ID // past entries skipped as corrupt: read as many more
	}
}

// readEvents reads up to count entries of the stream at key (a pipeline's
// events, or the marker log: both record in field p the ID before each entry)
// after cursor ("": from the oldest entry retained): an error wrapping
// provider.ErrCursorExpired when entries after the cursor were trimmed, also
// when the stream was trimmed to nothing and nothing newer was added yet, and the
// entries before the first gap otherwise (see gapFree; cut reports that a gap
// ended them). From a cursor it is one
// pipeline of XRANGE and events_check's "last" (one round trip); one more
// while the entry after the cursor was appended by a version that did not record
// p.
func (p *Provider) readEvents(ctx context.Context, op, key, cursor string, count int64) (msgs []goredis.XMessage, cut bool, err error) {
	if cursor == "" {
		msgs, err := p.c.XRangeN(ctx, key, "-", "+", count).Result()
		if err != nil {
			return nil, false, p.wrap(op, err)
		}
		msgs, cut = gapFree(msgs)
		return msgs, cut, nil
	}
	if ms, seq, _ := parseStreamID(cursor); ms == math.MaxUint64 && seq == math.MaxUint64 {
		return nil, false, nil // nothing can follow the largest ID (and XRANGE refuses "(" of it)
	}
	// XRANGE first: when it finds nothing and events_check then finds a new
	// entry, the read returns nothing and the next read sees the new entry's p.
	rng := goredis.NewXMessageSliceCmd(ctx, "xrange", key, "("+cursor, "+", "count", count)
	checkKeys, checkArgs := []string{key}, []any{"last"}
	last := p.scripts.Cmd(ctx, scriptEventsCheck, checkKeys, checkArgs)
	_, _ = p.c.Pipelined(ctx, func(pipe goredis.Pipeliner) error {
		_ = pipe.Process(ctx, rng)
		_ = pipe.Process(ctx, last)
		return nil
	})
	last = p.scripts.Retry(ctx, scriptEventsCheck, last, checkKeys, checkArgs) // reloads it, or falls back to EVALSHA
	msgs, err = rng.Result()
	if err != nil {
		return nil, false, p.wrap(op, err)
	}
	if len(msgs) == 0 {
		id, err := last.Text()
		switch {
		case errors.Is(err, goredis.Nil):
			return nil, false, nil
		case err != nil:
			return nil, false, p.wrap(op, err)
		case idLess(cursor, id):
			return nil, false, fmt.Errorf("redis: %s: %w: %s", op, provider.ErrCursorExpired, dropped(cursor, id))
		}
		return nil, false, nil
	}
	prev, present, valid := entryPrev(msgs[0])
	if !valid {
		// Appended by an older version, or corrupt (written by hand): ask
		// whether it is the oldest and events before it were trimmed.
		trimmed, err := p.run(ctx, scriptEventsCheck, []string{key}, "head", msgs[0].ID).Int()
		if err != nil {
			return nil, false, p.wrap(op, err)
		}
		if trimmed == 1 {
			why := "was appended by an older version, which did not record the ID before it"
			if present {
				why = fmt.Sprintf("has a corrupt field %s %q, not the ID before it", eventPrev, prev)
			}
			return nil, false, fmt.Errorf("redis: %s: %w: the oldest event retained, %s, %s, and events before it were trimmed: some may have followed cursor %s",
				op, provider.ErrCursorExpired, msgs[0].ID, why, cursor)
		}
	} else if idLess(cursor, prev) {
		return nil, false, fmt.Errorf("redis: %s: %w: %s", op, provider.ErrCursorExpired, dropped(cursor, prev))
	}
	msgs, cut = gapFree(msgs)
	return msgs, cut, nil
}

// dropped says that the entries after cursor up to before (the p of the entry
// read after cursor) are gone. Retention trims them, or a hand deleted them
// (XDEL); the entry read cannot tell which, so it names both.
func dropped(cursor, before string) string {
	return fmt.Sprintf("the entries after cursor %s up to %s were trimmed (retention) or deleted (XDEL)", cursor, before)
}

// gapFree returns the entries of msgs, consecutive entries of one stream, up to
// the first whose p says that an entry before it, after the one before it in
// msgs, is gone (only an XDEL can do that: retention trims the oldest entries),
// and whether it cut msgs there; the read from the entry before it then fails
// with ErrCursorExpired.
func gapFree(msgs []goredis.XMessage) ([]goredis.XMessage, bool) {
	for i := 1; i < len(msgs); i++ {
		if prev, _, valid := entryPrev(msgs[i]); valid && idLess(msgs[i-1].ID, prev) {
			return msgs[:i], true
		}
	}
	return msgs, false
}

// entryPrev returns the ID a stream entry (an event, or a marker log write)
// records of the entry before it, field p: present is false for an event
// appended by a version that did not record it, and valid is true when present
// and a stream ID (parseStreamID), false when absent or corrupt.
func entryPrev(m goredis.XMessage) (prev string, present, valid bool) {
	v, present := m.Values[eventPrev]
	prev, _ = v.(string)
	_, _, valid = parseStreamID(prev)
	return prev, present, present && valid
}

// idLess reports whether stream ID a orders before b; both are canonical (see
// parseStreamID), and a malformed one orders first.
func idLess(a, b string) bool {
	ams, aseq, _ := parseStreamID(a)
	bms, bseq, _ := parseStreamID(b)
	return ams < bms || (ams == bms && aseq < bseq)
}

// FollowEvents implements provider.EventFollower: XREAD BLOCK on the pipeline's
// stream after the cursor (a stream ID; "" is the oldest event retained), one
// round trip per batch of up to followPage events, blocking at most followBlock
// when none is there. A follow from a cursor reads its first batch as
// ReadEventsSince does (without blocking), so a cursor after which events were
// trimmed fails at once with provider.ErrCursorExpired, also when the stream was
// trimmed to nothing; while it follows, an entry whose p says that events before
// it were trimmed (a follower that fell more than WithMaxEvents behind) ends it
// with that error too. Each blocked read holds one connection of the client's
// pool. See "Following" in the package doc.
func (p *Provider) FollowEvents(ctx context.Context, pipelineID, cursor string) iter.Seq2[types.EventRecord, error] {
	if err := p.life.Enter(ctx, provider.CheckID("pipeline ID", pipelineID), checkCursor("event", cursor)); err != nil {
		return provider.Fail[types.EventRecord](err)
	}
	const op = "follow events"
	key := p.k.events(pipelineID)
	var first func(ctx context.Context, after string) ([]goredis.XMessage, error)
	if cursor != "" {
		first = func(ctx context.Context, after string) ([]goredis.XMessage, error) {
			msgs, _, err := p.readEvents(ctx, op, key, after, followPage) // a gap fails the next read, at its entry
			return msgs, err
		}
	}
	return provider.Follow(ctx, func() provider.Poller[types.EventRecord] {
		return streamPoller(p, op, key, cursor, first, func(m goredis.XMessage, prev string) (types.EventRecord, error) {
			r := types.EventRecord{StreamID: m.ID}
			if before, _, valid := entryPrev(m); valid && prev != "" && idLess(prev, before) {
				return r, fmt.Errorf("redis: %s: %w: %s", op, provider.ErrCursorExpired, dropped(prev, before))
			}
			return r, decodeEvent(pipelineID, key, m, &r.Event)
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
// cursor ("" is its start): Read (ErrClosed once p is stopped) is one XREAD
// BLOCK (see xreadBlock), or first for the first Read when it is not nil, and
// returns decode of each entry in stream order, so Wait returns at once. decode
// gets the entry and the cursor before it ("" for the first entry of a follow
// from the start); when it fails, Read returns the entries before the failing
// one, and the next Read, which starts at it, returns the error — unless the
// error is a *provider.CorruptError: that entry is skipped and reported, and the
// follow goes on after it.
func streamPoller[R any](p *Provider, op, key, cursor string, first func(ctx context.Context, after string) ([]goredis.XMessage, error),
	decode func(m goredis.XMessage, prev string) (R, error)) provider.Poller[R] {
	return provider.Poller[R]{
		Read: func(ctx context.Context) ([]R, error) {
			if err := p.life.Enter(ctx); err != nil { // stopped since the follow began
				return nil, err
			}
			var msgs []goredis.XMessage
			var err error
			if first != nil {
				msgs, err = first(ctx, cursor)
				first = nil
			} else {
				msgs, err = p.xreadBlock(ctx, op, key, cmp.Or(cursor, "0-0"))
			}
			if err != nil {
				return nil, err
			}
			out := make([]R, 0, len(msgs))
			for _, m := range msgs {
				r, err := decode(m, cursor)
				if provider.SkipCorrupt(ctx, p.sig, err) {
					cursor = m.ID
					continue
				}
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
	return nil, p.life.Enter(ctx) // ErrClosed or ctx's error
}

// checkCursor checks a cursor of the stream of what ("event", "marker"): a
// stream ID (see parseStreamID) or "", which is the stream's start.
func checkCursor(what, cursor string) error {
	if _, _, ok := parseStreamID(cursor); cursor != "" && !ok {
		return provider.Invalidf("malformed %s cursor %q", what, cursor)
	}
	return nil
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

// decodeEvent decodes the entry m of the event log of pipelineID at key into *ev;
// an entry that does not decode is a *provider.CorruptError.
func decodeEvent(pipelineID, key string, m goredis.XMessage, ev *types.Event) error {
	name := func() (string, string) { return pipelineID + ":" + m.ID, where(key, "entry "+m.ID) }
	if before, present, valid := entryPrev(m); present && !valid { // absent on entries of versions that did not record it
		id, key := name()
		return corrupt(provider.KindEvent, id, key, fmt.Errorf("field %s %q is not a stream ID", eventPrev, before))
	}
	s, ok := m.Values[eventField].(string)
	if !ok {
		id, key := name()
		return corrupt(provider.KindEvent, id, key, fmt.Errorf("no field %s", eventField))
	}
	return decode(provider.KindEvent, s, ev, name)
}

// decodeEventOrSkip is decodeEvent for a listing: false (after reporting) skips
// the entry.
func decodeEventOrSkip(ctx context.Context, p *Provider, pipelineID, key string, m goredis.XMessage, ev *types.Event) bool {
	return !provider.SkipCorrupt(ctx, p.sig, decodeEvent(pipelineID, key, m, ev))
}
