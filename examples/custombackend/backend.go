package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// This file is the backend: a provider.Provider (plus provider.Leaser and
// provider.CascadeReader) over SQLite through database/sql and the pure-Go driver
// modernc.org/sqlite. Copy it into your own package to start a backend for another
// SQL database; README.md says what to change.
//
// Where atomicity comes from:
//   - a single SQL statement is atomic (upserts, deletes, the lease renewal);
//   - multi-statement changes (CAS, locks, leases) run in a transaction opened with
//     BEGIN IMMEDIATE (the DSN's _txlock=immediate), which takes SQLite's write lock
//     before the first read, so read-check-write cannot interleave with another
//     writer, in this process or any other process on the same file;
//   - busy_timeout makes a writer wait for the lock instead of failing with
//     SQLITE_BUSY; WAL lets readers run while a writer holds it.

//go:embed schema.sql
var schema string

// DefaultReadinessTTL is how long PutReadiness keeps a result unless
// WithReadinessTTL says otherwise.
const DefaultReadinessTTL = 5 * time.Minute

// DefaultBusyTimeout is how long a write waits for another writer's lock before
// failing, unless WithBusyTimeout says otherwise.
const DefaultBusyTimeout = 10 * time.Second

// Option configures a Provider.
type Option func(*Provider) error

// WithClock sets the clock that fills timestamps and judges TTLs (default
// time.Now). Every provider opened on one database file should share one clock.
func WithClock(now func() time.Time) Option {
	return func(p *Provider) error {
		if now == nil {
			return errors.New("sqlite: WithClock: nil clock")
		}
		p.now = now
		return nil
	}
}

// WithOwner sets the lock owner identity (default: 16 random bytes in hex). Two
// providers with one owner can release each other's locks.
func WithOwner(owner string) Option {
	return func(p *Provider) error {
		if owner == "" {
			return errors.New("sqlite: WithOwner: empty owner")
		}
		p.owner = owner
		return nil
	}
}

// WithReadinessTTL sets how long readiness results are kept (default
// DefaultReadinessTTL).
func WithReadinessTTL(ttl time.Duration) Option {
	return func(p *Provider) error {
		if ttl <= 0 {
			return errors.New("sqlite: WithReadinessTTL: ttl must be positive")
		}
		p.readinessTTL = ttl
		return nil
	}
}

// WithEventRetention keeps each event for d after it is appended, by the
// provider's clock: from then on it is invisible to ListEvents and
// ReadEventsSince, and a cursor of a dropped event reads from the oldest retained
// one. The default, 0, keeps events forever. Dropped rows stay in the file until
// something deletes them (see README.md, step 6).
func WithEventRetention(d time.Duration) Option {
	return func(p *Provider) error {
		if d < 0 {
			return errors.New("sqlite: WithEventRetention: negative retention")
		}
		p.eventRetention = d
		return nil
	}
}

// WithBusyTimeout sets how long a write waits for the database's write lock
// (default DefaultBusyTimeout); past it the call fails with SQLITE_BUSY.
func WithBusyTimeout(d time.Duration) Option {
	return func(p *Provider) error {
		if d < time.Millisecond {
			return errors.New("sqlite: WithBusyTimeout: timeout must be at least 1ms")
		}
		p.busyTimeout = d
		return nil
	}
}

// Provider is a provider.Provider on one SQLite database file. Any number of
// Providers, in one process or several, may open the same file; each is one client
// with its own lock owner identity. It is safe for concurrent use.
type Provider struct {
	db             *sql.DB
	now            func() time.Time
	owner          string
	readinessTTL   time.Duration
	eventRetention time.Duration
	busyTimeout    time.Duration
	closed         atomic.Bool
}

var (
	_ provider.Provider      = (*Provider)(nil)
	_ provider.Leaser        = (*Provider)(nil)
	_ provider.CascadeReader = (*Provider)(nil)
)

// Open opens (creating if needed) the SQLite database at path, creates the schema
// if it is missing, and returns a started Provider. Stop closes the database.
func Open(ctx context.Context, path string, opts ...Option) (*Provider, error) {
	p := &Provider{
		now:          time.Now,
		owner:        randomHex(),
		readinessTTL: DefaultReadinessTTL,
		busyTimeout:  DefaultBusyTimeout,
	}
	for _, o := range opts {
		if err := o(p); err != nil {
			return nil, err
		}
	}
	if path == "" || strings.Contains(path, "?") || path == ":memory:" {
		// Each pooled connection to ":memory:" would be a separate database, and
		// '?' starts the DSN's parameters.
		return nil, fmt.Errorf("sqlite: Open: path %q must name a file and not contain '?'", path)
	}
	q := url.Values{}
	q.Set("_txlock", "immediate") // every BeginTx is BEGIN IMMEDIATE
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", p.busyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	db, err := sql.Open("sqlite", path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if _, err := db.ExecContext(ctx, schema); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("sqlite: create schema in %s: %w", path, err)
	}
	p.db = db
	return p, nil
}

