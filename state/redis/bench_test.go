package redis_test

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/monoid/sketch/hll"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/internal/storetest"
	"github.com/pipestate/pipestate/state/redis"
)

// Benchmarks run against miniredis and, when REDIS_ADDR is set (or Docker answers), a
// real Redis. Each library call sits beside the raw client doing the same commands,
// so the library's overhead reads as a ratio:
//
//	go test -run '^$' -bench . -benchtime 2s ./state/redis

var benchBackends = []backend{miniBackend, realBackend}

// rawMax is the raw-client equivalent of Int64MaxStore's merge (without the claim
// and ttl handling).
var rawMax = goredis.NewScript(`local c = redis.call('GET', KEYS[1])
if not c or tonumber(c) < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1]) end
return 1`)

func BenchmarkMergeUpdate(b *testing.B) {
	for _, be := range benchBackends {
		b.Run(be.name, func(b *testing.B) {
			c := be.client(b)
			p := prefixFor(b)
			sum, _ := redis.NewInt64SumStore(c, p)
			fsum, _ := redis.NewFloat64SumStore(c, p)
			max, _ := redis.NewInt64MaxStore(c, p)
			bs, err := redis.NewBytesStore(c, p, storetest.Counter{})
			if err != nil {
				b.Fatal(err)
			}
			k := state.Key{Entity: "bench"}
			raw := prefixFor(b) + ":raw"
			one := storetest.Counter{}.Of(1)
			cases := []struct {
				name string
				op   func(i int) error
			}{
				{"int64sum", func(int) error { return sum.MergeUpdate(b.Context(), k, 1, 0) }},
				{"int64sum-raw", func(int) error { return c.IncrBy(b.Context(), raw+"i", 1).Err() }},
				{"float64sum", func(int) error { return fsum.MergeUpdate(b.Context(), k, 0.5, 0) }},
				{"float64sum-raw", func(int) error { return c.IncrByFloat(b.Context(), raw+"f", 0.5).Err() }},
				{"int64max", func(i int) error { return max.MergeUpdate(b.Context(), k, int64(i), 0) }},
				{"int64max-raw", func(i int) error { return rawMax.Run(b.Context(), c, []string{raw + "m"}, i).Err() }},
				{"bytes", func(int) error { return bs.MergeUpdate(b.Context(), k, one, 0) }},
				{"bytes-raw", func(int) error { // HGET + HSET: the same round trips, no CAS
					cur, err := c.HGet(b.Context(), raw+"b", "v").Bytes()
					if err != nil && err != goredis.Nil {
						return err
					}
					return c.HSet(b.Context(), raw+"b", "v", storetest.Counter{}.Combine(cur, one)).Err()
				}},
			}
			for _, tc := range cases {
				b.Run(tc.name, func(b *testing.B) {
					i := 0
					for b.Loop() {
						i++
						if err := tc.op(i); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

func BenchmarkGetMany1000(b *testing.B) {
	for _, be := range benchBackends {
		b.Run(be.name, func(b *testing.B) {
			c := be.client(b)
			s, err := redis.NewInt64SumStore(c, prefixFor(b))
			if err != nil {
				b.Fatal(err)
			}
			ks := make([]state.Key, 1000)
			raw := make([]string, len(ks))
			for i := range ks {
				ks[i] = state.Key{Entity: strconv.Itoa(i)}
				raw[i] = fmt.Sprintf("%s:raw:%d", prefixFor(b), i)
				if err := s.MergeUpdate(b.Context(), ks[i], 1, 0); err != nil {
					b.Fatal(err)
				}
				c.Set(b.Context(), raw[i], 1, 0)
			}
			b.Run("lib", func(b *testing.B) {
				for b.Loop() {
					if _, _, err := s.GetMany(b.Context(), ks); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("raw", func(b *testing.B) { // a pipeline of 1000 GETs
				for b.Loop() {
					pipe := c.Pipeline()
					for _, k := range raw {
						pipe.Get(b.Context(), k)
					}
					if _, err := pipe.Exec(b.Context()); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
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
				stores := make([]*redis.BytesStore, 2)
				for i := range stores {
					s, err := redis.NewBytesStore(be.client(b), prefixFor(b), m, redis.WithMaxRetries(1000))
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
				lost := redis.LostRaces(stores[0]) + redis.LostRaces(stores[1])
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
				b.ReportMetric(float64(lost)/float64(b.N), "retries/op")
			})
		}
	}
}
