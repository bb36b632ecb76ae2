package redisstate_test

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/testkit/faults"
	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/redisstate"
	"github.com/pipestate/pipestate/state/statetest"
	"github.com/pipestate/pipestate/state/statetest/statesim"
)

// simDedupTTL is the claim TTL of the simulated stores, and of their variant.
const simDedupTTL, simVariantDedupTTL = 5 * time.Hour, time.Hour

// TestSim simulates the Int64SumStore on miniredis, whose clock moves with
// the simulation (FastForward expires keys itself, so there is no sweeper),
// with a variant whose claims live an hour, values corrupted raw, a Deduper
// and lost replies.
func TestSim(t *testing.T) {
	statesim.Run(t, simHarness(redisstate.NewInt64SumStore, monoid.Sum[int64]{}, "testdata/sim.seeds", 8*time.Second))
}

// TestSimMax simulates the Int64MaxStore as TestSim does the sum store.
func TestSimMax(t *testing.T) {
	statesim.Run(t, simHarness(redisstate.NewInt64MaxStore, monoid.Max[int64]{}, "testdata/sim-max.seeds", 3*time.Second))
}

// simHarness is the simulation's harness of the stores newStore opens.
func simHarness[S state.Store[int64]](newStore func(goredis.UniversalClient, string, ...redisstate.StoreOption) (S, error), m monoid.Monoid[int64], corpus string, budget time.Duration) statesim.Harness {
	b := miniBackend
	client := func(t *testing.T) goredis.UniversalClient {
		return closeWith(t, goredis.NewClient(&goredis.Options{Addr: miniFor(t).Addr(), Dialer: simNetFor(t).Dial}))
	}
	open := func(ttl time.Duration) func(t *testing.T) state.Store[int64] {
		return func(t *testing.T) state.Store[int64] {
			s, err := newStore(client(t), prefixFor(t), redisstate.WithDedupTTL(ttl))
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	}
	return statesim.Harness{
		Harness: statetest.Harness[int64]{
			Open: open(simDedupTTL), Sleep: sleeper(b), FakeTime: true, DedupTTL: simDedupTTL,
			Monoid: m,
		},
		Variants: []statesim.Variant{{Name: "claims for 1h", Open: open(simVariantDedupTTL), DedupTTL: simVariantDedupTTL}},
		OpenDeduper: func(t *testing.T) state.Deduper {
			d, err := redisstate.NewDeduper(client(t), prefixFor(t), redisstate.WithDedupTTL(simDedupTTL))
			if err != nil {
				t.Fatal(err)
			}
			return d
		},
		Corrupt: func(t *testing.T, k state.Key) {
			m := b.mini(t)
			head := prefixFor(t) + ":{" + strings.NewReplacer("%", "%25", "{", "%7B", "}", "%7D").Replace(k.Entity) + "}:"
			for _, key := range m.Keys() {
				kind, bucket, ok := strings.Cut(strings.TrimPrefix(key, head), ":")
				if strings.HasPrefix(key, head) && ok && bucket == strconv.FormatInt(k.Bucket, 10) && !strings.Contains(kind, ":") {
					if err := m.Set(key, "12abc"); err != nil {
						t.Fatal(err)
					}
					return
				}
			}
			t.Fatalf("no value key of %v in %v", k, m.Keys())
		},
		Faults: &statesim.Faults{
			// Every write the simulation loses is a script, but Release's DEL.
			LoseReply: func(t *testing.T) {
				n := simNetFor(t)
				n.armed = n.Dropped()
				script, del := faults.Contains("evalsha"), faults.Contains("\r\ndel\r\n")
				n.DropReply(func(req []byte) bool { return script(req) || del(req) })
			},
			Disarm: func(t *testing.T) bool {
				n := simNetFor(t)
				n.Disarm()
				return n.Dropped() > n.armed
			},
		},
		Corpus: corpus,
		Budget: budget,
	}
}

// simNet is a simulation run's network to its miniredis, whose replies the
// simulation drops (Harness.Faults), and how many it had dropped when a fault
// was armed.
type simNet struct {
	*faults.Net
	armed int
}

var simNets sync.Map // t.Name() -> *simNet

func simNetFor(t *testing.T) *simNet {
	n, loaded := simNets.LoadOrStore(t.Name(), &simNet{Net: faults.NewNet()})
	if !loaded {
		t.Cleanup(func() { simNets.Delete(t.Name()) })
	}
	return n.(*simNet)
}
