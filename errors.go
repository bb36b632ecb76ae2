// Package pipestate defines the sentinel errors of the whole library. Every
// package — provider, state, their backends, and third-party backends run through
// providertest or statetest — wraps these values, so a caller handles "bad input",
// "closed", "too large", "contention" or "corrupt" once, whichever package returned the
// error. provider and state re-export them under the same names (the same values:
// errors.Is(err, provider.ErrClosed) and errors.Is(err, pipestate.ErrClosed) agree).
//
// Backends wrap a sentinel together with the cause (fmt.Errorf("%w: %w")), so
// errors.As to the client library's error type (go-redis, the AWS SDK's smithy
// errors) keeps working.
//
// The library itself lives in the subpackages; see the README for a tour.
package pipestate

import (
	"errors"
	"fmt"
)

// Sentinel errors.
var (
	// ErrInvalidArgument: an argument or option broke the contract; nothing was
	// written.
	ErrInvalidArgument = errors.New("pipestate: invalid argument")
	// ErrTooLarge: a value is larger than the backend can store; nothing was
	// written.
	ErrTooLarge = errors.New("pipestate: value too large")
	// ErrClosed: the provider or store was stopped or closed.
	ErrClosed = errors.New("pipestate: closed")
	// ErrContention: a call lost to concurrent writers, or was throttled, more
	// times than its retry budget allows. It is safe to retry; unless the call's
	// doc says otherwise (batch writes), nothing was written.
	ErrContention = errors.New("pipestate: too much contention")
	// ErrLockHeld: another holder has the lock or lease.
	ErrLockHeld = errors.New("pipestate: lock held")
	// ErrLockNotHeld: the caller does not hold the lock or lease.
	ErrLockNotHeld = errors.New("pipestate: lock not held")
	// ErrCursorExpired: a record after the cursor was dropped by the backend's
	// retention, so records after it may be lost; start again from a fresh
	// cursor ("" reads from the oldest record retained).
	ErrCursorExpired = errors.New("pipestate: cursor expired")
	// ErrReadOnly: a write was refused because the provider was opened read-only
	// (WithReadOnly of a backend); nothing was sent and nothing was written. It is
	// not ErrInvalidArgument, which blames the call's arguments: the same call
	// succeeds on a provider that may write, so a caller can tell a
	// misconfigured instance from bad input (and the CLI does not print usage).
	ErrReadOnly = errors.New("pipestate: read-only")
	// ErrCorrupt: a record already stored does not decode (a flipped byte, a
	// value written by a newer version or by hand). A Get of it returns an error
	// wrapping ErrCorrupt that names the record; a List or an iterator skips it,
	// returns the others and reports it. ErrInvalidArgument stays the error of
	// bad input: ErrCorrupt is about what is stored, never about the call.
	ErrCorrupt = errors.New("pipestate: corrupt record")
	// ErrUnavailable: the backend kept failing (throttling, unreachable,
	// refusing service) and a circuit breaker (package breaker) refused a
	// request of the call without sending it. It is safe to retry after the
	// breaker's open period. A write is known not to have happened only when
	// its first request was refused; after a lost reply, the breaker may refuse
	// the call's retry of a write the backend did apply, as any error of that
	// retry would leave it unknown.
	ErrUnavailable = errors.New("pipestate: backend unavailable")
	// ErrFenced: a fenced write (package fence) was refused because a newer
	// lease of its lease key has already written the record; nothing was
	// written. It wraps ErrLockNotHeld, so a holder that stops on losing its
	// lease stops on this too; errors.Is(err, ErrFenced) tells the two apart.
	// Unlike ErrContention it is never worth retrying with the same lease.
	ErrFenced = fmt.Errorf("pipestate: fenced by a newer lease (%w)", ErrLockNotHeld)
)