// Owner returns the lock owner identity of p.
func (p *Provider) Owner() string { return p.owner }

// Start implements provider.Provider: it checks that the database answers.
func (p *Provider) Start(ctx context.Context) error { return p.Ping(ctx) }

// Stop implements provider.Provider: it closes the database. It is idempotent.
func (p *Provider) Stop(ctx context.Context) error {
	if p.closed.Swap(true) {
		return nil
	}
	if err := p.db.Close(); err != nil {
		return fmt.Errorf("sqlite: close: %w", err)
	}
	return nil
}

// Ping implements provider.Provider.
func (p *Provider) Ping(ctx context.Context) error {
	if err := p.enter(ctx); err != nil {
		return err
	}
	return p.fail(ctx, "ping", p.db.PingContext(ctx))
}

// ---------------------------------------------------------------------------
// Plumbing shared by every method.

// enter is the first line of every method: a cancelled context or a stopped
// provider fails before anything is read or written.
func (p *Provider) enter(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if p.closed.Load() {
		return provider.ErrClosed
	}
	return nil
}

// fail turns a database error into the error the contract asks for: the context's
// error when it is done, ErrClosed after Stop, ErrTooLarge for SQLITE_TOOBIG, and
// otherwise the driver's error wrapped with %w (errors.As to *sqlite.Error works).
func (p *Provider) fail(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	var se *sqlite.Error
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("sqlite: %s: %w", op, errors.Join(ctx.Err(), err))
	case p.closed.Load():
		return fmt.Errorf("sqlite: %s: %w", op, errors.Join(provider.ErrClosed, err))
	case errors.As(err, &se) && se.Code() == sqlite3.SQLITE_TOOBIG:
		return fmt.Errorf("sqlite: %s: %w", op, errors.Join(provider.ErrTooLarge, err))
	}
	return fmt.Errorf("sqlite: %s: %w", op, err)
}

// inTx runs fn in one write transaction (BEGIN IMMEDIATE) and commits it, or rolls
// it back when fn or the commit fails. Errors fn returns are passed through as they
// are, so fn can return contract errors (ErrInvalidArgument, ErrLockHeld, ...).
func (p *Provider) inTx(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	tx, err := p.db.BeginTx(ctx, nil)
	if err != nil {
		return p.fail(ctx, op, err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return p.fail(ctx, op, tx.Commit())
}

// exec runs one statement and returns the number of rows it changed.
func (p *Provider) exec(ctx context.Context, e interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, op, query string, args ...any) (int64, error) {
	res, err := e.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, p.fail(ctx, op, err)
	}
	n, err := res.RowsAffected()
	return n, p.fail(ctx, op, err)
}

// encode is the JSON body of a value. A value JSON cannot encode is bad input.
func encode(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", provider.Invalid(err)
	}
	return string(b), nil
}

// getOne returns the body of the single row query selects, decoded, or (nil, nil)
// when there is none.
func getOne[T any](ctx context.Context, p *Provider, op, query string, args ...any) (*T, error) {
	var body string
	err := p.db.QueryRowContext(ctx, query, args...).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, p.fail(ctx, op, err)
	}
	var v T
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		return nil, fmt.Errorf("sqlite: %s: decode stored value: %w", op, err)
	}
	return &v, nil
}

// getAll returns the bodies of the rows query selects, decoded, in order. It never
// returns a nil slice without an error.
func getAll[T any](ctx context.Context, p *Provider, op, query string, args ...any) ([]T, error) {
	rows, err := p.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, p.fail(ctx, op, err)
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		var body string
		if err := rows.Scan(&body); err != nil {
			return nil, p.fail(ctx, op, err)
		}
		var v T
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			return nil, fmt.Errorf("sqlite: %s: decode stored value: %w", op, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, p.fail(ctx, op, err)
	}
	return out, nil
}

// sortTime formats t for a TEXT column that is ordered or compared: UTC with a
// fixed-width fraction, so string order is time order (years 0000-9999).
func sortTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000000Z") }

// expiry returns the expires_at column value and the ExpiresAt time for a ttl
// starting at now: NULL and nil when ttl is 0 (no expiry).
func expiry(now time.Time, ttl time.Duration) (sql.NullString, *time.Time) {
	if ttl == 0 {
		return sql.NullString{}, nil
	}
	at := now.Add(ttl)
	return sql.NullString{String: sortTime(at), Valid: true}, &at
}

// liveSQL is the condition that keeps rows whose expires_at has not passed; its one
// argument is sortTime(now). A row is live while now < expires_at.
const liveSQL = "(expires_at IS NULL OR expires_at > ?)"

func randomHex() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// ---------------------------------------------------------------------------
// Pipelines

