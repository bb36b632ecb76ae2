package benchpair_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipestate/pipestate/internal/testkit/benchpair"
)

// sinks keeps each worker's allocations on the heap.
var sinks [4][]byte

// TestRun checks what a paired benchmark reports: each i called once per variant,
// the library's time and allocations apart from the raw code's, and their ratio.
func TestRun(t *testing.T) {
	for _, workers := range []int{1, 4} {
		var mu sync.Mutex
		seen := map[[2]int]int{} // {variant, i} -> calls
		n := 0
		call := func(variant, i int) {
			mu.Lock()
			seen[[2]int{variant, i}]++
			mu.Unlock()
		}
		res := testing.Benchmark(func(b *testing.B) {
			clear(seen)
			n = b.N
			benchpair.RunParallel(b, workers, func(w, i int) error {
				call(0, i)
				time.Sleep(2 * time.Millisecond)
				for range 3 {
					sinks[w] = make([]byte, 64)
				}
				return nil
			}, func(w, i int) error {
				call(1, i)
				time.Sleep(time.Millisecond)
				sinks[w] = make([]byte, 64)
				return nil
			})
		})
		for v := range 2 {
			for i := range n {
				if c := seen[[2]int{v, i}]; c != 1 {
					t.Fatalf("workers %d: variant %d call %d made %d times (b.N = %d)", workers, v, i, c, n)
				}
			}
		}
		if len(seen) != 2*n {
			t.Errorf("workers %d: %d calls, want %d", workers, len(seen), 2*n)
		}
		if r := res.Extra["ratio"]; r < 1.4 || r > 2.6 {
			t.Errorf("workers %d: ratio %.2f of a 2 ms call to a 1 ms one, want about 2", workers, r)
		}
		if lo, hi := res.Extra["ratio-p25"], res.Extra["ratio-p75"]; lo > res.Extra["ratio"] || hi < res.Extra["ratio"] {
			t.Errorf("workers %d: ratio %.2f outside its p25–p75 %.2f–%.2f", workers, res.Extra["ratio"], lo, hi)
		}
		if a, r := res.Extra["allocs/op"], res.Extra["raw-allocs/op"]; a < 2.5 || a > 4 || r < 0.5 || r > 2 {
			t.Errorf("workers %d: allocs/op %.2f and raw-allocs/op %.2f, want about 3 and 1", workers, a, r)
		}
		if ns := res.Extra["ns/op"]; workers == 1 && (ns < 2e6 || ns > 4e6) {
			t.Errorf("ns/op %.0f for a 2 ms call", ns)
		}
	}
}

// TestMeter: a meter's growth is reported per call of each variant, apart.
func TestMeter(t *testing.T) {
	var units atomic.Int64 // the library adds 3 per call, the raw code 1
	res := testing.Benchmark(func(b *testing.B) {
		benchpair.RunParallel(b, 4, func(int, int) error { units.Add(3); return nil },
			func(int, int) error { units.Add(1); return nil },
			benchpair.Meter{Unit: "units", Read: func() (float64, error) { return float64(units.Load()), nil }})
	})
	if l, r := res.Extra["units/op"], res.Extra["raw-units/op"]; l != 3 || r != 1 {
		t.Errorf("units/op %v, raw-units/op %v; want 3 and 1", l, r)
	}
}
