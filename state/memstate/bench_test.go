package memstate_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/monoid/sketch/hll"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/memstate"
)

func BenchmarkInt64SumMergeUpdate(b *testing.B) {
	s, _ := memstate.New[int64](monoid.Sum[int64]{})
	ctx, k := b.Context(), state.Key{Entity: "counter"}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.MergeUpdate(ctx, k, 1, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkInt64MaxMergeUpdateParallel(b *testing.B) {
	s, _ := memstate.New[int64](monoid.Max[int64]{})
	ctx := b.Context()
	var n atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		k := state.Key{Entity: fmt.Sprint("k", n.Add(1)%8)}
		for pb.Next() {
			if err := s.MergeUpdate(ctx, k, n.Add(1), 0); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkMergeUpdateOnce(b *testing.B) {
	s, _ := memstate.New[int64](monoid.Sum[int64]{})
	ctx, k := b.Context(), state.Key{Entity: "counter"}
	i := 0
	for b.Loop() {
		i++
		if _, err := s.MergeUpdateOnce(ctx, fmt.Sprint("evt-", i), k, 1, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGetMany1000(b *testing.B) {
	s, _ := memstate.New[int64](monoid.Sum[int64]{})
	ctx := b.Context()
	ks := make([]state.Key, 1000)
	for i := range ks {
		ks[i] = state.Key{Entity: fmt.Sprint("k", i)}
		_ = s.MergeUpdate(ctx, ks[i], 1, 0)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := s.GetMany(ctx, ks); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDeduperMarkSeen(b *testing.B) {
	d, _ := memstate.NewDeduper()
	ctx := b.Context()
	i := 0
	for b.Loop() {
		i++
		if _, err := d.MarkSeen(ctx, fmt.Sprint("evt-", i)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHLLBytesStore merges single-item HLL deltas into one hot key from 1, 4
// and 16 concurrent writers.
func BenchmarkHLLBytesStore(b *testing.B) {
	m, _ := hll.New(hll.DefaultPrecision)
	for _, writers := range []int{1, 4, 16} {
		b.Run(fmt.Sprint("writers=", writers), func(b *testing.B) {
			s, _ := memstate.New[[]byte](m)
			ctx, k := b.Context(), state.Key{Entity: "visitors"}
			deltas := make([][]byte, 1024)
			for i := range deltas {
				deltas[i] = m.Delta(fmt.Sprint("user-", i))
			}
			var n atomic.Int64
			b.SetParallelism(writers) // writers * GOMAXPROCS goroutines
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := s.MergeUpdate(ctx, k, deltas[n.Add(1)%1024], 0); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "merges/s")
		})
	}
}
