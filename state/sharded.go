package state

import (
	"context"
	"errors"
	"fmt"
	"github.com/pipestate/pipestate/fence"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/pipestate/pipestate/internal/lifecycle"
	"github.com/pipestate/pipestate/internal/nilcheck"
	"github.com/pipestate/pipestate/monoid"
)

// MaxShards is the most shards a Sharded store spreads a key over.
const MaxShards = 1024

// MaxShardedEntityLen is the longest entity a Sharded store accepts: room is left
// for the separator and a shard number of up to 4 digits.
const MaxShardedEntityLen = MaxEntityLen - len(ShardSeparator) - 4

// ShardSeparator joins an entity and its shard number in the sub-keys of Sharded:
// shard i of entity e is Key{Entity: e + ShardSeparator + strconv.Itoa(i)}, with
// the same bucket.
const ShardSeparator = "#shard="

var (
	_ Store[int64]     = (*Sharded[int64])(nil)
	_ OnceStore[int64] = (*Sharded[int64])(nil)
)

// Sharded spreads every key over N sub-keys of an underlying store, so that a hot
// key's writes land on N different backend keys (N Redis Cluster slots, N DynamoDB
// partitions): MergeUpdate writes to one shard chosen at random, and Get/GetMany
// read all shards of every key in one GetMany and merge them. It only accepts
// commutative monoids, because shards are merged in shard order, not write order.
//
// Sub-keys are entity + ShardSeparator + shard number (see ShardSeparator), so an
// entity may be at most MaxShardedEntityLen bytes, and other
// writers of the same store must not use entities of that shape. A key is found if
// any shard is; each shard's ttl is refreshed only by the writes that land on it,
// so with a ttl, shards expire independently: unlike an unsharded key, a merge does
// not extend the life of the rest of the value (and ttl 0 does not clear the
// expiry of other shards), so parts of a value can expire first. Use Sharded with
// ttl 0, or with windows whose buckets are read before their ttl matters.
type Sharded[V any] struct {
	store Store[V]
	m     monoid.Monoid[V]
	n     int
	life  *lifecycle.Flag
}

// NewSharded returns a Sharded view of store with shards sub-keys per key. A nil
// store or monoid, shards outside 1..MaxShards, or a monoid that does not declare
// itself commutative (monoid.IsCommutative) is an error wrapping ErrInvalidArgument.
func NewSharded[V any](store Store[V], m monoid.Monoid[V], shards int) (*Sharded[V], error) {
	switch {
	case nilcheck.IsNil(store) || nilcheck.IsNil(m):
		return nil, Invalidf("NewSharded: nil store or monoid")
	case shards < 1 || shards > MaxShards:
		return nil, Invalidf("NewSharded: %d shards, want 1..%d", shards, MaxShards)
	case !monoid.IsCommutative(m):
		return nil, Invalidf("NewSharded: the %s monoid %T is not commutative", m.Kind(), m)
	}
	return &Sharded[V]{store: store, m: m, n: shards, life: lifecycle.New("sharded")}, nil
}

// Shards returns the number of shards per key.
func (s *Sharded[V]) Shards() int { return s.n }

// ShardKey returns shard i's sub-key of k.
func ShardKey(k Key, i int) Key {
	return Key{Entity: k.Entity + ShardSeparator + strconv.Itoa(i), Bucket: k.Bucket}
}

// checkKey checks k and its longest sub-key.
func (s *Sharded[V]) checkKey(k Key) error {
	if err := CheckKey(k); err != nil {
		return err
	}
	if len(k.Entity) > MaxShardedEntityLen {
		return Invalidf("entity is %d bytes, more than %d for a sharded key", len(k.Entity), MaxShardedEntityLen)
	}
	return nil
}

// Get returns the merge of k's shards; found is true if any shard was found.
func (s *Sharded[V]) Get(ctx context.Context, k Key) (V, bool, error) {
	vs, found, err := s.GetMany(ctx, []Key{k})
	if err != nil {
		var zero V
		return zero, false, err
	}
	return vs[0], found[0], nil
}

