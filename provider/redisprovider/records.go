package redisprovider

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/fence"
	"github.com/pipestate/pipestate/internal/ids"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// PutRunLog implements provider.RunLogStore with one script that writes the entry
// and its place in the pipeline's run-log order. An empty ScheduleID is
// DefaultScheduleID and is stored as such.
func (p *Provider) PutRunLog(ctx context.Context, entry types.RunLogEntry) error {
	entry, err := provider.PrepareRunLog(entry)
	if err = p.life.EnterWrite(ctx, "put run log", err); err != nil {
		return err
	}
	data, err := p.encode(entry)
	if err != nil {
		return err
	}
	return p.slotPut(ctx, "put run log", provider.KindRunLog, entry.PipelineID, p.k.runLogs(entry.PipelineID),
		slotField(entry.Date, entry.ScheduleID), data, 0, lifetimeOf(p.now(), p.retention.RunLogs))
}

// slotPut upserts field of ix, a list of pipelineID's records of kind, with one
// script, which also restarts the record's retention and prunes expired records
// of ix (see lua/slot_put.lua). Every call passes the pipeline's fence memory
// (see fence.go); a fenced call (ctx carries a fence) also passes a call marker.
func (p *Provider) slotPut(ctx context.Context, op string, kind provider.RecordKind, pipelineID string, ix index, field string,
	data []byte, score int64, life lifetime) error {
	keys := []string{ix.h, ix.z, ix.x, p.k.fences(p.k.pipeline(pipelineID))}
	args := []any{field, data, score, life.now, life.exp, life.ttl, pruneBatch}
	t, fenced := fence.FromContext(ctx)
	if fenced {
		keys, args = append(keys, p.k.newCall(ix.h)), append(args, callMemoryMS)
	}
	c := p.run(ctx, scriptSlotPut, keys, appendFence(args, t, fenced)...)
	if !fenced || c.Err() != nil {
		return p.wrap(op, c.Err())
	}
	_, err := fenceReply(op, c.Val(), t, kind, slotID(pipelineID, field))
	return err
}

// GetRunLog implements provider.RunLogStore with one HGET.
func (p *Provider) GetRunLog(ctx context.Context, pipelineID, date, scheduleID string) (*types.RunLogEntry, error) {
	scheduleID, err := provider.CheckSlot(pipelineID, date, scheduleID)
	if err = p.life.Enter(ctx, err); err != nil {
		return nil, err
	}
	key, field := p.k.runLogs(pipelineID).h, slotField(date, scheduleID)
	name := func() (string, string) { return slotID(pipelineID, field), where(key, fieldAt(field)) }
	v, err := p.c.HGet(ctx, key, field).Result()
	if errors.Is(err, goredis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, p.wrap("get run log", err)
	}
	exp, j := unprefix(v)
	if !alive(exp, p.now()) {
		return nil, nil
	}
	var e types.RunLogEntry
	if err := decode(provider.KindRunLog, j, &e, name); err != nil {
		return nil, err
	}
	return &e, nil
}

// ListRunLogs implements provider.RunLogStore with one script: newest Date first
// (string order), ties by ScheduleID descending.
func (p *Provider) ListRunLogs(ctx context.Context, pipelineID string, limit int) ([]types.RunLogEntry, error) {
	if err := p.life.Enter(ctx, provider.CheckID("pipeline ID", pipelineID), provider.CheckLimit(limit)); err != nil {
		return nil, err
	}
	return zlist[types.RunLogEntry](ctx, p, "list run logs", provider.KindRunLog, pipelineID, p.k.runLogs(pipelineID), limit)
}

// slotID is the CorruptError.ID of the record of a pipeline at a (date, schedule)
// hash field: "pipeline:date:schedule".
func slotID(pipelineID, field string) string {
	return pipelineID + ":" + strings.ReplaceAll(field, sep, ":")
}

