package redisstate_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/testkit/benchpair"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/monoid/sketch/hll"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/internal/storekey"
	"github.com/pipestate/pipestate/state/internal/storetest"
	"github.com/pipestate/pipestate/state/redisstate"
)

// The benchmarks run each hot call against miniredis and, when REDIS_ADDR is set (or
// Docker answers), a real Redis, beside the hand-written go-redis code a careful
// client would write for the same contract (the same round trips, the same atomicity,
// the same expiry), interleaved in rounds (internal/testkit/benchpair), so the library's
// overhead reads as a ratio and its allocations per call beside the raw code's:
//
//	go test -run '^$' -bench . -benchtime 3000x ./state/redisstate
//
// Each call has a sequential variant ("seq") and one with benchWorkers goroutines
// ("parallel64"). Writes go to one key per worker on both sides, so a BytesStore
// merge never loses a compare-and-swap race and neither side waits on the other's
// keys; reads (GetMany) read the same keys from every worker. Merges set a ttl
// (benchTTL), the windowed-counter case in which both sides must set the expiry.
// The raw side builds its key names per call, as the library must from a
// state.Key, with one string concatenation.

// benchWorkers is the goroutines of the parallel variants.
const benchWorkers = 64

// benchTTL is the ttl of every benchmarked merge.
const benchTTL = time.Hour

var benchBackends = []backend{miniBackend, realBackend}

// benchPair runs, per backend, lib against raw as made by mk, sequentially ("seq")
// and on benchWorkers goroutines ("parallel64"). mk gets the backend's client and a
// key prefix of the benchmark's own; the library's keys live under it, the raw
// code's under prefix + ":raw".
func benchPair(b *testing.B, mk func(b *testing.B, c goredis.UniversalClient, prefix string) (lib, raw func(w, i int) error)) {
	b.Helper()
	for _, be := range benchBackends {
		b.Run(be.name, func(b *testing.B) {
			c := be.client(b)
			if err := redisstate.LoadScripts(context.Background(), c); err != nil {
				b.Fatal(err)
			}
			lib, raw := mk(b, c, prefixFor(b))
			var meters []benchpair.Meter
			if sc, ok := c.(*goredis.Client); ok && be.name == "redis" {
				meters = append(meters, testenv.RedisServerCPU(sc))
			}
			benchpair.Modes(b, []int{1, benchWorkers}, func(*testing.B, int) (func(w, i int) error, func(w, i int) error) {
				return lib, raw
			}, meters...)
		})
	}
}

// benchEntities are the entities of the workers' keys: worker w writes entity
// benchEntities[w], bucket 0.
var benchEntities = func() []string {
	es := make([]string, benchWorkers)
	for w := range es {
		es[w] = "w" + strconv.Itoa(w)
	}
	return es
}()

// rawKey is the raw code's key of an entity and bucket, with the entity as the hash
// tag as a Lua script touching a claim key beside it needs on a cluster.
func rawKey(prefix, entity string, bucket int64) string {
	return prefix + ":raw:{" + entity + "}:" + strconv.FormatInt(bucket, 10)
}

// The raw scripts: what a careful hand-written client runs for each merge. Each
// merges and sets the expiry atomically (the library's contract: an expired value
// is gone for every reader, and a merge's expiry is set by the merge itself).
var (
	// rawIncrBy is Int64SumStore.MergeUpdate: INCRBY (which refuses an overflow
	// without writing) and PEXPIRE.
	rawIncrBy = goredis.NewScript(`redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`)
	// rawIncrByFloat is Float64SumStore.MergeUpdate with Redis's own float
	// addition: INCRBYFLOAT and PEXPIRE.
	rawIncrByFloat = goredis.NewScript(`redis.call('INCRBYFLOAT', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`)
	// rawMax is Int64MaxStore.MergeUpdate: GET, SET when larger (compared as Lua
	// numbers, exact below 2^53 only: cheaper than the library's exact int64
	// comparison), PEXPIRE.
	rawMax = goredis.NewScript(`local c = redis.call('GET', KEYS[1])
if not c or tonumber(c) < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1]) end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`)
	// rawIncrByOnce is Int64SumStore.MergeUpdateOnce: the claim checked first and
	// written last (after the merge, so a refused merge leaves no claim), with its
	// own ttl. The library's claim also holds the call's token (exactly once under
	// a retried lost reply); this one holds "1".
	rawIncrByOnce = goredis.NewScript(`if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('SET', KEYS[2], '1', 'PX', ARGV[3])
return 1`)
	// rawCAS is BytesStore's compare-and-swap: a hash {v, ver} written only when
	// ver is still the version read (a counter here; the library's version lists
	// the tokens of the latest writes, to recognise its own after a lost reply).
	rawCAS = goredis.NewScript(`if (redis.call('HGET', KEYS[1], 'ver') or '') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'v', ARGV[2], 'ver', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1`)
)

