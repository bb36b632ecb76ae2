package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	driver "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/pipestate/pipestate/provider"
)

//go:embed schema.sql
var schema string

// DefaultReadinessTTL is how long PutReadiness keeps a result unless
// WithReadinessTTL says otherwise.
const DefaultReadinessTTL = provider.DefaultReadinessTTL

// DefaultBusyTimeout is how long a write waits for another writer's lock before
// failing, unless WithBusyTimeout says otherwise.
const DefaultBusyTimeout = 10 * time.Second

// DefaultMaxPollInterval is the longest wait between two reads of an idle follower
// or watcher unless WithMaxPollInterval says otherwise.
const DefaultMaxPollInterval = 500 * time.Millisecond

// Option configures a Provider. A nil Option, or one given a bad value, makes New
// fail with an error wrapping provider.ErrInvalidArgument.
type Option func(*Provider) error

// WithReadOnly makes the handle read-only: every write method returns an
// error wrapping provider.ErrReadOnly (after the stopped and context checks,
// before its arguments: the opening order) and changes nothing; reads are
// unchanged (no read writes). New opens the file read-only (SQLite's
// mode=ro): it creates no file, applies no schema, migration or journal mode,
// and fails unless the file holds the schema a writable New left (checkSchema).
// Other handles of the same file may still write.
func WithReadOnly() Option {
	return func(p *Provider) error {
		p.readOnly = true
		return nil
	}
}

// WithClock sets the clock that fills timestamps and judges TTLs (default
// time.Now). Every provider opened on one database file should share one clock.
func WithClock(now func() time.Time) Option {
	return func(p *Provider) error {
		if err := provider.CheckClock(now); err != nil {
			return err
		}
		p.now = now
		return nil
	}
}

// WithOwner sets the lock owner identity (default: 16 random bytes in hex). Two
// providers with one owner can release each other's locks.
func WithOwner(owner string) Option {
	return func(p *Provider) error {
		if err := provider.CheckOwner(owner); err != nil {
			return err
		}
		p.owner = owner
		return nil
	}
}

// WithReadinessTTL sets how long readiness results are kept (default
// DefaultReadinessTTL); it must be positive and at most provider.MaxTTL.
func WithReadinessTTL(ttl time.Duration) Option {
	return func(p *Provider) error {
		if err := provider.CheckReadinessTTL(ttl); err != nil {
			return err
		}
		p.readinessTTL = ttl
		return nil
	}
}

// WithEventRetention sets the Events field of the retention (WithRetention):
// each event is kept for d after it is appended, by the provider's clock: from
// then on it is invisible to ListEvents and ReadEventsSince, and a cursor whose
// next event was dropped is expired (ReadEventsSince and FollowEvents fail with
// provider.ErrCursorExpired; "" reads from the oldest event retained). 0 keeps
// events forever; d must be at most provider.MaxTTL. Dropped rows stay in the file until something
// deletes them (see ../README.md, step 6); a trigger records the highest seq
// deleted per pipeline (events_trimmed), so that cursors before it are expired.
func WithEventRetention(d time.Duration) Option {
	return func(p *Provider) error {
		if err := provider.CheckTTL(d); err != nil {
			return fmt.Errorf("sqlite: WithEventRetention: %w", err)
		}
		p.retention.Events = d
		return nil
	}
}

// WithMarkerLogRetention sets the MarkerLog field of the retention
// (WithRetention): each cascade marker write is kept in the log that
// WatchCascadeMarkers reads for d after it was written, by the provider's clock:
// the row's expiry is set by the write, so every reader, whatever its own
// retention, drops it then, and a watch from a cursor before a dropped row ends
// with an error wrapping provider.ErrCursorExpired (see WatchCascadeMarkers).
// 0 keeps every write forever; d must be at most provider.MaxTTL. The markers
// themselves (ListCascadeMarkers) are kept for the CascadeMarkers field.
func WithMarkerLogRetention(d time.Duration) Option {
	return func(p *Provider) error {
		if err := provider.CheckTTL(d); err != nil {
			return fmt.Errorf("sqlite: WithMarkerLogRetention: %w", err)
		}
		p.retention.MarkerLog = d
		return nil
	}
}

