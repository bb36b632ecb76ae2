package provider

import (
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/pipestate/pipestate/types"
)

// The Check* functions are the argument checks shared by every backend, built in or
// third-party. Each returns nil or an error wrapping ErrInvalidArgument.

// CheckID checks an identifier with types.ValidateID.
func CheckID(what, id string) error {
	if err := types.ValidateID(what, id); err != nil {
		return Invalid(err)
	}
	return nil
}

// CheckIDs checks pairs of (what, id) in order and returns the first error.
func CheckIDs(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if err := CheckID(pairs[i], pairs[i+1]); err != nil {
			return err
		}
	}
	return nil
}

// CheckSchedule checks a schedule ID that may be empty and returns it with the
// default applied.
func CheckSchedule(scheduleID string) (string, error) {
	s := types.ScheduleOrDefault(scheduleID)
	return s, CheckID("schedule ID", s)
}

// CheckLockKey checks a lock or lease key with types.ValidateLockKey.
func CheckLockKey(key string) error {
	if err := types.ValidateLockKey(key); err != nil {
		return Invalid(err)
	}
	return nil
}

// MaxTTL is the largest ttl any call accepts: 100 years of 365 days. Every backend
// can add it to any clock reading of this era without overflow, in nanoseconds,
// milliseconds (Redis PX) or epoch seconds (DynamoDB), so a ttl never wraps into
// "already expired" or "no expiry".
const MaxTTL = 100 * 365 * 24 * time.Hour

// CheckTTL rejects a negative ttl and one above MaxTTL. Zero means no expiry.
func CheckTTL(ttl time.Duration) error {
	if ttl < 0 || ttl > MaxTTL {
		return Invalidf("ttl %v is outside [0, %v]", ttl, MaxTTL)
	}
	return nil
}

// CheckLeaseTTL rejects a ttl that is not positive (a lease always expires) and one
// above MaxTTL.
func CheckLeaseTTL(ttl time.Duration) error {
	if ttl <= 0 || ttl > MaxTTL {
		return Invalidf("lease ttl %v is outside (0, %v]", ttl, MaxTTL)
	}
	return nil
}

// CheckCAS is the argument check of CompareAndSwapRunState, before any I/O: runID
// is a valid ID equal to newState.RunID, newState is valid, and expectedVersion is
// in [0, types.MaxRunVersion) so that the swapped-in version expectedVersion+1 is
// still a valid Version.
func CheckCAS(runID string, expectedVersion int, newState types.RunState) error {
	if err := CheckID("run ID", runID); err != nil {
		return err
	}
	if err := Validate(newState); err != nil {
		return err
	}
	if newState.RunID != runID {
		return Invalidf("new state's run ID %q differs from %q", newState.RunID, runID)
	}
	if expectedVersion < 0 || int64(expectedVersion) >= types.MaxRunVersion {
		return Invalidf("expected version %d is outside [0, %d)", expectedVersion, int64(types.MaxRunVersion))
	}
	return nil
}

// CheckLimit rejects a limit below 1.
func CheckLimit(limit int) error {
	if limit < 1 {
		return Invalidf("limit %d is below 1", limit)
	}
	return nil
}

// CheckCount rejects a count below 1.
func CheckCount(count int64) error {
	if count < 1 {
		return Invalidf("count %d is below 1", count)
	}
	return nil
}

// Validate runs v.Validate and wraps its error in ErrInvalidArgument. It is generic
// so that a record passed by value is not copied to the heap on every call.
func Validate[V interface{ Validate() error }](v V) error {
	if err := v.Validate(); err != nil {
		return Invalid(err)
	}
	return nil
}

// CheckSlot checks the (pipeline, date, schedule) key of a run log, replay or late
// arrival and returns the schedule with the default applied.
func CheckSlot(pipelineID, date, scheduleID string) (string, error) {
	if err := CheckIDs("pipeline ID", pipelineID, "date", date); err != nil {
		return "", err
	}
	return CheckSchedule(scheduleID)
}

// ParseSeqCursor parses the event cursor of a backend whose cursors are per-pipeline
// sequence numbers (memory, SQL): "" reads as 0 (the caller tells it from "0" by
// the string: "" is the oldest event retained, never expired, while "0" is the
// position before the first event), anything else a canonical decimal — digits
// only, no sign, no leading zeros — so each position has one spelling.
// FormatSeqCursor is its inverse.
func ParseSeqCursor(cursor string) (int64, error) {
	if cursor == "" {
		return 0, nil
	}
	if cursor[0] == '+' || cursor[0] == '-' || (len(cursor) > 1 && cursor[0] == '0') {
		return 0, Invalidf("malformed event cursor %q", cursor)
	}
	n, err := strconv.ParseInt(cursor, 10, 64)
	if err != nil {
		return 0, Invalidf("malformed event cursor %q", cursor)
	}
	return n, nil
}

// FormatSeqCursor is the cursor of sequence number seq.
func FormatSeqCursor(seq int64) string { return strconv.FormatInt(seq, 10) }

// The Prepare* functions are the argument check and the defaults of one write,
// before any I/O: each returns the value the backend stores, or an error wrapping
// ErrInvalidArgument. now is the backend's clock.

