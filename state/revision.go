package state

import (
	"context"
	"time"
)

// Revision is a value as a RevisionStore holds it, read with strong consistency.
type Revision[V any] struct {
	// Value is the value (the monoid's identity when not Found).
	Value V
	// Found is false for a missing or expired key.
	Found bool
	// Rev orders the writes of the key: every write that changes the value or
	// its expiry makes it larger. 0 for a key never written (or deleted by the
	// backend after it expired, when it starts again).
	Rev int64
	// Expires is the value's expiry, the zero time for none.
	Expires time.Time
}

// RevisionStore is an optional interface of a store that can be the source of
// truth under a shared cache (package state/tiered): its reads tell which of
// two values of a key is newer.
type RevisionStore[V any] interface {
	Store[V]
	// GetRevisions returns one Revision per key, in the order of ks (duplicates
	// allowed), read with strong consistency.
	GetRevisions(ctx context.Context, ks []Key) ([]Revision[V], error)
}