// RegisterPipeline implements provider.PipelineStore.
func (p *Provider) RegisterPipeline(ctx context.Context, cfg types.PipelineConfig) error {
	if err := p.enter(ctx); err != nil {
		return err
	}
	if err := provider.Validate(cfg); err != nil {
		return err
	}
	body, err := encode(cfg)
	if err != nil {
		return err
	}
	_, err = p.exec(ctx, p.db, "register pipeline",
		`INSERT INTO pipelines (id, body) VALUES (?, ?)
		 ON CONFLICT (id) DO UPDATE SET body = excluded.body`, cfg.ID, body)
	return err
}

// GetPipeline implements provider.PipelineStore.
func (p *Provider) GetPipeline(ctx context.Context, id string) (*types.PipelineConfig, error) {
	if err := p.enter(ctx); err != nil {
		return nil, err
	}
	if err := provider.CheckID("pipeline ID", id); err != nil {
		return nil, err
	}
	return getOne[types.PipelineConfig](ctx, p, "get pipeline", `SELECT body FROM pipelines WHERE id = ?`, id)
}

// ListPipelines implements provider.PipelineStore.
func (p *Provider) ListPipelines(ctx context.Context) ([]types.PipelineConfig, error) {
	if err := p.enter(ctx); err != nil {
		return nil, err
	}
	return getAll[types.PipelineConfig](ctx, p, "list pipelines", `SELECT body FROM pipelines ORDER BY id`)
}

// DeletePipeline implements provider.PipelineStore. It deletes only the config,
// not the pipeline's runs, events or logs.
func (p *Provider) DeletePipeline(ctx context.Context, id string) error {
	if err := p.enter(ctx); err != nil {
		return err
	}
	if err := provider.CheckID("pipeline ID", id); err != nil {
		return err
	}
	_, err := p.exec(ctx, p.db, "delete pipeline", `DELETE FROM pipelines WHERE id = ?`, id)
	return err
}

// ---------------------------------------------------------------------------
// Traits and readiness

// PutTrait implements provider.TraitStore.
func (p *Provider) PutTrait(ctx context.Context, pipelineID string, trait types.TraitEvaluation, ttl time.Duration) error {
	if err := p.enter(ctx); err != nil {
		return err
	}
	if err := provider.CheckID("pipeline ID", pipelineID); err != nil {
		return err
	}
	if err := provider.Validate(trait); err != nil {
		return err
	}
	if trait.PipelineID != "" && trait.PipelineID != pipelineID {
		return provider.Invalidf("trait pipeline ID %q differs from %q", trait.PipelineID, pipelineID)
	}
	if err := provider.CheckTTL(ttl); err != nil {
		return err
	}
	var expires sql.NullString
	trait.PipelineID = pipelineID
	expires, trait.ExpiresAt = expiry(p.now(), ttl)
	body, err := encode(trait)
	if err != nil {
		return err
	}
	_, err = p.exec(ctx, p.db, "put trait",
		`INSERT INTO traits (pipeline_id, trait_type, expires_at, body) VALUES (?, ?, ?, ?)
		 ON CONFLICT (pipeline_id, trait_type) DO UPDATE SET expires_at = excluded.expires_at, body = excluded.body`,
		pipelineID, trait.TraitType, expires, body)
	return err
}

// GetTraits implements provider.TraitStore.
func (p *Provider) GetTraits(ctx context.Context, pipelineID string) ([]types.TraitEvaluation, error) {
	if err := p.enter(ctx); err != nil {
		return nil, err
	}
	if err := provider.CheckID("pipeline ID", pipelineID); err != nil {
		return nil, err
	}
	return getAll[types.TraitEvaluation](ctx, p, "get traits",
		`SELECT body FROM traits WHERE pipeline_id = ? AND `+liveSQL+` ORDER BY trait_type`,
		pipelineID, sortTime(p.now()))
}

// GetTrait implements provider.TraitStore.
func (p *Provider) GetTrait(ctx context.Context, pipelineID, traitType string) (*types.TraitEvaluation, error) {
	if err := p.enter(ctx); err != nil {
		return nil, err
	}
	if err := provider.CheckIDs("pipeline ID", pipelineID, "trait type", traitType); err != nil {
		return nil, err
	}
	return getOne[types.TraitEvaluation](ctx, p, "get trait",
		`SELECT body FROM traits WHERE pipeline_id = ? AND trait_type = ? AND `+liveSQL,
		pipelineID, traitType, sortTime(p.now()))
}

// PutReadiness implements provider.Provider: the result is kept for the
// provider's readiness TTL.
func (p *Provider) PutReadiness(ctx context.Context, result types.ReadinessResult) error {
	if err := p.enter(ctx); err != nil {
		return err
	}
	if err := provider.Validate(result); err != nil {
		return err
	}
	body, err := encode(result)
	if err != nil {
		return err
	}
	expires, _ := expiry(p.now(), p.readinessTTL)
	_, err = p.exec(ctx, p.db, "put readiness",
		`INSERT INTO readiness (pipeline_id, expires_at, body) VALUES (?, ?, ?)
		 ON CONFLICT (pipeline_id) DO UPDATE SET expires_at = excluded.expires_at, body = excluded.body`,
		result.PipelineID, expires, body)
	return err
}

