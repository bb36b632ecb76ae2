package memstate_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pipestate/pipestate/internal/testkit/fakeclock"
	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/monoid/sketch/hll"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/internal/storetest"
	"github.com/pipestate/pipestate/state/memstate"
	"github.com/pipestate/pipestate/state/statetest"
)

// perTest keeps one clock and one root per test name, so stores opened within a
// test share data and tests never do.
type perTest[R any] struct {
	mu    sync.Mutex
	roots map[string]R
}

func (p *perTest[R]) get(t *testing.T, open func(now func() time.Time) R) (R, *fakeclock.Clock) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.roots == nil {
		p.roots = map[string]R{}
	}
	c := clockFor(t)
	if _, ok := p.roots[t.Name()]; !ok {
		p.roots[t.Name()] = open(c.Now)
	}
	return p.roots[t.Name()], c
}

// clocks are the tests' fake clocks, one per test: its stores and dedupers
// share it.
var clocks sync.Map // t.Name() -> *fakeclock.Clock

func clockFor(t *testing.T) *fakeclock.Clock {
	c, loaded := clocks.LoadOrStore(t.Name(), fakeclock.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
	if !loaded {
		t.Cleanup(func() { clocks.Delete(t.Name()) })
	}
	return c.(*fakeclock.Clock)
}

// dedupTTL is the claim TTL of the harness's stores: not the default, so the suite
// sees that the option is honoured.
const dedupTTL = 5 * time.Hour

// storeHarness returns a statetest harness over memory stores with fake clocks.
func storeHarness[V any](m monoid.Monoid[V], delta func(int) V, eq func(a, b V) bool) statetest.Harness[V] {
	var p perTest[*memstate.Store[V]]
	open := func(t *testing.T) *memstate.Store[V] {
		root, _ := p.get(t, func(now func() time.Time) *memstate.Store[V] {
			s, err := memstate.New(m, memstate.WithClock(now), memstate.WithDedupTTL(dedupTTL))
			if err != nil {
				t.Fatalf("memstate.New: %v", err)
			}
			return s
		})
		return root.NewHandle()
	}
	return statetest.Harness[V]{
		Open:     func(t *testing.T) state.Store[V] { return open(t) },
		Sleep:    func(t *testing.T, d time.Duration) { clockFor(t).Advance(d) },
		Monoid:   m,
		Delta:    delta,
		Equal:    eq,
		DedupTTL: dedupTTL,
		FakeTime: true,
	}
}

func deduperHarness(ttl time.Duration) statetest.DeduperHarness {
	var p perTest[*memstate.Deduper]
	return statetest.DeduperHarness{
		Open: func(t *testing.T) state.Deduper {
			root, _ := p.get(t, func(now func() time.Time) *memstate.Deduper {
				d, err := memstate.NewDeduper(memstate.WithClock(now), memstate.WithDedupTTL(ttl))
				if err != nil {
					t.Fatalf("memstate.NewDeduper: %v", err)
				}
				return d
			})
			return root.NewHandle()
		},
		Sleep:    func(t *testing.T, d time.Duration) { clockFor(t).Advance(d) },
		TTL:      ttl,
		FakeTime: true,
	}
}

func eq[V comparable](a, b V) bool { return a == b }

// signed returns deltas that go down as well as up (1, 2, -3, 4, 5, -6, ...).
func signed[V int64 | float64](offset V) func(int) V {
	return func(i int) V {
		d := V(i) + offset
		if i%3 == 2 {
			return -d
		}
		return d
	}
}

// TestConformance runs the statetest suite on every store kind and the deduper.
func TestConformance(t *testing.T) {
	t.Run("int64 sum", func(t *testing.T) {
		statetest.RunStore(t, storeHarness[int64](monoid.Sum[int64]{}, signed[int64](1), eq))
	})
	t.Run("float64 sum", func(t *testing.T) {
		statetest.RunStore(t, storeHarness[float64](monoid.Sum[float64]{}, signed(0.5), eq))
	})
	t.Run("int64 max", func(t *testing.T) {
		statetest.RunStore(t, storeHarness[int64](monoid.Max[int64]{}, func(i int) int64 { return int64(i*7919%10007) - 5000 }, eq))
	})
	t.Run("hll bytes", func(t *testing.T) {
		m, err := hll.New(12)
		if err != nil {
			t.Fatal(err)
		}
		other, _ := hll.New(10)
		h := storeHarness[[]byte](m, func(i int) []byte { return m.Delta(fmt.Sprint("visitor-", i)) }, storetest.HLLEqual)
		h.BadDeltas = [][]byte{[]byte("garbage"), other.Delta("x")}
		h.Sketch = storetest.HLLSketch(m)
		statetest.RunStore(t, h)
	})
	t.Run("deduper", func(t *testing.T) { statetest.RunDeduper(t, deduperHarness(time.Minute)) })
	t.Run("deduper without ttl", func(t *testing.T) { statetest.RunDeduper(t, deduperHarness(0)) })
}