// WithMaxPollInterval sets the longest wait between two reads of an idle
// FollowEvents or WatchCascadeMarkers (default DefaultMaxPollInterval, at least
// 10ms): the most a write from another process waits to be delivered. Writes
// through a Provider on the same path in this process are delivered at once.
func WithMaxPollInterval(d time.Duration) Option {
	return func(p *Provider) error {
		if d < firstPoll {
			return provider.Invalidf("sqlite: WithMaxPollInterval: interval %v is below %v", d, firstPoll)
		}
		p.maxPoll = d
		return nil
	}
}

// WithBusyTimeout sets how long a write waits for the database's write lock
// (default DefaultBusyTimeout, at least 1ms); past it the call fails with
// SQLITE_BUSY.
func WithBusyTimeout(d time.Duration) Option {
	return func(p *Provider) error {
		if d < time.Millisecond {
			return provider.Invalidf("sqlite: WithBusyTimeout: timeout %v is below 1ms", d)
		}
		p.busyTimeout = d
		return nil
	}
}

// WithLogger sets the logger of the provider's one signal: a Warn record for
// each corrupt row a listing or an iterator skips (default: none). nil is
// invalid.
func WithLogger(log *slog.Logger) Option {
	return func(p *Provider) error {
		if log == nil {
			return provider.Invalidf("sqlite: WithLogger: nil logger")
		}
		p.report = reporter{log}
		return nil
	}
}

// Provider is a provider.Provider on one SQLite database file. Any number of
// Providers, in one process or several, may open the same file; each is one client
// with its own lock owner identity. It is safe for concurrent use.
type Provider struct {
	db           *sql.DB
	wake         *wakeup // of the file's followers in this process
	now          func() time.Time
	owner        string
	readinessTTL time.Duration
	retention    provider.Retention
	busyTimeout  time.Duration
	maxPoll      time.Duration
	report       reporter
	readOnly     bool
	closed       atomic.Bool
}

var (
	_ provider.Provider      = (*Provider)(nil)
	_ provider.Leaser        = (*Provider)(nil)
	_ provider.CascadeReader = (*Provider)(nil)
	_ provider.RunCreator    = (*Provider)(nil)
	_ provider.EventFollower = (*Provider)(nil)
	_ provider.MarkerWatcher = (*Provider)(nil)
)

