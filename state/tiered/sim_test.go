package tiered_test

import (
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/testkit/ddbtables"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/ddbstate"
	"github.com/pipestate/pipestate/state/statetest"
	"github.com/pipestate/pipestate/state/statetest/statesim"
	"github.com/pipestate/pipestate/state/tiered"
)

// TestSim simulates tiered Int64SumStores over DynamoDB Local, their Redis on
// a miniredis whose clock moves with the simulation, with DynamoDB's TTL
// sweeper, values corrupted raw in the source, and a variant that writes and
// reads the source without the tier (another version of the library during a
// rolling upgrade): every read returns a state the source held within the
// tier's TTL (package doc, "Staleness").
func TestSim(t *testing.T) {
	statesim.Run(t, statesim.Harness{
		Harness: statetest.Harness[int64]{
			Open: func(t *testing.T) state.Store[int64] { return sums(t, simEnv(t)) },
			Sleep: func(t *testing.T, d time.Duration) {
				simEnv(t).clock.Advance(d)
				simMini(t).FastForward(d)
			},
			FakeTime: true,
			Monoid:   monoid.Sum[int64]{},
		},
		Variants: []statesim.Variant{{Name: "the source without the tier", Open: func(t *testing.T) state.Store[int64] {
			e := simEnv(t)
			s, err := ddbstate.NewInt64SumStore(testenv.DynamoDBClient(t), e.values, ddbstate.WithClock(e.clock.Now), ddbstate.WithDedupTable(e.dedup))
			if err != nil {
				t.Fatal(err)
			}
			return s
		}}},
		Sweep: func(t *testing.T) {
			e := simEnv(t)
			ddbtables.Sweep(t, e.clock.Now(), e.values, e.dedup)
		},
		Corrupt:       func(t *testing.T, k state.Key) { ddbtables.CorruptValue(t, simEnv(t).values, k) },
		ReadStaleness: tiered.DefaultTTL,
		Corpus:        "testdata/sim.seeds",
		Budget:        5 * time.Second,
		Ops:           30, // DynamoDB Local takes up to 300 ms a write
	})
}

// minis are the simulation's miniredis servers, by test.
var minis sync.Map // t.Name() -> *miniredis.Miniredis

// simEnv is t's env on a miniredis of its own (simMini).
func simEnv(t *testing.T) *env {
	return envFor(t, func(t *testing.T) goredis.UniversalClient {
		m := miniredis.RunT(t)
		minis.Store(t.Name(), m)
		t.Cleanup(func() { minis.Delete(t.Name()) })
		return goredis.NewClient(&goredis.Options{Addr: m.Addr()})
	})
}

func simMini(t *testing.T) *miniredis.Miniredis {
	simEnv(t)
	m, _ := minis.Load(t.Name())
	return m.(*miniredis.Miniredis)
}