// GetReadiness implements provider.Provider.
func (p *Provider) GetReadiness(ctx context.Context, pipelineID string) (*types.ReadinessResult, error) {
	if err := p.enter(ctx); err != nil {
		return nil, err
	}
	if err := provider.CheckID("pipeline ID", pipelineID); err != nil {
		return nil, err
	}
	return getOne[types.ReadinessResult](ctx, p, "get readiness",
		`SELECT body FROM readiness WHERE pipeline_id = ? AND `+liveSQL, pipelineID, sortTime(p.now()))
}

// ---------------------------------------------------------------------------
// Runs

// PutRunState implements provider.RunStore. It is one upsert whose update only
// applies when the stored run has the same pipeline, so the pipeline check and the
// write are atomic.
func (p *Provider) PutRunState(ctx context.Context, run types.RunState) error {
	if err := p.enter(ctx); err != nil {
		return err
	}
	if err := provider.Validate(run); err != nil {
		return err
	}
	now := p.now()
	if run.CreatedAt.IsZero() {
		run.CreatedAt = now
	}
	if run.UpdatedAt.IsZero() {
		run.UpdatedAt = now
	}
	body, err := encode(run)
	if err != nil {
		return err
	}
	n, err := p.exec(ctx, p.db, "put run state",
		`INSERT INTO runs (run_id, pipeline_id, version, created_at, body) VALUES (?, ?, ?, ?, ?)
		 ON CONFLICT (run_id) DO UPDATE
		 SET version = excluded.version, created_at = excluded.created_at, body = excluded.body
		 WHERE runs.pipeline_id = excluded.pipeline_id`,
		run.RunID, run.PipelineID, run.Version, sortTime(run.CreatedAt), body)
	if err != nil {
		return err
	}
	if n == 0 {
		return provider.Invalidf("run %q is stored under another pipeline than %q", run.RunID, run.PipelineID)
	}
	return nil
}

// GetRunState implements provider.RunStore.
func (p *Provider) GetRunState(ctx context.Context, runID string) (*types.RunState, error) {
	if err := p.enter(ctx); err != nil {
		return nil, err
	}
	if err := provider.CheckID("run ID", runID); err != nil {
		return nil, err
	}
	return getOne[types.RunState](ctx, p, "get run state", `SELECT body FROM runs WHERE run_id = ?`, runID)
}

// ListRuns implements provider.RunStore. There is one row per run, so the list
// always shows the latest CAS.
func (p *Provider) ListRuns(ctx context.Context, pipelineID string, limit int) ([]types.RunState, error) {
	if err := p.enter(ctx); err != nil {
		return nil, err
	}
	if err := provider.CheckID("pipeline ID", pipelineID); err != nil {
		return nil, err
	}
	if err := provider.CheckLimit(limit); err != nil {
		return nil, err
	}
	return getAll[types.RunState](ctx, p, "list runs",
		`SELECT body FROM runs WHERE pipeline_id = ? ORDER BY created_at DESC, run_id DESC LIMIT ?`,
		pipelineID, limit)
}

// CompareAndSwapRunState implements provider.RunStore. In one transaction it reads
// the stored run (for its pipeline and CreatedAt) and writes newState with
// UPDATE ... WHERE run_id = ? AND version = ?; the swap happened iff one row changed.
func (p *Provider) CompareAndSwapRunState(ctx context.Context, runID string, expectedVersion int, newState types.RunState) (bool, error) {
	if err := p.enter(ctx); err != nil {
		return false, err
	}
	if err := provider.CheckCAS(runID, expectedVersion, newState); err != nil {
		return false, err
	}
	newState.Version = expectedVersion + 1
	swapped := false
	err := p.inTx(ctx, "compare and swap run state", func(tx *sql.Tx) error {
		var storedPipeline, storedBody string
		var storedVersion int
		err := tx.QueryRowContext(ctx, `SELECT pipeline_id, version, body FROM runs WHERE run_id = ?`, runID).
			Scan(&storedPipeline, &storedVersion, &storedBody)
		if errors.Is(err, sql.ErrNoRows) {
			return nil // a missing run is (false, nil)
		}
		if err != nil {
			return p.fail(ctx, "compare and swap run state", err)
		}
		if storedPipeline != newState.PipelineID {
			return provider.Invalidf("run %q belongs to pipeline %q, not %q", runID, storedPipeline, newState.PipelineID)
		}
		if storedVersion != expectedVersion {
			return nil
		}
		var stored types.RunState
		if err := json.Unmarshal([]byte(storedBody), &stored); err != nil {
			return fmt.Errorf("sqlite: compare and swap run state: decode stored run: %w", err)
		}
		newState.CreatedAt = stored.CreatedAt // CreatedAt never changes through CAS
		newState.UpdatedAt = p.now()
		body, err := encode(newState)
		if err != nil {
			return err
		}
		n, err := p.exec(ctx, tx, "compare and swap run state",
			`UPDATE runs SET version = ?, body = ? WHERE run_id = ? AND version = ?`,
			newState.Version, body, runID, expectedVersion)
		swapped = n == 1
		return err
	})
	return err == nil && swapped, err
}

