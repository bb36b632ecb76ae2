package state_test

import (
	"context"
	"fmt"
	"time"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/monoid/sketch/hll"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/memory"
)

func Example() {
	ctx := context.Background()
	var sum monoid.Sum[int64]
	views, _ := memory.New[int64](sum)
	defer views.Close()

	hour := state.Tumbling(time.Hour)
	start := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	for i := range 5 { // five page views, 40 minutes apart
		k, _ := hour.Key("page:/home", start.Add(time.Duration(i)*40*time.Minute))
		_ = views.MergeUpdate(ctx, k, 1, 0)
	}
	// The hourly buckets overlapping 09:00..10:59: 09:00, 09:40 and 10:20.
	total, _ := state.ReadRange[int64](ctx, views, sum, "page:/home", hour, start, start.Add(119*time.Minute))
	fmt.Println("views from 09:00 to 10:59:", total)
	// Output: views from 09:00 to 10:59: 3
}

func ExampleOnceStore() {
	ctx := context.Background()
	visitors, _ := hll.New(hll.DefaultPrecision)
	store, _ := memory.New[[]byte](visitors)
	k := state.Key{Entity: "site:unique-visitors"}
	// Every event is delivered twice; each is applied once.
	for _, ev := range []struct{ id, user string }{{"e1", "ann"}, {"e2", "bob"}, {"e1", "ann"}, {"e3", "ann"}, {"e2", "bob"}} {
		applied, _ := store.MergeUpdateOnce(ctx, ev.id, k, visitors.Delta(ev.user), 0)
		fmt.Println(ev.id, "applied:", applied)
	}
	b, _, _ := store.Get(ctx, k)
	n, _ := hll.Estimate(b)
	fmt.Println("unique visitors:", n)
	// Output:
	// e1 applied: true
	// e2 applied: true
	// e1 applied: false
	// e3 applied: true
	// e2 applied: false
	// unique visitors: 2
}

func ExampleCoalescer() {
	ctx := context.Background()
	var count monoid.Count
	store, _ := memory.New[int64](count)
	c, _ := state.NewCoalescer[int64](store, count, state.WithFlushInterval(0))
	for range 1000 {
		_ = c.Add(ctx, state.Key{Entity: "clicks"}, 1)
	}
	_ = c.Close(ctx) // flushes: one write for 1000 deltas
	v, _, _ := store.Get(ctx, state.Key{Entity: "clicks"})
	fmt.Println(v, "clicks,", c.Stats().Writes, "store write")
	// Output: 1000 clicks, 1 store write
}

func ExampleSharded() {
	ctx := context.Background()
	var sum monoid.Sum[int64]
	store, _ := memory.New[int64](sum)
	hot, _ := state.NewSharded[int64](store, sum, 8)
	for range 100 {
		_ = hot.MergeUpdate(ctx, state.Key{Entity: "celebrity:likes"}, 1, 0)
	}
	v, _, _ := hot.Get(ctx, state.Key{Entity: "celebrity:likes"})
	fmt.Println(v)
	// Output: 100
}
