package redisstate

import (
	"context"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/redisx"
	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/internal/storekey"
)

// numericKind is what tells the three numeric stores apart.
type numericKind[V int64 | float64] struct {
	name   string           // type name, for errors
	kind   string           // key segment
	m      monoid.Monoid[V] // checks deltas; its Identity is the value of a missing key
	script script           // the merge
	format func(V) string   // a delta or bound as the script reads it
	arg    func(V) any      // a delta as merge sends it: format's text, or what go-redis writes as it
	parse  func(string) (V, error)
}

// numeric is the implementation shared by Int64SumStore, Float64SumStore and
// Int64MaxStore: values are plain Redis strings, merged by one Lua script.
type numeric[V int64 | float64] struct {
	base
	numericKind[V]
	dedupArg any // redisx.Millis(dedup TTL), boxed once
}

func newNumeric[V int64 | float64](nk numericKind[V], client goredis.UniversalClient, prefix string, opts []StoreOption) (numeric[V], error) {
	c, err := newConfig("New"+nk.name, opts, StoreOption.ApplyStore)
	if err != nil {
		return numeric[V]{}, err
	}
	b, err := newBase(&c, nk.name, client, prefix)
	if err != nil {
		return numeric[V]{}, err
	}
	return numeric[V]{base: b, numericKind: nk, dedupArg: redisx.Millis(c.DedupTTL)}, nil
}

func (s *numeric[V]) get(ctx context.Context, k state.Key) (V, bool, error) {
	return readOne(ctx, &s.base, s.kind, k, getString, s.parse, s.m.Identity())
}

func (s *numeric[V]) getMany(ctx context.Context, ks []state.Key) ([]V, []bool, error) {
	return readMany(ctx, &s.base, s.kind, ks, getString, s.parse, s.m.Identity())
}

// merge is MergeUpdate (once == false) and MergeUpdateOnce. The call's token is
// only read with a claim key, so MergeUpdate sends "" instead.
func (s *numeric[V]) merge(ctx context.Context, once bool, eventID string, k state.Key, delta V, ttl time.Duration) (bool, error) {
	if err := s.life.Enter(ctx, state.CheckWrite(s.m, once, eventID, k, delta, ttl)); err != nil {
		return false, err
	}
	key := s.keys.valueKey(s.kind, k)
	t, fenced := tokenOf(ctx)
	nkeys, nargs, tok := 2, 4, any("") // the value and its fence memory
	if once {
		nkeys, tok = 3, storekey.Token()
	}
	if fenced {
		nargs += 2
	}
	args := append(s.args(s.script, nkeys, nkeys+nargs), key)
	if once {
		args = append(args, s.keys.onceKey(s.kind, k, eventID))
	}
	args = append(args, s.keys.fenceKey(s.kind, k))
	args = append(args, redisx.Millis(ttl), s.dedupArg, tok, s.arg(delta))
	if fenced {
		args = append(args, t.Key, t.Fence)
	}
	res, err := s.run(ctx, s.script, args).Result()
	if err != nil {
		return false, s.wrap("merge", key, err)
	}
	if newest, ok := refusedFence(res); fenced && ok {
		return false, fenceError(s.base.name, t, k, newest)
	}
	if err := s.reply("merge", res, delta, key); err != nil {
		return false, err
	}
	return res == int64(1), nil
}

// Int64SumStore is a state.OnceStore[int64] of sums (monoid.Sum): MergeUpdate adds the
// delta with INCRBY. A sum that would overflow int64 is an error wrapping
// state.ErrInvalidArgument and writes nothing. It is safe for concurrent use.
type Int64SumStore struct{ n numeric[int64] }