// ---------------------------------------------------------------------------
// Events

// AppendEvent implements provider.EventStore.
func (p *Provider) AppendEvent(ctx context.Context, ev types.Event) error {
	if err := p.enter(ctx); err != nil {
		return err
	}
	if err := provider.Validate(ev); err != nil {
		return err
	}
	if ev.Timestamp.IsZero() {
		ev.Timestamp = p.now()
	}
	body, err := encode(ev)
	if err != nil {
		return err
	}
	expires, _ := expiry(p.now(), p.eventRetention)
	_, err = p.exec(ctx, p.db, "append event", `INSERT INTO events (pipeline_id, expires_at, body) VALUES (?, ?, ?)`,
		ev.PipelineID, expires, body)
	return err
}

// ListEvents implements provider.EventStore.
func (p *Provider) ListEvents(ctx context.Context, pipelineID string, limit int) ([]types.Event, error) {
	if err := p.enter(ctx); err != nil {
		return nil, err
	}
	if err := provider.CheckID("pipeline ID", pipelineID); err != nil {
		return nil, err
	}
	if err := provider.CheckLimit(limit); err != nil {
		return nil, err
	}
	return getAll[types.Event](ctx, p, "list events",
		`SELECT body FROM (SELECT seq, body FROM events WHERE pipeline_id = ? AND `+liveSQL+` ORDER BY seq DESC LIMIT ?) ORDER BY seq`,
		pipelineID, sortTime(p.now()), limit)
}

// ReadEventsSince implements provider.EventStore. The cursor is the event's seq in
// decimal; "" reads from the start.
func (p *Provider) ReadEventsSince(ctx context.Context, pipelineID, sinceID string, count int64) ([]types.EventRecord, error) {
	if err := p.enter(ctx); err != nil {
		return nil, err
	}
	if err := provider.CheckID("pipeline ID", pipelineID); err != nil {
		return nil, err
	}
	if err := provider.CheckCount(count); err != nil {
		return nil, err
	}
	var since int64
	if sinceID != "" {
		n, err := strconv.ParseInt(sinceID, 10, 64)
		if err != nil || n < 1 || strconv.FormatInt(n, 10) != sinceID {
			return nil, provider.Invalidf("malformed event cursor %q", sinceID)
		}
		since = n
	}
	rows, err := p.db.QueryContext(ctx,
		`SELECT seq, body FROM events WHERE pipeline_id = ? AND seq > ? AND `+liveSQL+` ORDER BY seq LIMIT ?`,
		pipelineID, since, sortTime(p.now()), count)
	if err != nil {
		return nil, p.fail(ctx, "read events", err)
	}
	defer rows.Close()
	out := []types.EventRecord{}
	for rows.Next() {
		var seq int64
		var body string
		if err := rows.Scan(&seq, &body); err != nil {
			return nil, p.fail(ctx, "read events", err)
		}
		rec := types.EventRecord{StreamID: strconv.FormatInt(seq, 10)}
		if err := json.Unmarshal([]byte(body), &rec.Event); err != nil {
			return nil, fmt.Errorf("sqlite: read events: decode stored event: %w", err)
		}
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, p.fail(ctx, "read events", err)
	}
	return out, nil
}

// ---------------------------------------------------------------------------
// Run logs, reruns, replays, late arrivals, cascade markers

// PutRunLog implements provider.RunLogStore.
func (p *Provider) PutRunLog(ctx context.Context, entry types.RunLogEntry) error {
	if err := p.enter(ctx); err != nil {
		return err
	}
	if err := provider.Validate(entry); err != nil {
		return err
	}
	entry.ScheduleID = types.ScheduleOrDefault(entry.ScheduleID)
	body, err := encode(entry)
	if err != nil {
		return err
	}
	_, err = p.exec(ctx, p.db, "put run log",
		`INSERT INTO run_logs (pipeline_id, date, schedule_id, body) VALUES (?, ?, ?, ?)
		 ON CONFLICT (pipeline_id, date, schedule_id) DO UPDATE SET body = excluded.body`,
		entry.PipelineID, entry.Date, entry.ScheduleID, body)
	return err
}

