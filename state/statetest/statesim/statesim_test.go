package statesim_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pipestate/pipestate/internal/testkit/fakeclock"
	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/memstate"
	"github.com/pipestate/pipestate/state/statetest"
	"github.com/pipestate/pipestate/state/statetest/statesim"
)

// toy is a third-party store as one might write it, with a subtle expiry bug:
// it rounds every ttl up to whole seconds once too many (ttl+1s), so a value
// is still there at its expiry instant (the contract: expired when now >=
// expiry).
type toy struct {
	state.Store[int64]
	fixed bool
}

func (s toy) MergeUpdate(ctx context.Context, k state.Key, delta int64, ttl time.Duration) error {
	if ttl > 0 && !s.fixed {
		ttl += time.Second // the bug
	}
	return s.Store.MergeUpdate(ctx, k, delta, ttl)
}

// toyHarness is the toy's statetest harness: memory stores on a fake clock per
// test.
func toyHarness(fixed bool) statesim.Harness {
	var mu sync.Mutex
	roots := map[string]*memstate.Store[int64]{}
	clocks := map[string]*fakeclock.Clock{}
	root := func(t *testing.T) (*memstate.Store[int64], *fakeclock.Clock) {
		mu.Lock()
		defer mu.Unlock()
		if roots[t.Name()] == nil {
			c := fakeclock.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
			s, err := memstate.New[int64](monoid.Sum[int64]{}, memstate.WithClock(c.Now))
			if err != nil {
				t.Fatal(err)
			}
			roots[t.Name()], clocks[t.Name()] = s, c
		}
		return roots[t.Name()], clocks[t.Name()]
	}
	return statesim.Harness{Harness: statetest.Harness[int64]{
		Open:     func(t *testing.T) state.Store[int64] { r, _ := root(t); return toy{r.NewHandle(), fixed} },
		Sleep:    func(t *testing.T, d time.Duration) { _, c := root(t); c.Advance(d) },
		FakeTime: true,
		Monoid:   monoid.Sum[int64]{},
	}}
}

// TestSimCatchesToyExpiryBug is the third-party path's teeth: the simulation,
// turned on from the toy's statetest harness, finds its off-by-one expiry
// within the CI budget, and passes the toy once it is fixed.
func TestSimCatchesToyExpiryBug(t *testing.T) {
	f, st := statesim.Search(t, toyHarness(false), uint64(time.Now().UnixNano()), 10*time.Second)
	if f == nil {
		t.Fatalf("the simulation did not find the toy's expiry bug in 10s (%v)", st)
	}
	t.Logf("found after %d runs, %d operations, %v:\n%v", st.FirstHit, st.HitOps, st.Elapsed, f)
	if !strings.Contains(f.Err.Error(), "want [missing]") || !strings.Contains(f.Trace, "expiry instant") {
		t.Errorf("the failure is not a value read at its expiry instant: %v", f)
	}
	// The fixed toy runs the failing seed first: it is the bug that failed it.
	if fixed, st := statesim.Search(t, toyHarness(true), f.Seed, 2*time.Second); fixed != nil {
		t.Errorf("the fixed toy fails the simulation: %v (%v)", fixed, st)
	}
}