// GetMany reads every shard of every key with one GetMany of the underlying store
// and merges each key's shards; keys with no shard found have found == false and
// the identity as value.
func (s *Sharded[V]) GetMany(ctx context.Context, ks []Key) ([]V, []bool, error) {
	if err := s.life.Enter(ctx); err != nil {
		return nil, nil, err
	}
	sub := make([]Key, 0, len(ks)*s.n)
	for i, k := range ks {
		if err := s.checkKey(k); err != nil {
			return nil, nil, fmt.Errorf("key %d: %w", i, err)
		}
		for j := range s.n {
			sub = append(sub, ShardKey(k, j))
		}
	}
	vs, found, err := s.store.GetMany(ctx, sub)
	if err != nil {
		return nil, nil, err
	}
	if len(vs) != len(sub) || len(found) != len(sub) {
		return nil, nil, fmt.Errorf("sharded: store returned %d values for %d keys", len(vs), len(sub))
	}
	out, outFound := make([]V, len(ks)), make([]bool, len(ks))
	for i := range ks {
		acc := s.m.Identity()
		for j := range s.n {
			if x := i*s.n + j; found[x] {
				if acc, err = Combine(s.m, acc, vs[x]); err != nil {
					return nil, nil, fmt.Errorf("sharded: key %d shard %d: %w", i, j, err)
				}
				outFound[i] = true
			}
		}
		out[i] = acc
	}
	return out, outFound, nil
}

// MergeUpdate merges delta into one shard of k, chosen at random, with the
// underlying store's MergeUpdate (so with its atomicity and errors). A fenced
// merge (Fenced) goes to shard 0: what a key remembers of fences must live in
// one sub-key for the rule to hold, so fenced writers do not spread.
func (s *Sharded[V]) MergeUpdate(ctx context.Context, k Key, delta V, ttl time.Duration) error {
	if err := s.life.Enter(ctx, s.checkKey(k)); err != nil {
		return err
	}
	return s.store.MergeUpdate(ctx, ShardKey(k, fencedShard(ctx, rand.IntN(s.n))), delta, ttl)
}

// fencedShard returns shard 0 for a fenced write, otherwise shard.
func fencedShard(ctx context.Context, shard int) int {
	if _, ok := fence.FromContext(ctx); ok {
		return 0
	}
	return shard
}

// MergeUpdateOnce merges delta into one shard of k with the underlying store's
// MergeUpdateOnce. The shard is a hash of eventID, not a random one: claims are per
// (event ID, key), so every redelivery of an event must reach the same sub-key to be
// caught. A fenced merge goes to shard 0, as MergeUpdate's does: deliver each
// event either always fenced or always unfenced, or a redelivery may reach
// another sub-key and apply again. If the underlying store is not a OnceStore it returns an error wrapping
// errors.ErrUnsupported.
func (s *Sharded[V]) MergeUpdateOnce(ctx context.Context, eventID string, k Key, delta V, ttl time.Duration) (bool, error) {
	if err := s.life.Enter(ctx); err != nil {
		return false, err
	}
	os, ok := s.store.(OnceStore[V])
	if !ok {
		return false, fmt.Errorf("sharded: %T is not a state.OnceStore: %w", s.store, errors.ErrUnsupported)
	}
	if err := s.checkKey(k); err != nil {
		return false, err
	}
	if err := CheckEventID(eventID); err != nil {
		return false, err
	}
	h := fnv.New32a()
	h.Write([]byte(eventID))
	return os.MergeUpdateOnce(ctx, eventID, ShardKey(k, fencedShard(ctx, int(h.Sum32()%uint32(s.n)))), delta, ttl)
}

// Close marks the Sharded view closed (later calls return ErrClosed); it does not
// close the underlying store, which the caller owns. It is idempotent.
func (s *Sharded[V]) Close() error { s.life.Close(); return nil }