// GetRunLog implements provider.RunLogStore.
func (p *Provider) GetRunLog(ctx context.Context, pipelineID, date, scheduleID string) (*types.RunLogEntry, error) {
	if err := p.enter(ctx); err != nil {
		return nil, err
	}
	if err := provider.CheckIDs("pipeline ID", pipelineID, "date", date); err != nil {
		return nil, err
	}
	schedule, err := provider.CheckSchedule(scheduleID)
	if err != nil {
		return nil, err
	}
	return getOne[types.RunLogEntry](ctx, p, "get run log",
		`SELECT body FROM run_logs WHERE pipeline_id = ? AND date = ? AND schedule_id = ?`, pipelineID, date, schedule)
}

// ListRunLogs implements provider.RunLogStore.
func (p *Provider) ListRunLogs(ctx context.Context, pipelineID string, limit int) ([]types.RunLogEntry, error) {
	if err := p.enter(ctx); err != nil {
		return nil, err
	}
	if err := provider.CheckID("pipeline ID", pipelineID); err != nil {
		return nil, err
	}
	if err := provider.CheckLimit(limit); err != nil {
		return nil, err
	}
	return getAll[types.RunLogEntry](ctx, p, "list run logs",
		`SELECT body FROM run_logs WHERE pipeline_id = ? ORDER BY date DESC, schedule_id DESC LIMIT ?`, pipelineID, limit)
}

// PutRerun implements provider.RerunStore. The record is one row, so re-putting it
// under another pipeline moves it between the pipelines' lists atomically.
func (p *Provider) PutRerun(ctx context.Context, rerun types.RerunRecord) error {
	if err := p.enter(ctx); err != nil {
		return err
	}
	if err := provider.Validate(rerun); err != nil {
		return err
	}
	if rerun.RequestedAt.IsZero() {
		rerun.RequestedAt = p.now()
	}
	body, err := encode(rerun)
	if err != nil {
		return err
	}
	_, err = p.exec(ctx, p.db, "put rerun",
		`INSERT INTO reruns (rerun_id, pipeline_id, requested_at, body) VALUES (?, ?, ?, ?)
		 ON CONFLICT (rerun_id) DO UPDATE
		 SET pipeline_id = excluded.pipeline_id, requested_at = excluded.requested_at, body = excluded.body`,
		rerun.RerunID, rerun.PipelineID, sortTime(rerun.RequestedAt), body)
	return err
}

// GetRerun implements provider.RerunStore.
func (p *Provider) GetRerun(ctx context.Context, rerunID string) (*types.RerunRecord, error) {
	if err := p.enter(ctx); err != nil {
		return nil, err
	}
	if err := provider.CheckID("rerun ID", rerunID); err != nil {
		return nil, err
	}
	return getOne[types.RerunRecord](ctx, p, "get rerun", `SELECT body FROM reruns WHERE rerun_id = ?`, rerunID)
}

// ListReruns implements provider.RerunStore.
func (p *Provider) ListReruns(ctx context.Context, pipelineID string, limit int) ([]types.RerunRecord, error) {
	if err := p.enter(ctx); err != nil {
		return nil, err
	}
	if err := provider.CheckID("pipeline ID", pipelineID); err != nil {
		return nil, err
	}
	if err := provider.CheckLimit(limit); err != nil {
		return nil, err
	}
	return getAll[types.RerunRecord](ctx, p, "list reruns",
		`SELECT body FROM reruns WHERE pipeline_id = ? ORDER BY requested_at DESC, rerun_id DESC LIMIT ?`,
		pipelineID, limit)
}

// ListAllReruns implements provider.RerunStore.
func (p *Provider) ListAllReruns(ctx context.Context, limit int) ([]types.RerunRecord, error) {
	if err := p.enter(ctx); err != nil {
		return nil, err
	}
	if err := provider.CheckLimit(limit); err != nil {
		return nil, err
	}
	return getAll[types.RerunRecord](ctx, p, "list all reruns",
		`SELECT body FROM reruns ORDER BY requested_at DESC, rerun_id DESC LIMIT ?`, limit)
}

// PutReplay implements provider.ReplayStore.
func (p *Provider) PutReplay(ctx context.Context, req types.ReplayRequest) error {
	if err := p.enter(ctx); err != nil {
		return err
	}
	if err := provider.Validate(req); err != nil {
		return err
	}
	req.ScheduleID = types.ScheduleOrDefault(req.ScheduleID)
	if req.CreatedAt.IsZero() {
		req.CreatedAt = p.now()
	}
	body, err := encode(req)
	if err != nil {
		return err
	}
	_, err = p.exec(ctx, p.db, "put replay",
		`INSERT INTO replays (pipeline_id, date, schedule_id, created_at, body) VALUES (?, ?, ?, ?, ?)
		 ON CONFLICT (pipeline_id, date, schedule_id) DO UPDATE SET created_at = excluded.created_at, body = excluded.body`,
		req.PipelineID, req.Date, req.ScheduleID, sortTime(req.CreatedAt), body)
	return err
}

