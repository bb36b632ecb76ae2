package ddbstate_test

import (
	"bytes"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/monoid/sketch/hll"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/ddbstate"
	"github.com/pipestate/pipestate/state/internal/storetest"
	"github.com/pipestate/pipestate/state/statetest"
)

// storeOpener adapts a numeric store constructor to a statetest Open.
func storeOpener[V any, S state.Store[V]](newStore func(ddbstate.API, string, ...ddbstate.StoreOption) (S, error)) func(t *testing.T) state.Store[V] {
	return func(t *testing.T) state.Store[V] {
		t.Helper()
		e := envFor(t)
		s, err := newStore(testenv.DynamoDBClient(t), e.values, ddbstate.WithClock(e.clock.Now), ddbstate.WithDedupTable(e.dedup))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

func advance(t *testing.T, d time.Duration) { envFor(t).clock.Advance(d) }

func TestConformance(t *testing.T) {
	t.Run("int64 sum", func(t *testing.T) {
		statetest.RunStore(t, statetest.Harness[int64]{
			Open: storeOpener[int64](ddbstate.NewInt64SumStore), Sleep: advance, FakeTime: true,
			Monoid: monoid.Sum[int64]{}, Delta: func(i int) int64 { return int64(i%7)*2 - 5 }, // down as well as up
			Equal: func(a, b int64) bool { return a == b },
		})
	})
	t.Run("float64 sum", func(t *testing.T) {
		statetest.RunStore(t, statetest.Harness[float64]{
			Open: storeOpener[float64](ddbstate.NewFloat64SumStore), Sleep: advance, FakeTime: true,
			Monoid: monoid.Sum[float64]{}, Delta: func(i int) float64 { return float64(i%5) - 2.5 },
			Equal:     func(a, b float64) bool { return a == b },
			BadDeltas: []float64{math.NaN(), math.Inf(1), math.Inf(-1), 1e300, 1e-300},
		})
	})
	t.Run("int64 max", func(t *testing.T) {
		statetest.RunStore(t, statetest.Harness[int64]{
			Open: storeOpener[int64](ddbstate.NewInt64MaxStore), Sleep: advance, FakeTime: true,
			Monoid: monoid.Max[int64]{}, Delta: func(i int) int64 { return int64(i*7919%1000) - 500 },
			Equal: func(a, b int64) bool { return a == b },
		})
	})
	t.Run("bytes", func(t *testing.T) {
		statetest.RunStore(t, statetest.Harness[[]byte]{
			Open: func(t *testing.T) state.Store[[]byte] {
				t.Helper()
				e := envFor(t)
				s, err := ddbstate.NewBytesStore(testenv.DynamoDBClient(t), e.bytes, storetest.Counter{},
					ddbstate.WithClock(e.clock.Now), ddbstate.WithDedupTable(e.dedup))
				if err != nil {
					t.Fatal(err)
				}
				return s
			},
			Sleep: advance, FakeTime: true,
			Monoid: storetest.Counter{}, Delta: func(i int) []byte { return storetest.Counter{}.Of(int64(i%3)*2 - 1) },
			Equal:     bytes.Equal,
			BadDeltas: [][]byte{{1, 2, 3}},
		})
	})
	t.Run("deduper", func(t *testing.T) {
		statetest.RunDeduper(t, statetest.DeduperHarness{
			Open: func(t *testing.T) state.Deduper {
				t.Helper()
				e := envFor(t)
				d, err := ddbstate.NewDeduper(testenv.DynamoDBClient(t), e.dedup, ddbstate.WithClock(e.clock.Now), ddbstate.WithDedupTTL(time.Hour))
				if err != nil {
					t.Fatal(err)
				}
				return d
			},
			Sleep: advance, TTL: time.Hour, FakeTime: true,
		})
	})
	t.Run("hll bytes", func(t *testing.T) {
		// Precision 10: the 1,500 events of the accuracy test make the sketch
		// dense, where the estimate carries its full standard error (3.25%).
		m, err := hll.New(10)
		if err != nil {
			t.Fatal(err)
		}
		statetest.RunSketch(t, statetest.Harness[[]byte]{
			Open: func(t *testing.T) state.Store[[]byte] {
				t.Helper()
				e := envFor(t)
				s, err := ddbstate.NewBytesStore(testenv.DynamoDBClient(t), e.bytes, m,
					ddbstate.WithClock(e.clock.Now), ddbstate.WithDedupTable(e.dedup))
				if err != nil {
					t.Fatal(err)
				}
				return s
			},
			Monoid: m, Delta: func(i int) []byte { return m.Delta(fmt.Sprint("visitor-", i)) },
			Equal: storetest.HLLEqual, Sketch: storetest.HLLSketch(m),
		})
	})
}
