package redisstate_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/fence"
	"github.com/pipestate/pipestate/internal/fencectx"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/internal/storetest"
	"github.com/pipestate/pipestate/state/redisstate"
)

// TestRoundTrips holds the round-trip budgets of the package doc's table.
func TestRoundTrips(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		c := b.client(t)
		n := testenv.CountRedis(c)
		nodes := int64(1)
		if cc, ok := c.(*goredis.ClusterClient); ok {
			var masters atomic.Int64 // ForEachMaster calls concurrently
			if err := cc.ForEachMaster(t.Context(), func(context.Context, *goredis.Client) error {
				masters.Add(1)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			nodes = masters.Load()
		}
		p := prefixFor(t)
		sum, err1 := redisstate.NewInt64SumStore(c, p)
		fsum, err2 := redisstate.NewFloat64SumStore(c, p)
		max, err3 := redisstate.NewInt64MaxStore(c, p)
		bs, err4 := redisstate.NewBytesStore(c, p, storetest.Counter{})
		dd, err5 := redisstate.NewDeduper(c, p)
		for _, err := range []error{err1, err2, err3, err4, err5} {
			if err != nil {
				t.Fatal(err)
			}
		}
		k := state.Key{Entity: "k", Bucket: 1}
		many := make([]state.Key, 50)
		for i := range many {
			many[i] = state.Key{Entity: fmt.Sprint("e", i)}
		}
		batch := func(n int) []state.Update[int64] {
			ups := make([]state.Update[int64], n)
			for i := range ups {
				ups[i] = state.Update[int64]{Key: state.Key{Entity: fmt.Sprint("b", i), Bucket: 1}, Delta: 1, TTL: time.Hour}
			}
			return ups
		}
		ups1000, ups1001 := batch(state.MergeBatchSize), batch(state.MergeBatchSize+1)
		seq := 0
		id := func() string { seq++; return fmt.Sprint("ev", seq) }
		cases := []struct {
			name string
			max  int64
			op   func(ctx context.Context) error
		}{
			{"sum merge", 1, func(ctx context.Context) error { return sum.MergeUpdate(ctx, k, 1, 0) }},
			{"sum merge ttl", 1, func(ctx context.Context) error { return sum.MergeUpdate(ctx, k, 1, 1e12) }},
			{"sum once", 1, func(ctx context.Context) error { _, err := sum.MergeUpdateOnce(ctx, id(), k, 1, 0); return err }},
			{"sum get", 1, func(ctx context.Context) error { _, _, err := sum.Get(ctx, k); return err }},
			{"sum get many", nodes, func(ctx context.Context) error { _, _, err := sum.GetMany(ctx, many); return err }},
			{"get many empty", 0, func(ctx context.Context) error { _, _, err := sum.GetMany(ctx, nil); return err }},
			{"sum merge many 1000", nodes, func(ctx context.Context) error { return sum.MergeMany(ctx, ups1000) }},
			{"sum merge many 1001", 2 * nodes, func(ctx context.Context) error { return sum.MergeMany(ctx, ups1001) }},
			{"max merge many 1000", nodes, func(ctx context.Context) error { return max.MergeMany(ctx, ups1000) }},
			{"merge many empty", 0, func(ctx context.Context) error { return sum.MergeMany(ctx, nil) }},
			{"float merge", 1, func(ctx context.Context) error { return fsum.MergeUpdate(ctx, k, 0.5, 0) }},
			{"float once", 1, func(ctx context.Context) error { _, err := fsum.MergeUpdateOnce(ctx, id(), k, 1, 0); return err }},
			{"max merge", 1, func(ctx context.Context) error { return max.MergeUpdate(ctx, k, 3, 0) }},
			{"max once", 1, func(ctx context.Context) error { _, err := max.MergeUpdateOnce(ctx, id(), k, 4, 0); return err }},
			{"bytes merge", 2, func(ctx context.Context) error { return bs.MergeUpdate(ctx, k, storetest.Counter{}.Of(1), 0) }},
			{"bytes once", 2, func(ctx context.Context) error {
				_, err := bs.MergeUpdateOnce(ctx, id(), k, storetest.Counter{}.Of(1), 0)
				return err
			}},
			{"bytes get", 1, func(ctx context.Context) error { _, _, err := bs.Get(ctx, k); return err }},
			{"bytes get many", nodes, func(ctx context.Context) error { _, _, err := bs.GetMany(ctx, many); return err }},
			{"mark seen", 1, func(ctx context.Context) error { _, err := dd.MarkSeen(ctx, id()); return err }},
			{"release", 1, func(ctx context.Context) error { return dd.Release(ctx, "x") }},
		}
		// A fenced call (its context carries a fence, as state.Fenced's view
		// passes it) has the same budget: the fence is checked in the merge's
		// own script.
		for _, fenced := range []bool{false, true} {
			for _, tc := range cases {
				name := tc.name
				if fenced {
					name = "fenced " + name
				}
				t.Run(name, func(t *testing.T) {
					ctx := t.Context()
					if fenced {
						ctx = fencectx.With(ctx, fence.Token{Key: "job", Fence: 1})
					}
					// The first runs load the cluster slots and the scripts (NOSCRIPT then
					// EVAL) on every node the op's keys reach: a deduper key follows its
					// event ID, so 50 runs reach every master of a 3-master cluster but
					// with a chance of 3*(2/3)^50.
					for range 50 {
						if err := tc.op(ctx); err != nil {
							t.Fatal(err)
						}
					}
					n.Reset()
					if err := tc.op(ctx); err != nil {
						t.Fatal(err)
					}
					if got := n.Load(); got > tc.max || (tc.max > 0 && got == 0) {
						t.Errorf("%d round trips, budget %d", got, tc.max)
					}
				})
			}
		}
	})
}
