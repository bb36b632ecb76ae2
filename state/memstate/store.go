package memstate

import (
	"context"
	"fmt"
	"time"

	"github.com/pipestate/pipestate/fence"
	"github.com/pipestate/pipestate/internal/lifecycle"
	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
)

// Compile-time interface checks.
var (
	_ state.Store[int64]      = (*Store[int64])(nil)
	_ state.OnceStore[int64]  = (*Store[int64])(nil)
	_ state.BatchStore[int64] = (*Store[int64])(nil)
)

// Store is an in-memory state.Store and state.OnceStore over any monoid: the
// reference backend. Every method runs under one lock, so MergeUpdate and
// MergeUpdateOnce are atomic and linearizable. It is safe for concurrent use.
type Store[V any] struct {
	life *lifecycle.Flag
	d    *storeData[V]
}

type entry[V any] struct {
	v      V
	exp    time.Time // zero: no expiry
	fences fence.Set // what the value remembers of fenced merges; it expires with it
}

type storeData[V any] struct {
	mutexed
	m      monoid.Monoid[V]
	values map[state.Key]entry[V]
	events claims
	writes int
}

// New creates empty data merging with m and returns the first handle on it;
// NewHandle opens more. Options: WithClock, WithDedupTTL. A nil m (see
// state.CheckMonoid), a nil option or a bad value is an error wrapping
// state.ErrInvalidArgument.
func New[V any](m monoid.Monoid[V], opts ...StoreOption) (*Store[V], error) {
	if err := state.CheckMonoid(m); err != nil {
		return nil, fmt.Errorf("memory.New: %w", err)
	}
	cfg, err := newConfig("New", opts, StoreOption.ApplyStore)
	if err != nil {
		return nil, err
	}
	d := &storeData[V]{m: m, values: map[state.Key]entry[V]{}}
	d.cfg = cfg
	return d.handle(), nil
}

// NewHandle returns another handle on s's data (as a second process would open the
// same Redis keys), with the data's options; handles are closed independently.
func (s *Store[V]) NewHandle() *Store[V] { return s.d.handle() }

func (d *storeData[V]) handle() *Store[V] {
	return &Store[V]{life: lifecycle.New("state/memstate: Store"), d: d}
}

// Monoid returns the store's monoid.
func (s *Store[V]) Monoid() monoid.Monoid[V] { return s.d.m }

// Get returns the value of k and whether it exists and has not expired. A missing
// value is the monoid's Identity with found == false.
func (s *Store[V]) Get(ctx context.Context, k state.Key) (V, bool, error) {
	vs, found, err := s.GetMany(ctx, []state.Key{k})
	if err != nil {
		var zero V
		return zero, false, err
	}
	return vs[0], found[0], nil
}

// GetMany returns one value and found flag per key, in order; duplicates are
// allowed. Missing or expired keys read as Identity with found == false.
func (s *Store[V]) GetMany(ctx context.Context, ks []state.Key) ([]V, []bool, error) {
	if err := s.life.Enter(ctx, state.CheckKeys(ks)); err != nil {
		return nil, nil, err
	}
	vs, found := make([]V, len(ks)), make([]bool, len(ks))
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.cfg.Now()
	for i, k := range ks {
		if e, ok := d.values[k]; ok && live(e.exp, now) {
			vs[i], found[i] = cloneValue(e.v), true
		} else {
			vs[i] = d.m.Identity()
		}
	}
	return vs, found, nil
}

// MergeUpdate combines delta into k's value (from Identity when k is missing or
// expired) and sets its expiry to now+ttl (ttl 0: no expiry, clearing an earlier
// one). Bad input (see state.CheckMerge) is an error wrapping
// state.ErrInvalidArgument and writes nothing.
func (s *Store[V]) MergeUpdate(ctx context.Context, k state.Key, delta V, ttl time.Duration) error {
	_, err := s.merge(ctx, false, "", k, delta, ttl)
	return err
}

