package state

import (
	"context"
	"time"

	"github.com/pipestate/pipestate"
)

// Key names one value in a store: an entity and, for windowed values, a bucket.
type Key struct {
	Entity string
	Bucket int64 // 0 = not windowed
}

// Store keeps values of type V that callers merge into with a monoid.
type Store[V any] interface {
	// Get returns the value of k and whether it exists (and has not expired).
	Get(ctx context.Context, k Key) (V, bool, error)
	// GetMany returns one value and one found flag per key, in the order of ks;
	// duplicate keys are allowed.
	GetMany(ctx context.Context, ks []Key) ([]V, []bool, error)
	// MergeUpdate combines delta into the value of k (starting from the monoid's
	// identity when k is missing or expired) and sets its expiry to now+ttl
	// (ttl == 0: no expiry).
	MergeUpdate(ctx context.Context, k Key, delta V, ttl time.Duration) error
	// Close releases what the store owns; later calls return ErrClosed.
	Close() error
}

// OnceStore is an optional interface for stores that apply a delta exactly once per
// event ID: claiming the ID and merging happen atomically.
type OnceStore[V any] interface {
	Store[V]
	// MergeUpdateOnce applies delta to k unless eventID was applied to k before;
	// applied reports whether it was applied now. The claim is per (eventID, k): one
	// event may update several keys of a store, each exactly once.
	MergeUpdateOnce(ctx context.Context, eventID string, k Key, delta V, ttl time.Duration) (applied bool, err error)
}

// Deduper remembers event IDs.
type Deduper interface {
	// MarkSeen claims eventID; firstSeen is true for exactly one caller per ID
	// (until the claim expires or is released).
	MarkSeen(ctx context.Context, eventID string) (firstSeen bool, err error)
	// Release gives up a claim so the event can be processed again; releasing an
	// unclaimed ID is not an error. It names the ID, not the claim: a client's
	// retry of a Release whose first attempt was applied and answered by a
	// lost reply also removes a claim that another caller's MarkSeen made in
	// between, and a third caller is first as well: after a Release under
	// network faults, an event may be processed twice.
	Release(ctx context.Context, eventID string) error
	// Close releases what the deduper owns; later calls return ErrClosed.
	Close() error
}

// Sentinel errors: the library-wide values of package pipestate, re-exported so
// that a store needs only this package; backends wrap them together with any cause.
var (
	// ErrInvalidArgument: an argument or option broke the contract; nothing was
	// written.
	ErrInvalidArgument = pipestate.ErrInvalidArgument
	// ErrContention: a compare-and-swap merge lost the race more often than its
	// retry budget (MaxRetries) allows; nothing was written.
	ErrContention = pipestate.ErrContention
	// ErrClosed: the store was closed.
	ErrClosed = pipestate.ErrClosed
	// ErrCorrupt: a stored value does not decode as the store's type (a Redis
	// key of an int64 store holding "abc" written by hand, a DynamoDB item
	// whose v attribute has the wrong type). Get and GetMany return an error
	// wrapping it that names the key; see "Corrupt values" in the package doc.
	ErrCorrupt = pipestate.ErrCorrupt
	// ErrUnavailable: a circuit breaker (package breaker) refused a request
	// of the call without sending it, as the backend kept failing.
	ErrUnavailable = pipestate.ErrUnavailable
	// ErrFenced: a merge through a fenced view (package fence) was refused: a
	// newer lease of its lease key has merged into the key. Nothing was written.
	// It wraps pipestate.ErrLockNotHeld.
	ErrFenced = pipestate.ErrFenced
)
