package provider

import (
	"fmt"

	"github.com/pipestate/pipestate"
	"github.com/pipestate/pipestate/internal/lifecycle"
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
	// ErrCursorExpired: a record after the cursor was dropped by retention, so
	// records after it may be lost (ReadEventsSince, FollowEvents,
	// WatchCascadeMarkers); start again from "" (the oldest record retained).
	ErrCursorExpired = pipestate.ErrCursorExpired
	// ErrReadOnly: a write on a provider opened read-only (a backend's
	// WithReadOnly); nothing was written.
	ErrReadOnly = pipestate.ErrReadOnly
	// ErrCorrupt: a stored record does not decode. A Get* of it returns a
	// *CorruptError (which wraps ErrCorrupt) naming it; List* calls and iterators
	// skip it and report it (see CorruptError and "Corrupt records" in the
	// package doc).
	ErrCorrupt = pipestate.ErrCorrupt
	// ErrUnavailable: a circuit breaker (package breaker) refused a request
	// of the call without sending it, as the backend kept failing.
	ErrUnavailable = pipestate.ErrUnavailable
	// ErrFenced: a write through a fenced view (package fence) was refused: a
	// newer lease of its lease key has written the record. Nothing was written.
	// It wraps ErrLockNotHeld.
	ErrFenced = pipestate.ErrFenced
)

// ReadOnly returns the error of a write refused by a read-only provider: op names
// the write, and the error wraps ErrReadOnly.
func ReadOnly(backend, op string) error { return lifecycle.ReadOnly(backend, op) }

// Invalid wraps cause (usually a types validation error) in ErrInvalidArgument.
func Invalid(cause error) error {
	return fmt.Errorf("%w: %w", ErrInvalidArgument, cause)
}

// Invalidf returns an error wrapping ErrInvalidArgument with a formatted message.
func Invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidArgument, fmt.Sprintf(format, args...))
}
