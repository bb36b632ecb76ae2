package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"iter"
	"slices"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// PutRunLog implements provider.RunLogStore.
func (p *Provider) PutRunLog(ctx context.Context, entry types.RunLogEntry) error {
	e, err := provider.PrepareRunLog(entry)
	if err = p.enterWrite(ctx, "PutRunLog", err); err != nil {
		return err
	}
	return p.putRetained(ctx, "put run log", "run_logs", record{"run_log", e.PipelineID, e.Date, e.ScheduleID}, e, p.now(), p.retention.RunLogs,
		`INSERT INTO run_logs (pipeline_id, date, schedule_id, body, expires_at) VALUES (?, ?, ?, ?, ?)
		 ON CONFLICT (pipeline_id, date, schedule_id) DO UPDATE SET body = excluded.body, expires_at = excluded.expires_at`,
		e.PipelineID, e.Date, e.ScheduleID)
}

// GetRunLog implements provider.RunLogStore.
func (p *Provider) GetRunLog(ctx context.Context, pipelineID, date, scheduleID string) (*types.RunLogEntry, error) {
	schedule, err := provider.CheckSlot(pipelineID, date, scheduleID)
	if err = p.enter(ctx, err); err != nil {
		return nil, err
	}
	return getOne[types.RunLogEntry](ctx, p, "get run log", provider.KindRunLog, "run_logs",
		`SELECT `+slotSQL+`, body FROM run_logs WHERE pipeline_id = ? AND date = ? AND schedule_id = ? AND `+liveSQL,
		pipelineID, date, schedule, sortTime(p.now()))
}

// ListRunLogs implements provider.RunLogStore.
func (p *Provider) ListRunLogs(ctx context.Context, pipelineID string, limit int) ([]types.RunLogEntry, error) {
	if err := p.enter(ctx, provider.CheckID("pipeline ID", pipelineID), provider.CheckLimit(limit)); err != nil {
		return nil, err
	}
	return getAll[types.RunLogEntry](ctx, p, "list run logs", provider.KindRunLog, "run_logs", limit,
		`SELECT `+slotSQL+`, body FROM run_logs WHERE pipeline_id = ? AND `+liveSQL+` ORDER BY date DESC, schedule_id DESC`,
		pipelineID, sortTime(p.now()))
}

// PutRerun implements provider.RerunStore. The record is one row, so re-putting it
// under another pipeline moves it between the pipelines' lists atomically.
func (p *Provider) PutRerun(ctx context.Context, rerun types.RerunRecord) error {
	now := p.now()
	r, err := provider.PrepareRerun(rerun, now)
	if err = p.enterWrite(ctx, "PutRerun", err); err != nil {
		return err
	}
	return p.putRetained(ctx, "put rerun", "reruns", record{kind: "rerun", a: r.RerunID}, r, now, p.retention.Reruns,
		`INSERT INTO reruns (rerun_id, pipeline_id, requested_at, body, expires_at) VALUES (?, ?, ?, ?, ?)
		 ON CONFLICT (rerun_id) DO UPDATE
		 SET pipeline_id = excluded.pipeline_id, requested_at = excluded.requested_at, body = excluded.body,
		 expires_at = excluded.expires_at`,
		r.RerunID, r.PipelineID, sortTime(r.RequestedAt))
}

// GetRerun implements provider.RerunStore.
func (p *Provider) GetRerun(ctx context.Context, rerunID string) (*types.RerunRecord, error) {
	if err := p.enter(ctx, provider.CheckID("rerun ID", rerunID)); err != nil {
		return nil, err
	}
	return getOne[types.RerunRecord](ctx, p, "get rerun", provider.KindRerun, "reruns",
		`SELECT rerun_id, body FROM reruns WHERE rerun_id = ? AND `+liveSQL, rerunID, sortTime(p.now()))
}

// ListReruns implements provider.RerunStore.
func (p *Provider) ListReruns(ctx context.Context, pipelineID string, limit int) ([]types.RerunRecord, error) {
	if err := p.enter(ctx, provider.CheckID("pipeline ID", pipelineID), provider.CheckLimit(limit)); err != nil {
		return nil, err
	}
	return getAll[types.RerunRecord](ctx, p, "list reruns", provider.KindRerun, "reruns", limit,
		`SELECT rerun_id, body FROM reruns WHERE pipeline_id = ? AND `+liveSQL+` ORDER BY requested_at DESC, rerun_id DESC`,
		pipelineID, sortTime(p.now()))
}

