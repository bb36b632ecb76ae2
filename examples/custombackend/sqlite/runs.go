package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// PutRunState implements provider.RunStore. It is one upsert whose update only
// applies when the stored run has the same pipeline or has expired (an expired
// run is missing), so the pipeline check and the write are atomic.
func (p *Provider) PutRunState(ctx context.Context, run types.RunState) error {
	now := p.now()
	r, err := provider.PrepareRunState(run, now)
	if err = p.enterWrite(ctx, "PutRunState", err); err != nil {
		return err
	}
	n, err := p.insertRun(ctx, "put run state", r, now,
		`WHERE runs.pipeline_id = excluded.pipeline_id OR runs.expires_at <= ?`)
	if err == nil && n == 0 {
		return provider.Invalidf("run %q is stored under another pipeline than %q", r.RunID, r.PipelineID)
	}
	return err
}

// CreateRunState implements provider.RunCreator. It is one upsert whose update
// only applies to an expired run (created again, as if missing): the run is
// created iff one row changed, so of concurrent creates, in this process or
// another, exactly one wins.
func (p *Provider) CreateRunState(ctx context.Context, run types.RunState) (bool, error) {
	now := p.now()
	r, err := provider.PrepareCreateRun(run, now)
	if err = p.enterWrite(ctx, "CreateRunState", err); err != nil {
		return false, err
	}
	n, err := p.insertRun(ctx, "create run state", r, now, `WHERE runs.expires_at <= ?`)
	return err == nil && n == 1, err
}

// insertRun inserts r's row, written at now, or replaces the stored run where
// the condition when (whose one argument is sortTime(now)) holds, and returns
// the number of rows changed; then it prunes expired runs.
func (p *Provider) insertRun(ctx context.Context, op string, r types.RunState, now time.Time, when string) (int64, error) {
	body, err := encode(r)
	if err != nil {
		return 0, err
	}
	n, err := p.execFenced(ctx, op, record{kind: "run", a: r.RunID},
		`INSERT INTO runs (run_id, pipeline_id, version, created_at, body, expires_at, unfinished) VALUES (?, ?, ?, ?, ?, ?, ?)
		 ON CONFLICT (run_id) DO UPDATE SET pipeline_id = excluded.pipeline_id, version = excluded.version,
		 created_at = excluded.created_at, body = excluded.body, expires_at = excluded.expires_at,
		 unfinished = excluded.unfinished `+when,
		r.RunID, r.PipelineID, r.Version, sortTime(r.CreatedAt), body, expiresAt(after(now, p.retention.Runs)), unfinished(r),
		sortTime(now))
	if err != nil {
		return 0, err
	}
	return n, p.prune(ctx, op, "runs", now)
}

// GetRunState implements provider.RunStore.
func (p *Provider) GetRunState(ctx context.Context, runID string) (*types.RunState, error) {
	if err := p.enter(ctx, provider.CheckID("run ID", runID)); err != nil {
		return nil, err
	}
	return getOne[types.RunState](ctx, p, "get run state", provider.KindRunState, "runs",
		`SELECT run_id, body FROM runs WHERE run_id = ? AND `+liveSQL, runID, sortTime(p.now()))
}

// ListRuns implements provider.RunStore. There is one row per run, so the list
// always shows the latest CAS.
func (p *Provider) ListRuns(ctx context.Context, pipelineID string, limit int) ([]types.RunState, error) {
	if err := p.enter(ctx, provider.CheckID("pipeline ID", pipelineID), provider.CheckLimit(limit)); err != nil {
		return nil, err
	}
	return getAll[types.RunState](ctx, p, "list runs", provider.KindRunState, "runs", limit,
		`SELECT run_id, body FROM runs WHERE pipeline_id = ? AND `+liveSQL+` ORDER BY created_at DESC, run_id DESC`,
		pipelineID, sortTime(p.now()))
}

