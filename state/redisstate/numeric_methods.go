package redisstate

import (
	"context"
	"time"

	"github.com/pipestate/pipestate/state"
)

// The exported methods of the numeric stores: thin wrappers over numeric[V], written
// out so that each type documents its own value type.

// Get returns the value of k and whether it exists; a missing or expired key returns 0
// and false. One round trip (GET).
func (s *Int64SumStore) Get(ctx context.Context, k state.Key) (int64, bool, error) {
	return s.n.get(ctx, k)
}

// GetMany returns one value and one found flag per key, in the order of ks (duplicates
// allowed; missing keys hold 0). MGETs of up to 1,000 keys (one per hash
// slot on a Redis Cluster) in one pipeline: one round trip, or one per node, sent
// concurrently, on a cluster.
func (s *Int64SumStore) GetMany(ctx context.Context, ks []state.Key) ([]int64, []bool, error) {
	return s.n.getMany(ctx, ks)
}

// MergeUpdate adds delta to the value of k (INCRBY) atomically and sets the expiry of
// k to now+ttl (ttl == 0 clears any expiry). One round trip (one Lua script). Bad
// input returns an error wrapping state.ErrInvalidArgument and writes nothing; after
// Close, an error wrapping state.ErrClosed.
func (s *Int64SumStore) MergeUpdate(ctx context.Context, k state.Key, delta int64, ttl time.Duration) error {
	_, err := s.n.merge(ctx, false, "", k, delta, ttl)
	return err
}

// MergeUpdateOnce is MergeUpdate applied at most once per (event ID, key): one Lua
// script checks the claim of eventID on k, merges, and writes the claim (which lives
// for the store's dedup TTL), so a crash can neither lose nor double the delta.
// applied is false, and nothing is written, when the event was applied to k before by
// a Int64SumStore with this prefix. One round trip.
func (s *Int64SumStore) MergeUpdateOnce(ctx context.Context, eventID string, k state.Key, delta int64, ttl time.Duration) (applied bool, err error) {
	return s.n.merge(ctx, true, eventID, k, delta, ttl)
}

// Get returns the value of k and whether it exists; a missing or expired key returns 0
// and false. One round trip (GET).
func (s *Float64SumStore) Get(ctx context.Context, k state.Key) (float64, bool, error) {
	return s.n.get(ctx, k)
}

// GetMany returns one value and one found flag per key, in the order of ks (duplicates
// allowed; missing keys hold 0). MGETs of up to 1,000 keys (one per hash
// slot on a Redis Cluster) in one pipeline: one round trip, or one per node, sent
// concurrently, on a cluster.
func (s *Float64SumStore) GetMany(ctx context.Context, ks []state.Key) ([]float64, []bool, error) {
	return s.n.getMany(ctx, ks)
}

// MergeUpdate adds delta to the value of k (INCRBYFLOAT) atomically and sets the
// expiry of k to now+ttl (ttl == 0 clears any expiry). One round trip (one Lua
// script). Bad input returns an error wrapping state.ErrInvalidArgument and writes
// nothing; after Close, an error wrapping state.ErrClosed.
func (s *Float64SumStore) MergeUpdate(ctx context.Context, k state.Key, delta float64, ttl time.Duration) error {
	_, err := s.n.merge(ctx, false, "", k, delta, ttl)
	return err
}

// MergeUpdateOnce is MergeUpdate applied at most once per (event ID, key): one Lua
// script checks the claim of eventID on k, merges, and writes the claim (which lives
// for the store's dedup TTL), so a crash can neither lose nor double the delta.
// applied is false, and nothing is written, when the event was applied to k before by
// a Float64SumStore with this prefix. One round trip.
func (s *Float64SumStore) MergeUpdateOnce(ctx context.Context, eventID string, k state.Key, delta float64, ttl time.Duration) (applied bool, err error) {
	return s.n.merge(ctx, true, eventID, k, delta, ttl)
}

// Get returns the value of k and whether it exists; a missing or expired key returns
// math.MinInt64 and false. One round trip (GET).
func (s *Int64MaxStore) Get(ctx context.Context, k state.Key) (int64, bool, error) {
	return s.n.get(ctx, k)
}

// GetMany returns one value and one found flag per key, in the order of ks (duplicates
// allowed; missing keys hold math.MinInt64). MGETs of up to 1,000 keys (one per
// hash slot on a Redis Cluster) in one pipeline: one round trip, or one per node,
// sent concurrently, on a cluster.
func (s *Int64MaxStore) GetMany(ctx context.Context, ks []state.Key) ([]int64, []bool, error) {
	return s.n.getMany(ctx, ks)
}

// MergeUpdate keeps the larger of the value of k and delta atomically and sets the
// expiry of k to now+ttl (ttl == 0 clears any expiry). One round trip (one Lua
// script). Bad input returns an error wrapping state.ErrInvalidArgument and writes
// nothing; after Close, an error wrapping state.ErrClosed.
func (s *Int64MaxStore) MergeUpdate(ctx context.Context, k state.Key, delta int64, ttl time.Duration) error {
	_, err := s.n.merge(ctx, false, "", k, delta, ttl)
	return err
}

// MergeUpdateOnce is MergeUpdate applied at most once per (event ID, key): one Lua
// script checks the claim of eventID on k, merges, and writes the claim (which lives
// for the store's dedup TTL), so a crash can neither lose nor double the delta.
// applied is false, and nothing is written, when the event was applied to k before by
// a Int64MaxStore with this prefix. One round trip.
func (s *Int64MaxStore) MergeUpdateOnce(ctx context.Context, eventID string, k state.Key, delta int64, ttl time.Duration) (applied bool, err error) {
	return s.n.merge(ctx, true, eventID, k, delta, ttl)
}

// Close marks the store closed: later calls return an error wrapping state.ErrClosed.
// It does not close the client, which the caller owns. Close is idempotent.
func (s *Int64SumStore) Close() error { return s.n.Close() }

// Close marks the store closed: later calls return an error wrapping state.ErrClosed.
// It does not close the client, which the caller owns. Close is idempotent.
func (s *Float64SumStore) Close() error { return s.n.Close() }

// Close marks the store closed: later calls return an error wrapping state.ErrClosed.
// It does not close the client, which the caller owns. Close is idempotent.
func (s *Int64MaxStore) Close() error { return s.n.Close() }