// GetReplay implements provider.ReplayStore.
func (p *Provider) GetReplay(ctx context.Context, pipelineID, date, scheduleID string) (*types.ReplayRequest, error) {
	if err := p.enter(ctx); err != nil {
		return nil, err
	}
	if err := provider.CheckIDs("pipeline ID", pipelineID, "date", date); err != nil {
		return nil, err
	}
	schedule, err := provider.CheckSchedule(scheduleID)
	if err != nil {
		return nil, err
	}
	return getOne[types.ReplayRequest](ctx, p, "get replay",
		`SELECT body FROM replays WHERE pipeline_id = ? AND date = ? AND schedule_id = ?`, pipelineID, date, schedule)
}

// ListReplays implements provider.ReplayStore.
func (p *Provider) ListReplays(ctx context.Context, limit int) ([]types.ReplayRequest, error) {
	if err := p.enter(ctx); err != nil {
		return nil, err
	}
	if err := provider.CheckLimit(limit); err != nil {
		return nil, err
	}
	return getAll[types.ReplayRequest](ctx, p, "list replays",
		`SELECT body FROM replays ORDER BY created_at DESC, pipeline_id DESC, date DESC, schedule_id DESC LIMIT ?`, limit)
}

// PutLateArrival implements provider.LateArrivalStore.
func (p *Provider) PutLateArrival(ctx context.Context, la types.LateArrival) error {
	if err := p.enter(ctx); err != nil {
		return err
	}
	if err := provider.Validate(la); err != nil {
		return err
	}
	la.ScheduleID = types.ScheduleOrDefault(la.ScheduleID)
	if la.DetectedAt.IsZero() {
		la.DetectedAt = p.now()
	}
	body, err := encode(la)
	if err != nil {
		return err
	}
	_, err = p.exec(ctx, p.db, "put late arrival",
		`INSERT INTO late_arrivals (pipeline_id, date, schedule_id, detected_at, body) VALUES (?, ?, ?, ?, ?)`,
		la.PipelineID, la.Date, la.ScheduleID, sortTime(la.DetectedAt), body)
	return err
}

// ListLateArrivals implements provider.LateArrivalStore.
func (p *Provider) ListLateArrivals(ctx context.Context, pipelineID, date, scheduleID string) ([]types.LateArrival, error) {
	if err := p.enter(ctx); err != nil {
		return nil, err
	}
	if err := provider.CheckIDs("pipeline ID", pipelineID, "date", date); err != nil {
		return nil, err
	}
	schedule, err := provider.CheckSchedule(scheduleID)
	if err != nil {
		return nil, err
	}
	return getAll[types.LateArrival](ctx, p, "list late arrivals",
		`SELECT body FROM late_arrivals WHERE pipeline_id = ? AND date = ? AND schedule_id = ? ORDER BY detected_at, seq`,
		pipelineID, date, schedule)
}

// WriteCascadeMarker implements provider.CascadeStore.
func (p *Provider) WriteCascadeMarker(ctx context.Context, pipelineID, scheduleID, date, source string) error {
	if err := p.enter(ctx); err != nil {
		return err
	}
	m := types.CascadeMarker{PipelineID: pipelineID, ScheduleID: types.ScheduleOrDefault(scheduleID),
		Date: date, Source: source, WrittenAt: p.now()}
	if err := provider.Validate(m); err != nil {
		return err
	}
	body, err := encode(m)
	if err != nil {
		return err
	}
	_, err = p.exec(ctx, p.db, "write cascade marker",
		`INSERT INTO cascade_markers (pipeline_id, schedule_id, date, written_at, seq, body)
		 VALUES (?, ?, ?, ?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM cascade_markers), ?)
		 ON CONFLICT (pipeline_id, schedule_id, date) DO UPDATE
		 SET written_at = excluded.written_at, seq = excluded.seq, body = excluded.body`,
		m.PipelineID, m.ScheduleID, m.Date, sortTime(m.WrittenAt), body)
	return err
}

// ListCascadeMarkers implements provider.CascadeReader. Markers written at the same
// WrittenAt are ordered by write, the later first.
func (p *Provider) ListCascadeMarkers(ctx context.Context, pipelineID string, limit int) ([]types.CascadeMarker, error) {
	if err := p.enter(ctx); err != nil {
		return nil, err
	}
	if err := provider.CheckID("pipeline ID", pipelineID); err != nil {
		return nil, err
	}
	if err := provider.CheckLimit(limit); err != nil {
		return nil, err
	}
	return getAll[types.CascadeMarker](ctx, p, "list cascade markers",
		`SELECT body FROM cascade_markers WHERE pipeline_id = ? ORDER BY written_at DESC, seq DESC LIMIT ?`,
		pipelineID, limit)
}

// ---------------------------------------------------------------------------
// Locks and leases. One row per held key in locks; holder is the owner (a lock) or
// the token (a lease). An expired row is as good as absent: acquiring overwrites it.