// ListAllReruns implements provider.RerunStore.
func (p *Provider) ListAllReruns(ctx context.Context, limit int) ([]types.RerunRecord, error) {
	if err := p.enter(ctx, provider.CheckLimit(limit)); err != nil {
		return nil, err
	}
	return getAll[types.RerunRecord](ctx, p, "list all reruns", provider.KindRerun, "reruns", limit,
		`SELECT rerun_id, body FROM reruns WHERE `+liveSQL+` ORDER BY requested_at DESC, rerun_id DESC`, sortTime(p.now()))
}

// PutReplay implements provider.ReplayStore.
func (p *Provider) PutReplay(ctx context.Context, req types.ReplayRequest) error {
	now := p.now()
	r, err := provider.PrepareReplay(req, now)
	if err = p.enterWrite(ctx, "PutReplay", err); err != nil {
		return err
	}
	return p.putRetained(ctx, "put replay", "replays", record{"replay", r.PipelineID, r.Date, r.ScheduleID}, r, now, p.retention.Replays,
		`INSERT INTO replays (pipeline_id, date, schedule_id, created_at, body, expires_at) VALUES (?, ?, ?, ?, ?, ?)
		 ON CONFLICT (pipeline_id, date, schedule_id) DO UPDATE
		 SET created_at = excluded.created_at, body = excluded.body, expires_at = excluded.expires_at`,
		r.PipelineID, r.Date, r.ScheduleID, sortTime(r.CreatedAt))
}

// GetReplay implements provider.ReplayStore.
func (p *Provider) GetReplay(ctx context.Context, pipelineID, date, scheduleID string) (*types.ReplayRequest, error) {
	schedule, err := provider.CheckSlot(pipelineID, date, scheduleID)
	if err = p.enter(ctx, err); err != nil {
		return nil, err
	}
	return getOne[types.ReplayRequest](ctx, p, "get replay", provider.KindReplay, "replays",
		`SELECT `+slotSQL+`, body FROM replays WHERE pipeline_id = ? AND date = ? AND schedule_id = ? AND `+liveSQL,
		pipelineID, date, schedule, sortTime(p.now()))
}

// ListReplays implements provider.ReplayStore.
func (p *Provider) ListReplays(ctx context.Context, limit int) ([]types.ReplayRequest, error) {
	if err := p.enter(ctx, provider.CheckLimit(limit)); err != nil {
		return nil, err
	}
	return getAll[types.ReplayRequest](ctx, p, "list replays", provider.KindReplay, "replays", limit,
		`SELECT `+slotSQL+`, body FROM replays WHERE `+liveSQL+` ORDER BY created_at DESC, pipeline_id DESC, date DESC, schedule_id DESC`,
		sortTime(p.now()))
}

// PutLateArrival implements provider.LateArrivalStore.
func (p *Provider) PutLateArrival(ctx context.Context, la types.LateArrival) error {
	now := p.now()
	l, err := provider.PrepareLateArrival(la, now)
	if err = p.enterWrite(ctx, "PutLateArrival", err); err != nil {
		return err
	}
	return p.putRetained(ctx, "put late arrival", "late_arrivals", record{"late", l.PipelineID, l.Date, l.ScheduleID}, l, now, p.retention.LateArrivals,
		`INSERT INTO late_arrivals (pipeline_id, date, schedule_id, detected_at, body, expires_at) VALUES (?, ?, ?, ?, ?, ?)`,
		l.PipelineID, l.Date, l.ScheduleID, sortTime(l.DetectedAt))
}

