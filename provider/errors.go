package provider

import (
	"fmt"
	"time"

	"github.com/pipestate/pipestate"
	"github.com/pipestate/pipestate/types"
)

// Sentinel errors: the library-wide values of package pipestate, re-exported so
// that a backend needs only this package. Backends wrap them, together with any
// cause, so that both errors.Is(err, ErrX) and errors.As to the cause's type work.
var (
	// ErrInvalidArgument: an argument broke the contract; nothing was written.
	ErrInvalidArgument = pipestate.ErrInvalidArgument
	// ErrTooLarge: a value is larger than the backend can store; nothing was written.
	ErrTooLarge = pipestate.ErrTooLarge
	// ErrClosed: the provider was stopped.
	ErrClosed = pipestate.ErrClosed
	// ErrContention: a write lost to concurrent writers more often than its retry
	// budget allows; nothing was written.
	ErrContention = pipestate.ErrContention
	// ErrLockHeld: another holder has the lock or lease.
	ErrLockHeld = pipestate.ErrLockHeld
	// ErrLockNotHeld: the caller does not hold the lock or lease.
	ErrLockNotHeld = pipestate.ErrLockNotHeld
)

// Invalid wraps cause (usually a types validation error) in ErrInvalidArgument.
func Invalid(cause error) error {
	return fmt.Errorf("%w: %w", ErrInvalidArgument, cause)
}

// Invalidf returns an error wrapping ErrInvalidArgument with a formatted message.
func Invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidArgument, fmt.Sprintf(format, args...))
}

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

// Validate runs v.Validate and wraps its error in ErrInvalidArgument.
func Validate(v interface{ Validate() error }) error {
	if err := v.Validate(); err != nil {
		return Invalid(err)
	}
	return nil
}