// benchTTLMillis is benchTTL as the raw scripts take it.
var benchTTLMillis = benchTTL.Milliseconds()

// BenchmarkInt64SumMergeUpdate: MergeUpdate against rawIncrBy.
func BenchmarkInt64SumMergeUpdate(b *testing.B) {
	benchPair(b, func(b *testing.B, c goredis.UniversalClient, p string) (lib, raw func(w, i int) error) {
		s, err := redisstate.NewInt64SumStore(c, p)
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		lib = func(w, _ int) error {
			return s.MergeUpdate(ctx, state.Key{Entity: benchEntities[w]}, 1, benchTTL)
		}
		raw = func(w, _ int) error {
			return rawIncrBy.Run(ctx, c, []string{rawKey(p, benchEntities[w], 0)}, 1, benchTTLMillis).Err()
		}
		return lib, raw
	})
}

// BenchmarkFloat64SumMergeUpdate: MergeUpdate against rawIncrByFloat.
func BenchmarkFloat64SumMergeUpdate(b *testing.B) {
	benchPair(b, func(b *testing.B, c goredis.UniversalClient, p string) (lib, raw func(w, i int) error) {
		s, err := redisstate.NewFloat64SumStore(c, p)
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		lib = func(w, _ int) error {
			return s.MergeUpdate(ctx, state.Key{Entity: benchEntities[w]}, 0.5, benchTTL)
		}
		raw = func(w, _ int) error {
			return rawIncrByFloat.Run(ctx, c, []string{rawKey(p, benchEntities[w], 0)}, 0.5, benchTTLMillis).Err()
		}
		return lib, raw
	})
}

// BenchmarkInt64MaxMergeUpdate: MergeUpdate of growing values (each one a write)
// against rawMax.
func BenchmarkInt64MaxMergeUpdate(b *testing.B) {
	benchPair(b, func(b *testing.B, c goredis.UniversalClient, p string) (lib, raw func(w, i int) error) {
		s, err := redisstate.NewInt64MaxStore(c, p)
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		lib = func(w, i int) error {
			return s.MergeUpdate(ctx, state.Key{Entity: benchEntities[w]}, int64(i), benchTTL)
		}
		raw = func(w, i int) error {
			return rawMax.Run(ctx, c, []string{rawKey(p, benchEntities[w], 0)}, i, benchTTLMillis).Err()
		}
		return lib, raw
	})
}

// BenchmarkInt64SumMergeUpdateOnce: MergeUpdateOnce of a new event ID per call (each
// one applied) against rawIncrByOnce.
func BenchmarkInt64SumMergeUpdateOnce(b *testing.B) {
	benchPair(b, func(b *testing.B, c goredis.UniversalClient, p string) (lib, raw func(w, i int) error) {
		s, err := redisstate.NewInt64SumStore(c, p)
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		dedupMillis := state.DefaultDedupTTL.Milliseconds()
		lib = func(w, i int) error {
			_, err := s.MergeUpdateOnce(ctx, "e"+strconv.Itoa(i), state.Key{Entity: benchEntities[w]}, 1, benchTTL)
			return err
		}
		raw = func(w, i int) error {
			key := rawKey(p, benchEntities[w], 0)
			claim := key + ":once:e" + strconv.Itoa(i)
			return rawIncrByOnce.Run(ctx, c, []string{key, claim}, 1, benchTTLMillis, dedupMillis).Err()
		}
		return lib, raw
	})
}

