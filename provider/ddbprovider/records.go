package ddbprovider

import (
	"context"
	"fmt"
	"iter"
	"math"
	"sync/atomic"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/internal/ddbx"
	"github.com/pipestate/pipestate/internal/ids"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// slotSK is the sort key suffix of a (date, schedule) pair: '#' sorts before every
// ID byte, so string order of the suffix is (date, schedule) order.
func slotSK(date, scheduleID string) string { return date + "#" + scheduleID }

// PutRunLog implements provider.RunLogStore with one UpdateItem that replaces
// the entry's item (keeping its fences; see "Fencing" in the package doc).
func (p *Provider) PutRunLog(ctx context.Context, entry types.RunLogEntry) error {
	entry, err := provider.PrepareRunLog(entry)
	if err := p.life.EnterWrite(ctx, "PutRunLog", err); err != nil {
		return err
	}
	data, err := encode(entry)
	if err != nil {
		return err
	}
	it := item{PK: pipelinePrefix + entry.PipelineID, SK: skRunLog + slotSK(entry.Date, entry.ScheduleID), Data: data}
	it.setExpiry(provider.Expiry(p.now(), p.retention.RunLogs))
	return p.write(ctx, "PutRunLog", it, guardOf(ctx, "run log "+slotName(entry.PipelineID, entry.Date, entry.ScheduleID)))
}

// GetRunLog implements provider.RunLogStore with one GetItem.
func (p *Provider) GetRunLog(ctx context.Context, pipelineID, date, scheduleID string) (*types.RunLogEntry, error) {
	schedule, err := provider.CheckSlot(pipelineID, date, scheduleID)
	if err := p.life.Enter(ctx, err); err != nil {
		return nil, err
	}
	return getData[types.RunLogEntry](ctx, p, "GetRunLog", provider.KindRunLog, pipelinePrefix+pipelineID, skRunLog+slotSK(date, schedule))
}

// ListRunLogs implements provider.RunLogStore with one strongly consistent Query,
// newest Date first, ties by ScheduleID descending.
func (p *Provider) ListRunLogs(ctx context.Context, pipelineID string, limit int) ([]types.RunLogEntry, error) {
	if err := p.life.Enter(ctx, provider.CheckID("pipeline ID", pipelineID), provider.CheckLimit(limit)); err != nil {
		return nil, err
	}
	return nonNil(queryData[types.RunLogEntry](ctx, p, "ListRunLogs",
		queryIn{kind: provider.KindRunLog, key: partition(pipelinePrefix+pipelineID, skRunLog), desc: true, limit: limit}))
}

// PutReplay implements provider.ReplayStore with one UpdateItem that replaces
// the request's item (keeping its fences; see "Fencing" in the package doc); the
// item is also in GSI1 for ListReplays. A zero CreatedAt is filled from the clock.
func (p *Provider) PutReplay(ctx context.Context, req types.ReplayRequest) error {
	req, err := provider.PrepareReplay(req, p.now())
	if err := p.life.EnterWrite(ctx, "PutReplay", err); err != nil {
		return err
	}
	data, err := encode(req)
	if err != nil {
		return err
	}
	slot := slotSK(req.Date, req.ScheduleID)
	it := item{
		PK: pipelinePrefix + req.PipelineID, SK: skReplay + slot,
		GSI1PK: gsiReplays, GSI1SK: ids.TimeKey(req.CreatedAt) + "#" + req.PipelineID + "#" + slot,
		Data: data,
	}
	it.setExpiry(provider.Expiry(p.now(), p.retention.Replays))
	return p.write(ctx, "PutReplay", it, guardOf(ctx, "replay "+slotName(req.PipelineID, req.Date, req.ScheduleID)))
}

// GetReplay implements provider.ReplayStore with one GetItem.
func (p *Provider) GetReplay(ctx context.Context, pipelineID, date, scheduleID string) (*types.ReplayRequest, error) {
	schedule, err := provider.CheckSlot(pipelineID, date, scheduleID)
	if err := p.life.Enter(ctx, err); err != nil {
		return nil, err
	}
	return getData[types.ReplayRequest](ctx, p, "GetReplay", provider.KindReplay, pipelinePrefix+pipelineID, skReplay+slotSK(date, schedule))
}

// ListReplays implements provider.ReplayStore with one Query of GSI1 (eventually
// consistent), newest CreatedAt first, ties by (pipeline, date, schedule)
// descending.
func (p *Provider) ListReplays(ctx context.Context, limit int) ([]types.ReplayRequest, error) {
	if err := p.life.Enter(ctx, provider.CheckLimit(limit)); err != nil {
		return nil, err
	}
	return nonNil(queryData[types.ReplayRequest](ctx, p, "ListReplays",
		queryIn{kind: provider.KindReplay, index: indexGSI1, key: gsi1(gsiReplays), desc: true, limit: limit, id: baseKeyID}))
}

// PutLateArrival implements provider.LateArrivalStore with one
// TransactWriteItems of the record and its list's guard item (fenced or not;
// see putLate and Fencing in the package doc), followed by a second request
// when the guard already outlives the record. Each record is a new item whose
// sort key ends with DetectedAt and an insertion stamp, so records with equal
// DetectedAt list in insertion order (within one process; across processes, by
// wall clock).
func (p *Provider) PutLateArrival(ctx context.Context, la types.LateArrival) error {
	la, err := provider.PrepareLateArrival(la, p.now())
	if err := p.life.EnterWrite(ctx, "PutLateArrival", err); err != nil {
		return err
	}
	data, err := encode(la)
	if err != nil {
		return err
	}
	it := item{
		PK:   pipelinePrefix + la.PipelineID,
		SK:   skLate + slotSK(la.Date, la.ScheduleID) + "#" + ids.TimeKey(la.DetectedAt) + "#" + insertionStamp(),
		Data: data,
	}
	it.setExpiry(provider.Expiry(p.now(), p.retention.LateArrivals))
	g := guardOf(ctx, "late arrivals "+slotName(la.PipelineID, la.Date, la.ScheduleID))
	return p.putLate(ctx, it, lateGuardSK(la.Date, la.ScheduleID), g)
}

// lateGuardSK is the sort key, in the pipeline's partition, of the item that
// remembers the fences of a (date, schedule) list of late arrivals: no query
// reads it (no list's key range holds it).
func lateGuardSK(date, scheduleID string) string { return skLateGuard + slotSK(date, scheduleID) }

// condGuardOutlived is the condition of a late-arrival list's guard update
// that gives it a record's ttl (:gttl): the guard is missing, or it expires no
// later than the record. A guard without a ttl never expires, and one that
// expires later than the record keeps its expiry: the update never shortens
// it.
var condGuardOutlived = &form{"attribute_not_exists(#pk) OR (attribute_exists(#ttl) AND #ttl <= :gttl)",
	map[string]string{"#pk": attrPK, "#ttl": attrTTL}}

// putLate writes it, a late arrival, fenced by g or not, with one
// TransactWriteItems of the list's guard item (guardSK) and it. The guard
// update checks and remembers g's fence (when fenced) and, fenced or not, makes
// the guard live at least as long as it (the list lives as long as its
// longest-lived record, and the guard as long as the list): it takes its
// expiry, or loses its own when it never expires, unless the guard already
// outlives it (condGuardOutlived), in which case a second request writes it
// leaving the guard's expiry alone (fenced: checking the fence as well). The
// SDK's idempotency token makes a retry after a lost reply answer the first
// attempt's outcome; a retry the token no longer covers writes the same item
// again (its key is set once per call).
func (p *Provider) putLate(ctx context.Context, it item, guardSK string, g guard) error {
	const op = "PutLateArrival"
	av, err := marshal(it)
	if err != nil {
		return err
	}
	gav, err := marshal(item{PK: it.PK, SK: guardSK, Exp: it.Exp, TTL: it.TTL})
	if err != nil {
		return err
	}
	var outlived expr // none for a record that never expires
	if it.TTL != 0 {
		outlived = expr{condGuardOutlived, map[string]ddbtypes.AttributeValue{":gttl": nv(it.TTL)}}
	}
	items := []ddbtypes.TransactWriteItem{p.txUpdate(gav, outlived, g), p.txPut(av, expr{})}
	for conflicts := 0; ; {
		err := p.transact(ctx, op, items...)
		if err == nil {
			return nil
		}
		if old, failed := ddbx.TxConditionFailed(err, 0); failed {
			if rerr := g.refused(old); rerr != nil {
				return fmt.Errorf("dynamodb: %s: %w", op, rerr)
			}
			if outlived.form == nil {
				return fmt.Errorf("dynamodb: %s: %w", op, err)
			}
			// The guard outlives the record already: write it without
			// touching the guard's expiry (no conflict: the next attempt
			// is the first of the second request).
			if !g.on {
				return p.put(ctx, op, it)
			}
			outlived, items[0] = expr{}, p.txGuard(it.PK, guardSK, g)
			continue
		}
		if !ddbx.IsTxConflict(err) {
			return fmt.Errorf("dynamodb: %s: %w", op, err)
		}
		if err := p.conflictWait(ctx, op, conflicts, err); err != nil {
			return err
		}
		conflicts++
	}
}

// slotName names a (pipeline, date, schedule) record in a refusal's error.
func slotName(pipelineID, date, scheduleID string) string {
	return pipelineID + "/" + date + "/" + scheduleID
}

// ListLateArrivals implements provider.LateArrivalStore with one strongly consistent
// Query (more past 1 MB), oldest DetectedAt first.
func (p *Provider) ListLateArrivals(ctx context.Context, pipelineID, date, scheduleID string) ([]types.LateArrival, error) {
	schedule, err := provider.CheckSlot(pipelineID, date, scheduleID)
	if err := p.life.Enter(ctx, err); err != nil {
		return nil, err
	}
	return nonNil(queryData[types.LateArrival](ctx, p, "ListLateArrivals",
		queryIn{kind: provider.KindLateArrival, key: partition(pipelinePrefix+pipelineID, skLate+slotSK(date, schedule)+"#")}))
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

// WriteCascadeMarker implements provider.CascadeStore: the marker, its by-time
// list copy and an entry of the marker log (see WatchCascadeMarkers) are written in
// one TransactWriteItems (two when the marker existed: the second also deletes the
// old list copy). The entry takes the log's next sequence number like an event
// (the counter moves from n to n+1 on condition that it holds n), so a write that
// loses the number to another instance costs one more transaction.
func (p *Provider) WriteCascadeMarker(ctx context.Context, pipelineID, scheduleID, date, source string) error {
	now := p.now()
	m, err := provider.PrepareCascadeMarker(pipelineID, scheduleID, date, source, now)
	if err := p.life.EnterWrite(ctx, "WriteCascadeMarker", err); err != nil {
		return err
	}
	truth, list, err := markerItems(m)
	if err != nil {
		return err
	}
	entry := &logEntry{it: item{PK: markerLogPK, Data: truth.Data}, tok: ids.Random(), last: p.markerSeq.Load()}
	entry.it.setExpiry(provider.Expiry(now, p.retention.MarkerLog))
	exp := provider.Expiry(now, p.retention.CascadeMarkers)
	truth.setExpiry(exp)
	list.setExpiry(exp)
	return p.putPair(ctx, "WriteCascadeMarker", truth, list, nil, entry, guardOf(ctx, "cascade marker "+slotName(pipelineID, date, m.ScheduleID)))
}

// logEntry is the marker-log entry of one WriteCascadeMarker call, which putPair
// writes in the marker's transaction under the log's next sequence number.
type logEntry struct {
	it   item   // the entry; its SK and Seq are set per attempt
	tok  string // the call's token, stamped on the counter with the claim
	last int64  // the counter value the next attempt expects
}

// logActions returns the transaction actions of entry: the claim of sequence
// number entry.last+1 on the log's counter, and the entry under that number.
func (p *Provider) logActions(entry *logEntry) ([]ddbtypes.TransactWriteItem, error) {
	claim := p.claimSeq(markerLogPK, skLogSeq, entry.last, entry.last+1, entry.tok, guard{})
	it := entry.it
	it.Seq = entry.last + 1
	it.SK = seqSK(skLogEntry, it.Seq)
	av, err := marshal(it)
	if err != nil {
		return nil, err
	}
	return []ddbtypes.TransactWriteItem{claim, p.txPut(av, expr{})}, nil
}

// WatchCascadeMarkers implements provider.MarkerWatcher by polling the marker log:
// one strongly consistent Query per page of entries numbered after the cursor,
// waiting between empty reads as FollowEvents does (WithPollInterval). Cursors are
// the entries' decimal sequence numbers ("" and "0": the oldest entry retained);
// anything else is ErrInvalidArgument. Numbers are gapless, so an entry missing
// after the cursor was dropped by retention (WithMarkerLogRetention): the watch
// yields the entries before the gap, then an error wrapping
// provider.ErrCursorExpired. Each read runs on to the log's counter, as
// ReadEventsSince does, so a watch whose cursor's successors all expired fails
// at once, also before the next marker write.
func (p *Provider) WatchCascadeMarkers(ctx context.Context, cursor string) iter.Seq2[types.CascadeMarkerRecord, error] {
	since, err := provider.ParseSeqCursor(cursor)
	if err := p.life.Enter(ctx, err); err != nil {
		return provider.Fail[types.CascadeMarkerRecord](err)
	}
	const op = "WatchCascadeMarkers"
	return provider.Follow(ctx, func() provider.Poller[types.CascadeMarkerRecord] {
		since := since
		return provider.Poller[types.CascadeMarkerRecord]{
			Read: func(ctx context.Context) ([]types.CascadeMarkerRecord, error) {
				if err := p.life.Enter(ctx); err != nil || since == math.MaxInt64 {
					return nil, err
				}
				recs, last, err := readLog(ctx, p, op, markerLog, since == 0, since, followPage, func(it item) (types.CascadeMarkerRecord, error) {
					r := types.CascadeMarkerRecord{Cursor: provider.FormatSeqCursor(it.Seq)}
					return r, decodeData(tableName(p.table), provider.KindMarkerWrite, it, &r.Marker)
				})
				if err != nil {
					return nil, ctxErr(ctx, err)
				}
				since = max(since, last) // past the entries skipped as corrupt too
				return recs, nil
			},
			Wait: provider.PollWait(p.pollMin, p.pollMax),
		}
	})
}

// ListCascadeMarkers implements provider.CascadeReader with one strongly consistent
// Query of the by-time list copies, newest WrittenAt first.
func (p *Provider) ListCascadeMarkers(ctx context.Context, pipelineID string, limit int) ([]types.CascadeMarker, error) {
	if err := p.life.Enter(ctx, provider.CheckID("pipeline ID", pipelineID), provider.CheckLimit(limit)); err != nil {
		return nil, err
	}
	return nonNil(queryData[types.CascadeMarker](ctx, p, "ListCascadeMarkers",
		queryIn{kind: provider.KindCascadeMarker, key: partition(markerPrefix+pipelineID, skMarkerByTime), desc: true, limit: limit, id: timedID(skMarkerByTime)}))
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
	if err := p.life.EnterWrite(ctx, "PutRerun", err); err != nil {
		return err
	}
	truth, list, err := rerunItems(rerun)
	if err != nil {
		return err
	}
	exp := provider.Expiry(p.now(), p.retention.Reruns)
	truth.setExpiry(exp)
	list.setExpiry(exp)
	return p.putPair(ctx, "PutRerun", truth, list, nil, nil, guardOf(ctx, "rerun "+rerun.RerunID))
}

// GetRerun implements provider.RerunStore with one GetItem.
func (p *Provider) GetRerun(ctx context.Context, rerunID string) (*types.RerunRecord, error) {
	if err := p.life.Enter(ctx, provider.CheckID("rerun ID", rerunID)); err != nil {
		return nil, err
	}
	return getData[types.RerunRecord](ctx, p, "GetRerun", provider.KindRerun, rerunPrefix+rerunID, skState)
}

// ListReruns implements provider.RerunStore with one strongly consistent Query of
// the pipeline's list copies.
func (p *Provider) ListReruns(ctx context.Context, pipelineID string, limit int) ([]types.RerunRecord, error) {
	if err := p.life.Enter(ctx, provider.CheckID("pipeline ID", pipelineID), provider.CheckLimit(limit)); err != nil {
		return nil, err
	}
	return nonNil(queryData[types.RerunRecord](ctx, p, "ListReruns",
		queryIn{kind: provider.KindRerun, key: partition(pipelinePrefix+pipelineID, skRerun), desc: true, limit: limit, id: timedID(skRerun)}))
}

// ListAllReruns implements provider.RerunStore with one Query of GSI1, which is
// eventually consistent (see the package doc).
func (p *Provider) ListAllReruns(ctx context.Context, limit int) ([]types.RerunRecord, error) {
	if err := p.life.Enter(ctx, provider.CheckLimit(limit)); err != nil {
		return nil, err
	}
	return nonNil(queryData[types.RerunRecord](ctx, p, "ListAllReruns",
		queryIn{kind: provider.KindRerun, index: indexGSI1, key: gsi1(gsiReruns), desc: true, limit: limit, id: baseKeyID}))
}
