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
// test (toyClock).
func toyHarness(fixed bool) statesim.Harness {
	var mu sync.Mutex
	roots := map[string]*memstate.Store[int64]{}
	root := func(t *testing.T) *memstate.Store[int64] {
		mu.Lock()
		defer mu.Unlock()
		if roots[t.Name()] == nil {
			s, err := memstate.New[int64](monoid.Sum[int64]{}, memstate.WithClock(toyClock(t).Now))
			if err != nil {
				t.Fatal(err)
			}
			roots[t.Name()] = s
		}
		return roots[t.Name()]
	}
	return statesim.Harness{Harness: statetest.Harness[int64]{
		Open:     func(t *testing.T) state.Store[int64] { return toy{root(t).NewHandle(), fixed} },
		Sleep:    func(t *testing.T, d time.Duration) { toyClock(t).Advance(d) },
		FakeTime: true,
		Monoid:   monoid.Sum[int64]{},
	}}
}

// toyClocks are the toys' fake clocks, one per test.
var toyClocks sync.Map // t.Name() -> *fakeclock.Clock

func toyClock(t *testing.T) *fakeclock.Clock {
	c, loaded := toyClocks.LoadOrStore(t.Name(), fakeclock.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
	if !loaded {
		t.Cleanup(func() { toyClocks.Delete(t.Name()) })
	}
	return c.(*fakeclock.Clock)
}

// TestSimCatchesToyExpiryBug is the third-party path's teeth: the simulation,
// turned on from the toy's statetest harness, finds its off-by-one expiry
// within the CI budget, and passes the toy once it is fixed.
func TestSimCatchesToyExpiryBug(t *testing.T) {
	f := catches(t, toyHarness, "want [")
	if !strings.Contains(f.Trace, "expiry instant") {
		t.Errorf("the failure is not a value read at its expiry instant: %v", f)
	}
}

// findBudget bounds the search for a toy's bug. An idle machine finds each in
// seconds (the tests log how long); a loaded one runs a fraction of the seeds,
// and the search ends at the first failure, so only a toy that is not caught
// pays the whole budget.
const findBudget = 30 * time.Second

// catches is the teeth of a toy with a bug (harness(false)): the simulation
// finds it within findBudget, with a complaint that names want, and the same seed
// passes the fixed toy (harness(true)), which then runs fresh seeds for 2s.
func catches(t *testing.T, harness func(fixed bool) statesim.Harness, want string) *statesim.Failure {
	t.Helper()
	f, st := statesim.Search(t, harness(false), uint64(time.Now().UnixNano()), findBudget)
	if f == nil {
		t.Fatalf("the simulation did not find the toy's bug in %v (%v)", findBudget, st)
	}
	t.Logf("found after %d runs, %d operations, %v:\n%v", st.FirstHit, st.HitOps, st.Elapsed, f)
	if !strings.Contains(f.Err.Error(), want) {
		t.Errorf("the failure does not name %q: %v", want, f)
	}
	if fixed, st := statesim.Search(t, harness(true), f.Seed, 2*time.Second); fixed != nil {
		t.Errorf("the fixed toy fails the simulation: %v (%v)", fixed, st)
	}
	return f
}

// toyDeduper is a third-party Deduper as one might write it: a duplicate
// MarkSeen claims the ID again (a SET with a TTL but without NX), so every
// redelivery extends the claim, which the contract says lives for the TTL
// from the first delivery.
type toyDeduper struct {
	state.Deduper
	fixed bool
}

func (d toyDeduper) MarkSeen(ctx context.Context, id string) (bool, error) {
	first, err := d.Deduper.MarkSeen(ctx, id)
	if err != nil || first || d.fixed {
		return first, err
	}
	if err := d.Deduper.Release(ctx, id); err != nil { // the bug: claims it again
		return false, err
	}
	_, err = d.Deduper.MarkSeen(ctx, id)
	return false, err
}

// TestSimCatchesToyDeduperBug: the Deduper is part of the simulation, whose
// referee finds a claim that each duplicate extends, and passes the same
// deduper once it does not.
func TestSimCatchesToyDeduperBug(t *testing.T) {
	harness := func(fixed bool) statesim.Harness {
		h := toyHarness(true)
		var mu sync.Mutex
		roots := map[string]*memstate.Deduper{}
		h.OpenDeduper = func(t *testing.T) state.Deduper {
			mu.Lock()
			defer mu.Unlock()
			if roots[t.Name()] == nil {
				d, err := memstate.NewDeduper(memstate.WithClock(toyClock(t).Now), memstate.WithDedupTTL(state.DefaultDedupTTL))
				if err != nil {
					t.Fatal(err)
				}
				roots[t.Name()] = d
			}
			return toyDeduper{roots[t.Name()].NewHandle(), fixed}
		}
		return h
	}
	catches(t, harness, "MarkSeen")
}

// toyTier is a read cache shared by every instance of a store (as package
// state/tiered keeps one in Redis), as one might write it: it keeps what it
// read or wrote for keep, which, unless fixed, is an hour where its
// documentation promises reads at most a minute old.
type toyTier struct {
	state.Store[int64]
	now   func() time.Time
	mu    *sync.Mutex
	cache map[state.Key]toyEntry
	fixed bool
}

type toyEntry struct {
	v     int64
	found bool
	at    time.Time
}

func (s toyTier) keep() time.Duration {
	if s.fixed {
		return time.Minute
	}
	return time.Hour
}

func (s toyTier) Get(ctx context.Context, k state.Key) (int64, bool, error) {
	s.mu.Lock()
	e, ok := s.cache[k]
	s.mu.Unlock()
	if ok && s.now().Sub(e.at) < s.keep() {
		return e.v, e.found, nil
	}
	return s.fill(ctx, k)
}

func (s toyTier) fill(ctx context.Context, k state.Key) (int64, bool, error) {
	at := s.now()
	v, found, err := s.Store.Get(ctx, k)
	if err == nil {
		s.mu.Lock()
		s.cache[k] = toyEntry{v, found, at}
		s.mu.Unlock()
	}
	return v, found, err
}

func (s toyTier) GetMany(ctx context.Context, ks []state.Key) ([]int64, []bool, error) {
	vs, found := make([]int64, len(ks)), make([]bool, len(ks))
	for i, k := range ks {
		var err error
		if vs[i], found[i], err = s.Get(ctx, k); err != nil {
			return nil, nil, err
		}
	}
	return vs, found, nil
}

func (s toyTier) MergeUpdate(ctx context.Context, k state.Key, delta int64, ttl time.Duration) error {
	err := s.Store.MergeUpdate(ctx, k, delta, ttl)
	_, _, _ = s.fill(ctx, k) // the write-through
	return err
}

// TestSimCatchesToyTierBug: Harness.ReadStaleness lets reads be as old as a
// shared cache's documented bound, and no older: the referee finds a cache
// that keeps entries an hour, when another instance writes the source
// without it, and passes the same cache once it keeps them a minute.
func TestSimCatchesToyTierBug(t *testing.T) {
	harness := func(fixed bool) statesim.Harness {
		h := toyHarness(true)
		source := h.Open
		var mu sync.Mutex
		caches := map[string]map[state.Key]toyEntry{}
		h.Open = func(t *testing.T) state.Store[int64] {
			mu.Lock()
			defer mu.Unlock()
			if caches[t.Name()] == nil {
				caches[t.Name()] = map[state.Key]toyEntry{}
			}
			return toyTier{Store: source(t), now: toyClock(t).Now, mu: &mu, cache: caches[t.Name()], fixed: fixed}
		}
		h.Variants = []statesim.Variant{{Name: "the source without the cache", Open: source}}
		h.ReadStaleness = time.Minute
		return h
	}
	catches(t, harness, "Get")
}

// retryToy is a store whose client retries a write whose reply was lost
// (Harness.Faults arms it: the next MergeUpdateOnce is applied, then sent
// again) and, unless fixed, does not recognise its own retry: the retry finds
// the claim its first attempt made and reports the delivery as a duplicate.
type retryToy struct {
	state.Store[int64]
	f *toyFault
}

// toyFault is the fault of one test's toys: armed, and whether it fired.
type toyFault struct {
	mu           sync.Mutex
	armed, fired bool
	fixed        bool
}

func (s retryToy) MergeUpdateOnce(ctx context.Context, id string, k state.Key, delta int64, ttl time.Duration) (bool, error) {
	once := s.Store.(state.OnceStore[int64])
	s.f.mu.Lock()
	lost := s.f.armed
	s.f.armed, s.f.fired = false, s.f.fired || lost
	s.f.mu.Unlock()
	applied, err := once.MergeUpdateOnce(ctx, id, k, delta, ttl)
	if !lost || err != nil || s.f.fixed {
		return applied, err
	}
	return once.MergeUpdateOnce(ctx, id, k, delta, ttl) // the bug: the retry's outcome
}

// TestSimCatchesToyRetryBug: lost replies are a fault of the state
// simulation, whose referee finds a store whose retry after a lost reply
// reports a delivery it applied as a duplicate, and passes it once it reports
// the first attempt's outcome.
func TestSimCatchesToyRetryBug(t *testing.T) {
	harness := func(fixed bool) statesim.Harness {
		h := toyHarness(true)
		var mu sync.Mutex
		fs := map[string]*toyFault{}
		fault := func(t *testing.T) *toyFault {
			mu.Lock()
			defer mu.Unlock()
			if fs[t.Name()] == nil {
				fs[t.Name()] = &toyFault{fixed: fixed}
			}
			return fs[t.Name()]
		}
		source := h.Open
		h.Open = func(t *testing.T) state.Store[int64] { return retryToy{source(t).(toy).Store, fault(t)} } // the memory store: a OnceStore
		h.Faults = &statesim.Faults{
			LoseReply: func(t *testing.T) { f := fault(t); f.mu.Lock(); f.armed, f.fired = true, false; f.mu.Unlock() },
			Disarm: func(t *testing.T) bool {
				f := fault(t)
				f.mu.Lock()
				defer f.mu.Unlock()
				f.armed = false
				return f.fired
			},
		}
		return h
	}
	f := catches(t, harness, "MergeUpdateOnce")
	if !strings.Contains(f.Trace, "reply lost") {
		t.Errorf("the failure is not the retry bug: %v", f)
	}
}