// BenchmarkGetMany1000: Int64SumStore.GetMany of 1,000 keys against the cheapest
// read of 1,000 strings on a single server, one MGET, whose replies are parsed
// into the same []int64 and []bool.
func BenchmarkGetMany1000(b *testing.B) {
	benchPair(b, func(b *testing.B, c goredis.UniversalClient, p string) (lib, raw func(w, i int) error) {
		s, err := redisstate.NewInt64SumStore(c, p)
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		ks := make([]state.Key, 1000)
		for i := range ks {
			ks[i] = state.Key{Entity: strconv.Itoa(i)}
			if err := s.MergeUpdate(ctx, ks[i], 1, 0); err != nil {
				b.Fatal(err)
			}
			if err := c.Set(ctx, rawKey(p, ks[i].Entity, 0), 1, 0).Err(); err != nil {
				b.Fatal(err)
			}
		}
		lib = func(int, int) error {
			_, _, err := s.GetMany(ctx, ks)
			return err
		}
		raw = func(int, int) error {
			rawKeys := make([]string, len(ks)) // built per call, as the library must from a state.Key
			for j, k := range ks {
				rawKeys[j] = rawKey(p, k.Entity, k.Bucket)
			}
			replies, err := c.MGet(ctx, rawKeys...).Result()
			if err != nil {
				return err
			}
			vals, found := make([]int64, len(replies)), make([]bool, len(replies))
			for j, r := range replies {
				str, ok := r.(string)
				if !ok {
					continue
				}
				v, err := strconv.ParseInt(str, 10, 64)
				if err != nil {
					return err
				}
				vals[j], found[j] = v, true
			}
			return nil
		}
		return lib, raw
	})
}

// BenchmarkBytesMergeUpdate: BytesStore.MergeUpdate (storetest.Counter) against
// HMGET, the combine, and rawCAS with a counted version, retried on a lost race.
func BenchmarkBytesMergeUpdate(b *testing.B) { benchBytesMerge(b, false) }

// BenchmarkBytesMergeUpdateCareful: BytesStore.MergeUpdate against the floor of
// its guarantee, rawCAS whose version is the library's (storekey.PushToken: the
// call's token and those of the 15 writes before it, so that a retry after a
// lost reply finds its own write), where a counted version cannot tell its own
// write from another's.
func BenchmarkBytesMergeUpdateCareful(b *testing.B) { benchBytesMerge(b, true) }

// benchBytesMerge is the BytesStore merge benchmarks: careful says whether the
// raw side versions its writes as the library does.
func benchBytesMerge(b *testing.B, careful bool) {
	benchPair(b, func(b *testing.B, c goredis.UniversalClient, p string) (lib, raw func(w, i int) error) {
		s, err := redisstate.NewBytesStore(c, p, storetest.Counter{})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		one := storetest.Counter{}.Of(1)
		lib = func(w, _ int) error {
			return s.MergeUpdate(ctx, state.Key{Entity: benchEntities[w]}, one, benchTTL)
		}
		raw = func(w, _ int) error {
			key := rawKey(p, benchEntities[w], 0)
			var tok string
			if careful {
				tok = storekey.Token()
			}
			for {
				vals, err := c.HMGet(ctx, key, "v", "ver").Result()
				if err != nil {
					return err
				}
				cur, _ := vals[0].(string)
				ver, _ := vals[1].(string)
				if careful && storekey.HasToken(ver, tok) { // a retry met this call's own write
					return nil
				}
				next, err := storetest.Counter{}.TryCombine([]byte(cur), one)
				if err != nil {
					return err
				}
				var nextVer any
				if careful {
					nextVer = storekey.PushToken(ver, tok)
				} else {
					n, _ := strconv.ParseInt(ver, 10, 64) // "" (missing) is version 0
					nextVer = n + 1
				}
				swapped, err := rawCAS.Run(ctx, c, []string{key}, ver, next, nextVer, benchTTLMillis).Int()
				if err != nil || swapped == 1 {
					return err
				}
			}
		}
		return lib, raw
	})
}

// BenchmarkHLLHotKey merges one-item HLL deltas into one hot key from 1, 4 and 16
// concurrent writers (two store instances), reporting ops/s and lost
// compare-and-swap races per op.
func BenchmarkHLLHotKey(b *testing.B) {
	m, err := hll.New(hll.DefaultPrecision)
	if err != nil {
		b.Fatal(err)
	}
	for _, be := range benchBackends {
		for _, writers := range []int{1, 4, 16} {
			b.Run(fmt.Sprintf("%s/writers=%d", be.name, writers), func(b *testing.B) {
				stores := make([]*redisstate.BytesStore, 2)
				for i := range stores {
					s, err := redisstate.NewBytesStore(be.client(b), prefixFor(b), m, redisstate.WithMaxRetries(1000))
					if err != nil {
						b.Fatal(err)
					}
					stores[i] = s
				}
				k := state.Key{Entity: "visitors"}
				var next atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				for w := range writers {
					wg.Go(func() {
						s := stores[w%2]
						for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
							if err := s.MergeUpdate(b.Context(), k, m.Delta(strconv.FormatInt(i, 10)), 0); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				lost := redisstate.LostRaces(stores[0]) + redisstate.LostRaces(stores[1])
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
				b.ReportMetric(float64(lost)/float64(b.N), "retries/op")
			})
		}
	}
}