// acquire takes key for holder in tx if no live row holds it, and reports whether
// it did.
func (p *Provider) acquire(ctx context.Context, tx *sql.Tx, op, key, holder string, fence int64, now time.Time, ttl time.Duration) (bool, error) {
	expires, _ := expiry(now, ttl)
	n, err := p.exec(ctx, tx, op,
		`INSERT INTO locks (key, holder, fence, expires_at) VALUES (?, ?, ?, ?)
		 ON CONFLICT (key) DO UPDATE
		 SET holder = excluded.holder, fence = excluded.fence, expires_at = excluded.expires_at
		 WHERE locks.expires_at IS NOT NULL AND locks.expires_at <= ?`,
		key, holder, fence, expires, sortTime(now))
	return n == 1, err
}

// AcquireLock implements provider.Locker.
func (p *Provider) AcquireLock(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	if err := p.enter(ctx); err != nil {
		return false, err
	}
	if err := provider.CheckLockKey(key); err != nil {
		return false, err
	}
	if err := provider.CheckTTL(ttl); err != nil {
		return false, err
	}
	var ok bool
	err := p.inTx(ctx, "acquire lock", func(tx *sql.Tx) error {
		var err error
		ok, err = p.acquire(ctx, tx, "acquire lock", key, "lock:"+p.owner, 0, p.now(), ttl)
		return err
	})
	return err == nil && ok, err
}

// ReleaseLock implements provider.Locker.
func (p *Provider) ReleaseLock(ctx context.Context, key string) error {
	if err := p.enter(ctx); err != nil {
		return err
	}
	if err := provider.CheckLockKey(key); err != nil {
		return err
	}
	n, err := p.exec(ctx, p.db, "release lock",
		`DELETE FROM locks WHERE key = ? AND holder = ? AND `+liveSQL, key, "lock:"+p.owner, sortTime(p.now()))
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("sqlite: release lock %q: %w", key, provider.ErrLockNotHeld)
	}
	return nil
}

// AcquireLease implements provider.Leaser. In one transaction it takes the key and
// increments the key's fence counter, which is never reset.
func (p *Provider) AcquireLease(ctx context.Context, key string, ttl time.Duration) (*types.Lease, error) {
	if err := p.enter(ctx); err != nil {
		return nil, err
	}
	if err := provider.CheckLockKey(key); err != nil {
		return nil, err
	}
	if err := provider.CheckLeaseTTL(ttl); err != nil {
		return nil, err
	}
	now := p.now()
	lease := &types.Lease{Key: key, Token: randomHex(), ExpiresAt: now.Add(ttl)}
	err := p.inTx(ctx, "acquire lease", func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx,
			`INSERT INTO fences (key, fence) VALUES (?, 1)
			 ON CONFLICT (key) DO UPDATE SET fence = fence + 1
			 RETURNING fence`, key).Scan(&lease.Fence)
		if err != nil {
			return p.fail(ctx, "acquire lease", err)
		}
		ok, err := p.acquire(ctx, tx, "acquire lease", key, "lease:"+lease.Token, lease.Fence, now, ttl)
		if err == nil && !ok {
			// Rolling back also undoes the fence increment.
			return fmt.Errorf("sqlite: acquire lease %q: %w", key, provider.ErrLockHeld)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return lease, nil
}

// RenewLease implements provider.Leaser. It is one UPDATE that matches only the
// current, live lease.
func (p *Provider) RenewLease(ctx context.Context, lease types.Lease, ttl time.Duration) (*types.Lease, error) {
	if err := p.enter(ctx); err != nil {
		return nil, err
	}
	if err := provider.Validate(lease); err != nil {
		return nil, err
	}
	if err := provider.CheckLeaseTTL(ttl); err != nil {
		return nil, err
	}
	now := p.now()
	lease.ExpiresAt = now.Add(ttl)
	n, err := p.exec(ctx, p.db, "renew lease",
		`UPDATE locks SET expires_at = ? WHERE key = ? AND holder = ? AND `+liveSQL,
		sortTime(lease.ExpiresAt), lease.Key, "lease:"+lease.Token, sortTime(now))
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("sqlite: renew lease %q: %w", lease.Key, provider.ErrLockNotHeld)
	}
	return &lease, nil
}

// ReleaseLease implements provider.Leaser.
func (p *Provider) ReleaseLease(ctx context.Context, lease types.Lease) error {
	if err := p.enter(ctx); err != nil {
		return err
	}
	if err := provider.Validate(lease); err != nil {
		return err
	}
	n, err := p.exec(ctx, p.db, "release lease",
		`DELETE FROM locks WHERE key = ? AND holder = ? AND `+liveSQL, lease.Key, "lease:"+lease.Token, sortTime(p.now()))
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("sqlite: release lease %q: %w", lease.Key, provider.ErrLockNotHeld)
	}
	return nil
}