// MergeUpdateOnce applies delta as MergeUpdate does unless eventID was applied by
// this store's data within the dedup TTL (WithDedupTTL); claiming the ID and merging
// happen under one lock, so they are atomic. The claim is per (eventID, k).
// applied is false for a repeated event.
func (s *Store[V]) MergeUpdateOnce(ctx context.Context, eventID string, k state.Key, delta V, ttl time.Duration) (bool, error) {
	return s.merge(ctx, true, eventID, k, delta, ttl)
}

// MergeMany applies every update as MergeUpdate does, in order, under one lock (so
// this backend applies a batch atomically, more than state.BatchStore promises).
// Bad input anywhere is an error wrapping state.ErrInvalidArgument and writes
// nothing; an update the monoid refuses (an overflow) fails alone, reported in a
// *state.MergeError.
func (s *Store[V]) MergeMany(ctx context.Context, ups []state.Update[V]) error {
	d := s.d
	if err := s.life.Enter(ctx, state.CheckUpdates(d.m, ups)); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.cfg.Now()
	errs := make([]error, len(ups))
	t, fenced := fence.FromContext(ctx)
	for i, u := range ups {
		_, errs[i] = d.mergeLocked(now, t, fenced, false, "", u.Key, u.Delta, u.TTL)
	}
	return state.MergeErrors(errs)
}

// merge is MergeUpdate (once == false) and MergeUpdateOnce.
func (s *Store[V]) merge(ctx context.Context, once bool, eventID string, k state.Key, delta V, ttl time.Duration) (bool, error) {
	d := s.d
	if err := s.life.Enter(ctx, state.CheckWrite(d.m, once, eventID, k, delta, ttl)); err != nil {
		return false, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	t, fenced := fence.FromContext(ctx)
	return d.mergeLocked(d.cfg.Now(), t, fenced, once, eventID, k, delta, ttl)
}

// mergeLocked is one checked merge at now, carrying t when fenced (the fence is
// checked after the event's claim, so a repeated event is a duplicate, not a
// refusal); the caller holds d.mu.
func (d *storeData[V]) mergeLocked(now time.Time, t fence.Token, fenced, once bool, eventID string, k state.Key, delta V, ttl time.Duration) (bool, error) {
	claim := state.OnceClaimID(k, eventID)
	if once && d.events.claimed(claim, now) {
		return false, nil
	}
	cur, fences := d.m.Identity(), fence.Set(nil)
	if e, ok := d.values[k]; ok && live(e.exp, now) {
		cur, fences = e.v, e.fences
	}
	if fenced {
		if err := fences.Check(t, fmt.Sprintf("key %q/%d", k.Entity, k.Bucket)); err != nil {
			return false, fmt.Errorf("memory: merge: %w", err)
		}
	}
	next, err := state.Combine(d.m, cur, cloneValue(delta))
	if err != nil {
		return false, fmt.Errorf("memory: merge %q/%d: %w", k.Entity, k.Bucket, err)
	}
	if once {
		d.events.set(claim, now, d.cfg.DedupTTL)
	}
	if fenced {
		if fences == nil {
			fences = fence.Set{}
		}
		fences.Remember(t)
	}
	d.values[k] = entry[V]{v: next, exp: expiry(now, ttl), fences: fences}
	d.sweep(now)
	return true, nil
}

// sweep deletes expired values now and then, amortised O(1) per write.
func (d *storeData[V]) sweep(now time.Time) {
	if d.writes++; d.writes <= 1024 || d.writes <= len(d.values) {
		return
	}
	d.writes = 0
	for k, e := range d.values {
		if !live(e.exp, now) {
			delete(d.values, k)
		}
	}
}

// Close closes this handle; later calls on it return an error wrapping
// state.ErrClosed. Other handles on the same data stay open. It is idempotent.
func (s *Store[V]) Close() error { s.life.Close(); return nil }
