package provider

import (
	"context"
	"iter"
	"time"

	"github.com/pipestate/pipestate/types"
)

// Provider is the whole state an orchestrator keeps. See the package doc for the
// semantics every implementation meets; providertest checks them.
type Provider interface {
	PipelineStore
	TraitStore
	RunStore
	EventStore
	RunLogStore
	RerunStore
	CascadeStore
	LateArrivalStore
	ReplayStore
	Locker

	// PutReadiness caches a readiness result for the backend's readiness TTL.
	PutReadiness(ctx context.Context, result types.ReadinessResult) error
	// GetReadiness returns the cached result, or (nil, nil) when missing or expired.
	GetReadiness(ctx context.Context, pipelineID string) (*types.ReadinessResult, error)

	// Start prepares the provider; it is idempotent.
	Start(ctx context.Context) error
	// Stop closes the provider; it is idempotent, and every later call returns an
	// error wrapping ErrClosed.
	Stop(ctx context.Context) error
	// Ping reports whether the backend answers.
	Ping(ctx context.Context) error
}

// PipelineStore keeps pipeline configurations.
type PipelineStore interface {
	// RegisterPipeline stores cfg, replacing any config with the same ID.
	RegisterPipeline(ctx context.Context, cfg types.PipelineConfig) error
	// GetPipeline returns the config, or (nil, nil) when missing.
	GetPipeline(ctx context.Context, id string) (*types.PipelineConfig, error)
	// ListPipelines returns every config, sorted by ID.
	ListPipelines(ctx context.Context) ([]types.PipelineConfig, error)
	// DeletePipeline removes the config; deleting a missing one returns nil.
	DeletePipeline(ctx context.Context, id string) error
}

// TraitStore keeps the latest evaluation of each trait of a pipeline.
type TraitStore interface {
	// PutTrait stores trait under (pipelineID, trait.TraitType) for ttl (0: no expiry)
	// and sets its ExpiresAt. trait.PipelineID, if set, must equal pipelineID.
	PutTrait(ctx context.Context, pipelineID string, trait types.TraitEvaluation, ttl time.Duration) error
	// GetTraits returns the pipeline's live traits sorted by TraitType.
	GetTraits(ctx context.Context, pipelineID string) ([]types.TraitEvaluation, error)
	// GetTrait returns one live trait, or (nil, nil).
	GetTrait(ctx context.Context, pipelineID, traitType string) (*types.TraitEvaluation, error)
}

// RunStore keeps run state with compare-and-swap.
type RunStore interface {
	// PutRunState stores run as given, filling zero CreatedAt/UpdatedAt from the clock.
	PutRunState(ctx context.Context, run types.RunState) error
	// GetRunState returns the run, or (nil, nil).
	GetRunState(ctx context.Context, runID string) (*types.RunState, error)
	// ListRuns returns the pipeline's newest runs (by CreatedAt) first, at most limit.
	ListRuns(ctx context.Context, pipelineID string, limit int) ([]types.RunState, error)
	// CompareAndSwapRunState stores newState with Version expectedVersion+1 and a fresh
	// UpdatedAt if the stored Version equals expectedVersion. It returns (false, nil)
	// on a version mismatch or a missing run.
	CompareAndSwapRunState(ctx context.Context, runID string, expectedVersion int, newState types.RunState) (bool, error)
}

// EventStore keeps each pipeline's append-only event log.
type EventStore interface {
	// AppendEvent appends ev, filling a zero Timestamp from the clock.
	AppendEvent(ctx context.Context, ev types.Event) error
	// ListEvents returns the most recent limit events, oldest first.
	ListEvents(ctx context.Context, pipelineID string, limit int) ([]types.Event, error)
	// ReadEventsSince returns at most count events strictly after the cursor sinceID
	// (an EventRecord.StreamID; "" = from the oldest event retained), oldest first.
	// A cursor after which an event was dropped by retention is expired: the call
	// returns no events and an error wrapping ErrCursorExpired, never the events
	// after the gap as if nothing were missing. A reader that accepts the loss goes
	// on from "". The cursor of the newest event, or of a dropped event after which
	// nothing else was dropped, is not expired.
	ReadEventsSince(ctx context.Context, pipelineID, sinceID string, count int64) ([]types.EventRecord, error)
}

// RunLogStore keeps one run log entry per (pipeline, date, schedule).
type RunLogStore interface {
	// PutRunLog upserts the entry; an empty ScheduleID is DefaultScheduleID.
	PutRunLog(ctx context.Context, entry types.RunLogEntry) error
	// GetRunLog returns the entry, or (nil, nil); an empty scheduleID is DefaultScheduleID.
	GetRunLog(ctx context.Context, pipelineID, date, scheduleID string) (*types.RunLogEntry, error)
	// ListRunLogs returns the pipeline's entries newest Date first, at most limit.
	ListRunLogs(ctx context.Context, pipelineID string, limit int) ([]types.RunLogEntry, error)
}

// RerunStore keeps rerun requests.
type RerunStore interface {
	// PutRerun upserts the record by RerunID.
	PutRerun(ctx context.Context, rerun types.RerunRecord) error
	// GetRerun returns the record, or (nil, nil).
	GetRerun(ctx context.Context, rerunID string) (*types.RerunRecord, error)
	// ListReruns returns the pipeline's reruns newest RequestedAt first, at most limit.
	ListReruns(ctx context.Context, pipelineID string, limit int) ([]types.RerunRecord, error)
	// ListAllReruns returns reruns of every pipeline newest RequestedAt first, at most limit.
	ListAllReruns(ctx context.Context, limit int) ([]types.RerunRecord, error)
}