// Float64SumStore is a state.OnceStore[float64] of sums under the float contract of
// package state: a Lua script adds the delta to the stored value in float64 (Lua
// numbers are doubles) and stores the sum with 17 significant digits, so every merge's
// result is the float64 sum and tiny deltas never vanish. A delta outside
// state.CheckFloat64's range (NaN, infinities, magnitudes above state.MaxFloat64 or
// below state.MinFloat64 other than 0), or a merge whose sum would leave it, is an
// error wrapping state.ErrInvalidArgument and writes nothing. It is safe for
// concurrent use.
type Float64SumStore struct{ n numeric[float64] }

// Int64MaxStore is a state.OnceStore[int64] of maxima (monoid.Max): MergeUpdate keeps
// the larger of the stored value and the delta (compared exactly, as int64). A missing
// key reads as math.MinInt64, the identity. It is safe for concurrent use.
type Int64MaxStore struct{ n numeric[int64] }

var (
	_ state.OnceStore[int64]   = (*Int64SumStore)(nil)
	_ state.OnceStore[float64] = (*Float64SumStore)(nil)
	_ state.OnceStore[int64]   = (*Int64MaxStore)(nil)
)

func formatInt(v int64) string { return strconv.FormatInt(v, 10) }

// intArg is v itself: go-redis writes an int64 as formatInt does.
func intArg(v int64) any { return v }

// floatArg is formatFloat(v): go-redis would write v without an exponent (and
// without a '.' when integral, which miniredis's Lua cannot parse as a float).
func floatArg(v float64) any { return formatFloat(v) }

func parseInt(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) }

// formatFloat writes v with 17 significant digits (it reads back as v), as the
// script stores sums.
func formatFloat(v float64) string { return strconv.FormatFloat(v, 'e', 16, 64) }

func parseFloat(s string) (float64, error) { return strconv.ParseFloat(s, 64) }

// NewInt64SumStore returns an Int64SumStore over client, which it uses but does not
// own (Close leaves it open), keeping its keys under prefix (required: non-empty,
// valid UTF-8 without '{', '}' or control characters; give each logical store its
// own). Options: WithDedupTTL, WithMeterProvider, WithLogger. A nil client (also a
// typed nil) or a bad prefix is an error wrapping state.ErrInvalidArgument.
func NewInt64SumStore(client goredis.UniversalClient, prefix string, opts ...StoreOption) (*Int64SumStore, error) {
	n, err := newNumeric(numericKind[int64]{
		name: "Int64SumStore", kind: storekey.Int64Sum, m: monoid.Sum[int64]{}, script: scriptIncrBy,
		format: formatInt, arg: intArg, parse: parseInt,
	}, client, prefix, opts)
	if err != nil {
		return nil, err
	}
	return &Int64SumStore{n: n}, nil
}

// NewFloat64SumStore returns a Float64SumStore over client, which it uses but does not
// own, keeping its keys under prefix, with the options of NewInt64SumStore.
func NewFloat64SumStore(client goredis.UniversalClient, prefix string, opts ...StoreOption) (*Float64SumStore, error) {
	n, err := newNumeric(numericKind[float64]{
		name: "Float64SumStore", kind: storekey.Float64Sum, m: monoid.Sum[float64]{}, script: scriptFloatSum,
		format: formatFloat, arg: floatArg, parse: parseFloat,
	}, client, prefix, opts)
	if err != nil {
		return nil, err
	}
	return &Float64SumStore{n: n}, nil
}

// NewInt64MaxStore returns an Int64MaxStore over client, which it uses but does not
// own, keeping its keys under prefix, with the options of NewInt64SumStore.
func NewInt64MaxStore(client goredis.UniversalClient, prefix string, opts ...StoreOption) (*Int64MaxStore, error) {
	n, err := newNumeric(numericKind[int64]{
		name: "Int64MaxStore", kind: storekey.Int64Max, m: monoid.Max[int64]{}, script: scriptMax,
		format: formatInt, arg: intArg, parse: parseInt,
	}, client, prefix, opts)
	if err != nil {
		return nil, err
	}
	return &Int64MaxStore{n: n}, nil
}
