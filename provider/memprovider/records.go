package memprovider

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// PutRunLog implements provider.RunLogStore.
func (p *Provider) PutRunLog(ctx context.Context, entry types.RunLogEntry) error {
	e, err := stored(provider.PrepareRunLog(entry))
	if err = p.enterWrite(ctx, "put run log", err); err != nil {
		return err
	}
	defer p.s.mu.Unlock()
	k := slot{e.PipelineID, e.Date, e.ScheduleID}
	return p.fenced(ctx, runLogs.ref(k), func(*data) { put(p, p.now(), runLogs, k, e) })
}

// GetRunLog implements provider.RunLogStore.
func (p *Provider) GetRunLog(ctx context.Context, pipelineID, date, scheduleID string) (*types.RunLogEntry, error) {
	k, err := checkSlot(pipelineID, date, scheduleID)
	if err = p.enter(ctx, err); err != nil {
		return nil, err
	}
	defer p.s.mu.Unlock()
	return get(p, runLogs, k)
}

// checkSlot checks a (pipeline, date, schedule) key with provider.CheckSlot.
func checkSlot(pipelineID, date, scheduleID string) (slot, error) {
	s, err := provider.CheckSlot(pipelineID, date, scheduleID)
	return slot{pipelineID, date, s}, err
}

// ListRunLogs implements provider.RunLogStore.
func (p *Provider) ListRunLogs(ctx context.Context, pipelineID string, limit int) ([]types.RunLogEntry, error) {
	if err := p.enter(ctx, provider.CheckID("pipeline ID", pipelineID), provider.CheckLimit(limit)); err != nil {
		return nil, err
	}
	defer p.s.mu.Unlock()
	return list(ctx, p, limit, runLogs,
		func(e types.RunLogEntry) bool { return e.PipelineID == pipelineID },
		func(a, b types.RunLogEntry) int {
			return cmp.Or(cmp.Compare(b.Date, a.Date), cmp.Compare(b.ScheduleID, a.ScheduleID))
		}), nil
}

// PutRerun implements provider.RerunStore.
func (p *Provider) PutRerun(ctx context.Context, rerun types.RerunRecord) error {
	r, err := stored(provider.PrepareRerun(rerun, p.now()))
	if err = p.enterWrite(ctx, "put rerun", err); err != nil {
		return err
	}
	defer p.s.mu.Unlock()
	return p.fenced(ctx, reruns.ref(r.RerunID), func(*data) { put(p, p.now(), reruns, r.RerunID, r) })
}

// GetRerun implements provider.RerunStore.
func (p *Provider) GetRerun(ctx context.Context, rerunID string) (*types.RerunRecord, error) {
	if err := p.enter(ctx, provider.CheckID("rerun ID", rerunID)); err != nil {
		return nil, err
	}
	defer p.s.mu.Unlock()
	return get(p, reruns, rerunID)
}

// ListReruns implements provider.RerunStore.
func (p *Provider) ListReruns(ctx context.Context, pipelineID string, limit int) ([]types.RerunRecord, error) {
	if err := p.enter(ctx, provider.CheckID("pipeline ID", pipelineID), provider.CheckLimit(limit)); err != nil {
		return nil, err
	}
	defer p.s.mu.Unlock()
	return p.listReruns(ctx, func(r types.RerunRecord) bool { return r.PipelineID == pipelineID }, limit), nil
}

// ListAllReruns implements provider.RerunStore.
func (p *Provider) ListAllReruns(ctx context.Context, limit int) ([]types.RerunRecord, error) {
	if err := p.enter(ctx, provider.CheckLimit(limit)); err != nil {
		return nil, err
	}
	defer p.s.mu.Unlock()
	return p.listReruns(ctx, nil, limit), nil
}

// listReruns lists the reruns keep accepts (nil: all), newest first; the store
// must be locked.
func (p *Provider) listReruns(ctx context.Context, keep func(types.RerunRecord) bool, limit int) []types.RerunRecord {
	return list(ctx, p, limit, reruns, keep, func(a, b types.RerunRecord) int {
		return newestFirst(a.RequestedAt, b.RequestedAt, a.RerunID, b.RerunID)
	})
}

