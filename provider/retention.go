package provider

import (
	"fmt"
	"time"
)

// Retention is how long a backend keeps each kind of record that grows with use,
// counted from the record's last write by the backend's clock: a record written at
// t with retention d expires at t+d (see Expiry) and is invisible to every read,
// lists and iterators included, from the instant the clock reads t+d (see Live),
// whether or not the backend has deleted it yet. Every write of a record (a put,
// a CAS, a create, an upsert, a marker write) restarts its retention, atomically
// with the write. Zero keeps the kind forever.
//
// What is kept forever whatever the retention: pipeline configs and traits (they
// have their own ttl), readiness results (ReadinessTTL), and the fence counter of
// each lock key: a lease's Fence must strictly increase across the leases of a
// key forever, and a counter that expired would start again from 1, repeating
// fences an old holder may still use.
//
// Each built-in backend takes one through its WithRetention option; its default
// is DefaultRetention. Backends whose logs are bounded by count rather than by
// age document which fields they apply (Redis keeps its event streams and marker
// log by count: WithMaxEvents and WithMaxMarkerWrites).
type Retention struct {
	// Runs keeps a run state (and its list entries) for Runs after its last
	// PutRunState, CreateRunState or successful CompareAndSwapRunState. An expired
	// run is missing: GetRunState returns (nil, nil), ListRuns leaves it out, a CAS
	// of it returns (false, nil), and CreateRunState creates it again, with the
	// Version it is given (0 for a fresh run), as if it had never existed.
	Runs time.Duration
	// RunLogs keeps a run log entry for RunLogs after its last PutRunLog.
	RunLogs time.Duration
	// Reruns keeps a rerun record for Reruns after its last PutRerun.
	Reruns time.Duration
	// Replays keeps a replay request for Replays after its last PutReplay.
	Replays time.Duration
	// LateArrivals keeps each late arrival for LateArrivals after it was put
	// (each one its own: ListLateArrivals drops the old ones of a slot first).
	LateArrivals time.Duration
	// CascadeMarkers keeps a cascade marker (what ListCascadeMarkers lists) for
	// CascadeMarkers after its last WriteCascadeMarker.
	CascadeMarkers time.Duration
	// Events keeps each event for Events after it was appended; a cursor after
	// which an event was dropped is expired (see "no gaps" in the package doc).
	Events time.Duration
	// MarkerLog keeps each write of the marker log (what WatchCascadeMarkers
	// reads) for MarkerLog after it was made.
	MarkerLog time.Duration
}

// The defaults of DefaultRetention.
const (
	// DefaultRecordRetention is the default retention of runs, run logs, reruns,
	// replays, late arrivals, cascade markers and events: 30 days, long enough to
	// look back over a month of runs and to rerun or replay any of them, short
	// enough that a service creating thousands of runs a day keeps a bounded store.
	DefaultRecordRetention = 30 * 24 * time.Hour
	// DefaultMarkerLogRetention is the default retention of the marker log: 24
	// hours, how far behind a marker watcher may fall before its cursor expires.
	DefaultMarkerLogRetention = 24 * time.Hour
)

// DefaultRetention is the retention of every built-in backend unless its
// WithRetention option says otherwise: DefaultRecordRetention (30 days) for every
// kind but the marker log, which keeps DefaultMarkerLogRetention (24 hours).
func DefaultRetention() Retention {
	d := DefaultRecordRetention
	return Retention{
		Runs: d, RunLogs: d, Reruns: d, Replays: d, LateArrivals: d, CascadeMarkers: d, Events: d,
		MarkerLog: DefaultMarkerLogRetention,
	}
}

// Forever is the Retention that keeps every record kind forever (all zero), as
// backends did before retention existed.
func Forever() Retention { return Retention{} }

// Check rejects a retention with a negative field or one above MaxTTL, with an
// error wrapping ErrInvalidArgument that names the field.
func (r Retention) Check() error {
	for _, f := range []struct {
		name string
		d    time.Duration
	}{
		{"Runs", r.Runs}, {"RunLogs", r.RunLogs}, {"Reruns", r.Reruns}, {"Replays", r.Replays},
		{"LateArrivals", r.LateArrivals}, {"CascadeMarkers", r.CascadeMarkers}, {"Events", r.Events},
		{"MarkerLog", r.MarkerLog},
	} {
		if err := CheckTTL(f.d); err != nil {
			return fmt.Errorf("retention %s: %w", f.name, err)
		}
	}
	return nil
}

// Expiry is when a record written at now with retention d expires: now+d, or the
// zero time (never) for d == 0.
func Expiry(now time.Time, d time.Duration) time.Time {
	if d == 0 {
		return time.Time{}
	}
	return now.Add(d)
}

// Live reports whether a record that expires at expiry (zero: never) is visible at
// now: it is expired exactly when now >= expiry, the rule of every TTL and
// retention.
func Live(expiry, now time.Time) bool { return expiry.IsZero() || now.Before(expiry) }