// zlist reads the first limit values of a sorted set + hash pair (records of kind
// of pipelineID, by (date, schedule) field) with one script. When a value does
// not decode, it reads them again with their fields, a script call more each
// time, further until it has limit good ones or the set ends, and reports the
// corrupt ones of its last read: so limit counts good records only, and each
// read is a snapshot. Its caller has opened the method.
func zlist[T any](ctx context.Context, p *Provider, op string, kind provider.RecordKind, pipelineID string, ix index, limit int) ([]T, error) {
	vals, err := p.run(ctx, scriptZList, []string{ix.z, ix.h}, limit, "", p.now().UnixMicro()).StringSlice()
	if err != nil {
		return nil, p.wrap(op, err)
	}
	out := make([]T, len(vals))
	unnamed := func() (string, string) { return "", "" }
	for i, v := range vals {
		if decode(kind, v, &out[i], unnamed) != nil {
			return zlistNamed[T](ctx, p, op, kind, pipelineID, ix, limit)
		}
	}
	return out, nil
}

// zlistNamed is zlist's read past corrupt values.
func zlistNamed[T any](ctx context.Context, p *Provider, op string, kind provider.RecordKind, pipelineID string, ix index, limit int) ([]T, error) {
	for stop := limit - 1; ; {
		pairs, err := p.run(ctx, scriptZList, []string{ix.z, ix.h}, stop+1, "f", p.now().UnixMicro()).StringSlice()
		if err != nil {
			return nil, p.wrap(op, err)
		}
		out := make([]T, 0, limit)
		var bad []error
		for i := 0; i+1 < len(pairs) && len(out) < limit; i += 2 {
			field := pairs[i]
			var v T
			err := decode(kind, pairs[i+1], &v, func() (string, string) {
				return slotID(pipelineID, field), where(ix.h, fieldAt(field))
			})
			if err != nil {
				bad = append(bad, err)
				continue
			}
			out = append(out, v)
		}
		if len(out) == limit || len(pairs)/2 <= stop { // enough, or the set has no more
			for _, err := range bad {
				provider.SkipCorrupt(ctx, p.sig, err)
			}
			return out, nil
		}
		stop += limit - len(out)
	}
}

// WriteCascadeMarker implements provider.CascadeStore in two round trips, in
// this order: one script appends the write to the marker log (the stream
// WatchCascadeMarkers reads), then one script writes the marker and its place in
// the pipeline's marker order. A crash or error between them leaves a delivered
// write whose marker is not stored (a phantom), never a stored marker that no
// watcher sees. WrittenAt is the clock's now truncated to the microsecond, which
// is also the marker's score in the pipeline's marker order; an empty scheduleID
// is DefaultScheduleID.
func (p *Provider) WriteCascadeMarker(ctx context.Context, pipelineID, scheduleID, date, source string) error {
	const op = "write cascade marker"
	m, err := provider.PrepareCascadeMarker(pipelineID, scheduleID, date, source, p.now().Truncate(time.Microsecond))
	if err = p.life.EnterWrite(ctx, op, err); err != nil {
		return err
	}
	data, err := p.encode(m)
	if err != nil {
		return err
	}
	if err := p.run(ctx, scriptMarkerLog, []string{p.k.markerLog()}, data, p.maxMarkers).Err(); err != nil {
		return p.wrap(op, err)
	}
	return p.slotPut(ctx, op, provider.KindCascadeMarker, pipelineID, p.k.markers(pipelineID), slotField(m.Date, m.ScheduleID),
		data, m.WrittenAt.UnixMicro(), lifetimeOf(m.WrittenAt, p.retention.CascadeMarkers))
}

