// Package sqlite is a third-party pipestate backend: a provider.Provider (plus
// provider.Leaser, provider.CascadeReader and the optional provider.RunCreator,
// provider.EventFollower, provider.MarkerWatcher, provider.LockInspector,
// provider.LockLister, provider.ActiveRunLister and provider.ActiveRunReindexer) on one
// SQLite database file, through database/sql and the pure-Go driver
// modernc.org/sqlite (no cgo). It passes
// providertest.Run (conformance_test.go). Copy it to start a backend for another SQL
// database; ../README.md says what to change.
//
// Every method opens, before any I/O, in the contract's "opening order" (package
// provider), as the built-in backends do: after Stop, an error wrapping
// provider.ErrClosed; then, with a done context, ctx.Err(); then the first failed
// check of its arguments, which it checks and fills with defaults through the
// provider package's Check* and Prepare* helpers, so bad input is rejected exactly
// as in the built-in backends. One function does it (enter, in provider.go): each
// method computes its checks and passes their errors to it; a write passes them
// to enterWrite, which on a read-only handle (WithReadOnly) refuses it with
// provider.ReadOnly between the context and the arguments.
//
// Where atomicity comes from:
//   - a single SQL statement is atomic (upserts, deletes, the lease renewal);
//   - CreateRunState is one INSERT ... ON CONFLICT DO NOTHING, created iff it
//     changed a row;
//   - multi-statement changes (CAS, locks, leases, cascade markers) run in a
//     transaction opened with BEGIN IMMEDIATE (the DSN's _txlock=immediate), which
//     takes SQLite's write lock before the first read, so read-check-write cannot
//     interleave with another writer, in this process or any other process on the
//     same file;
//   - busy_timeout makes a writer wait for the lock instead of failing with
//     SQLITE_BUSY; WAL lets readers run while a writer holds it.
//
// Corrupt rows: a body that does not decode (a byte flipped, a value written by
// hand or by a newer version) is decoded through provider.Decode and
// provider.DecodeOrSkip, as providertest's doc asks of every backend: a Get*
// returns a *provider.CorruptError naming the row ("sqlite table runs row r-1"),
// and a List* or an iterator skips it, reports it (to the caller's
// provider.OnCorrupt handler and a Warn record through WithLogger) and goes on;
// so lists take no SQL LIMIT but stop reading at limit good rows.
//
// Times that are compared or ordered are stored as fixed-width UTC text (sortTime),
// so string order is time order; expires_at is NULL for "never expires", and a row
// is live while now < expires_at, judged when reading.
//
// Retention (WithRetention, default provider.DefaultRetention(): 30 days, 24
// hours for the marker log): the rows of runs, run_logs, reruns, replays,
// late_arrivals, cascade_markers, events and marker_log carry expires_at, set by the statement that
// writes them (an upsert or the CAS's UPDATE, so a write restarts it atomically);
// reads leave expired rows out, and each write deletes up to 100 expired rows of
// its table through a partial index on expires_at. An expired run is missing:
// CreateRunState's upsert writes over it (ON CONFLICT ... WHERE expires_at <=
// now) and starts it at the version given, PutRunState's lets it change pipeline,
// and the CAS's read does not find it. New adds the expires_at columns to a file
// created before retention (ALTER TABLE); its rows have none and never expire
// until they are written again. Events keep their hidden rows (see below) until
// something deletes them, as before.
//
// Active runs (provider.ActiveRunLister): runs.unfinished is 1 while the run's
// status is not terminal and 0 once it is, set by the statement that writes
// the body, so the partial index runs_active over it is exact for every write
// (fenced, lost or refused writes included: a refused write changes neither).
// ListActiveRuns reads it in run_id order and judges expiry and the filter on
// the row. The backfill is New's: it adds the column to an older file, and
// every writable New sets it, in one transaction, for the rows that an older
// version wrote (NULL, found through the partial index runs_unknown), so a
// file is fully indexed once a writer of this version has opened it after the
// last older writer stopped. A read-only New does not backfill. ReindexRun
// (provider.ActiveRunReindexer) sets the column of one row from its body when
// they disagree (a row changed by hand), in one transaction, writing nothing
// else of the run.
//
// Fencing (package fence): a fenced write runs in one transaction that reads what
// its record remembers from record_fences (a stale fence is refused, nothing
// written), writes, and raises the fence when a row changed; an unfenced write is
// the statement alone, as before. Triggers delete a record's fences with its row
// (retention included), so record_fences stays as small as the records; a
// pipeline's event log keeps its fences for as long as the file.
//
// Following: SQLite cannot notify another process of a commit, so FollowEvents and
// WatchCascadeMarkers poll. After a read that finds nothing a follower waits 10ms,
// then twice as long after each further empty read, up to WithMaxPollInterval
// (DefaultMaxPollInterval, 500ms), and reads again at once after a read that found
// something. A commit of AppendEvent or WriteCascadeMarker through any Provider open
// on the same path in this process wakes the followers at once, so only writes from
// other processes wait for a poll. Cursors are sequence numbers in commit order (the
// events' seq, marker_log's seq), so no follower skips a write. Every marker write is
// kept in marker_log for the WithMarkerLogRetention of the provider that wrote it
// (0: forever; rows written before marker_log had expires_at never expire), and
// read by the rule of events below (provider.ErrCursorExpired). An event cursor is
// expired when the pipeline's next event after it is past its retention (the row
// stays, hidden) or an event row after it was deleted (events_trimmed): one
// statement reads both with the events, so ReadEventsSince costs no more.
package sqlite
