-- Schema of the SQLite backend. Applied on every Open; every statement is idempotent.
-- A file created before retention gets the expires_at columns of the retained
-- tables and their expiry indexes from New (see retained in retention.go).
--
-- Each entity is one table. The full value is stored as JSON in `body` (so a Get
-- returns exactly what was put, after a JSON round trip); the columns beside it are
-- the key and what the queries filter and order by. Times used for ordering or
-- expiry are TEXT in one fixed-width UTC format (see sortTime in provider.go), so
-- string order is time order. `expires_at` is NULL for "never expires".

CREATE TABLE IF NOT EXISTS pipelines (
	id   TEXT PRIMARY KEY,
	body TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS traits (
	pipeline_id TEXT NOT NULL,
	trait_type  TEXT NOT NULL,
	expires_at  TEXT,
	body        TEXT NOT NULL,
	PRIMARY KEY (pipeline_id, trait_type)
);

CREATE TABLE IF NOT EXISTS readiness (
	pipeline_id TEXT PRIMARY KEY,
	expires_at  TEXT,
	body        TEXT NOT NULL
);

-- runs.version is the compare-and-swap version: CAS is
-- UPDATE runs ... WHERE run_id = ? AND version = ?.
-- runs.unfinished is 1 while the run's status is not terminal and 0 once it
-- is, set by the statement that writes the body: the partial index runs_active
-- over it (created by New, see migrate in retention.go) is the active-runs index
-- (provider.ActiveRunLister). NULL is a row that a version before this column
-- wrote: every writable New sets it from the body (backfillActive, through the
-- partial index runs_unknown).
CREATE TABLE IF NOT EXISTS runs (
	run_id      TEXT PRIMARY KEY,
	pipeline_id TEXT NOT NULL,
	version     INTEGER NOT NULL,
	created_at  TEXT NOT NULL,
	body        TEXT NOT NULL,
	expires_at  TEXT,
	unfinished  INTEGER
);
CREATE INDEX IF NOT EXISTS runs_by_pipeline ON runs (pipeline_id, created_at DESC, run_id DESC);

-- events.seq is the cursor. SQLite has one writer at a time, so seq order is commit
-- order: a reader never sees seq N+1 before seq N. expires_at is the end of the
-- event's retention (WithEventRetention): the row stays, hidden, so a reader tells
-- whether the event after its cursor is gone (the cursor expired) from the row
-- itself; AUTOINCREMENT never reuses a seq.
CREATE TABLE IF NOT EXISTS events (
	seq         INTEGER PRIMARY KEY AUTOINCREMENT,
	pipeline_id TEXT NOT NULL,
	expires_at  TEXT,
	body        TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_pipeline ON events (pipeline_id, seq);

-- events_trimmed holds, per pipeline, the highest seq ever deleted from events,
-- kept by a trigger on whatever deletes there (a periodic DELETE of expired rows,
-- by hand): an event cursor below it has lost an event and is expired. Rows
-- deleted before this table existed are not counted.
CREATE TABLE IF NOT EXISTS events_trimmed (
	pipeline_id TEXT PRIMARY KEY,
	seq         INTEGER NOT NULL
);
CREATE TRIGGER IF NOT EXISTS events_deleted AFTER DELETE ON events BEGIN
	INSERT INTO events_trimmed (pipeline_id, seq) VALUES (old.pipeline_id, old.seq)
	ON CONFLICT (pipeline_id) DO UPDATE SET seq = MAX(seq, excluded.seq);
END;

CREATE TABLE IF NOT EXISTS run_logs (
	pipeline_id TEXT NOT NULL,
	date        TEXT NOT NULL,
	schedule_id TEXT NOT NULL,
	body        TEXT NOT NULL,
	expires_at  TEXT,
	PRIMARY KEY (pipeline_id, date, schedule_id)
);

CREATE TABLE IF NOT EXISTS reruns (
	rerun_id     TEXT PRIMARY KEY,
	pipeline_id  TEXT NOT NULL,
	requested_at TEXT NOT NULL,
	body         TEXT NOT NULL,
	expires_at   TEXT
);
CREATE INDEX IF NOT EXISTS reruns_by_pipeline ON reruns (pipeline_id, requested_at DESC, rerun_id DESC);
CREATE INDEX IF NOT EXISTS reruns_by_time ON reruns (requested_at DESC, rerun_id DESC);

CREATE TABLE IF NOT EXISTS replays (
	pipeline_id TEXT NOT NULL,
	date        TEXT NOT NULL,
	schedule_id TEXT NOT NULL,
	created_at  TEXT NOT NULL,
	body        TEXT NOT NULL,
	expires_at  TEXT,
	PRIMARY KEY (pipeline_id, date, schedule_id)
);
CREATE INDEX IF NOT EXISTS replays_by_time ON replays (created_at DESC);

CREATE TABLE IF NOT EXISTS late_arrivals (
	seq         INTEGER PRIMARY KEY AUTOINCREMENT,
	pipeline_id TEXT NOT NULL,
	date        TEXT NOT NULL,
	schedule_id TEXT NOT NULL,
	detected_at TEXT NOT NULL,
	body        TEXT NOT NULL,
	expires_at  TEXT
);
CREATE INDEX IF NOT EXISTS late_arrivals_by_key ON late_arrivals (pipeline_id, date, schedule_id, detected_at, seq);

-- cascade_markers.seq orders markers written at the same WrittenAt: the later write first.
CREATE TABLE IF NOT EXISTS cascade_markers (
	pipeline_id TEXT NOT NULL,
	schedule_id TEXT NOT NULL,
	date        TEXT NOT NULL,
	written_at  TEXT NOT NULL,
	seq         INTEGER NOT NULL,
	body        TEXT NOT NULL,
	expires_at  TEXT,
	PRIMARY KEY (pipeline_id, schedule_id, date)
);
CREATE INDEX IF NOT EXISTS cascade_markers_by_time ON cascade_markers (pipeline_id, written_at DESC, seq DESC);

-- marker_log is every cascade marker write, in commit order: WatchCascadeMarkers
-- reads it, and seq is its cursor (in commit order for the same reason as events.seq).
-- WriteCascadeMarker appends to it in the transaction of the upsert into
-- cascade_markers; expires_at is the end of the write's retention
-- (WithMarkerLogRetention, as the writer had it): the row stays, hidden, until a
-- write deletes it, as events do.
CREATE TABLE IF NOT EXISTS marker_log (
	seq         INTEGER PRIMARY KEY AUTOINCREMENT,
	pipeline_id TEXT NOT NULL,
	schedule_id TEXT NOT NULL,
	date        TEXT NOT NULL,
	written_at  TEXT NOT NULL,
	body        TEXT NOT NULL,
	expires_at  TEXT
);
DROP INDEX IF EXISTS marker_log_by_time;

-- marker_log_trimmed is the one row (id 1) holding the highest seq ever deleted from
-- marker_log, kept by a trigger on whatever deletes there (retention or by hand): a
-- watch cursor below it has lost a write and is expired.
CREATE TABLE IF NOT EXISTS marker_log_trimmed (
	id  INTEGER PRIMARY KEY CHECK (id = 1),
	seq INTEGER NOT NULL
);
CREATE TRIGGER IF NOT EXISTS marker_log_deleted AFTER DELETE ON marker_log BEGIN
	INSERT INTO marker_log_trimmed (id, seq) VALUES (1, old.seq)
	ON CONFLICT (id) DO UPDATE SET seq = MAX(seq, excluded.seq);
END;

-- locks holds both locks and leases (they share one key space). holder is the
-- provider instance's owner for a lock and the lease token for a lease.
CREATE TABLE IF NOT EXISTS locks (
	key        TEXT PRIMARY KEY,
	holder     TEXT NOT NULL,
	fence      INTEGER NOT NULL,
	expires_at TEXT
);

-- fences is the fencing-token counter of each lease key. Rows are never deleted, so a
-- fence keeps increasing after the lease expires or is released.
CREATE TABLE IF NOT EXISTS fences (
	key   TEXT PRIMARY KEY,
	fence INTEGER NOT NULL
);

-- record_fences is what each record remembers of the fenced writes that wrote it
-- (package fence): per record (kind and key columns a, b, c, as the record's own
-- table keys it; "" where unused) and lease key, the highest fence. A fenced write
-- reads and raises it in the transaction of the write (fence.go). The triggers
-- delete a record's fences with its row, so they live as long as the record; a
-- pipeline's event log (kind 'events') keeps its fences for as long as the file.
CREATE TABLE IF NOT EXISTS record_fences (
	kind      TEXT NOT NULL,
	a         TEXT NOT NULL,
	b         TEXT NOT NULL,
	c         TEXT NOT NULL,
	lease_key TEXT NOT NULL,
	fence     INTEGER NOT NULL,
	PRIMARY KEY (kind, a, b, c, lease_key)
);
CREATE TRIGGER IF NOT EXISTS runs_fences AFTER DELETE ON runs BEGIN
	DELETE FROM record_fences WHERE kind = 'run' AND a = old.run_id;
END;
CREATE TRIGGER IF NOT EXISTS reruns_fences AFTER DELETE ON reruns BEGIN
	DELETE FROM record_fences WHERE kind = 'rerun' AND a = old.rerun_id;
END;
CREATE TRIGGER IF NOT EXISTS run_logs_fences AFTER DELETE ON run_logs BEGIN
	DELETE FROM record_fences WHERE kind = 'run_log' AND a = old.pipeline_id AND b = old.date AND c = old.schedule_id;
END;
CREATE TRIGGER IF NOT EXISTS replays_fences AFTER DELETE ON replays BEGIN
	DELETE FROM record_fences WHERE kind = 'replay' AND a = old.pipeline_id AND b = old.date AND c = old.schedule_id;
END;
CREATE TRIGGER IF NOT EXISTS cascade_markers_fences AFTER DELETE ON cascade_markers BEGIN
	DELETE FROM record_fences WHERE kind = 'marker' AND a = old.pipeline_id AND b = old.date AND c = old.schedule_id;
END;
CREATE TRIGGER IF NOT EXISTS late_arrivals_fences AFTER DELETE ON late_arrivals
WHEN NOT EXISTS (SELECT 1 FROM late_arrivals WHERE pipeline_id = old.pipeline_id AND date = old.date AND schedule_id = old.schedule_id)
BEGIN
	DELETE FROM record_fences WHERE kind = 'late' AND a = old.pipeline_id AND b = old.date AND c = old.schedule_id;
END;