// ListLateArrivals implements provider.LateArrivalStore.
func (p *Provider) ListLateArrivals(ctx context.Context, pipelineID, date, scheduleID string) ([]types.LateArrival, error) {
	schedule, err := provider.CheckSlot(pipelineID, date, scheduleID)
	if err = p.enter(ctx, err); err != nil {
		return nil, err
	}
	return getAll[types.LateArrival](ctx, p, "list late arrivals", provider.KindLateArrival, "late_arrivals", 0,
		`SELECT `+slotSQL+` || ':' || seq, body FROM late_arrivals WHERE pipeline_id = ? AND date = ? AND schedule_id = ? AND `+liveSQL+
			` ORDER BY detected_at, seq`,
		pipelineID, date, schedule, sortTime(p.now()))
}

// WriteCascadeMarker implements provider.CascadeStore. In one transaction it
// upserts the marker, whose seq (ordering markers written at the same WrittenAt)
// comes from a subquery of the same statement, and appends the write to
// marker_log, kept for the marker log retention (WithMarkerLogRetention) in force
// at this write. Once it is committed, the watchers of the file in this process
// are woken; then it deletes up to pruneBatch expired rows of the log and of the
// markers.
func (p *Provider) WriteCascadeMarker(ctx context.Context, pipelineID, scheduleID, date, source string) error {
	const op = "write cascade marker"
	now := p.now()
	m, err := provider.PrepareCascadeMarker(pipelineID, scheduleID, date, source, now)
	if err = p.enterWrite(ctx, "WriteCascadeMarker", err); err != nil {
		return err
	}
	body, err := encode(m)
	if err != nil {
		return err
	}
	written := sortTime(m.WrittenAt)
	err = p.inTx(ctx, op, func(tx *sql.Tx) error {
		remember, err := p.admit(ctx, tx, op, record{"marker", m.PipelineID, m.Date, m.ScheduleID})
		if err != nil {
			return err
		}
		if _, err := p.exec(ctx, tx, op,
			`INSERT INTO cascade_markers (pipeline_id, schedule_id, date, written_at, seq, body, expires_at)
			 VALUES (?, ?, ?, ?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM cascade_markers), ?, ?)
			 ON CONFLICT (pipeline_id, schedule_id, date) DO UPDATE
			 SET written_at = excluded.written_at, seq = excluded.seq, body = excluded.body, expires_at = excluded.expires_at`,
			m.PipelineID, m.ScheduleID, m.Date, written, body, expiresAt(after(now, p.retention.CascadeMarkers))); err != nil {
			return err
		}
		if _, err := p.exec(ctx, tx, op,
			`INSERT INTO marker_log (pipeline_id, schedule_id, date, written_at, body, expires_at) VALUES (?, ?, ?, ?, ?, ?)`,
			m.PipelineID, m.ScheduleID, m.Date, written, body, expiresAt(after(now, p.retention.MarkerLog))); err != nil {
			return err
		}
		return remember()
	})
	if err != nil {
		return err
	}
	p.wake.notify()
	if err := p.prune(ctx, op, "marker_log", now); err != nil {
		return err
	}
	return p.prune(ctx, op, "cascade_markers", now)
}

// WatchCascadeMarkers implements provider.MarkerWatcher. The cursor is the write's
// marker_log seq (provider.ParseSeqCursor, provider.FormatSeqCursor), in commit
// order like the events' seq, and the log is read as ReadEventsSince reads
// events: a row past its expiry (set by its writer's retention) counts as
// dropped also before a write deletes it, a cursor below the highest seq ever
// deleted (marker_log_trimmed) or whose next row is past its expiry ends the
// watch with an error wrapping provider.ErrCursorExpired, a read stops before a
// row past its expiry (and the read from there fails), and "" starts at the
// oldest live write after the deleted ones. Between reads that find nothing it
// polls as the package doc says. Each write is delivered once to a watch; a
// resumed watch starts strictly after its cursor.
func (p *Provider) WatchCascadeMarkers(ctx context.Context, cursor string) iter.Seq2[types.CascadeMarkerRecord, error] {
	start, err := provider.ParseSeqCursor(cursor)
	if err = p.enter(ctx, err); err != nil {
		return provider.Fail[types.CascadeMarkerRecord](err)
	}
	if cursor == "" {
		start = fromOldest
	}
	return provider.Follow(ctx, func() provider.Poller[types.CascadeMarkerRecord] {
		since := start
		return poll(p, func(ctx context.Context) (recs []types.CascadeMarkerRecord, err error) {
			recs, since, err = p.readMarkerLog(ctx, since)
			return recs, err
		})
	})
}

