package ddbstate_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/pipestate/pipestate/internal/testkit/ddbtables"
	"github.com/pipestate/pipestate/internal/testkit/faults"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/ddbstate"
	"github.com/pipestate/pipestate/state/statetest"
	"github.com/pipestate/pipestate/state/statetest/statesim"
)

// TestSim simulates the Int64SumStore on DynamoDB Local with the stores'
// clock option, a sweeper (DynamoDB's TTL deletes, at random delays after
// expiry), raw corrupt values, a variant whose claims live an hour, a Deduper
// and lost replies.
func TestSim(t *testing.T) {
	h := simHarness(ddbstate.NewInt64SumStore, monoid.Sum[int64]{})
	h.Corpus, h.Budget = "testdata/sim.seeds", 5*time.Second
	statesim.Run(t, h)
}

// TestSimMax simulates the Int64MaxStore (whose merge that leaves the value
// as it was writes nothing unfenced, and takes a second request fenced) as
// TestSim does the sum store, with a smaller budget.
func TestSimMax(t *testing.T) {
	h := simHarness(ddbstate.NewInt64MaxStore, monoid.Max[int64]{})
	h.Corpus, h.Budget, h.Ops = "testdata/sim-max.seeds", time.Second, 20
	statesim.Run(t, h)
}

// simHarness is the simulation's harness of the stores newStore opens.
func simHarness[S state.Store[int64]](newStore func(ddbstate.API, string, ...ddbstate.StoreOption) (S, error), m monoid.Monoid[int64]) statesim.Harness {
	open := func(ttl time.Duration) func(t *testing.T) state.Store[int64] {
		return func(t *testing.T) state.Store[int64] {
			e := envFor(t)
			s, err := newStore(simClient(t), e.values, ddbstate.WithClock(e.clock.Now),
				ddbstate.WithDedupTable(e.dedup), ddbstate.WithDedupTTL(ttl))
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	}
	return statesim.Harness{
		Harness: statetest.Harness[int64]{
			Open: open(5 * time.Hour), Sleep: advance, FakeTime: true, DedupTTL: 5 * time.Hour,
			Monoid: m,
		},
		Variants: []statesim.Variant{{Name: "claims for 1h", Open: open(time.Hour), DedupTTL: time.Hour}},
		OpenDeduper: func(t *testing.T) state.Deduper {
			e := envFor(t)
			d, err := ddbstate.NewDeduper(simClient(t), e.dedup, ddbstate.WithClock(e.clock.Now), ddbstate.WithDedupTTL(5*time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			return d
		},
		Sweep:   sweep,
		Corrupt: func(t *testing.T, k state.Key) { ddbtables.CorruptValue(t, envFor(t).values, k) },
		Faults: &statesim.Faults{
			LoseReply: func(t *testing.T) {
				n := simTransportFor(t)
				n.armed = n.Dropped()
				n.DropReply(func(op string, _ []byte) bool { return slices.Contains(writeOps, op) })
			},
			Disarm: func(t *testing.T) bool {
				n := simTransportFor(t)
				n.DropReply(nil)
				return n.Dropped() > n.armed
			},
		},
		Ops: 30, // DynamoDB Local takes up to 300 ms a write
	}
}

// writeOps are the DynamoDB operations that write.
var writeOps = []string{"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"}

// simTransport is a simulation run's transport to DynamoDB Local, whose
// replies the simulation drops (Harness.Faults), and how many it had dropped
// when a fault was armed.
type simTransport struct {
	*faults.Transport
	armed int
}

var simTransports sync.Map // t.Name() -> *simTransport

func simTransportFor(t *testing.T) *simTransport {
	n, loaded := simTransports.LoadOrStore(t.Name(), &simTransport{Transport: faults.NewTransport()})
	if !loaded {
		t.Cleanup(func() { simTransports.Delete(t.Name()) })
	}
	return n.(*simTransport)
}

// simClient is a client of DynamoDB Local through t's simTransport, which
// retries a lost reply at once.
func simClient(t *testing.T) *ddb.Client {
	return testenv.DynamoDBClient(t, simTransportFor(t).DynamoDBOptions(3))
}

// sweep deletes, as DynamoDB's TTL sweeper would, every item of t's value and
// claim tables whose ttl attribute has passed on t's clock.
func sweep(t *testing.T) {
	e := envFor(t)
	ddbtables.Sweep(t, e.clock.Now(), e.values, e.dedup)
}
