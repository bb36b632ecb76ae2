package dynamodb_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/pipestate/pipestate/internal/testenv"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/dynamodb"
	"github.com/pipestate/pipestate/state/internal/storetest"
)

// TestRoundTrips holds the round-trip budgets of the package doc's table, counted as
// HTTP requests.
func TestRoundTrips(t *testing.T) {
	e := envFor(t)
	hc, n := testenv.CountingHTTPClient()
	var units testenv.Capacity
	c := testenv.DynamoDBClient(t, func(o *ddb.Options) { o.HTTPClient = hc }, units.Option())
	opts := []dynamodb.StoreOption{dynamodb.WithClock(e.clock.Now), dynamodb.WithDedupTable(e.dedup)}
	sum, err1 := dynamodb.NewInt64SumStore(c, e.values, opts...)
	max, err2 := dynamodb.NewInt64MaxStore(c, e.values, opts...)
	bs, err3 := dynamodb.NewBytesStore(c, e.bytes, storetest.Counter{}, opts...)
	dd, err4 := dynamodb.NewDeduper(c, e.dedup, dynamodb.WithClock(e.clock.Now))
	for _, err := range []error{err1, err2, err3, err4} {
		if err != nil {
			t.Fatal(err)
		}
	}
	keys := func(n, distinct int) []state.Key {
		ks := make([]state.Key, n)
		for i := range ks {
			ks[i] = state.Key{Entity: fmt.Sprint("e", i%distinct)}
		}
		return ks
	}
	seq := 0
	id := func() string { seq++; return fmt.Sprint("ev", seq) }
	// expire writes k with a ttl and moves the clock past it: DynamoDB keeps the item.
	expire := func(ctx context.Context, k state.Key) error {
		if err := sum.MergeUpdate(ctx, k, 5, time.Hour); err != nil {
			return err
		}
		e.clock.Advance(2 * time.Hour)
		return nil
	}
	k := state.Key{Entity: "k", Bucket: 1}
	cases := []struct {
		name  string
		setup func(ctx context.Context) error
		want  int64
		op    func(ctx context.Context) error
	}{
		{"sum merge", nil, 1, func(ctx context.Context) error { return sum.MergeUpdate(ctx, state.Key{Entity: "s"}, 1, time.Hour) }},
		{"sum merge expired", func(ctx context.Context) error { return expire(ctx, state.Key{Entity: "x1"}) }, 2,
			func(ctx context.Context) error { return sum.MergeUpdate(ctx, state.Key{Entity: "x1"}, 1, 0) }},
		{"sum once", nil, 1, func(ctx context.Context) error { _, err := sum.MergeUpdateOnce(ctx, id(), k, 1, 0); return err }},
		{"sum once expired", func(ctx context.Context) error { return expire(ctx, state.Key{Entity: "x2"}) }, 2,
			func(ctx context.Context) error {
				_, err := sum.MergeUpdateOnce(ctx, id(), state.Key{Entity: "x2"}, 1, 0)
				return err
			}},
		{"get", nil, 1, func(ctx context.Context) error { _, _, err := sum.Get(ctx, k); return err }},
		{"get many 250", nil, 3, func(ctx context.Context) error { _, _, err := sum.GetMany(ctx, keys(250, 250)); return err }},
		{"get many duplicates", nil, 2, func(ctx context.Context) error { _, _, err := sum.GetMany(ctx, keys(300, 150)); return err }},
		{"get many empty", nil, 0, func(ctx context.Context) error { _, _, err := sum.GetMany(ctx, nil); return err }},
		{"max rises", nil, 1, func(ctx context.Context) error { return max.MergeUpdate(ctx, state.Key{Entity: "m1"}, 10, 0) }},
		{"max stays", nil, 1, func(ctx context.Context) error { return max.MergeUpdate(ctx, state.Key{Entity: "m1"}, 3, 0) }},
		{"max stays ttl", nil, 2, func(ctx context.Context) error { return max.MergeUpdate(ctx, state.Key{Entity: "m1"}, 3, time.Hour) }},
		{"bytes merge", nil, 2, func(ctx context.Context) error { return bs.MergeUpdate(ctx, k, storetest.Counter{}.Of(1), 0) }},
		{"bytes once", nil, 2, func(ctx context.Context) error {
			_, err := bs.MergeUpdateOnce(ctx, id(), k, storetest.Counter{}.Of(1), 0)
			return err
		}},
		{"mark seen", nil, 1, func(ctx context.Context) error { _, err := dd.MarkSeen(ctx, id()); return err }},
		{"release", nil, 1, func(ctx context.Context) error { return dd.Release(ctx, "x") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				if err := tc.setup(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
			n.Reset()
			units.Reset()
			if err := tc.op(t.Context()); err != nil {
				t.Fatal(err)
			}
			if got := n.Load(); got != tc.want {
				t.Errorf("%d round trips, want %d", got, tc.want)
			}
			budget, ok := capacityBudget[tc.name]
			switch got := units.Load(); {
			case !ok:
				t.Errorf("no capacity budget (it consumed %v units)", got)
			case got > budget:
				t.Errorf("%v capacity units, budget %v", got, budget)
			}
		})
	}
}

// capacityBudget is the capacity units each case of TestRoundTrips consumes on
// DynamoDB Local (ReturnConsumedCapacity TOTAL): a case that consumes more
// fails. Local reports a transaction at 2 units per item and a refused
// conditional write, or a read of keys that do not exist, at 0 (AWS charges
// those at least 1 unit).
var capacityBudget = map[string]float64{
	"sum merge":           1,
	"sum merge expired":   1,
	"sum once":            8,
	"sum once expired":    8,
	"get":                 1,
	"get many 250":        0,
	"get many duplicates": 0,
	"get many empty":      0,
	"max rises":           1,
	"max stays":           0,
	"max stays ttl":       1,
	"bytes merge":         2,
	"bytes once":          9,
	"mark seen":           1,
	"release":             1,
}
