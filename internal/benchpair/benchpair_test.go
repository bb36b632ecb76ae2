package benchpair_test

import (
	"sync"
	"testing"
	"time"

	"github.com/pipestate/pipestate/internal/benchpair"
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
