package redisstate

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/redisx"
	"github.com/pipestate/pipestate/internal/signal"
	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/internal/storekey"
	"github.com/pipestate/pipestate/state/internal/storeopt"
)

// BytesStore is a state.OnceStore[[]byte] for any monoid over bytes, typically a
// sketch from monoid/sketch. Each value is a hash {v: bytes, ver: version token};
// MergeUpdate reads it, combines in Go (TryCombine when the monoid is
// monoid.Fallible) and writes it back with a Lua compare-and-swap on the version,
// retrying lost races with capped exponential backoff and full jitter; each retry and
// each give-up is recorded (WithMeterProvider, WithLogger). It is safe for
// concurrent use by any number of processes.
type BytesStore struct {
	base
	m        monoid.Monoid[[]byte]
	kind     string // key segment: storekey.Bytes(m.Kind())
	cas      state.CASPolicy
	dedupArg any          // redisx.Millis(dedup TTL), boxed once
	retries  atomic.Int64 // lost races since creation, for benchmarks
}

var _ state.OnceStore[[]byte] = (*BytesStore)(nil)

// NewBytesStore returns a BytesStore merging with m over client, which it uses but
// does not own, keeping its keys under prefix as NewInt64SumStore does. Key names
// carry m's Kind, so BytesStores of different monoid kinds never share values, even
// under one prefix. Options: WithDedupTTL, WithMaxRetries, WithBackoff,
// WithMeterProvider, WithLogger.
func NewBytesStore(client goredis.UniversalClient, prefix string, m monoid.Monoid[[]byte], opts ...BytesOption) (*BytesStore, error) {
	const name = "BytesStore"
	c, err := newConfig("New"+name, opts, BytesOption.ApplyBytes)
	if err != nil {
		return nil, err
	}
	if err := state.CheckMonoid(m); err != nil {
		return nil, fmt.Errorf("%s: %w", c.Ctor, err)
	}
	b, err := newBase(&c, name, client, prefix)
	if err != nil {
		return nil, err
	}
	return &BytesStore{base: b, m: m, kind: storekey.Bytes(m.Kind()), cas: c.CAS, dedupArg: redisx.Millis(c.DedupTTL)}, nil
}

func decodeBytes(raw string) ([]byte, error) { return []byte(raw), nil }

// Get returns a copy of the value of k and whether it exists; a missing or expired key
// returns the monoid's identity and false. One round trip (HGET).
func (s *BytesStore) Get(ctx context.Context, k state.Key) ([]byte, bool, error) {
	return readOne(ctx, &s.base, s.kind, k, getBytes, decodeBytes, s.m.Identity())
}

// GetMany returns one value and one found flag per key, in the order of ks
// (duplicates allowed; missing keys hold the monoid's identity). One pipeline of
// HGETs: one round trip, or one per node concurrently on a Redis Cluster.
func (s *BytesStore) GetMany(ctx context.Context, ks []state.Key) ([][]byte, []bool, error) {
	return readMany(ctx, &s.base, s.kind, ks, getBytes, decodeBytes, s.m.Identity())
}

// MergeUpdate combines delta into the value of k and sets its expiry to now+ttl
// (ttl == 0 clears any expiry). Round trips: 1 read + 1 conditional write when
// uncontended; a lost race returns the current value with the refusal, so each retry
// costs 1 more. After the configured MaxRetries lost races it returns an error
// wrapping state.ErrContention. A delta or stored value the monoid rejects is
// an error wrapping monoid.ErrIncompatible (and state.ErrInvalidArgument) and nothing
// is written.
func (s *BytesStore) MergeUpdate(ctx context.Context, k state.Key, delta []byte, ttl time.Duration) error {
	_, err := s.merge(ctx, false, "", k, delta, ttl)
	return err
}

// MergeUpdateOnce is MergeUpdate applied at most once per (event ID, key): the
// conditional-write script also checks and writes the claim of eventID on k (which
// lives for the store's dedup TTL), so the claim is taken exactly when the merged
// value is written. applied is false, and nothing is written, when the event was
// applied to k before by a BytesStore with this prefix. Round trips as MergeUpdate.
func (s *BytesStore) MergeUpdateOnce(ctx context.Context, eventID string, k state.Key, delta []byte, ttl time.Duration) (applied bool, err error) {
	return s.merge(ctx, true, eventID, k, delta, ttl)
}

// casRead is what a lost compare-and-swap hands to the next attempt.
type casRead struct {
	value []byte
	found bool
	ver   string
}

func (s *BytesStore) merge(ctx context.Context, once bool, eventID string, k state.Key, delta []byte, ttl time.Duration) (bool, error) {
	if err := s.life.Enter(ctx, state.CheckWrite(s.m, once, eventID, k, delta, ttl)); err != nil {
		return false, err
	}
	key, claim, nkeys := s.keys.valueKey(s.kind, k), "", 2 // the value and its fence memory
	if once {
		claim, nkeys = s.keys.onceKey(s.kind, k, eventID), 3
	}
	var (
		ttlArg  any     = redisx.Millis(ttl)
		tok             = storekey.Token()
		last    casRead // set by a lost race
		lost    bool    // last is set
		claimed bool    // the event was applied before
	)
	read := func(ctx context.Context) ([]byte, bool, string, error) {
		if lost {
			lost = false
			return last.value, last.found, last.ver, nil
		}
		vals, err := s.client.HMGet(ctx, key, "v", "ver").Result()
		if err != nil {
			return nil, false, "", s.wrap("read", key, err)
		}
		r := casFields(vals)
		return r.value, r.found, r.ver, nil
	}
	t, fenced := tokenOf(ctx)
	fenceKey := s.keys.fenceKey(s.kind, k)
	write := func(ctx context.Context, next []byte, _ bool, ver string) (bool, error) {
		args := append(s.args(scriptCAS, nkeys, nkeys+8), key)
		if once {
			args = append(args, claim)
		}
		args = append(args, fenceKey)
		args = append(args, ttlArg, s.dedupArg, tok, ver, next, storekey.PushToken(ver, tok))
		if fenced {
			args = append(args, t.Key, t.Fence)
		}
		res, err := s.run(ctx, scriptCAS, args).Result()
		if err != nil {
			return false, s.wrap("write", key, err)
		}
		if newest, ok := refusedFence(res); fenced && ok {
			return false, fenceError(s.base.name, t, k, newest)
		}
		switch res := res.(type) {
		case int64:
			claimed = res == 0
			return true, nil
		case []any:
			last = casFields(res)
			if storekey.HasToken(last.ver, tok) {
				// This call's own write, met by the client library's retry after
				// a lost reply: applied once.
				return true, nil
			}
			lost = true
			return false, nil
		default:
			return false, s.wrap("write", key, fmt.Errorf("unexpected script reply %T", res))
		}
	}
	retries, err := storeopt.RetryCAS(ctx, s.sig, storeopt.MergeOp(once), casConflict, s.cas, s.m, delta, read, write)
	s.retries.Add(int64(retries))
	if err != nil {
		return false, err
	}
	return !claimed, nil
}

// casConflict is the reason of every lost compare-and-swap race.
func casConflict() string { return signal.ReasonCASConflict }

// casFields decodes the [v, ver] reply of HMGET or of a refused compare-and-swap.
func casFields(vals []any) casRead {
	var r casRead
	if len(vals) != 2 {
		return r
	}
	if v, ok := vals[0].(string); ok {
		r.value, r.found = []byte(v), true
	}
	if ver, ok := vals[1].(string); ok {
		r.ver = ver
	}
	return r
}
