package ddbstate

import (
	"context"
	"time"

	"github.com/pipestate/pipestate/state"
)

// The exported methods of the numeric stores: thin wrappers over numeric[V], written
// out so that each type documents its own value type.

// Get returns the value of k and whether it exists; a missing or expired item returns
// 0 and false. One strongly consistent GetItem.
func (s *Int64SumStore) Get(ctx context.Context, k state.Key) (int64, bool, error) {
	return s.n.get(ctx, k)
}

// GetMany returns one value and one found flag per key, in the order of ks (duplicates
// allowed; missing or expired keys hold 0): ceil(d/100) concurrent, strongly
// consistent BatchGetItem calls for d distinct keys, plus retries of unprocessed keys.
func (s *Int64SumStore) GetMany(ctx context.Context, ks []state.Key) ([]int64, []bool, error) {
	return s.n.getMany(ctx, ks)
}

// GetRevisions returns one state.Revision per key, in the order of ks: GetMany's
// requests, reading each item's revision and expiry too. It makes the store a
// state.RevisionStore, the source of truth under a state/tiered cache.
func (s *Int64SumStore) GetRevisions(ctx context.Context, ks []state.Key) ([]state.Revision[int64], error) {
	return readRevisions(ctx, &s.n.base, ks, s.n.decode, s.n.m.Identity())
}

// MergeUpdate adds delta to the value of k and sets the expiry of k to now+ttl (ttl ==
// 0 clears any expiry), atomically. One UpdateItem (ADD); two when the item has
// expired but not yet been deleted (the ADD is refused and a SET starts over from the
// delta). Bad input returns an error wrapping state.ErrInvalidArgument and writes
// nothing; after Close, an error wrapping state.ErrClosed.
func (s *Int64SumStore) MergeUpdate(ctx context.Context, k state.Key, delta int64, ttl time.Duration) error {
	_, err := s.n.merge(ctx, false, "", k, delta, ttl)
	return err
}

// MergeUpdateOnce is MergeUpdate applied at most once per event ID: one
// TransactWriteItems puts the event's claim in the dedup table (WithDedupTable;
// conditioned on no live claim) and applies the update, so a crash can neither lose
// nor double the delta. Claims are per (event ID, key) and live for the store's dedup
// TTL. applied is false, and nothing is written, when the event was applied to k
// before. One
// transaction, or two when the first update's condition fails as for MergeUpdate;
// conflicting concurrent transactions are retried with backoff.
func (s *Int64SumStore) MergeUpdateOnce(ctx context.Context, eventID string, k state.Key, delta int64, ttl time.Duration) (applied bool, err error) {
	return s.n.merge(ctx, true, eventID, k, delta, ttl)
}

// Close marks the store closed: later calls return an error wrapping state.ErrClosed.
// It does not close the client, which the caller owns. Close is idempotent.
func (s *Int64SumStore) Close() error { return s.n.Close() }

// Get returns the value of k and whether it exists; a missing or expired item returns
// 0 and false. One strongly consistent GetItem.
func (s *Float64SumStore) Get(ctx context.Context, k state.Key) (float64, bool, error) {
	return s.n.get(ctx, k)
}

// GetMany returns one value and one found flag per key, in the order of ks (duplicates
// allowed; missing or expired keys hold 0): ceil(d/100) concurrent, strongly
// consistent BatchGetItem calls for d distinct keys, plus retries of unprocessed keys.
func (s *Float64SumStore) GetMany(ctx context.Context, ks []state.Key) ([]float64, []bool, error) {
	return s.n.getMany(ctx, ks)
}

// GetRevisions returns one state.Revision per key, in the order of ks: GetMany's
// requests, reading each item's revision and expiry too. It makes the store a
// state.RevisionStore, the source of truth under a state/tiered cache.
func (s *Float64SumStore) GetRevisions(ctx context.Context, ks []state.Key) ([]state.Revision[float64], error) {
	return readRevisions(ctx, &s.n.base, ks, s.n.decode, s.n.m.Identity())
}

