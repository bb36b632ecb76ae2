package redis

import (
	"context"
	"slices"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// PutRunLog implements provider.RunLogStore with one script that writes the entry
// and its place in the pipeline's run-log order. An empty ScheduleID is
// DefaultScheduleID and is stored as such.
func (p *Provider) PutRunLog(ctx context.Context, entry types.RunLogEntry) error {
	entry, err := provider.PrepareRunLog(entry)
	if err != nil {
		return err
	}
	data, err := p.encode(entry)
	if err != nil {
		return err
	}
	if err := p.begin(ctx); err != nil {
		return err
	}
	return p.slotPut(ctx, "put run log", p.k.runLogs(entry.PipelineID), slotField(entry.Date, entry.ScheduleID), data, 0)
}

// slotPut upserts field of ix with one script (see lua/slot_put.lua).
func (p *Provider) slotPut(ctx context.Context, op string, ix index, field, data string, score int64) error {
	return p.wrap(op, scriptSlotPut.Run(ctx, p.c, []string{ix.h, ix.z}, field, data, score).Err())
}

// GetRunLog implements provider.RunLogStore with one HGET.
func (p *Provider) GetRunLog(ctx context.Context, pipelineID, date, scheduleID string) (*types.RunLogEntry, error) {
	scheduleID, err := provider.CheckSlot(pipelineID, date, scheduleID)
	if err != nil {
		return nil, err
	}
	return getJSON[types.RunLogEntry](ctx, p, "get run log", func() *goredis.StringCmd {
		return p.c.HGet(ctx, p.k.runLogs(pipelineID).h, slotField(date, scheduleID))
	})
}

// ListRunLogs implements provider.RunLogStore with one script: newest Date first
// (string order), ties by ScheduleID descending.
func (p *Provider) ListRunLogs(ctx context.Context, pipelineID string, limit int) ([]types.RunLogEntry, error) {
	if err := provider.CheckID("pipeline ID", pipelineID); err != nil {
		return nil, err
	}
	if err := provider.CheckLimit(limit); err != nil {
		return nil, err
	}
	return zlist[types.RunLogEntry](ctx, p, "list run logs", p.k.runLogs(pipelineID), limit)
}

// zlist reads the first limit values of a sorted set + hash pair with one script.
func zlist[T any](ctx context.Context, p *Provider, op string, ix index, limit int) ([]T, error) {
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	vals, err := scriptZList.Run(ctx, p.c, []string{ix.z, ix.h}, 0, limit-1).StringSlice()
	if err != nil {
		return nil, p.wrap(op, err)
	}
	out := make([]T, len(vals))
	for i, v := range vals {
		if err := decodeInto(op, v, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// WriteCascadeMarker implements provider.CascadeStore with one script. WrittenAt
// is the clock's now truncated to the microsecond, which is also the marker's score
// in the pipeline's marker order; an empty scheduleID is DefaultScheduleID.
func (p *Provider) WriteCascadeMarker(ctx context.Context, pipelineID, scheduleID, date, source string) error {
	m, err := provider.PrepareCascadeMarker(pipelineID, scheduleID, date, source, p.now().Truncate(time.Microsecond))
	if err != nil {
		return err
	}
	data, err := p.encode(m)
	if err != nil {
		return err
	}
	if err := p.begin(ctx); err != nil {
		return err
	}
	return p.slotPut(ctx, "write cascade marker", p.k.markers(pipelineID), slotField(m.Date, m.ScheduleID), data, m.WrittenAt.UnixMicro())
}

// ListCascadeMarkers implements provider.CascadeReader with one script: newest
// WrittenAt first, ties by (date, schedule) descending.
func (p *Provider) ListCascadeMarkers(ctx context.Context, pipelineID string, limit int) ([]types.CascadeMarker, error) {
	if err := provider.CheckID("pipeline ID", pipelineID); err != nil {
		return nil, err
	}
	if err := provider.CheckLimit(limit); err != nil {
		return nil, err
	}
	return zlist[types.CascadeMarker](ctx, p, "list cascade markers", p.k.markers(pipelineID), limit)
}

// PutLateArrival implements provider.LateArrivalStore with one script that runs
// RPUSH, exactly once per call like AppendEvent; a zero DetectedAt is filled from
// the clock and an empty ScheduleID is DefaultScheduleID.
func (p *Provider) PutLateArrival(ctx context.Context, la types.LateArrival) error {
	la, err := provider.PrepareLateArrival(la, p.now())
	if err != nil {
		return err
	}
	data, err := p.encode(la)
	if err != nil {
		return err
	}
	if err := p.begin(ctx); err != nil {
		return err
	}
	return p.appendOnce(ctx, "put late arrival", "l", la.PipelineID, p.k.late(la.PipelineID, la.Date, la.ScheduleID), data)
}

// ListLateArrivals implements provider.LateArrivalStore with one LRANGE, sorted
// oldest DetectedAt first (ties in append order).
func (p *Provider) ListLateArrivals(ctx context.Context, pipelineID, date, scheduleID string) ([]types.LateArrival, error) {
	scheduleID, err := provider.CheckSlot(pipelineID, date, scheduleID)
	if err != nil {
		return nil, err
	}
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	vals, err := p.c.LRange(ctx, p.k.late(pipelineID, date, scheduleID), 0, -1).Result()
	if err != nil {
		return nil, p.wrap("list late arrivals", err)
	}
	out := make([]types.LateArrival, len(vals))
	for i, v := range vals {
		if err := decodeInto("list late arrivals", v, &out[i]); err != nil {
			return nil, err
		}
	}
	slices.SortStableFunc(out, func(a, b types.LateArrival) int { return a.DetectedAt.Compare(b.DetectedAt) })
	return out, nil
}