// WatchCascadeMarkers implements provider.MarkerWatcher: it follows the marker log
// (one stream for every pipeline) like FollowEvents follows events; a cursor is a
// stream ID, "" the oldest write retained. Each entry holds the ID generated
// before it, so a read whose first entry does not follow its cursor, because
// retention (WithMaxMarkerWrites) trimmed writes after it, yields an error
// wrapping provider.ErrCursorExpired. A watch from a cursor reads its first
// batch as ReadEventsSince reads events (without blocking), so it fails at once
// also when the log was trimmed to nothing and nothing was written since. A
// cursor whose own write was trimmed, but none after it, is not expired.
func (p *Provider) WatchCascadeMarkers(ctx context.Context, cursor string) iter.Seq2[types.CascadeMarkerRecord, error] {
	if err := p.life.Enter(ctx, checkCursor("marker", cursor)); err != nil {
		return provider.Fail[types.CascadeMarkerRecord](err)
	}
	const op = "watch cascade markers"
	log := p.k.markerLog()
	var first func(ctx context.Context, after string) ([]goredis.XMessage, error)
	if cursor != "" {
		first = func(ctx context.Context, after string) ([]goredis.XMessage, error) {
			msgs, _, err := p.readEvents(ctx, op, log, after, followPage) // a gap fails the next read, at its entry
			return msgs, err
		}
	}
	return provider.Follow(ctx, func() provider.Poller[types.CascadeMarkerRecord] {
		return streamPoller(p, op, log, cursor, first, func(m goredis.XMessage, prev string) (types.CascadeMarkerRecord, error) {
			r := types.CascadeMarkerRecord{Cursor: m.ID}
			name := func() (string, string) { return m.ID, where(log, "entry "+m.ID) }
			before, _, valid := entryPrev(m)
			if !valid { // written by hand, not by marker_log.lua
				id, key := name()
				return r, corrupt(provider.KindMarkerWrite, id, key, fmt.Errorf("field %s %q is not a stream ID", markerLogPrev, before))
			}
			if prev != "" && before != prev {
				return r, fmt.Errorf("redis: %s: %w: %s", op, provider.ErrCursorExpired, dropped(prev, before))
			}
			s, ok := m.Values[markerLogJSON].(string)
			if !ok {
				id, key := name()
				return r, corrupt(provider.KindMarkerWrite, id, key, fmt.Errorf("no field %s", markerLogJSON))
			}
			return r, decode(provider.KindMarkerWrite, s, &r.Marker, name)
		})
	})
}

// The fields of a marker log entry (see lua/marker_log.lua).
const (
	markerLogJSON = "m"       // the marker's JSON
	markerLogPrev = eventPrev // the ID generated before the entry (entryPrev reads it)
)

// ListCascadeMarkers implements provider.CascadeReader with one script: newest
// WrittenAt first, ties by (date, schedule) descending.
func (p *Provider) ListCascadeMarkers(ctx context.Context, pipelineID string, limit int) ([]types.CascadeMarker, error) {
	if err := p.life.Enter(ctx, provider.CheckID("pipeline ID", pipelineID), provider.CheckLimit(limit)); err != nil {
		return nil, err
	}
	return zlist[types.CascadeMarker](ctx, p, "list cascade markers", provider.KindCascadeMarker, pipelineID, p.k.markers(pipelineID), limit)
}

// PutLateArrival implements provider.LateArrivalStore with one script that runs
// RPUSH, exactly once per call like AppendEvent; a zero DetectedAt is filled from
// the clock and an empty ScheduleID is DefaultScheduleID.
func (p *Provider) PutLateArrival(ctx context.Context, la types.LateArrival) error {
	la, err := provider.PrepareLateArrival(la, p.now())
	if err = p.life.EnterWrite(ctx, "put late arrival", err); err != nil {
		return err
	}
	data, err := p.encode(la)
	if err != nil {
		return err
	}
	key := p.k.late(la.PipelineID, la.Date, la.ScheduleID)
	life := lifetimeOf(p.now(), p.retention.LateArrivals)
	return p.appendOnce(ctx, "put late arrival", provider.KindLateArrival, la.PipelineID,
		replayID(la.PipelineID, la.Date, la.ScheduleID), key, "l", callMemoryMS, data, 0, life.now, life.exp, life.ttl)
}

