package state_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/memstate"
)

// BenchmarkCoalescer ingests deltas spread at random over 10,000 keys into a memory
// store, flushing every 100,000 deltas (as an interval flush would); it reports
// deltas/s and the store writes/s that reach the store.
func BenchmarkCoalescer(b *testing.B) {
	const keys = 10_000
	var sum monoid.Sum[int64]
	store, _ := memstate.New[int64](sum)
	c, err := state.NewCoalescer[int64](store, sum, state.WithFlushInterval(0), state.WithMaxKeys(keys))
	if err != nil {
		b.Fatal(err)
	}
	ks := make([]state.Key, keys)
	for i := range ks {
		ks[i] = state.Key{Entity: fmt.Sprint("page-", i)}
	}
	ctx := b.Context()
	b.ReportAllocs()
	r := rand.New(rand.NewPCG(1, 2))
	i := 0
	for b.Loop() {
		if err := c.Add(ctx, ks[r.IntN(keys)], 1); err != nil {
			b.Fatal(err)
		}
		if i++; i%100_000 == 0 {
			if err := c.Flush(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := c.Close(ctx); err != nil {
		b.Fatal(err)
	}
	s := c.Stats()
	b.ReportMetric(float64(s.Deltas)/b.Elapsed().Seconds(), "deltas/s")
	b.ReportMetric(float64(s.Writes)/b.Elapsed().Seconds(), "writes/s")
	b.ReportMetric(float64(s.Deltas)/float64(max(s.Writes, 1)), "deltas/write")
}

// BenchmarkDirect is the same ingestion without a Coalescer, one write per delta.
func BenchmarkDirect(b *testing.B) {
	const keys = 10_000
	var sum monoid.Sum[int64]
	store, _ := memstate.New[int64](sum)
	ks := make([]state.Key, keys)
	for i := range ks {
		ks[i] = state.Key{Entity: fmt.Sprint("page-", i)}
	}
	ctx := b.Context()
	i := 0
	for b.Loop() {
		if err := store.MergeUpdate(ctx, ks[i%keys], 1, 0); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deltas/s")
}
