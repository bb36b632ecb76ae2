package state_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/monoid/sketch/hll"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/memstate"
)

// A counter: many workers add deltas with MergeUpdate; Get reads the total.
func ExampleStore() {
	ctx := context.Background()
	views, err := memstate.New[int64](monoid.Sum[int64]{})
	if err != nil {
		log.Fatal(err)
	}
	defer views.Close()

	home := state.Key{Entity: "page:/home"}
	for _, delta := range []int64{1, 1, 3} {
		if err := views.MergeUpdate(ctx, home, delta, 0); err != nil { // ttl 0: no expiry
			log.Fatal(err)
		}
	}
	n, found, err := views.Get(ctx, home)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(n, found)

	_, found, _ = views.Get(ctx, state.Key{Entity: "page:/never-seen"})
	fmt.Println(found)
	// Output:
	// 5 true
	// false
}

// An exactly-once merge: a redelivered event (same ID) is not applied again,
// because claiming the ID and merging happen in one atomic step.
func ExampleOnceStore() {
	ctx := context.Background()
	views, err := memstate.New[int64](monoid.Sum[int64]{})
	if err != nil {
		log.Fatal(err)
	}
	defer views.Close()

	var store state.OnceStore[int64] = views
	k := state.Key{Entity: "page:/home"}
	for range 2 { // the queue delivers event evt-1 twice
		applied, err := store.MergeUpdateOnce(ctx, "evt-1", k, 1, time.Hour)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("applied:", applied)
	}
	n, _, _ := store.Get(ctx, k)
	fmt.Println("views:", n)
	// Output:
	// applied: true
	// applied: false
	// views: 1
}

// Views per one-minute window, then the total of a range of windows with one read.
func ExampleReadRange() {
	ctx := context.Background()
	views, err := memstate.New[int64](monoid.Sum[int64]{})
	if err != nil {
		log.Fatal(err)
	}
	defer views.Close()

	perMinute := state.Tumbling(time.Minute)
	t0 := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for _, offset := range []time.Duration{0, 10 * time.Second, 70 * time.Second, 5 * time.Minute} {
		k, err := perMinute.Key("page:/home", t0.Add(offset))
		if err != nil {
			log.Fatal(err)
		}
		if err := views.MergeUpdate(ctx, k, 1, 48*time.Hour); err != nil {
			log.Fatal(err)
		}
	}

	first, _ := perMinute.Key("page:/home", t0)
	n, _, _ := views.Get(ctx, first)
	fmt.Println("12:00 window:", n)

	// The closed interval [12:00, 12:02) covers the windows 12:00 and 12:01.
	sum, err := state.ReadRange(ctx, views, monoid.Sum[int64]{}, "page:/home", perMinute,
		t0, t0.Add(2*time.Minute-time.Nanosecond))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("12:00-12:02:", sum)

	sum, _ = state.ReadRange(ctx, views, monoid.Sum[int64]{}, "page:/home", perMinute,
		t0, t0.Add(time.Hour-time.Nanosecond))
	fmt.Println("12:00-13:00:", sum)
	// Output:
	// 12:00 window: 2
	// 12:00-12:02: 3
	// 12:00-13:00: 4
}

// A Coalescer in front of a store combines a hot key's deltas in memory and writes
// each key once per flush.
func ExampleCoalescer() {
	ctx := context.Background()
	views, err := memstate.New[int64](monoid.Sum[int64]{})
	if err != nil {
		log.Fatal(err)
	}
	defer views.Close()

	// No background flush here, so the example is deterministic: Flush and Close
	// write what is buffered.
	front, err := state.NewCoalescer(views, monoid.Sum[int64]{}, state.WithFlushInterval(0))
	if err != nil {
		log.Fatal(err)
	}
	home, cart := state.Key{Entity: "page:/home"}, state.Key{Entity: "page:/cart"}
	for i := range 1000 {
		k := home
		if i%4 == 0 {
			k = cart
		}
		if err := front.Add(ctx, k, 1); err != nil {
			log.Fatal(err)
		}
	}
	_, found, _ := views.Get(ctx, home)
	fmt.Println("before flush, stored:", found, "buffered keys:", front.Pending())

	if err := front.Flush(ctx); err != nil {
		log.Fatal(err)
	}
	h, _, _ := views.Get(ctx, home)
	c, _, _ := views.Get(ctx, cart)
	st := front.Stats()
	fmt.Println("home:", h, "cart:", c)
	fmt.Println("deltas:", st.Deltas, "store writes:", st.Writes)

	if err := front.Close(ctx); err != nil { // flushes the rest; later Adds fail
		log.Fatal(err)
	}
	// Output:
	// before flush, stored: false buffered keys: 2
	// home: 750 cart: 250
	// deltas: 1000 store writes: 2
}

// Exactly-once into a sketch: every event is delivered twice and applied once.
// (A sketch union would absorb a repeated user anyway; the claim also keeps a
// redelivery from writing at all.)
func ExampleOnceStore_sketch() {
	ctx := context.Background()
	visitors, err := hll.New(hll.DefaultPrecision)
	if err != nil {
		log.Fatal(err)
	}
	store, err := memstate.New[[]byte](visitors)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	k := state.Key{Entity: "site:unique-visitors"}
	for _, ev := range []struct{ id, user string }{{"e1", "ann"}, {"e2", "bob"}, {"e1", "ann"}, {"e3", "ann"}, {"e2", "bob"}} {
		applied, err := store.MergeUpdateOnce(ctx, ev.id, k, visitors.Delta(ev.user), 0)
		if err != nil {
			log.Fatal(err)
		}
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

// A hot key spread over 8 sub-keys: writes land on one shard at random, reads merge
// all shards with one GetMany.
func ExampleSharded() {
	ctx := context.Background()
	var sum monoid.Sum[int64]
	store, err := memstate.New[int64](sum)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	hot, err := state.NewSharded[int64](store, sum, 8)
	if err != nil {
		log.Fatal(err)
	}
	for range 100 {
		if err := hot.MergeUpdate(ctx, state.Key{Entity: "celebrity:likes"}, 1, 0); err != nil {
			log.Fatal(err)
		}
	}
	v, _, _ := hot.Get(ctx, state.Key{Entity: "celebrity:likes"})
	fmt.Println(v)
	// Output: 100
}