// ListLateArrivals implements provider.LateArrivalStore with one LRANGE, sorted
// oldest DetectedAt first (ties in append order).
func (p *Provider) ListLateArrivals(ctx context.Context, pipelineID, date, scheduleID string) ([]types.LateArrival, error) {
	scheduleID, err := provider.CheckSlot(pipelineID, date, scheduleID)
	if err = p.life.Enter(ctx, err); err != nil {
		return nil, err
	}
	key := p.k.late(pipelineID, date, scheduleID)
	vals, err := p.c.LRange(ctx, key, 0, -1).Result()
	if err != nil {
		return nil, p.wrap("list late arrivals", err)
	}
	out := make([]types.LateArrival, len(vals))
	n := 0
	now := p.now()
	for i, v := range vals {
		exp, v := unprefix(v)
		if !alive(exp, now) {
			continue
		}
		name := func() (string, string) {
			return pipelineID + ":" + date + ":" + scheduleID, where(key, "index "+strconv.Itoa(i))
		}
		if decodeOrSkip(ctx, p, provider.KindLateArrival, v, &out[n], name) {
			n++
		} else {
			out[n] = types.LateArrival{}
		}
	}
	out = out[:n]
	slices.SortStableFunc(out, func(a, b types.LateArrival) int { return a.DetectedAt.Compare(b.DetectedAt) })
	return out, nil
}

// PutRerun implements provider.RerunStore in three round trips (provisional list
// entries, the record, final list entries; see "Cross-slot writes"). A zero
// RequestedAt is filled from the clock. Re-putting a RerunID under another pipeline
// moves it to that pipeline's list.
func (p *Provider) PutRerun(ctx context.Context, rerun types.RerunRecord) error {
	rerun, err := provider.PrepareRerun(rerun, p.now())
	if err = p.life.EnterWrite(ctx, "put rerun", err); err != nil {
		return err
	}
	data, err := p.encode(rerun)
	if err != nil {
		return err
	}
	member := ids.TimeKey(rerun.RequestedAt) + rerun.RerunID
	_, _, err = p.putIndexed(ctx, "put rerun", indexedRecord{
		key: p.k.rerun(rerun.RerunID), id: rerun.RerunID, member: member, data: data, pipeline: rerun.PipelineID,
		lists:  []index{p.k.reruns(rerun.PipelineID), p.k.globalReruns()},
		mode:   putMove,
		leave:  p.k.reruns,
		life:   lifetimeOf(p.now(), p.retention.Reruns),
		truth:  p.k.rerun,
		fences: p.k.fences(p.k.rerun(rerun.RerunID)),
		kind:   provider.KindRerun,
	})
	return err
}

// GetRerun implements provider.RerunStore with one HGET.
func (p *Provider) GetRerun(ctx context.Context, rerunID string) (*types.RerunRecord, error) {
	if err := p.life.Enter(ctx, provider.CheckID("rerun ID", rerunID)); err != nil {
		return nil, err
	}
	key := p.k.rerun(rerunID)
	name := func() (string, string) { return rerunID, where(key, "") }
	return getLive[types.RerunRecord](ctx, p, "get rerun", provider.KindRerun, key, name)
}

// ListReruns implements provider.RerunStore like ListRuns: newest RequestedAt first,
// ties by RerunID descending.
func (p *Provider) ListReruns(ctx context.Context, pipelineID string, limit int) ([]types.RerunRecord, error) {
	if err := p.life.Enter(ctx, provider.CheckID("pipeline ID", pipelineID), provider.CheckLimit(limit)); err != nil {
		return nil, err
	}
	return p.listReruns(ctx, p.k.reruns(pipelineID), pipelineID, limit)
}

// ListAllReruns implements provider.RerunStore from the global rerun list (one
// round trip) and a pipelined read of the records.
func (p *Provider) ListAllReruns(ctx context.Context, limit int) ([]types.RerunRecord, error) {
	if err := p.life.Enter(ctx, provider.CheckLimit(limit)); err != nil {
		return nil, err
	}
	return p.listReruns(ctx, p.k.globalReruns(), "", limit)
}

