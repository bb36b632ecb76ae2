package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// WithRetention sets how long the provider keeps each record kind it writes
// (default provider.DefaultRetention(): 30 days, 24 hours for the marker log),
// from each write, by the provider's clock (see provider.Retention): a row's
// expires_at is set by the statement that writes it, reads leave out the rows
// whose expires_at has passed, and each write deletes up to pruneBatch expired
// rows of its table. A zero field keeps that kind forever. A field that is
// negative or above provider.MaxTTL is invalid. WithEventRetention and
// WithMarkerLogRetention set one field each; the last option that sets a
// field wins.
func WithRetention(r provider.Retention) Option {
	return func(p *Provider) error {
		if err := r.Check(); err != nil {
			return fmt.Errorf("sqlite: WithRetention: %w", err)
		}
		p.retention = r
		return nil
	}
}

// retained is the tables of the record kinds with a retention, whose rows carry
// expires_at and are pruned by writes.
var retained = []string{"runs", "run_logs", "reruns", "replays", "late_arrivals", "cascade_markers", "events", "marker_log"}

// migrate gives a file created before retention the expires_at column of each
// retained table (its rows never expire) and every retained table its expiry
// index, which pruning reads; and a file created before the active-runs index
// the runs.unfinished column, the partial indexes runs_active and runs_unknown
// over it, and then the unfinished of each row an older version wrote
// (backfillActive).
func migrate(ctx context.Context, db *sql.DB) error {
	addColumn := func(table, column string) error {
		_, err := db.ExecContext(ctx, `ALTER TABLE `+table+` ADD COLUMN `+column)
		if err != nil && !strings.Contains(err.Error(), "duplicate column name") {
			return err
		}
		return nil
	}
	for _, t := range retained {
		if err := addColumn(t, "expires_at TEXT"); err != nil {
			return err
		}
		if _, err := db.ExecContext(ctx, `CREATE INDEX IF NOT EXISTS `+t+`_by_expiry ON `+t+` (expires_at) WHERE expires_at IS NOT NULL`); err != nil {
			return err
		}
	}
	if err := addColumn("runs", "unfinished INTEGER"); err != nil {
		return err
	}
	for _, q := range []string{
		`CREATE INDEX IF NOT EXISTS runs_active ON runs (run_id) WHERE unfinished = 1`,
		`CREATE INDEX IF NOT EXISTS runs_unknown ON runs (run_id) WHERE unfinished IS NULL`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return backfillActive(ctx, db)
}

// backfillActive sets runs.unfinished of the rows that a version before the
// active-runs index wrote (NULL: it did not know the column) from their body,
// in one transaction, so that ListActiveRuns lists their unfinished runs.
// Every writable New runs it: the partial index runs_unknown holds only those
// rows, so once they are done it costs one empty index read, and rows an older
// process wrote during a rolling upgrade are indexed by the next New. A body
// that does not decode is left NULL (a listing would skip it anyway).
func backfillActive(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	rows, err := tx.QueryContext(ctx, `SELECT run_id, body FROM runs INDEXED BY runs_unknown WHERE unfinished IS NULL`)
	if err != nil {
		return err
	}
	found := map[string]sql.NullInt64{}
	for rows.Next() {
		var id, body string
		if err := rows.Scan(&id, &body); err != nil {
			_ = rows.Close()
			return err
		}
		var run types.RunState
		if json.Unmarshal([]byte(body), &run) == nil {
			found[id] = unfinished(run)
		}
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return err
	}
	for id, u := range found {
		if _, err := tx.ExecContext(ctx, `UPDATE runs SET unfinished = ? WHERE run_id = ? AND unfinished IS NULL`, u, id); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// schemaTables is the tables schema.sql creates.
var schemaTables = func() []string {
	var out []string
	for _, m := range regexp.MustCompile(`CREATE TABLE IF NOT EXISTS (\w+)`).FindAllStringSubmatch(schema, -1) {
		out = append(out, m[1])
	}
	return out
}()

// checkSchema checks, reading only, that db holds every table of schema.sql,
// every retained table its expires_at column and runs its unfinished column
// (what migrate adds): a
// read-only handle applies neither, so a file that a writable New has not
// opened since it lacked them is refused rather than read wrong.
func checkSchema(ctx context.Context, db *sql.DB) error {
	for _, t := range schemaTables {
		cols := "*"
		if slices.Contains(retained, t) {
			cols = "expires_at"
		}
		if t == "runs" {
			cols += ", unfinished"
		}
		rows, err := db.QueryContext(ctx, `SELECT `+cols+` FROM `+t+` LIMIT 0`)
		if err != nil {
			return fmt.Errorf("the file lacks the schema of this version (open it writable once to create or upgrade it): %w", err)
		}
		if err := rows.Close(); err != nil {
			return err
		}
	}
	return nil
}

// pruneBatch is the most expired rows of a table one write deletes: each write
// adds at most one row, so a table shrinks as fast as it grows, and no write
// pays for a long backlog at once.
const pruneBatch = 100

// prune deletes up to pruneBatch rows of the retained table that expired at now.
// Only writes call it; reads leave expired rows out instead (liveSQL).
func (p *Provider) prune(ctx context.Context, op, table string, now time.Time) error {
	_, err := p.exec(ctx, p.db, op, `DELETE FROM `+table+` WHERE rowid IN (SELECT rowid FROM `+table+
		` WHERE expires_at IS NOT NULL AND expires_at <= ? LIMIT ?)`, sortTime(now), pruneBatch)
	return err
}

// putRetained is put for the record r of the retained table written at now,
// kept for d, under the fencing rule (execFenced): the query's last two
// parameters are the body and expires_at columns. Then it prunes the table.
func (p *Provider) putRetained(ctx context.Context, op, table string, r record, v any, now time.Time, d time.Duration, query string, args ...any) error {
	body, err := encode(v)
	if err != nil {
		return err
	}
	if _, err := p.execFenced(ctx, op, r, query, append(args, body, expiresAt(after(now, d)))...); err != nil {
		return err
	}
	return p.prune(ctx, op, table, now)
}
