package redisstate_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/redisstate"
)

// coalescerKeys is the number of distinct keys of the Coalescer benchmarks.
const coalescerKeys = 10_000

// perKey hides a store's MergeMany, so that the Coalescer writes one MergeUpdate per
// key: the comparison.
type perKey struct{ state.Store[int64] }

// coalescerStores are the Coalescer's two ways to write, over one Int64SumStore on
// redis-server.
func coalescerStores(b *testing.B) (map[string]state.Store[int64], *redisstate.Int64SumStore) {
	b.Helper()
	c := closeWith(b, goredis.NewClient(&goredis.Options{Addr: testenv.RedisAddr(b)}))
	s, err := redisstate.NewInt64SumStore(c, prefixFor(b))
	if err != nil {
		b.Fatal(err)
	}
	return map[string]state.Store[int64]{"batch": s, "per_key": perKey{s}}, s
}

// total reads the sum of the coalescerKeys keys.
func total(b *testing.B, s state.Store[int64], keys []state.Key) int64 {
	b.Helper()
	vs, _, err := s.GetMany(b.Context(), keys)
	if err != nil {
		b.Fatal(err)
	}
	var t int64
	for _, v := range vs {
		t += v
	}
	return t
}

// BenchmarkCoalescerIngest: one goroutine adds deltas round-robin to 10,000 keys of
// a Coalescer over redis-server (background flush every 100 ms, at most 10,000
// keys); the clock stops after Close's final flush. deltas/s is the deltas that
// reached Redis per second (checked: the keys' sum in Redis grew by b.N, and no
// write failed). Run it with -cpu 1 for the one-core figure of issue 14.
func BenchmarkCoalescerIngest(b *testing.B) {
	stores, s := coalescerStores(b)
	keys := make([]state.Key, coalescerKeys)
	for i := range keys {
		keys[i] = state.Key{Entity: fmt.Sprint("ingest-", i)}
	}
	for _, name := range []string{"batch", "per_key"} {
		b.Run(name, func(b *testing.B) {
			before := total(b, s, keys)
			c, err := state.NewCoalescer(stores[name], monoid.Sum[int64]{},
				state.WithFlushInterval(100*time.Millisecond), state.WithMaxKeys(coalescerKeys))
			if err != nil {
				b.Fatal(err)
			}
			ctx := b.Context()
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				if err := c.Add(ctx, keys[i%coalescerKeys], 1); err != nil {
					b.Fatal(err)
				}
			}
			if err := c.Close(ctx); err != nil {
				b.Fatal(err)
			}
			elapsed := time.Since(start)
			b.StopTimer()
			st := c.Stats()
			if got := total(b, s, keys) - before; got != int64(b.N) || st.Failures != 0 {
				b.Fatalf("Redis grew by %d, want %d; stats %+v", got, b.N, st)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deltas/s")
			b.ReportMetric(float64(st.Flushes), "flushes")
		})
	}
}

// rawIncrExpire is the careful floor of BenchmarkCoalescerFlush: INCRBY fails
// without writing on overflow, and the error ends the script before PEXPIRE.
var rawIncrExpire = goredis.NewScript(`local n = redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return n`)

// BenchmarkCoalescerFlush: the time of a Flush of 10,000 buffered keys to
// redis-server (the Adds are not timed), in ms/flush, and the server's CPU time
// for it (server-cpu-ms/flush, from INFO cpu: the rest is the client and the wait
// for a CPU, on a loaded machine). Two hand-written floors do the same 10,000
// increments in pipelines of 1,000 keys, all sent at once: "raw" as INCRBY and
// PEXPIRE, without the store's guarantees (an overflowing INCRBY is refused but
// its PEXPIRE still runs), and "careful" as the cheapest code that keeps them (a
// refused overflow writes nothing, the expiry is set in the same step): a
// two-line script per key (rawIncrExpire), run with EVALSHA.
func BenchmarkCoalescerFlush(b *testing.B) {
	stores, _ := coalescerStores(b)
	client := goredis.NewClient(&goredis.Options{Addr: testenv.RedisAddr(b)})
	closeWith(b, client)
	cpu := testenv.RedisServerCPU(client)
	keys := make([]state.Key, coalescerKeys)
	rawKeys := make([]string, coalescerKeys)
	for i := range keys {
		keys[i] = state.Key{Entity: fmt.Sprint("flush-", i)}
		rawKeys[i] = prefixFor(b) + ":raw:" + keys[i].Entity
	}
	// pipelines sends the increments in pipelines of state.MergeBatchSize keys,
	// all at once, each key's commands written by incr.
	pipelines := func(ctx context.Context, incr func(p goredis.Pipeliner, key string)) func() error {
		return func() error {
			var g errgroup.Group
			for lo := 0; lo < len(keys); lo += state.MergeBatchSize {
				g.Go(func() error {
					_, err := client.Pipelined(ctx, func(p goredis.Pipeliner) error {
						for _, key := range rawKeys[lo:min(lo+state.MergeBatchSize, len(keys))] {
							incr(p, key)
						}
						return nil
					})
					return err
				})
			}
			return g.Wait()
		}
	}
	ttl := benchTTL.Milliseconds()
	flushers := map[string]func(ctx context.Context) (flush func() error){
		"raw": func(ctx context.Context) func() error {
			return pipelines(ctx, func(p goredis.Pipeliner, key string) {
				p.IncrBy(ctx, key, 1)
				p.PExpire(ctx, key, benchTTL)
			})
		},
		"careful": func(ctx context.Context) func() error {
			if err := rawIncrExpire.Load(ctx, client).Err(); err != nil {
				b.Fatal(err)
			}
			return pipelines(ctx, func(p goredis.Pipeliner, key string) {
				rawIncrExpire.EvalSha(ctx, p, []string{key}, 1, ttl)
			})
		},
	}
	for _, name := range []string{"batch", "per_key"} {
		flushers[name] = func(ctx context.Context) func() error {
			c, err := state.NewCoalescer(stores[name], monoid.Sum[int64]{},
				state.WithFlushInterval(0), state.WithMaxKeys(coalescerKeys), state.WithWriteTTL(benchTTL))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = c.Close(context.Background()) })
			return func() error {
				b.StopTimer()
				for _, k := range keys {
					if err := c.Add(ctx, k, 1); err != nil {
						return err
					}
				}
				b.StartTimer()
				return c.Flush(ctx)
			}
		}
	}
	for _, name := range []string{"batch", "per_key", "careful", "raw"} {
		b.Run(name, func(b *testing.B) {
			flush := flushers[name](b.Context())
			var flushing time.Duration
			var serverUS float64
			b.ResetTimer()
			for range b.N {
				before, err := cpu.Read()
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if err := flush(); err != nil {
					b.Fatal(err)
				}
				flushing += time.Since(start)
				after, err := cpu.Read()
				if err != nil {
					b.Fatal(err)
				}
				serverUS += after - before
			}
			b.StopTimer()
			b.ReportMetric(float64(flushing.Microseconds())/1000/float64(b.N), "ms/flush")
			b.ReportMetric(serverUS/1000/float64(b.N), "server-cpu-ms/flush")
		})
	}
}
