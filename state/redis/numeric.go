package redis

import (
	"context"
	"math"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/internal/storeopt"
)

// numericKind is what tells the three numeric stores apart.
type numericKind[V int64 | float64] struct {
	name    string // type name, for errors
	kind    string // key segment
	script  *goredis.Script
	format  func(V) string
	parse   func(string) (V, error)
	check   func(V) error // delta check beyond the shared ones; may be nil
	missing V             // the value reported for a missing key: the monoid's identity
}

// numeric is the implementation shared by Int64SumStore, Float64SumStore and
// Int64MaxStore: values are plain Redis strings, merged by one Lua script.
type numeric[V int64 | float64] struct {
	base
	numericKind[V]
	dedupTTL time.Duration
}

func newNumeric[V int64 | float64](nk numericKind[V], client goredis.UniversalClient, opts []Option) (numeric[V], error) {
	c, err := newConfig("New"+nk.name, storeopt.Numeric, opts)
	if err != nil {
		return numeric[V]{}, err
	}
	b, err := newBase(nk.name, client, c)
	if err != nil {
		return numeric[V]{}, err
	}
	return numeric[V]{base: b, numericKind: nk, dedupTTL: c.DedupTTL}, nil
}

func (s *numeric[V]) get(ctx context.Context, k state.Key) (V, bool, error) {
	return readOne(ctx, &s.base, s.kind, k, getString, s.parse, s.missing)
}

func (s *numeric[V]) getMany(ctx context.Context, ks []state.Key) ([]V, []bool, error) {
	return readMany(ctx, &s.base, s.kind, ks, getString, s.parse, s.missing)
}

// merge is MergeUpdate (once == false) and MergeUpdateOnce.
func (s *numeric[V]) merge(ctx context.Context, once bool, eventID string, k state.Key, delta V, ttl time.Duration) (bool, error) {
	if err := s.begin(ctx); err != nil {
		return false, err
	}
	if once {
		if err := state.CheckEventID(eventID); err != nil {
			return false, err
		}
	}
	if err := state.CheckKey(k); err != nil {
		return false, err
	}
	if err := state.CheckTTL(ttl); err != nil {
		return false, err
	}
	if s.check != nil {
		if err := s.check(delta); err != nil {
			return false, err
		}
	}
	keys := s.keys.scriptKeys(s.kind, k, once, eventID)
	n, err := s.script.Run(ctx, s.client, keys, millis(ttl), millis(s.dedupTTL), s.format(delta)).Int()
	if err != nil {
		return false, s.wrap("merge", keys[0], err)
	}
	return n == 1, nil
}

// Int64SumStore is a state.OnceStore[int64] of sums (monoid.Sum): MergeUpdate adds the
// delta with INCRBY. A sum that would overflow int64 is an error and writes nothing.
// It is safe for concurrent use.
type Int64SumStore struct{ n numeric[int64] }

// Float64SumStore is a state.OnceStore[float64] of sums: MergeUpdate adds the delta
// with INCRBYFLOAT (Redis adds in long double precision and stores 17 significant
// digits). A NaN or infinite delta, or a sum that would overflow to infinity, is an
// error and writes nothing. It is safe for concurrent use.
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

func parseInt(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) }

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func parseFloat(s string) (float64, error) { return strconv.ParseFloat(s, 64) }

func checkFinite(v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return state.Invalidf("delta %v is not finite", v)
	}
	return nil
}

// NewInt64SumStore returns an Int64SumStore over client, which it uses but does not
// own (Close leaves it open). Options: WithKeyPrefix, WithDedupTTL.
func NewInt64SumStore(client goredis.UniversalClient, opts ...Option) (*Int64SumStore, error) {
	n, err := newNumeric(numericKind[int64]{
		name: "Int64SumStore", kind: kindInt64Sum, script: scriptIncrBy,
		format: formatInt, parse: parseInt,
	}, client, opts)
	if err != nil {
		return nil, err
	}
	return &Int64SumStore{n: n}, nil
}

// NewFloat64SumStore returns a Float64SumStore over client, which it uses but does not
// own. Options: WithKeyPrefix, WithDedupTTL.
func NewFloat64SumStore(client goredis.UniversalClient, opts ...Option) (*Float64SumStore, error) {
	n, err := newNumeric(numericKind[float64]{
		name: "Float64SumStore", kind: kindFloat64Sum, script: scriptIncrByFloat,
		format: formatFloat, parse: parseFloat, check: checkFinite,
	}, client, opts)
	if err != nil {
		return nil, err
	}
	return &Float64SumStore{n: n}, nil
}

// NewInt64MaxStore returns an Int64MaxStore over client, which it uses but does not
// own. Options: WithKeyPrefix, WithDedupTTL.
func NewInt64MaxStore(client goredis.UniversalClient, opts ...Option) (*Int64MaxStore, error) {
	n, err := newNumeric(numericKind[int64]{
		name: "Int64MaxStore", kind: kindInt64Max, script: scriptMax,
		format: formatInt, parse: parseInt, missing: math.MinInt64,
	}, client, opts)
	if err != nil {
		return nil, err
	}
	return &Int64MaxStore{n: n}, nil
}