// listReruns lists ix; pipelineID "" means every pipeline. Its caller has
// opened the method.
func (p *Provider) listReruns(ctx context.Context, ix index, pipelineID string, limit int) ([]types.RerunRecord, error) {
	return listIndexed(ctx, p, "list reruns", listSpec{
		kind:  provider.KindRerun,
		ix:    ix,
		desc:  true,
		timed: true,
		key:   p.k.rerun,
		want: func(r record) string {
			if !r.hasJSON || (pipelineID != "" && r.pipeline != pipelineID) {
				return ""
			}
			return r.member
		},
	}, limit, decodeJSON[types.RerunRecord](provider.KindRerun))
}

// replayKey is the truth key of the replay whose ID in the global replay list is
// id.
func (p *Provider) replayKey(id string) string {
	parts := strings.SplitN(id, ":", 3)
	if len(parts) != 3 {
		return p.k.replay("", "", "") // a corrupt member: no record, repaired away
	}
	return p.k.replay(parts[0], parts[1], parts[2])
}

// replayID is the record ID of a replay in the global replay list.
func replayID(pipelineID, date, schedule string) string {
	return pipelineID + ":" + date + ":" + schedule
}

// PutReplay implements provider.ReplayStore in three round trips (provisional global
// list entry, the record, final entry). An empty ScheduleID is DefaultScheduleID and
// is stored as such; a zero CreatedAt is filled from the clock.
func (p *Provider) PutReplay(ctx context.Context, req types.ReplayRequest) error {
	req, err := provider.PrepareReplay(req, p.now())
	if err = p.life.EnterWrite(ctx, "put replay", err); err != nil {
		return err
	}
	data, err := p.encode(req)
	if err != nil {
		return err
	}
	id := replayID(req.PipelineID, req.Date, req.ScheduleID)
	member := ids.TimeKey(req.CreatedAt) + id
	_, _, err = p.putIndexed(ctx, "put replay", indexedRecord{
		key: p.k.replay(req.PipelineID, req.Date, req.ScheduleID), id: id, member: member, data: data, pipeline: req.PipelineID,
		lists:  []index{p.k.globalReplays()},
		mode:   putMove,
		life:   lifetimeOf(p.now(), p.retention.Replays),
		truth:  p.replayKey,
		fences: p.k.fences(p.k.pipeline(req.PipelineID)),
		kind:   provider.KindReplay,
	})
	return err
}

// GetReplay implements provider.ReplayStore with one HGET.
func (p *Provider) GetReplay(ctx context.Context, pipelineID, date, scheduleID string) (*types.ReplayRequest, error) {
	scheduleID, err := provider.CheckSlot(pipelineID, date, scheduleID)
	if err = p.life.Enter(ctx, err); err != nil {
		return nil, err
	}
	key := p.k.replay(pipelineID, date, scheduleID)
	name := func() (string, string) { return replayID(pipelineID, date, scheduleID), where(key, "") }
	return getLive[types.ReplayRequest](ctx, p, "get replay", provider.KindReplay, key, name)
}

// ListReplays implements provider.ReplayStore from the global replay list: newest
// CreatedAt first, ties by (pipeline, date, schedule) descending.
func (p *Provider) ListReplays(ctx context.Context, limit int) ([]types.ReplayRequest, error) {
	if err := p.life.Enter(ctx, provider.CheckLimit(limit)); err != nil {
		return nil, err
	}
	return listIndexed(ctx, p, "list replays", listSpec{
		kind:  provider.KindReplay,
		ix:    p.k.globalReplays(),
		desc:  true,
		timed: true,
		key:   p.replayKey,
		want: func(r record) string {
			if !r.hasJSON {
				return ""
			}
			return r.member
		},
	}, limit, decodeJSON[types.ReplayRequest](provider.KindReplay))
}
