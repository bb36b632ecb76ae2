package redis_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/testenv"
	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/redis"
)

// coalescerKeys is the number of distinct keys of the Coalescer benchmarks.
const coalescerKeys = 10_000

// perKey hides a store's MergeMany, so that the Coalescer writes one MergeUpdate per
// key: the comparison.
type perKey struct{ state.Store[int64] }

// coalescerStores are the Coalescer's two ways to write, over one Int64SumStore on
// redis-server.
func coalescerStores(b *testing.B) (map[string]state.Store[int64], *redis.Int64SumStore) {
	b.Helper()
	c := closeWith(b, goredis.NewClient(&goredis.Options{Addr: testenv.RedisAddr(b)}))
	s, err := redis.NewInt64SumStore(c, prefixFor(b))
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

// scriptMicros returns the microseconds redis-server spent in EVALSHA and EVAL
// since its start (INFO commandstats).
func scriptMicros(b *testing.B, c goredis.UniversalClient) int64 {
	b.Helper()
	info, err := c.Info(b.Context(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total int64
	for line := range strings.Lines(info) {
		for _, cmd := range []string{"cmdstat_evalsha:", "cmdstat_eval:"} {
			if rest, ok := strings.CutPrefix(line, cmd); ok {
				for f := range strings.SplitSeq(rest, ",") {
					if v, ok := strings.CutPrefix(f, "usec="); ok {
						n, err := strconv.ParseInt(v, 10, 64)
						if err != nil {
							b.Fatal(err)
						}
						total += n
					}
				}
			}
		}
	}
	return total
}

// BenchmarkCoalescerFlush: the time of a Flush of 10,000 buffered keys to
// redis-server (the Adds are not timed), in ms/flush, and the part of it the server
// spent running the scripts (server-ms/flush, from INFO commandstats: the rest is
// the client and the wait for a CPU, on a loaded machine).
func BenchmarkCoalescerFlush(b *testing.B) {
	stores, _ := coalescerStores(b)
	client := closeWith(b, goredis.NewClient(&goredis.Options{Addr: testenv.RedisAddr(b)}))
	keys := make([]state.Key, coalescerKeys)
	for i := range keys {
		keys[i] = state.Key{Entity: fmt.Sprint("flush-", i)}
	}
	for _, name := range []string{"batch", "per_key"} {
		b.Run(name, func(b *testing.B) {
			c, err := state.NewCoalescer(stores[name], monoid.Sum[int64]{},
				state.WithFlushInterval(0), state.WithMaxKeys(coalescerKeys))
			if err != nil {
				b.Fatal(err)
			}
			ctx := b.Context()
			var flushing time.Duration
			server := scriptMicros(b, client)
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				for _, k := range keys {
					if err := c.Add(ctx, k, 1); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				start := time.Now()
				if err := c.Flush(ctx); err != nil {
					b.Fatal(err)
				}
				flushing += time.Since(start)
			}
			b.StopTimer()
			b.ReportMetric(float64(flushing.Microseconds())/1000/float64(b.N), "ms/flush")
			b.ReportMetric(float64(scriptMicros(b, client)-server)/1000/float64(b.N), "server-ms/flush")
			if err := c.Close(ctx); err != nil {
				b.Fatal(err)
			}
		})
	}
}