// MergeUpdate adds delta to the value of k and sets the expiry of k to now+ttl (ttl ==
// 0 clears any expiry), atomically. One UpdateItem (ADD); two when the item has
// expired but not yet been deleted (the ADD is refused and a SET starts over from the
// delta). Bad input returns an error wrapping state.ErrInvalidArgument and writes
// nothing; after Close, an error wrapping state.ErrClosed.
func (s *Float64SumStore) MergeUpdate(ctx context.Context, k state.Key, delta float64, ttl time.Duration) error {
	_, err := s.n.merge(ctx, false, "", k, delta, ttl)
	return err
}

// MergeUpdateOnce is MergeUpdate applied at most once per event ID: one
// TransactWriteItems puts the event's claim in the dedup table (WithDedupTable;
// conditioned on no live claim) and applies the update, so a crash can neither lose
// nor double the delta. Claims are per (event ID, key) and live for the store's dedup
// TTL. applied is false, and nothing is written, when the event was applied to k
// before. One
// transaction, or two when the first update's condition fails as for MergeUpdate;
// conflicting concurrent transactions are retried with backoff.
func (s *Float64SumStore) MergeUpdateOnce(ctx context.Context, eventID string, k state.Key, delta float64, ttl time.Duration) (applied bool, err error) {
	return s.n.merge(ctx, true, eventID, k, delta, ttl)
}

// Close marks the store closed: later calls return an error wrapping state.ErrClosed.
// It does not close the client, which the caller owns. Close is idempotent.
func (s *Float64SumStore) Close() error { return s.n.Close() }

// Get returns the value of k and whether it exists; a missing or expired item returns
// math.MinInt64 and false. One strongly consistent GetItem.
func (s *Int64MaxStore) Get(ctx context.Context, k state.Key) (int64, bool, error) {
	return s.n.get(ctx, k)
}

// GetMany returns one value and one found flag per key, in the order of ks (duplicates
// allowed; missing or expired keys hold math.MinInt64): ceil(d/100) concurrent,
// strongly consistent BatchGetItem calls for d distinct keys, plus retries of
// unprocessed keys.
func (s *Int64MaxStore) GetMany(ctx context.Context, ks []state.Key) ([]int64, []bool, error) {
	return s.n.getMany(ctx, ks)
}

// GetRevisions returns one state.Revision per key, in the order of ks: GetMany's
// requests, reading each item's revision and expiry too. It makes the store a
// state.RevisionStore, the source of truth under a state/tiered cache.
func (s *Int64MaxStore) GetRevisions(ctx context.Context, ks []state.Key) ([]state.Revision[int64], error) {
	return readRevisions(ctx, &s.n.base, ks, s.n.decode, s.n.m.Identity())
}

// MergeUpdate keeps the larger of the value of k and delta and sets the expiry of k to
// now+ttl (ttl == 0 clears any expiry), atomically. One UpdateItem when the value
// rises (or stays with ttl 0 and no expiry to clear); two when the stored value wins
// and the expiry must be refreshed. Bad input returns an error wrapping
// state.ErrInvalidArgument and writes nothing; after Close, an error wrapping
// state.ErrClosed.
func (s *Int64MaxStore) MergeUpdate(ctx context.Context, k state.Key, delta int64, ttl time.Duration) error {
	_, err := s.n.merge(ctx, false, "", k, delta, ttl)
	return err
}

// MergeUpdateOnce is MergeUpdate applied at most once per event ID: one
// TransactWriteItems puts the event's claim in the dedup table (WithDedupTable;
// conditioned on no live claim) and applies the update, so a crash can neither lose
// nor double the delta. Claims are per (event ID, key) and live for the store's dedup
// TTL. applied is false, and nothing is written, when the event was applied to k
// before. One
// transaction, or two when the first update's condition fails as for MergeUpdate;
// conflicting concurrent transactions are retried with backoff.
func (s *Int64MaxStore) MergeUpdateOnce(ctx context.Context, eventID string, k state.Key, delta int64, ttl time.Duration) (applied bool, err error) {
	return s.n.merge(ctx, true, eventID, k, delta, ttl)
}

// Close marks the store closed: later calls return an error wrapping state.ErrClosed.
// It does not close the client, which the caller owns. Close is idempotent.
func (s *Int64MaxStore) Close() error { return s.n.Close() }
