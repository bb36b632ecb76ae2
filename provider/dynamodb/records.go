package dynamodb

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/pipestate/pipestate/internal/ids"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// slotSK is the sort key suffix of a (date, schedule) pair: '#' sorts before every
// ID byte, so string order of the suffix is (date, schedule) order.
func slotSK(date, scheduleID string) string { return date + "#" + scheduleID }

// PutRunLog implements provider.RunLogStore with one PutItem.
func (p *Provider) PutRunLog(ctx context.Context, entry types.RunLogEntry) error {
	entry, err := provider.PrepareRunLog(entry)
	if err != nil {
		return err
	}
	data, err := encode(entry)
	if err != nil {
		return err
	}
	if err := p.begin(ctx); err != nil {
		return err
	}
	return p.put(ctx, "put run log", item{
		PK: pipelinePrefix + entry.PipelineID, SK: skRunLog + slotSK(entry.Date, entry.ScheduleID), Data: data,
	})
}

// GetRunLog implements provider.RunLogStore with one GetItem.
func (p *Provider) GetRunLog(ctx context.Context, pipelineID, date, scheduleID string) (*types.RunLogEntry, error) {
	schedule, err := provider.CheckSlot(pipelineID, date, scheduleID)
	if err != nil {
		return nil, err
	}
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	return getData[types.RunLogEntry](ctx, p, "get run log", pipelinePrefix+pipelineID, skRunLog+slotSK(date, schedule))
}

// ListRunLogs implements provider.RunLogStore with one strongly consistent Query,
// newest Date first, ties by ScheduleID descending.
func (p *Provider) ListRunLogs(ctx context.Context, pipelineID string, limit int) ([]types.RunLogEntry, error) {
	if err := provider.CheckID("pipeline ID", pipelineID); err != nil {
		return nil, err
	}
	if err := provider.CheckLimit(limit); err != nil {
		return nil, err
	}
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	return nonNil(queryData[types.RunLogEntry](ctx, p, "list run logs",
		queryIn{key: partition(pipelinePrefix+pipelineID, skRunLog), desc: true, limit: limit}))
}

// PutReplay implements provider.ReplayStore with one PutItem; the item is also in
// GSI1 for ListReplays. A zero CreatedAt is filled from the clock.
func (p *Provider) PutReplay(ctx context.Context, req types.ReplayRequest) error {
	req, err := provider.PrepareReplay(req, p.now())
	if err != nil {
		return err
	}
	if err := p.begin(ctx); err != nil {
		return err
	}
	data, err := encode(req)
	if err != nil {
		return err
	}
	slot := slotSK(req.Date, req.ScheduleID)
	return p.put(ctx, "put replay", item{
		PK: pipelinePrefix + req.PipelineID, SK: skReplay + slot,
		GSI1PK: gsiReplays, GSI1SK: ids.TimeKey(req.CreatedAt) + "#" + req.PipelineID + "#" + slot,
		Data: data,
	})
}

// GetReplay implements provider.ReplayStore with one GetItem.
func (p *Provider) GetReplay(ctx context.Context, pipelineID, date, scheduleID string) (*types.ReplayRequest, error) {
	schedule, err := provider.CheckSlot(pipelineID, date, scheduleID)
	if err != nil {
		return nil, err
	}
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	return getData[types.ReplayRequest](ctx, p, "get replay", pipelinePrefix+pipelineID, skReplay+slotSK(date, schedule))
}

// ListReplays implements provider.ReplayStore with one Query of GSI1 (eventually
// consistent), newest CreatedAt first, ties by (pipeline, date, schedule)
// descending.
func (p *Provider) ListReplays(ctx context.Context, limit int) ([]types.ReplayRequest, error) {
	if err := provider.CheckLimit(limit); err != nil {
		return nil, err
	}
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	return nonNil(queryData[types.ReplayRequest](ctx, p, "list replays",
		queryIn{index: indexGSI1, key: gsi1(gsiReplays), desc: true, limit: limit, id: baseKeyID}))
}

// PutLateArrival implements provider.LateArrivalStore with one PutItem. Each record
// is a new item whose sort key ends with DetectedAt and an insertion stamp, so
// records with equal DetectedAt list in insertion order (within one process;
// across processes, by wall clock).
func (p *Provider) PutLateArrival(ctx context.Context, la types.LateArrival) error {
	la, err := provider.PrepareLateArrival(la, p.now())
	if err != nil {
		return err
	}
	if err := p.begin(ctx); err != nil {
		return err
	}
	data, err := encode(la)
	if err != nil {
		return err
	}
	return p.put(ctx, "put late arrival", item{
		PK:   pipelinePrefix + la.PipelineID,
		SK:   skLate + slotSK(la.Date, la.ScheduleID) + "#" + ids.TimeKey(la.DetectedAt) + "#" + insertionStamp(),
		Data: data,
	})
}

// ListLateArrivals implements provider.LateArrivalStore with one strongly consistent
// Query (more past 1 MB), oldest DetectedAt first.
func (p *Provider) ListLateArrivals(ctx context.Context, pipelineID, date, scheduleID string) ([]types.LateArrival, error) {
	schedule, err := provider.CheckSlot(pipelineID, date, scheduleID)
	if err != nil {
		return nil, err
	}
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	return nonNil(queryData[types.LateArrival](ctx, p, "list late arrivals",
		queryIn{key: partition(pipelinePrefix+pipelineID, skLate+slotSK(date, schedule)+"#")}))
}

