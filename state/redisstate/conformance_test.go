package redisstate_test

import (
	"bytes"
	"fmt"
	"math"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/monoid/sketch/hll"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/internal/storetest"
	"github.com/pipestate/pipestate/state/redisstate"
	"github.com/pipestate/pipestate/state/statetest"
)

// opener adapts a store constructor to a statetest Open for backend b.
func opener[V any, S state.Store[V]](b backend, newStore func(goredis.UniversalClient, string, ...redisstate.StoreOption) (S, error)) func(t *testing.T) state.Store[V] {
	return func(t *testing.T) state.Store[V] {
		t.Helper()
		s, err := newStore(b.client(t), prefixFor(t))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

// ttlFor is the expiry-test ttl: an hour under miniredis's FastForward, a second on
// real servers (the suite sleeps multiples of it and times its calls; on a loaded
// machine, where two merges meant to be 0.6 ttl apart drift further, an
// observation is inconclusive and the test tries again, which a second leaves
// room for).
func ttlFor(b backend) time.Duration {
	if b.mini != nil {
		return time.Hour
	}
	return time.Second
}

func sleeper(b backend) func(t *testing.T, d time.Duration) {
	return func(t *testing.T, d time.Duration) { b.sleep(t, d) }
}

func TestConformance(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		t.Parallel() // backends share nothing; the expiry tests sleep on real servers
		t.Run("int64 sum", func(t *testing.T) {
			t.Parallel() // each store has its own prefix; the expiry tests sleep
			statetest.RunStore(t, statetest.Harness[int64]{
				Open: opener[int64](b, redisstate.NewInt64SumStore), Sleep: sleeper(b), TTL: ttlFor(b), FakeTime: b.mini != nil,
				Monoid: monoid.Sum[int64]{}, Delta: func(i int) int64 { return int64(i%7)*2 - 5 }, // down as well as up
				Equal: func(a, b int64) bool { return a == b },
			})
		})
		t.Run("float64 sum", func(t *testing.T) {
			t.Parallel() // each store has its own prefix; the expiry tests sleep
			statetest.RunStore(t, statetest.Harness[float64]{
				Open: opener[float64](b, redisstate.NewFloat64SumStore), Sleep: sleeper(b), TTL: ttlFor(b), FakeTime: b.mini != nil,
				Monoid: monoid.Sum[float64]{}, Delta: func(i int) float64 { return float64(i%5) - 2.5 },
				Equal:     func(a, b float64) bool { return a == b },
				BadDeltas: []float64{math.NaN(), math.Inf(1), math.Inf(-1)},
			})
		})
		t.Run("int64 max", func(t *testing.T) {
			t.Parallel() // each store has its own prefix; the expiry tests sleep
			statetest.RunStore(t, statetest.Harness[int64]{
				Open: opener[int64](b, redisstate.NewInt64MaxStore), Sleep: sleeper(b), TTL: ttlFor(b), FakeTime: b.mini != nil,
				Monoid: monoid.Max[int64]{}, Delta: func(i int) int64 { return int64(i*7919%1000) - 500 },
				Equal: func(a, b int64) bool { return a == b },
			})
		})
		t.Run("bytes", func(t *testing.T) {
			t.Parallel() // each store has its own prefix; the expiry tests sleep
			statetest.RunStore(t, statetest.Harness[[]byte]{
				Open: func(t *testing.T) state.Store[[]byte] {
					t.Helper()
					s, err := redisstate.NewBytesStore(b.client(t), prefixFor(t), storetest.Counter{})
					if err != nil {
						t.Fatal(err)
					}
					return s
				},
				Sleep: sleeper(b), TTL: ttlFor(b), FakeTime: b.mini != nil,
				Monoid: storetest.Counter{}, Delta: func(i int) []byte { return storetest.Counter{}.Of(int64(i%3)*2 - 1) },
				Equal:     bytes.Equal,
				BadDeltas: [][]byte{{1, 2, 3}},
			})
		})
		t.Run("deduper", func(t *testing.T) {
			t.Parallel() // each store has its own prefix; the expiry tests sleep
			ttl := ttlFor(b)
			statetest.RunDeduper(t, statetest.DeduperHarness{
				Open: func(t *testing.T) state.Deduper {
					t.Helper()
					d, err := redisstate.NewDeduper(b.client(t), prefixFor(t), redisstate.WithDedupTTL(ttl))
					if err != nil {
						t.Fatal(err)
					}
					return d
				},
				Sleep: sleeper(b), TTL: ttl, FakeTime: b.mini != nil,
			})
		})
		t.Run("hll bytes", func(t *testing.T) {
			t.Parallel() // each store has its own prefix
			// Precision 10: the 1,500 events of the accuracy test make the sketch
			// dense, where the estimate carries its full standard error (3.25%).
			m, err := hll.New(10)
			if err != nil {
				t.Fatal(err)
			}
			statetest.RunSketch(t, statetest.Harness[[]byte]{
				Open: func(t *testing.T) state.Store[[]byte] {
					t.Helper()
					s, err := redisstate.NewBytesStore(b.client(t), prefixFor(t), m)
					if err != nil {
						t.Fatal(err)
					}
					return s
				},
				Monoid: m, Delta: func(i int) []byte { return m.Delta(fmt.Sprint("visitor-", i)) },
				Equal: storetest.HLLEqual, Sketch: storetest.HLLSketch(m),
			})
		})
	})
}