// PutReplay implements provider.ReplayStore.
func (p *Provider) PutReplay(ctx context.Context, req types.ReplayRequest) error {
	r, err := stored(provider.PrepareReplay(req, p.now()))
	if err = p.enterWrite(ctx, "put replay", err); err != nil {
		return err
	}
	defer p.s.mu.Unlock()
	k := slot{r.PipelineID, r.Date, r.ScheduleID}
	return p.fenced(ctx, replays.ref(k), func(*data) { put(p, p.now(), replays, k, r) })
}

// GetReplay implements provider.ReplayStore.
func (p *Provider) GetReplay(ctx context.Context, pipelineID, date, scheduleID string) (*types.ReplayRequest, error) {
	k, err := checkSlot(pipelineID, date, scheduleID)
	if err = p.enter(ctx, err); err != nil {
		return nil, err
	}
	defer p.s.mu.Unlock()
	return get(p, replays, k)
}

// ListReplays implements provider.ReplayStore.
func (p *Provider) ListReplays(ctx context.Context, limit int) ([]types.ReplayRequest, error) {
	if err := p.enter(ctx, provider.CheckLimit(limit)); err != nil {
		return nil, err
	}
	defer p.s.mu.Unlock()
	return list(ctx, p, limit, replays, nil, func(a, b types.ReplayRequest) int { return b.CreatedAt.Compare(a.CreatedAt) }), nil
}

// PutLateArrival implements provider.LateArrivalStore.
func (p *Provider) PutLateArrival(ctx context.Context, la types.LateArrival) error {
	now := p.now()
	l, err := stored(provider.PrepareLateArrival(la, now))
	if err = p.enterWrite(ctx, "put late arrival", err); err != nil {
		return err
	}
	defer p.s.mu.Unlock()
	k := slot{l.PipelineID, l.Date, l.ScheduleID}
	exp := provider.Expiry(now, p.retention.LateArrivals)
	ref := rawKey{kind: provider.KindLateArrival, a: k.pipeline, b: k.date, c: k.schedule}
	return p.fenced(ctx, ref, func(s *data) {
		s.lateArrivals[k] = append(s.lateArrivals[k], lateArrival{la: l, expires: exp})
		s.retain(exp, func(d *data, at time.Time) { d.dropLateArrivals(k, at) })
		s.prune(now)
	})
}

// dropLateArrivals removes the late arrivals of slot k expired at now, and the
// slot once it is empty; d must be locked.
func (d *data) dropLateArrivals(k slot, now time.Time) {
	kept := slices.DeleteFunc(d.lateArrivals[k], func(l lateArrival) bool { return !provider.Live(l.expires, now) })
	if len(kept) == 0 {
		delete(d.lateArrivals, k)
		return
	}
	d.lateArrivals[k] = kept
}

// ListLateArrivals implements provider.LateArrivalStore.
func (p *Provider) ListLateArrivals(ctx context.Context, pipelineID, date, scheduleID string) ([]types.LateArrival, error) {
	k, err := checkSlot(pipelineID, date, scheduleID)
	if err = p.enter(ctx, err); err != nil {
		return nil, err
	}
	defer p.s.mu.Unlock()
	stored := p.s.lateArrivals[k]
	out := make([]types.LateArrival, 0, len(stored))
	now := p.now()
	for i, l := range stored {
		if !provider.Live(l.expires, now) {
			continue
		}
		if l.raw == nil {
			out = append(out, mustClone(l.la))
			continue
		}
		ref := rawKey{kind: provider.KindLateArrival, a: pipelineID, b: date, c: k.schedule}
		name := func() (string, string) {
			id, key := ref.name()
			return id, fmt.Sprintf("%s[%d]", key, i)
		}
		var v types.LateArrival
		if provider.DecodeOrSkip(ctx, p.sig, ref.kind, l.raw, &v, name) {
			out = append(out, v)
		}
	}
	slices.SortStableFunc(out, func(a, b types.LateArrival) int { return a.DetectedAt.Compare(b.DetectedAt) })
	return out, nil
}