// New opens (creating if needed; read-only, see WithReadOnly, it does not) the
// SQLite database file at path, creates the schema if it is missing, and
// returns a Provider ready for calls; Stop closes the
// database. A bad path or option is an error wrapping provider.ErrInvalidArgument:
// path must name a file (not ":memory:", whose every pooled connection would be a
// separate database) and must not contain '?', which starts the DSN's parameters.
func New(ctx context.Context, path string, opts ...Option) (*Provider, error) {
	p := &Provider{
		now:          time.Now,
		owner:        randomHex(),
		readinessTTL: DefaultReadinessTTL,
		busyTimeout:  DefaultBusyTimeout,
		maxPoll:      DefaultMaxPollInterval,
		retention:    provider.DefaultRetention(),
	}
	for _, o := range opts {
		if o == nil {
			return nil, provider.Invalidf("sqlite: nil option")
		}
		if err := o(p); err != nil {
			return nil, err
		}
	}
	if path == "" || path == ":memory:" || strings.Contains(path, "?") {
		return nil, provider.Invalidf("sqlite: path %q must name a file and not contain '?'", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", p.busyTimeout.Milliseconds()))
	dsn := path
	if p.readOnly {
		// A URI, so that SQLite reads mode=ro; the path is escaped as one.
		q.Set("mode", "ro")
		dsn = (&url.URL{Scheme: "file", Path: abs}).String()
	} else {
		q.Set("_txlock", "immediate") // every BeginTx is BEGIN IMMEDIATE
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(NORMAL)")
	}
	db, err := sql.Open("sqlite", dsn+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if p.readOnly {
		if err := checkSchema(ctx, db); err != nil {
			_ = db.Close()
			return nil, fmt.Errorf("sqlite: open %s read-only: %w", path, err)
		}
		p.db = db
		p.wake = openWakeup(abs)
		return p, nil
	}
	if _, err := db.ExecContext(ctx, schema); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("sqlite: create schema in %s: %w", path, err)
	}
	if err := migrate(ctx, db); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("sqlite: add retention to the schema in %s: %w", path, err)
	}
	p.db = db
	p.wake = openWakeup(abs)
	return p, nil
}

// Owner returns the lock owner identity of p.
func (p *Provider) Owner() string { return p.owner }

// Start implements provider.Provider: it checks that the database answers.
func (p *Provider) Start(ctx context.Context) error { return p.Ping(ctx) }

// Stop implements provider.Provider: it closes the database. It is idempotent;
// after it, every method fails with ErrClosed (enter).
func (p *Provider) Stop(ctx context.Context) error {
	if p.closed.Swap(true) {
		return nil
	}
	p.wake.release()
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

// The plumbing below is shared by every method. Each method opens with enter,
// given the results of its argument checks (provider.Check*, provider.Prepare*),
// then does its I/O through exec, put, getOne, getAll, each or inTx, which call
// enter again (with no checks) before each statement, so a context that ends
// between statements stops the next one.

// enter opens every method, before any I/O, in the order the provider contract
// calls its "opening order" (package provider): after Stop, ErrClosed; then,
// with a done context, ctx.Err(); then the first non-nil of checks, the method's
// argument checks in the order it lists them. Cheap facts about the provider
// come before facts about the call, so a caller learns first what no change of
// arguments can mend. A write opens with enterWrite, which refuses it on a
// read-only handle (WithReadOnly) between the context and the arguments.
func (p *Provider) enter(ctx context.Context, checks ...error) error {
	if p.closed.Load() {
		return provider.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	return nil
}

// enterWrite is enter for the write method op: on a read-only handle, after
// the stopped and context checks, provider.ReadOnly instead of the arguments'.
func (p *Provider) enterWrite(ctx context.Context, op string, checks ...error) error {
	if p.readOnly {
		if err := p.enter(ctx); err != nil {
			return err
		}
		return provider.ReadOnly("sqlite", op)
	}
	return p.enter(ctx, checks...)
}

// fail turns a database error into the error the contract asks for: the context's
// error when it is done, ErrClosed after Stop, ErrTooLarge for SQLITE_TOOBIG, and
// otherwise the driver's error wrapped with %w (errors.As to *driver.Error works).
func (p *Provider) fail(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	var se *driver.Error
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
	if err := p.enter(ctx); err != nil {
		return err
	}
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

// execer is a *sql.DB or a *sql.Tx.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// exec runs one statement on e and returns the number of rows it changed.
func (p *Provider) exec(ctx context.Context, e execer, op, query string, args ...any) (int64, error) {
	if err := p.enter(ctx); err != nil {
		return 0, err
	}
	res, err := e.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, p.fail(ctx, op, err)
	}
	n, err := res.RowsAffected()
	return n, p.fail(ctx, op, err)
}

// put runs the upsert or insert query with args followed by v's JSON body: the
// query's last parameter is the body column.
func (p *Provider) put(ctx context.Context, op string, v any, query string, args ...any) error {
	body, err := encode(v)
	if err != nil {
		return err
	}
	_, err = p.exec(ctx, p.db, op, query, append(args, body)...)
	return err
}

// encode is the JSON body of a value. A value JSON cannot encode is bad input.
func encode(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", provider.Invalid(err)
	}
	return string(b), nil
}

// Corrupt records. A row whose body does not decode (a byte flipped, a value
// written by a newer version or by hand) must not hide its neighbours: getOne
// returns a *provider.CorruptError naming it (with provider.Decode), getAll and
// the iterators skip it and report it (with provider.DecodeOrSkip), which calls
// the provider's reporter (a Warn record through WithLogger) and the caller's
// provider.OnCorrupt handler; a List*(limit) reads on until it has limit good
// rows. This is what providertest's doc asks of every third-party backend.

// reporter is the provider's provider.CorruptReporter: a Warn record per corrupt
// row skipped, through WithLogger's logger (none by default).
type reporter struct{ log *slog.Logger }

// ReportCorrupt implements provider.CorruptReporter.
func (r reporter) ReportCorrupt(ctx context.Context, err *provider.CorruptError) {
	if r.log != nil {
		r.log.WarnContext(ctx, "sqlite: skipped a corrupt row", "record.kind", string(err.Kind), "record.id", err.ID,
			"record.key", err.Key, "error", err.Err)
	}
}

// rowKey is the CorruptError.Key of the row of table whose identity is id.
func rowKey(table, id string) string { return "sqlite table " + table + " row " + id }

// decode is the value of the stored JSON body of the row of table whose
// identity (the key columns joined by ':') is id, a record of kind.
func decode[T any](kind provider.RecordKind, table, id, body string, v *T) error {
	return provider.Decode(kind, []byte(body), v, func() (string, string) { return id, rowKey(table, id) })
}

// decodeOrSkip is decode for a listing: false (after reporting) skips the row.
func decodeOrSkip[T any](ctx context.Context, p *Provider, kind provider.RecordKind, table, id, body string, v *T) bool {
	return provider.DecodeOrSkip(ctx, p.report, kind, []byte(body), v, func() (string, string) { return id, rowKey(table, id) })
}

// errEnough ends an each early without an error.
var errEnough = errors.New("enough rows")

// each runs query and calls fn with each row's Scan, in order.
func (p *Provider) each(ctx context.Context, op, query string, args []any, fn func(scan func(dest ...any) error) error) error {
	if err := p.enter(ctx); err != nil {
		return err
	}
	rows, err := p.db.QueryContext(ctx, query, args...)
	if err != nil {
		return p.fail(ctx, op, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows.Scan); errors.Is(err, errEnough) {
			return nil
		} else if err != nil {
			return err
		}
	}
	return p.fail(ctx, op, rows.Err())
}

// getAll returns, in order, the records of kind that query selects from table,
// each row its identity (the key columns joined by ':') and its body, decoded: at
// most limit (0: all) good ones. A row that does not decode is skipped and
// reported, and the next takes its place, so query has no LIMIT: getAll stops
// reading at limit. It never returns a nil slice without an error.
func getAll[T any](ctx context.Context, p *Provider, op string, kind provider.RecordKind, table string, limit int, query string, args ...any) ([]T, error) {
	out := []T{}
	err := p.each(ctx, op, query, args, func(scan func(...any) error) error {
		var id, body string
		if err := scan(&id, &body); err != nil {
			return p.fail(ctx, op, err)
		}
		var v T
		if decodeOrSkip(ctx, p, kind, table, id, body, &v) {
			out = append(out, v)
		}
		if limit > 0 && len(out) == limit {
			return errEnough
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// getOne returns the record of kind of the single row query selects from table
// (its identity and body, as for getAll), decoded, or (nil, nil) when there is
// none; a body that does not decode is a *provider.CorruptError.
func getOne[T any](ctx context.Context, p *Provider, op string, kind provider.RecordKind, table, query string, args ...any) (*T, error) {
	var out *T
	err := p.each(ctx, op, query, args, func(scan func(...any) error) error {
		var id, body string
		if err := scan(&id, &body); err != nil {
			return p.fail(ctx, op, err)
		}
		var v T
		if err := decode(kind, table, id, body, &v); err != nil {
			return err
		}
		out = &v
		return errEnough
	})
	return out, err
}

// sortTime formats t for a TEXT column that is ordered or compared: UTC with a
// fixed-width fraction, so string order is time order (years 0000-9999).
func sortTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000000Z") }

// expiresAt is the expires_at column value of something that expires at t: NULL for
// nil (never).
func expiresAt(t *time.Time) sql.NullString {
	if t == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: sortTime(*t), Valid: true}
}

// after is the time ttl after now, or nil (never) when ttl is 0 (provider.Expiry).
func after(now time.Time, ttl time.Duration) *time.Time {
	t := provider.Expiry(now, ttl)
	if t.IsZero() {
		return nil
	}
	return &t
}

// liveSQL is the condition that keeps rows whose expires_at has not passed; its one
// argument is sortTime(now). A row is live while now < expires_at.
const liveSQL = "(expires_at IS NULL OR expires_at > ?)"

func randomHex() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}