// CompareAndSwapRunState implements provider.RunStore. In one transaction it reads
// the stored run (for its pipeline and CreatedAt) and writes newState with
// UPDATE ... WHERE run_id = ? AND version = ?; the swap happened iff one row changed.
func (p *Provider) CompareAndSwapRunState(ctx context.Context, runID string, expectedVersion int, newState types.RunState) (bool, error) {
	const op = "compare and swap run state"
	if err := p.enterWrite(ctx, "CompareAndSwapRunState", provider.CheckCAS(runID, expectedVersion, newState)); err != nil {
		return false, err
	}
	swapped := false
	now := p.now()
	err := p.inTx(ctx, op, func(tx *sql.Tx) error {
		remember, err := p.admit(ctx, tx, op, record{kind: "run", a: runID})
		if err != nil {
			return err
		}
		var storedPipeline, storedBody string
		var storedVersion int
		err = tx.QueryRowContext(ctx, `SELECT pipeline_id, version, body FROM runs WHERE run_id = ? AND `+liveSQL, runID, sortTime(now)).
			Scan(&storedPipeline, &storedVersion, &storedBody)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return nil // a missing or expired run is (false, nil)
		case err != nil:
			return p.fail(ctx, op, err)
		case storedPipeline != newState.PipelineID:
			return provider.Invalidf("run %q belongs to pipeline %q, not %q", runID, storedPipeline, newState.PipelineID)
		case storedVersion != expectedVersion:
			return nil
		}
		var stored types.RunState
		if err := decode(provider.KindRunState, "runs", runID, storedBody, &stored); err != nil {
			return err
		}
		newState.Version = expectedVersion + 1
		newState.CreatedAt = stored.CreatedAt // CreatedAt never changes through CAS
		newState.UpdatedAt = now
		body, err := encode(newState)
		if err != nil {
			return err
		}
		n, err := p.exec(ctx, tx, op, `UPDATE runs SET version = ?, body = ?, expires_at = ?, unfinished = ? WHERE run_id = ? AND version = ?`,
			newState.Version, body, expiresAt(after(now, p.retention.Runs)), unfinished(newState), runID, expectedVersion)
		if swapped = n == 1; err != nil || !swapped {
			return err
		}
		return remember()
	})
	return err == nil && swapped, err
}

// unfinished is the runs.unfinished column of a row holding run: 1 while its
// status is not terminal (in the partial index runs_active), 0 once it is.
// NULL is a row that a version before the index wrote (see backfillActive).
func unfinished(run types.RunState) sql.NullInt64 {
	if run.Status.Terminal() {
		return sql.NullInt64{Int64: 0, Valid: true}
	}
	return sql.NullInt64{Int64: 1, Valid: true}
}

var _ provider.ActiveRunLister = (*Provider)(nil)

var _ provider.ActiveRunReindexer = (*Provider)(nil)

// ReindexRun implements provider.ActiveRunReindexer. The index is a column of
// the run's own row, set by every write, so it disagrees with the body only on
// a row changed by hand (or one a version before the index wrote, which New
// backfills): in one transaction it reads the row and, when runs.unfinished is
// not what the body says, sets it (the UPDATE names the body it read). The row's
// version, body and expiry stay.
func (p *Provider) ReindexRun(ctx context.Context, runID string) (bool, error) {
	const op = "reindex run"
	if err := p.enterWrite(ctx, "ReindexRun", provider.CheckID("run ID", runID)); err != nil {
		return false, err
	}
	changed := false
	err := p.inTx(ctx, op, func(tx *sql.Tx) error {
		var body string
		var stored sql.NullInt64
		err := tx.QueryRowContext(ctx, `SELECT body, unfinished FROM runs WHERE run_id = ?`, runID).Scan(&body, &stored)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return nil
		case err != nil:
			return p.fail(ctx, op, err)
		}
		var run types.RunState
		if err := decode(provider.KindRunState, "runs", runID, body, &run); err != nil {
			return err
		}
		if want := unfinished(run); stored != want {
			n, err := p.exec(ctx, tx, op, `UPDATE runs SET unfinished = ? WHERE run_id = ? AND body = ?`, want, runID, body)
			changed = n == 1
			return err
		}
		return nil
	})
	return err == nil && changed, err
}

// ListActiveRuns implements provider.ActiveRunLister. Its index is the partial
// index runs_active, kept by the statement that writes each run (insertRun, the
// CAS's UPDATE), so it never disagrees with the row: one SELECT reads it in
// run_id order from after the cursor, leaves out expired rows, and stops at
// limit rows that pass filter.Match (on the body, the truth); a corrupt body is
// skipped and reported. It reads O(answer) rows when the filter is empty, and
// the unfinished rows after the cursor otherwise.
func (p *Provider) ListActiveRuns(ctx context.Context, filter provider.ActiveRunFilter, cursor string, limit int) ([]types.RunState, string, error) {
	const op = "list active runs"
	if err := p.enter(ctx, provider.CheckActiveRuns(filter, cursor, limit)); err != nil {
		return nil, "", err
	}
	var matched []types.RunState
	err := p.each(ctx, op, `SELECT run_id, body FROM runs INDEXED BY runs_active
		WHERE unfinished = 1 AND run_id > ? AND `+liveSQL+` ORDER BY run_id`,
		[]any{cursor, sortTime(p.now())}, func(scan func(...any) error) error {
			var id, body string
			if err := scan(&id, &body); err != nil {
				return p.fail(ctx, op, err)
			}
			var r types.RunState
			if decodeOrSkip(ctx, p, provider.KindRunState, "runs", id, body, &r) && filter.Match(r) {
				matched = append(matched, r)
			}
			if len(matched) == limit {
				return errEnough
			}
			return nil
		})
	if err != nil {
		return nil, "", err
	}
	page, next := provider.ActivePage(matched, limit)
	return page, next, nil
}