var (
	lastStamp atomic.Int64
	// stampTail tells this process's stamps from another's: 32 random bits, not
	// ids.Random's 128, because it ends the sort key of every late arrival.
	stampTail = ids.Random()[:8]
)

// insertionStamp returns a string that increases with every call in this process
// (wall-clock nanoseconds, bumped past the previous stamp) and ends with a random
// per-process tail, so stamps of two processes never collide.
func insertionStamp() string {
	for {
		prev := lastStamp.Load()
		next := max(prev+1, time.Now().UnixNano())
		if lastStamp.CompareAndSwap(prev, next) {
			return fmt.Sprintf("%016x%s", next, stampTail)
		}
	}
}

// markerItems returns a cascade marker's truth item, keyed by (date, schedule), and
// its list copy, keyed by WrittenAt.
func markerItems(m types.CascadeMarker) (truth, list item, err error) {
	data, err := encode(m)
	if err != nil {
		return truth, list, err
	}
	slot := slotSK(m.Date, m.ScheduleID)
	list = item{PK: markerPrefix + m.PipelineID, SK: skMarkerByTime + ids.TimeKey(m.WrittenAt) + "#" + slot, Data: data}
	truth = item{PK: list.PK, SK: slot, Data: data, ListPK: list.PK, ListSK: list.SK}
	return truth, list, nil
}

// WriteCascadeMarker implements provider.CascadeStore: the marker and its by-time
// list copy change in one TransactWriteItems (two when the marker existed: the
// second also deletes the old list copy).
func (p *Provider) WriteCascadeMarker(ctx context.Context, pipelineID, scheduleID, date, source string) error {
	m, err := provider.PrepareCascadeMarker(pipelineID, scheduleID, date, source, p.now())
	if err != nil {
		return err
	}
	if err := p.begin(ctx); err != nil {
		return err
	}
	truth, list, err := markerItems(m)
	if err != nil {
		return err
	}
	return p.putPair(ctx, "write cascade marker", truth, list, nil)
}

// ListCascadeMarkers implements provider.CascadeReader with one strongly consistent
// Query of the by-time list copies, newest WrittenAt first.
func (p *Provider) ListCascadeMarkers(ctx context.Context, pipelineID string, limit int) ([]types.CascadeMarker, error) {
	if err := provider.CheckID("pipeline ID", pipelineID); err != nil {
		return nil, err
	}
	if err := provider.CheckLimit(limit); err != nil {
		return nil, err
	}
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	return nonNil(queryData[types.CascadeMarker](ctx, p, "list cascade markers",
		queryIn{key: partition(markerPrefix+pipelineID, skMarkerByTime), desc: true, limit: limit, id: timedID(skMarkerByTime)}))
}

// rerunItems returns a rerun's truth item (also in GSI1 for ListAllReruns) and its
// list copy in the pipeline's partition.
func rerunItems(r types.RerunRecord) (truth, list item, err error) {
	data, err := encode(r)
	if err != nil {
		return truth, list, err
	}
	at := ids.TimeKey(r.RequestedAt) + "#" + r.RerunID
	list = item{PK: pipelinePrefix + r.PipelineID, SK: skRerun + at, Data: data}
	truth = item{PK: rerunPrefix + r.RerunID, SK: skState, GSI1PK: gsiReruns, GSI1SK: at, Data: data, ListPK: list.PK, ListSK: list.SK}
	return truth, list, nil
}

// PutRerun implements provider.RerunStore: the record and its pipeline's list copy
// change in one TransactWriteItems (two when RequestedAt or PipelineID changed,
// the second also deleting the old list copy). A zero RequestedAt is filled from
// the clock.
func (p *Provider) PutRerun(ctx context.Context, rerun types.RerunRecord) error {
	rerun, err := provider.PrepareRerun(rerun, p.now())
	if err != nil {
		return err
	}
	if err := p.begin(ctx); err != nil {
		return err
	}
	truth, list, err := rerunItems(rerun)
	if err != nil {
		return err
	}
	return p.putPair(ctx, "put rerun", truth, list, nil)
}

// GetRerun implements provider.RerunStore with one GetItem.
func (p *Provider) GetRerun(ctx context.Context, rerunID string) (*types.RerunRecord, error) {
	if err := provider.CheckID("rerun ID", rerunID); err != nil {
		return nil, err
	}
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	return getData[types.RerunRecord](ctx, p, "get rerun", rerunPrefix+rerunID, skState)
}

// ListReruns implements provider.RerunStore with one strongly consistent Query of
// the pipeline's list copies.
func (p *Provider) ListReruns(ctx context.Context, pipelineID string, limit int) ([]types.RerunRecord, error) {
	if err := provider.CheckID("pipeline ID", pipelineID); err != nil {
		return nil, err
	}
	if err := provider.CheckLimit(limit); err != nil {
		return nil, err
	}
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	return nonNil(queryData[types.RerunRecord](ctx, p, "list reruns",
		queryIn{key: partition(pipelinePrefix+pipelineID, skRerun), desc: true, limit: limit, id: timedID(skRerun)}))
}

// ListAllReruns implements provider.RerunStore with one Query of GSI1, which is
// eventually consistent (see the package doc).
func (p *Provider) ListAllReruns(ctx context.Context, limit int) ([]types.RerunRecord, error) {
	if err := provider.CheckLimit(limit); err != nil {
		return nil, err
	}
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	return nonNil(queryData[types.RerunRecord](ctx, p, "list all reruns",
		queryIn{index: indexGSI1, key: gsi1(gsiReruns), desc: true, limit: limit, id: baseKeyID}))
}