// CascadeStore writes cascade markers.
type CascadeStore interface {
	// WriteCascadeMarker upserts the marker of (pipelineID, scheduleID, date), setting
	// Source and WrittenAt; an empty scheduleID is DefaultScheduleID.
	WriteCascadeMarker(ctx context.Context, pipelineID, scheduleID, date, source string) error
}

// LateArrivalStore keeps late-arrival records.
type LateArrivalStore interface {
	// PutLateArrival appends the record; a zero DetectedAt is filled from the clock.
	PutLateArrival(ctx context.Context, la types.LateArrival) error
	// ListLateArrivals returns the records of (pipelineID, date, scheduleID) oldest
	// DetectedAt first; an empty scheduleID is DefaultScheduleID.
	ListLateArrivals(ctx context.Context, pipelineID, date, scheduleID string) ([]types.LateArrival, error)
}

// ReplayStore keeps replay requests.
type ReplayStore interface {
	// PutReplay upserts the request by (PipelineID, Date, ScheduleID).
	PutReplay(ctx context.Context, req types.ReplayRequest) error
	// GetReplay returns the request, or (nil, nil).
	GetReplay(ctx context.Context, pipelineID, date, scheduleID string) (*types.ReplayRequest, error)
	// ListReplays returns requests of every pipeline newest CreatedAt first, at most limit.
	ListReplays(ctx context.Context, limit int) ([]types.ReplayRequest, error)
}

// Locker is a non-reentrant mutual-exclusion lock with a TTL, owned by a provider
// instance.
type Locker interface {
	// AcquireLock takes key for ttl (0: until released) if it is free or expired,
	// returning (true, nil); a held key is (false, nil).
	AcquireLock(ctx context.Context, key string, ttl time.Duration) (bool, error)
	// ReleaseLock frees key if this instance holds it; otherwise it changes nothing
	// and returns an error wrapping ErrLockNotHeld.
	ReleaseLock(ctx context.Context, key string) error
}

// Leaser is an optional interface for locks with fencing tokens.
type Leaser interface {
	// AcquireLease takes key for ttl (> 0) and returns the lease, or an error wrapping
	// ErrLockHeld while another lease of key is live.
	AcquireLease(ctx context.Context, key string, ttl time.Duration) (*types.Lease, error)
	// RenewLease extends the current lease to now+ttl and returns it with the new
	// ExpiresAt; after expiry or takeover it returns an error wrapping ErrLockNotHeld.
	RenewLease(ctx context.Context, lease types.Lease, ttl time.Duration) (*types.Lease, error)
	// ReleaseLease frees the lease if it is current; otherwise it changes nothing and
	// returns an error wrapping ErrLockNotHeld.
	ReleaseLease(ctx context.Context, lease types.Lease) error
}

// CascadeReader is an optional interface for reading cascade markers.
type CascadeReader interface {
	// ListCascadeMarkers returns the pipeline's markers newest WrittenAt first, at most limit.
	ListCascadeMarkers(ctx context.Context, pipelineID string, limit int) ([]types.CascadeMarker, error)
}

// RunCreator is an optional interface for creating a run exactly once.
// PutRunState overwrites a run, version included; CreateRunState is the call for a
// worker that must not clobber a run another worker created.
type RunCreator interface {
	// CreateRunState stores run (run.Version must be 0; zero CreatedAt and UpdatedAt
	// are filled from the clock) only if no run with its RunID exists, atomically
	// with its place in ListRuns. created is true for exactly one of any number of
	// concurrent calls, also when the client library retried a call whose reply was
	// lost; the others return (false, nil) and change nothing.
	CreateRunState(ctx context.Context, run types.RunState) (created bool, err error)
}

// EventFollower is an optional interface for following a pipeline's event log as
// it is written.
type EventFollower interface {
	// FollowEvents yields every event of the pipeline strictly after cursor (an
	// EventRecord.StreamID; "" is the oldest event retained) in commit order, then
	// blocks and yields each new event as it is committed. Resuming from the last
	// StreamID yielded loses and repeats nothing. A cursor after which retention
	// dropped an event, given or reached while following (a follower that fell
	// behind a log trimmed by count), yields an error wrapping ErrCursorExpired,
	// as ReadEventsSince returns it, never a silent gap. The sequence ends after
	// yielding one error: ctx's error when ctx ends, an error wrapping
	// ErrInvalidArgument for a bad pipeline ID or cursor, ErrCursorExpired, or a
	// backend error; the caller resumes from its last cursor (from "" after
	// ErrCursorExpired, if it accepts the loss). Breaking out of the loop releases
	// what the follower holds.
	FollowEvents(ctx context.Context, pipelineID, cursor string) iter.Seq2[types.EventRecord, error]
}

// MarkerWatcher is an optional interface for watching the cascade markers of every
// pipeline as they are written: the trigger of a stream-router.
type MarkerWatcher interface {
	// WatchCascadeMarkers yields every marker write strictly after cursor (a
	// CascadeMarkerRecord.Cursor; "" is the oldest write the backend retains), then
	// blocks and yields new writes. Delivery is at least once: a resumed watch may
	// yield writes again, so consumers must be idempotent; writing the same marker
	// again is a new write (with a new WrittenAt) and is delivered again. A cursor
	// older than what the backend retains yields an error wrapping
	// ErrCursorExpired, never a silent gap. The sequence ends after yielding one
	// error, like EventFollower's.
	WatchCascadeMarkers(ctx context.Context, cursor string) iter.Seq2[types.CascadeMarkerRecord, error]
}
