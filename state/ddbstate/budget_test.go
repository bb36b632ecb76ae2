package ddbstate_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/ddbstate"
	"github.com/pipestate/pipestate/state/internal/storetest"
	"github.com/pipestate/pipestate/types"
)

// TestRoundTrips holds the round-trip budgets of the package doc's table, counted as
// HTTP requests.
func TestRoundTrips(t *testing.T) {
	e := envFor(t)
	hc, n := testenv.CountingHTTPClient()
	var units testenv.Capacity
	c := testenv.DynamoDBClient(t, func(o *ddb.Options) { o.HTTPClient = hc }, units.Option())
	opts := []ddbstate.StoreOption{ddbstate.WithClock(e.clock.Now), ddbstate.WithDedupTable(e.dedup)}
	sum, err1 := ddbstate.NewInt64SumStore(c, e.values, opts...)
	max, err2 := ddbstate.NewInt64MaxStore(c, e.values, opts...)
	bs, err3 := ddbstate.NewBytesStore(c, e.bytes, storetest.Counter{}, opts...)
	dd, err4 := ddbstate.NewDeduper(c, e.dedup, ddbstate.WithClock(e.clock.Now))
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
	// fenced is s seen by a lease of key "job" with fence f.
	fsum := func(f int64) state.OnceStore[int64] { return fencedOnce[int64](t, sum, f) }
	fmax := func(f int64) state.OnceStore[int64] { return fencedOnce[int64](t, max, f) }
	fbs := func(f int64) state.OnceStore[[]byte] { return fencedOnce[[]byte](t, bs, f) }
	refused := func(err error) error {
		if !errors.Is(err, state.ErrFenced) {
			return fmt.Errorf("err %v, want ErrFenced", err)
		}
		return nil
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
		// Fenced merges (state.Fenced): the round trips of unfenced ones.
		{"sum merge fenced", nil, 1, func(ctx context.Context) error {
			return fsum(2).MergeUpdate(ctx, state.Key{Entity: "fs"}, 1, time.Hour)
		}},
		{"sum merge fenced refused", nil, 1, func(ctx context.Context) error {
			return refused(fsum(1).MergeUpdate(ctx, state.Key{Entity: "fs"}, 1, time.Hour))
		}},
		{"sum merge fenced expired", func(ctx context.Context) error { return expire(ctx, state.Key{Entity: "x3"}) }, 2,
			func(ctx context.Context) error { return fsum(2).MergeUpdate(ctx, state.Key{Entity: "x3"}, 1, 0) }},
		{"sum once fenced", nil, 1, func(ctx context.Context) error { _, err := fsum(2).MergeUpdateOnce(ctx, id(), k, 1, 0); return err }},
		{"sum once fenced refused", nil, 1, func(ctx context.Context) error {
			_, err := fsum(1).MergeUpdateOnce(ctx, id(), k, 1, 0)
			return refused(err)
		}},
		{"max rises fenced", nil, 1, func(ctx context.Context) error { return fmax(2).MergeUpdate(ctx, state.Key{Entity: "fm"}, 10, 0) }},
		{"max stays fenced", nil, 1, func(ctx context.Context) error { return fmax(2).MergeUpdate(ctx, state.Key{Entity: "fm"}, 3, 0) }},
		{"max stays fenced first", nil, 2, func(ctx context.Context) error { return fmax(3).MergeUpdate(ctx, state.Key{Entity: "fm"}, 3, 0) }},
		{"bytes merge fenced", nil, 2, func(ctx context.Context) error { return fbs(2).MergeUpdate(ctx, k, storetest.Counter{}.Of(1), 0) }},
		{"bytes merge fenced refused", nil, 1, func(ctx context.Context) error {
			return refused(fbs(1).MergeUpdate(ctx, k, storetest.Counter{}.Of(1), 0))
		}},
		{"bytes once fenced", nil, 2, func(ctx context.Context) error {
			_, err := fbs(2).MergeUpdateOnce(ctx, id(), k, storetest.Counter{}.Of(1), 0)
			return err
		}},
		{"bytes once fenced refused", nil, 2, func(ctx context.Context) error {
			_, err := fbs(1).MergeUpdateOnce(ctx, id(), k, storetest.Counter{}.Of(1), 0)
			return refused(err)
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
			t.Logf("%d round trips, %v capacity units", n.Load(), units.Load())
			switch got := units.Load(); {
			case !ok:
				t.Errorf("no capacity budget (it consumed %v units)", got)
			case got > budget:
				t.Errorf("%v capacity units, budget %v", got, budget)
			}
		})
	}
}

// fencedOnce returns s seen by a lease of key "job" with fence f.
func fencedOnce[V any](t *testing.T, s state.Store[V], f int64) state.OnceStore[V] {
	t.Helper()
	fs, err := state.Fenced(s, types.Lease{Key: "job", Token: "t", Fence: f})
	if err != nil {
		t.Fatal(err)
	}
	return fs.(state.OnceStore[V])
}

// capacityBudget is the capacity units each case of TestRoundTrips consumes,
// as testenv.Capacity counts them on DynamoDB Local (AWS's figures for items up
// to 1 KB, refused conditional writes included: a max that stays costs its
// refused update): a case that consumes more fails. A read of keys that do not
// exist is reported at 0, where AWS charges at least 1 unit.
var capacityBudget = map[string]float64{
	"sum merge":           1,
	"sum merge expired":   2,
	"sum once":            8,
	"sum once expired":    12,
	"get":                 1,
	"get many 250":        0,
	"get many duplicates": 0,
	"get many empty":      0,
	"max rises":           1,
	"max stays":           1,
	"max stays ttl":       2,
	"bytes merge":         2,
	"bytes once":          9,
	// Fenced merges: what unfenced ones consume (the fence attribute adds
	// len(lease key)+4 bytes or so to the item, which changes the units only
	// across a 1 KB boundary); a refusal consumes nothing on Local (a failed
	// condition) but its read, for a BytesStore. A max that stays costs a second
	// write the first time a fence merges into the key (to remember it), where
	// unfenced with ttl 0 it writes nothing.
	"sum merge fenced":           1,
	"sum merge fenced refused":   1,
	"sum merge fenced expired":   2,
	"sum once fenced":            8,
	"sum once fenced refused":    4,
	"max rises fenced":           1,
	"max stays fenced":           1,
	"max stays fenced first":     2,
	"bytes merge fenced":         2,
	"bytes merge fenced refused": 1,
	"bytes once fenced":          9,
	"bytes once fenced refused":  5,
	"mark seen":                  1,
	"release":                    1,
}