// WriteCascadeMarker implements provider.CascadeStore. It also drops the marker
// log's expired writes from its front (WithMarkerLogRetention).
func (p *Provider) WriteCascadeMarker(ctx context.Context, pipelineID, scheduleID, date, source string) error {
	now := p.now()
	m, err := stored(provider.PrepareCascadeMarker(pipelineID, scheduleID, date, source, now))
	if err = p.enterWrite(ctx, "write cascade marker", err); err != nil {
		return err
	}
	defer p.s.mu.Unlock()
	k := slot{m.PipelineID, m.Date, m.ScheduleID}
	return p.fenced(ctx, markers.ref(k), func(s *data) {
		put(p, now, markers, k, m)
		s.markerLog = append(s.markerLog, markerWrite{m: m, expires: provider.Expiry(now, p.retention.MarkerLog)})
		if n := s.expiredMarkers(now); n > 0 {
			s.markerLog = slices.Delete(s.markerLog, 0, n)
			s.markerDropped += int64(n)
		}
		s.wake()
	})
}

// expiredMarkers returns how many writes at the front of the marker log have
// expired at now; d must be locked.
func (d *data) expiredMarkers(now time.Time) int {
	n := 0
	for n < len(d.markerLog) && !provider.Live(d.markerLog[n].expires, now) {
		n++
	}
	return n
}

// WatchCascadeMarkers implements provider.MarkerWatcher. Cursors are decimal
// sequence numbers of the marker log, "" its oldest write retained
// (WithMarkerLogRetention). A watch whose next write is no longer retained yields the
// writes before it, then an error wrapping provider.ErrCursorExpired.
func (p *Provider) WatchCascadeMarkers(ctx context.Context, cursor string) iter.Seq2[types.CascadeMarkerRecord, error] {
	since, err := provider.ParseSeqCursor(cursor)
	if err = p.life.Enter(ctx, err); err != nil {
		return provider.Fail[types.CascadeMarkerRecord](err)
	}
	const op = "memory: watch cascade markers"
	return provider.Follow(ctx, func() provider.Poller[types.CascadeMarkerRecord] {
		since, fromOldest := since, cursor == ""
		var written <-chan struct{}
		return provider.Poller[types.CascadeMarkerRecord]{
			Read: func(ctx context.Context) ([]types.CascadeMarkerRecord, error) {
				written = p.s.writes()
				if err := p.enter(ctx); err != nil {
					return nil, err
				}
				defer p.s.mu.Unlock()
				now := p.now()
				dropped := p.s.markerDropped + int64(p.s.expiredMarkers(now))
				if fromOldest {
					since, fromOldest = max(since, dropped), false
				}
				if since < dropped {
					return nil, fmt.Errorf("%s: %w: marker writes %d to %d after cursor %d are no longer retained",
						op, provider.ErrCursorExpired, since+1, dropped, since)
				}
				var out []types.CascadeMarkerRecord
				last := p.s.markerDropped + int64(len(p.s.markerLog))
				for since < last && len(out) < followPage {
					w := p.s.markerLog[since-p.s.markerDropped]
					if !provider.Live(w.expires, now) { // expired behind a live write (another handle's retention)
						if len(out) > 0 {
							break // deliver what precedes the gap; the next read fails
						}
						return nil, fmt.Errorf("%s: %w: marker write %d after cursor %d is no longer retained",
							op, provider.ErrCursorExpired, since+1, since)
					}
					since++
					var m types.CascadeMarker
					ok := true
					if w.raw != nil {
						seq := since
						name := func() (string, string) {
							return provider.FormatSeqCursor(seq), "memory marker_write " + provider.FormatSeqCursor(seq)
						}
						ok = provider.DecodeOrSkip(ctx, p.sig, provider.KindMarkerWrite, w.raw, &m, name)
					} else {
						m = mustClone(w.m)
					}
					if ok {
						out = append(out, types.CascadeMarkerRecord{Cursor: provider.FormatSeqCursor(since), Marker: m})
					}
				}
				return out, nil
			},
			Wait: func(ctx context.Context, _ int) error { return wait(ctx, written) },
		}
	})
}

// ListCascadeMarkers implements provider.CascadeReader.
func (p *Provider) ListCascadeMarkers(ctx context.Context, pipelineID string, limit int) ([]types.CascadeMarker, error) {
	if err := p.enter(ctx, provider.CheckID("pipeline ID", pipelineID), provider.CheckLimit(limit)); err != nil {
		return nil, err
	}
	defer p.s.mu.Unlock()
	return list(ctx, p, limit, markers,
		func(m types.CascadeMarker) bool { return m.PipelineID == pipelineID },
		func(a, b types.CascadeMarker) int { return b.WrittenAt.Compare(a.WrittenAt) }), nil
}
