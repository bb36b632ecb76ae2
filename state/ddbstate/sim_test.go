package ddbstate_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/ddbstate"
	"github.com/pipestate/pipestate/state/statetest"
	"github.com/pipestate/pipestate/state/statetest/statesim"
)

// TestSim simulates the Int64SumStore on DynamoDB Local with the stores'
// clock option, a sweeper (DynamoDB's TTL deletes, at random delays after
// expiry), raw corrupt values, a variant whose claims live an hour and a
// Deduper.
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
			s, err := newStore(testenv.DynamoDBClient(t), e.values, ddbstate.WithClock(e.clock.Now),
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
			d, err := ddbstate.NewDeduper(testenv.DynamoDBClient(t), e.dedup, ddbstate.WithClock(e.clock.Now), ddbstate.WithDedupTTL(5*time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			return d
		},
		Sweep:   sweep,
		Corrupt: corruptValue,
		Ops:     30, // DynamoDB Local takes up to 300 ms a write
	}
}

// sweep deletes, as DynamoDB's TTL sweeper would, every item of t's value and
// claim tables whose ttl attribute has passed on t's clock.
func sweep(t *testing.T) {
	e := envFor(t)
	c := testenv.DynamoDBClient(t)
	now := e.clock.Now().Unix()
	for _, table := range []string{e.values, e.dedup} {
		out, err := c.Scan(t.Context(), &ddb.ScanInput{TableName: &table})
		if err != nil {
			t.Fatalf("sweep: %v", err)
		}
		for _, it := range out.Items {
			ttl, ok := it["ttl"].(*ddbtypes.AttributeValueMemberN)
			if !ok {
				continue
			}
			if at, err := strconv.ParseInt(ttl.Value, 10, 64); err != nil || at > now {
				continue
			}
			key := map[string]ddbtypes.AttributeValue{"pk": it["pk"]}
			if sk, ok := it["sk"]; ok {
				key["sk"] = sk
			}
			if _, err := c.DeleteItem(t.Context(), &ddb.DeleteItemInput{TableName: &table, Key: key}); err != nil {
				t.Fatalf("sweep: %v", err)
			}
		}
	}
}

// corruptValue writes k's v attribute as a string, by hand, with no ttl.
func corruptValue(t *testing.T, k state.Key) {
	e := envFor(t)
	c := testenv.DynamoDBClient(t)
	out, err := c.Scan(t.Context(), &ddb.ScanInput{TableName: &e.values})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range out.Items {
		pk, _ := it["pk"].(*ddbtypes.AttributeValueMemberS)
		sk, _ := it["sk"].(*ddbtypes.AttributeValueMemberN)
		if pk != nil && sk != nil && strings.HasSuffix(pk.Value, "#"+k.Entity) && sk.Value == strconv.FormatInt(k.Bucket, 10) {
			it["v"] = &ddbtypes.AttributeValueMemberS{Value: "written by hand"}
			delete(it, "ttl")
			if _, err := c.PutItem(t.Context(), &ddb.PutItemInput{TableName: &e.values, Item: it}); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no item of %v", k)
}
