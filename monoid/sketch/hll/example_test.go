package hll_test

import (
	"context"
	"fmt"
	"log"
	"math"

	"github.com/pipestate/pipestate/monoid/sketch/hll"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/memstate"
)

// Two workers each build a delta of the users they saw; the union counts a user
// seen by both once. Small sets are counted exactly (the sketch stays sparse).
func Example() {
	m, err := hll.New(hll.DefaultPrecision)
	if err != nil {
		log.Fatal(err)
	}
	a := m.Delta("alice", "bob", "carol")
	b := m.Delta("bob", "dave")

	union, err := m.TryCombine(a, b)
	if err != nil {
		log.Fatal(err)
	}
	n, err := hll.Estimate(union)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("distinct users:", n)

	// Merging in another order, or merging a delta again, gives the same registers.
	again, _ := m.TryCombine(m.Combine(b, a), b)
	same, _ := hll.Equal(union, again)
	fmt.Println("same sketch:", same)
	// Output:
	// distinct users: 4
	// same sketch: true
}

// Large sets are estimated: at DefaultPrecision the standard error is about 0.8%,
// whatever the number of items, in at most 16 KiB.
func ExampleEstimate() {
	m, _ := hll.New(hll.DefaultPrecision)
	var acc []byte
	const workers, perWorker = 5, 10_000
	for w := range workers {
		items := make([]string, perWorker)
		for i := range items {
			items[i] = fmt.Sprintf("user-%d", w*perWorker+i)
		}
		acc = m.Combine(acc, m.Delta(items...))
	}
	n, err := hll.Estimate(acc)
	if err != nil {
		log.Fatal(err)
	}
	const exact = workers * perWorker
	stdErr := m.StandardError()
	fmt.Printf("within 3 standard errors of %d: %v\n", exact, math.Abs(float64(n)-exact) <= 3*stdErr*exact)
	fmt.Println("at most 16 KiB:", len(acc) <= 16<<10+64)
	// Output:
	// within 3 standard errors of 50000: true
	// at most 16 KiB: true
}

// A sketch in a state store: workers merge deltas, and a reader estimates the total.
// Any state.Store[[]byte] works the same (state/redisstate.BytesStore,
// state/ddbstate.BytesStore).
func ExampleMonoid_Delta() {
	ctx := context.Background()
	m, _ := hll.New(hll.DefaultPrecision)
	visitors, err := memstate.New[[]byte](m)
	if err != nil {
		log.Fatal(err)
	}
	defer visitors.Close()

	today := state.Key{Entity: "site", Bucket: 20261121}
	for _, user := range []string{"alice", "bob", "alice", "carol", "bob"} {
		if err := visitors.MergeUpdate(ctx, today, m.Delta(user), 0); err != nil {
			log.Fatal(err)
		}
	}
	b, _, err := visitors.Get(ctx, today)
	if err != nil {
		log.Fatal(err)
	}
	n, _ := hll.Estimate(b)
	fmt.Println("unique visitors:", n)
	// Output:
	// unique visitors: 3
}