// PrepareRunState is PutRunState's: run is valid; a zero CreatedAt or UpdatedAt is
// now.
func PrepareRunState(run types.RunState, now time.Time) (types.RunState, error) {
	if err := Validate(run); err != nil {
		return run, err
	}
	if run.CreatedAt.IsZero() {
		run.CreatedAt = now
	}
	if run.UpdatedAt.IsZero() {
		run.UpdatedAt = now
	}
	return run, nil
}

// PrepareEvent is AppendEvent's: ev is valid; a zero Timestamp is now.
func PrepareEvent(ev types.Event, now time.Time) (types.Event, error) {
	if err := Validate(ev); err != nil {
		return ev, err
	}
	if ev.Timestamp.IsZero() {
		ev.Timestamp = now
	}
	return ev, nil
}

// PrepareTrait is PutTrait's: pipelineID and trait are valid, trait.PipelineID is
// empty or pipelineID, ttl passes CheckTTL. The result carries pipelineID and
// ExpiresAt = now+ttl (nil for ttl 0).
func PrepareTrait(pipelineID string, trait types.TraitEvaluation, ttl time.Duration, now time.Time) (types.TraitEvaluation, error) {
	if err := CheckID("pipeline ID", pipelineID); err != nil {
		return trait, err
	}
	if err := Validate(trait); err != nil {
		return trait, err
	}
	if trait.PipelineID != "" && trait.PipelineID != pipelineID {
		return trait, Invalidf("trait pipeline ID %q differs from %q", trait.PipelineID, pipelineID)
	}
	if err := CheckTTL(ttl); err != nil {
		return trait, err
	}
	trait.PipelineID = pipelineID
	trait.ExpiresAt = nil
	if ttl > 0 {
		exp := now.Add(ttl)
		trait.ExpiresAt = &exp
	}
	return trait, nil
}

// PrepareRunLog is PutRunLog's: entry is valid; an empty ScheduleID is the default.
func PrepareRunLog(entry types.RunLogEntry) (types.RunLogEntry, error) {
	if err := Validate(entry); err != nil {
		return entry, err
	}
	entry.ScheduleID = types.ScheduleOrDefault(entry.ScheduleID)
	return entry, nil
}

// PrepareRerun is PutRerun's: rerun is valid; a zero RequestedAt is now.
func PrepareRerun(rerun types.RerunRecord, now time.Time) (types.RerunRecord, error) {
	if err := Validate(rerun); err != nil {
		return rerun, err
	}
	if rerun.RequestedAt.IsZero() {
		rerun.RequestedAt = now
	}
	return rerun, nil
}

// PrepareReplay is PutReplay's: req is valid; an empty ScheduleID is the default and
// a zero CreatedAt is now.
func PrepareReplay(req types.ReplayRequest, now time.Time) (types.ReplayRequest, error) {
	if err := Validate(req); err != nil {
		return req, err
	}
	req.ScheduleID = types.ScheduleOrDefault(req.ScheduleID)
	if req.CreatedAt.IsZero() {
		req.CreatedAt = now
	}
	return req, nil
}

// PrepareLateArrival is PutLateArrival's: la is valid; an empty ScheduleID is the
// default and a zero DetectedAt is now.
func PrepareLateArrival(la types.LateArrival, now time.Time) (types.LateArrival, error) {
	if err := Validate(la); err != nil {
		return la, err
	}
	la.ScheduleID = types.ScheduleOrDefault(la.ScheduleID)
	if la.DetectedAt.IsZero() {
		la.DetectedAt = now
	}
	return la, nil
}

// PrepareCascadeMarker is WriteCascadeMarker's: the marker it stores, written now
// (WrittenAt), with the default schedule for an empty scheduleID.
func PrepareCascadeMarker(pipelineID, scheduleID, date, source string, now time.Time) (types.CascadeMarker, error) {
	m := types.CascadeMarker{PipelineID: pipelineID, ScheduleID: types.ScheduleOrDefault(scheduleID), Date: date, Source: source, WrittenAt: now}
	return m, Validate(m)
}

// PrepareCreateRun is CreateRunState's: PrepareRunState's checks and defaults, and
// run.Version is 0.
func PrepareCreateRun(run types.RunState, now time.Time) (types.RunState, error) {
	if run.Version != 0 {
		return run, Invalidf("a created run starts at version 0, not %d", run.Version)
	}
	return PrepareRunState(run, now)
}

// DefaultReadinessTTL is how long PutReadiness keeps a result unless the backend's
// readiness option says otherwise.
const DefaultReadinessTTL = 5 * time.Minute

// The Check* functions below are the rules of the options every backend has; a
// backend's With* option calls the one for its setting.

// CheckOwner checks a lock owner identity: non-empty, without control characters
// (owners are compared exactly and some backends delimit them with a newline).
func CheckOwner(owner string) error {
	if owner == "" || strings.ContainsFunc(owner, unicode.IsControl) {
		return Invalidf("owner %q must be non-empty without control characters", owner)
	}
	return nil
}

// CheckClock rejects a nil clock.
func CheckClock(now func() time.Time) error {
	if now == nil {
		return Invalidf("clock is nil")
	}
	return nil
}

// CheckReadinessTTL checks how long readiness results are kept: at least a
// millisecond (the finest unit every backend keeps) and at most MaxTTL.
func CheckReadinessTTL(ttl time.Duration) error {
	if ttl < time.Millisecond || ttl > MaxTTL {
		return Invalidf("readiness ttl %v is outside [1ms, %v]", ttl, MaxTTL)
	}
	return nil
}
