package statetest_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/statetest"
)

// floatToy is a Sum[float64] store without expiry subtleties; its flaws are those
// of a backend that gets the float contract wrong.
type floatToy struct {
	mu       *sync.Mutex
	values   map[state.Key]float64
	fences   toyFences
	places17 bool // keeps 17 decimal places, not 17 significant digits
	noRange  bool // stores sums outside the float range
	closed   bool
}

func (s *floatToy) enter(ctx context.Context) error {
	if s.closed {
		return state.ErrClosed
	}
	return ctx.Err()
}

func (s *floatToy) Get(ctx context.Context, k state.Key) (float64, bool, error) {
	vs, found, err := s.GetMany(ctx, []state.Key{k})
	if err != nil {
		return 0, false, err
	}
	return vs[0], found[0], nil
}

func (s *floatToy) GetMany(ctx context.Context, ks []state.Key) ([]float64, []bool, error) {
	if err := s.enter(ctx); err != nil {
		return nil, nil, err
	}
	if err := state.CheckKeys(ks); err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	vs, found := make([]float64, len(ks)), make([]bool, len(ks))
	for i, k := range ks {
		vs[i], found[i] = s.values[k]
	}
	return vs, found, nil
}

func (s *floatToy) MergeUpdate(ctx context.Context, k state.Key, delta float64, ttl time.Duration) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	if err := state.CheckMerge[float64](monoid.Sum[float64]{}, k, delta, ttl); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	remember, err := s.fences.admit(ctx, fmt.Sprint(k), flaws{})
	if err != nil {
		return err
	}
	sum := s.values[k] + delta
	if s.places17 {
		sum = math.Round(sum*1e17) / 1e17
	}
	if !s.noRange {
		if err := state.CheckFloat64("sum", sum); err != nil {
			return err
		}
	}
	s.values[k] = sum
	remember()
	return nil
}

func (s *floatToy) Close() error { s.closed = true; return nil }

func floatHarness(places17, noRange bool) statetest.Harness[float64] {
	var mu sync.Mutex
	byTest := map[string]map[state.Key]float64{}
	fences := map[string]toyFences{}
	return statetest.Harness[float64]{
		Open: func(t *testing.T) state.Store[float64] {
			mu.Lock()
			defer mu.Unlock()
			if byTest[t.Name()] == nil {
				byTest[t.Name()], fences[t.Name()] = map[state.Key]float64{}, toyFences{}
			}
			return &floatToy{mu: &mu, values: byTest[t.Name()], fences: fences[t.Name()], places17: places17, noRange: noRange}
		},
		SkipTTL: true, Monoid: monoid.Sum[float64]{},
		Delta: func(i int) float64 { return float64(i%5) + 0.5 },
		Equal: func(a, b float64) bool { return a == b },
	}
}

// TestFloatToy runs only the float limits of a float toy named by the environment
// (both flags off when unset: the control, which passes).
func TestFloatToy(t *testing.T) {
	flaw := os.Getenv(brokenEnv)
	if flaw != "" && !strings.HasPrefix(flaw, "float ") {
		t.Skip("not a float toy")
	}
	h := floatHarness(flaw == "float 17 places", flaw == "float no range")
	statetest.RunStore(t, h)
}

func TestFloatSuiteHasTeeth(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite in subprocesses")
	}
	for _, flaw := range []string{"float 17 places", "float no range"} {
		t.Run(flaw, func(t *testing.T) {
			out, err := runBroken(flaw, "^TestFloatToy$")
			if err == nil || !strings.Contains(out, "--- FAIL: TestFloatToy/float64_sum_limits/") {
				t.Fatalf("the float limits passed a store with flaw %q:\n%s", flaw, tail(out, 40))
			}
		})
	}
}