// fromOldest is readMarkerLog's since for a watch from the oldest retained write.
const fromOldest = -1

// markerTrimmedSQL is the highest seq deleted from marker_log, 0 when none was.
const markerTrimmedSQL = `(SELECT COALESCE(MAX(seq), 0) FROM marker_log_trimmed)`

// readMarkerLog returns up to followPage marker writes after seq since (or from
// the oldest live one) and the seq to read after next time (past corrupt rows
// too). One statement reads the highest deleted seq and the rows, each with
// whether it is live, so both come from one snapshot (as readEventsOnce).
func (p *Provider) readMarkerLog(ctx context.Context, since int64) ([]types.CascadeMarkerRecord, int64, error) {
	const op = "watch cascade markers"
	now := sortTime(p.now())
	start, args := `seq > ?`, []any{since}
	if since == fromOldest {
		start = `seq >= (SELECT MIN(seq) FROM marker_log WHERE seq > ` + markerTrimmedSQL + ` AND ` + liveSQL + `)`
		args = []any{now}
	}
	out := []types.CascadeMarkerRecord{}
	next, done := since, false
	err := p.each(ctx, op,
		`SELECT t, seq, body, live FROM (
		   SELECT 0 AS k, `+markerTrimmedSQL+` AS t, NULL AS seq, NULL AS body, NULL AS live
		   UNION ALL
		   SELECT 1, NULL, seq, body, live FROM (
		     SELECT seq, body, `+liveSQL+` AS live FROM marker_log
		     WHERE `+start+` ORDER BY seq LIMIT ?))
		 ORDER BY k, seq`,
		slices.Concat([]any{now}, args, []any{followPage}),
		func(scan func(...any) error) error {
			var trimmed, seq sql.NullInt64
			var body sql.NullString
			var live sql.NullBool
			if err := scan(&trimmed, &seq, &body, &live); err != nil {
				return p.fail(ctx, op, err)
			}
			switch {
			case trimmed.Valid: // the first row
				if since != fromOldest && since < trimmed.Int64 {
					return fmt.Errorf("sqlite: %s: cursor %d is older than the log (writes up to %d were deleted): %w",
						op, since, trimmed.Int64, provider.ErrCursorExpired)
				}
				return nil
			case done:
				return nil
			case !live.Bool && len(out) == 0 && since != fromOldest:
				// The next row after the cursor, or after rows skipped as
				// corrupt (held, not dropped: skipping them hides no gap).
				return fmt.Errorf("sqlite: %s: write %d after cursor %d is no longer retained: %w",
					op, seq.Int64, since, provider.ErrCursorExpired)
			case !live.Bool:
				done = true // stop before it: the read from the write before it fails
				return nil
			}
			next = seq.Int64 // past a corrupt write too
			var m types.CascadeMarker
			cursor := provider.FormatSeqCursor(seq.Int64)
			if decodeOrSkip(ctx, p, provider.KindMarkerWrite, "marker_log", cursor, body.String, &m) {
				out = append(out, types.CascadeMarkerRecord{Cursor: cursor, Marker: m})
			}
			return nil
		})
	if err != nil {
		return nil, since, err
	}
	return out, next, nil
}

// ListCascadeMarkers implements provider.CascadeReader. Markers written at the same
// WrittenAt are ordered by write, the later first.
func (p *Provider) ListCascadeMarkers(ctx context.Context, pipelineID string, limit int) ([]types.CascadeMarker, error) {
	if err := p.enter(ctx, provider.CheckID("pipeline ID", pipelineID), provider.CheckLimit(limit)); err != nil {
		return nil, err
	}
	return getAll[types.CascadeMarker](ctx, p, "list cascade markers", provider.KindCascadeMarker, "cascade_markers", limit,
		`SELECT `+slotSQL+`, body FROM cascade_markers WHERE pipeline_id = ? AND `+liveSQL+` ORDER BY written_at DESC, seq DESC`,
		pipelineID, sortTime(p.now()))
}

// slotSQL selects the identity of a row keyed by (pipeline_id, date, schedule_id).
const slotSQL = `pipeline_id || ':' || date || ':' || schedule_id`
