package sim_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pipestate/pipestate/internal/testkit/memorytest"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/memprovider"
	"github.com/pipestate/pipestate/providertest/sim"
	"github.com/pipestate/pipestate/types"
)

// TestSimMemory simulates the memory backend, with a variant that keeps every
// kind for an hour.
func TestSimMemory(t *testing.T) {
	b := memorytest.New()
	short := provider.Retention{Runs: time.Hour, RunLogs: time.Hour, Reruns: time.Hour, Replays: time.Hour,
		LateArrivals: time.Hour, CascadeMarkers: time.Hour, Events: time.Hour, MarkerLog: time.Hour}
	sim.Run(t, sim.Harness{
		Harness: b.Harness(nil),
		Variants: []sim.Variant{{Name: "1h retention", Retention: &short, Open: func(t *testing.T) provider.Provider {
			return b.Open(t, memprovider.WithRetention(short), memprovider.WithEventRetention(time.Hour), memprovider.WithMarkerLogRetention(time.Hour))
		}}},
		CorruptExpires: true,
		WatchWait:      5 * time.Second,  // only a failing run waits for it
		WatchQuiet:     time.Millisecond, // memory wakes watchers on each write
		Corpus:         "testdata/memory.seeds",
		Budget:         10 * time.Second,
	})
}

// toyRetention is how long the toy backend keeps a run.
const toyRetention = time.Hour

// toy is a third-party backend as one might write it: the memory backend,
// keeping runs forever, with run retention added on top, and a subtle bug:
// GetRunState treats a run as expired only once now > expiry, so exactly at
// its expiry instant the run is still there (the contract: now >= expiry is
// expired).
type toy struct {
	*memprovider.Provider
	now func() time.Time
	mu  sync.Mutex
	exp map[string]time.Time
}

func (p *toy) expired(id string, now time.Time) bool {
	e, ok := p.exp[id]
	return ok && !now.Before(e)
}

func (p *toy) wrote(id string) { p.exp[id] = p.now().Add(toyRetention) }

func (p *toy) PutRunState(ctx context.Context, r types.RunState) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	err := p.Provider.PutRunState(ctx, r)
	if err == nil {
		p.wrote(r.RunID)
	}
	return err
}

func (p *toy) GetRunState(ctx context.Context, id string) (*types.RunState, error) {
	return p.get(ctx, id, func(e, now time.Time) bool { return now.After(e) }) // the bug: at e exactly the run is gone
}

// get is GetRunState, with expired judging a run's expiry.
func (p *toy) get(ctx context.Context, id string, expired func(e, now time.Time) bool) (*types.RunState, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, err := p.Provider.GetRunState(ctx, id)
	if e, ok := p.exp[id]; ok && err == nil && expired(e, p.now()) {
		return nil, nil
	}
	return r, err
}

func (p *toy) CompareAndSwapRunState(ctx context.Context, id string, v int, r types.RunState) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.expired(id, p.now()) {
		return false, nil
	}
	ok, err := p.Provider.CompareAndSwapRunState(ctx, id, v, r)
	if ok {
		p.wrote(id)
	}
	return ok, err
}

func (p *toy) CreateRunState(ctx context.Context, r types.RunState) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.expired(r.RunID, p.now()) {
		if err := p.Provider.PutRunState(ctx, r); err != nil {
			return false, err
		}
		p.wrote(r.RunID)
		return true, nil
	}
	ok, err := p.Provider.CreateRunState(ctx, r)
	if ok {
		p.wrote(r.RunID)
	}
	return ok, err
}

// ListActiveRuns is memory's, less the runs the toy expired (memory keeps them).
func (p *toy) ListActiveRuns(ctx context.Context, f provider.ActiveRunFilter, cursor string, limit int) ([]types.RunState, string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	runs, next, err := p.Provider.ListActiveRuns(ctx, f, cursor, limit)
	live := runs[:0]
	for _, r := range runs {
		if !p.expired(r.RunID, p.now()) {
			live = append(live, r)
		}
	}
	return live, next, err
}

// toyHarness is the toy's harness: memorytest's, with runs kept forever by
// memory and for toyRetention by the toy. Every toy of one test shares its
// expiries, as they share the memory storage.
func toyHarness(fixed bool) sim.Harness {
	b := memorytest.New()
	var mu sync.Mutex
	exps := map[string]map[string]time.Time{}
	h := b.Harness(nil)
	h.Open = func(t *testing.T) provider.Provider {
		r := memorytest.Retention
		r.Runs = 0 // the toy keeps runs for toyRetention
		p := b.Open(t, memprovider.WithRetention(r))
		mu.Lock()
		defer mu.Unlock()
		if exps[t.Name()] == nil {
			exps[t.Name()] = map[string]time.Time{}
		}
		tp := &toy{Provider: p, now: func() time.Time { return b.Now(t) }, exp: exps[t.Name()]}
		if fixed {
			return fixedToy{tp}
		}
		return tp
	}
	h.Retention.Runs = toyRetention
	h.OpenReadOnly = nil // the toy has no read-only option
	return sim.Harness{Harness: h, Budget: 20 * time.Second, CorruptExpires: true, WatchWait: 5 * time.Second, WatchQuiet: time.Millisecond}
}

// fixedToy is the toy without its bug.
type fixedToy struct{ *toy }

func (p fixedToy) GetRunState(ctx context.Context, id string) (*types.RunState, error) {
	return p.get(ctx, id, func(e, now time.Time) bool { return !now.Before(e) })
}

// TestSimCatchesToyExpiryBug is the third-party path's teeth: the simulation,
// turned on from the toy's providertest harness, finds its off-by-one expiry
// within the CI budget, and passes the toy once it is fixed.
func TestSimCatchesToyExpiryBug(t *testing.T) {
	f, _ := catches(t, toyHarness, "GetRunState")
	if !strings.Contains(f.Trace, "expiry instant") {
		t.Errorf("the failure is not GetRunState at an expiry instant: %v", f)
	}
}

// findBudget bounds the search for a toy's bug. An idle machine finds each in
// seconds (the tests log how long); a loaded one runs a fraction of the seeds,
// and the search ends at the first failure, so only a toy that is not caught
// pays the whole budget.
const findBudget = time.Minute

// catches is the teeth of a toy backend with a bug (harness(false)): the
// simulation finds it within findBudget, with a complaint that names want, and the
// same seed passes the fixed backend (harness(true)), which then runs fresh
// seeds for 3s; it returns the failure and what the fixed backend ran.
func catches(t *testing.T, harness func(fixed bool) sim.Harness, want string) (*sim.Failure, sim.Stats) {
	t.Helper()
	f, st := sim.Search(t, harness(false), uint64(time.Now().UnixNano()), findBudget)
	if f == nil {
		t.Fatalf("the simulation did not find the toy's bug in %v (%v)", findBudget, st)
	}
	t.Logf("found after %d runs, %d operations, %v:\n%v", st.FirstHit, st.HitOps, st.Elapsed, f)
	if !strings.Contains(f.Err.Error(), want) {
		t.Errorf("the failure does not name %q: %v", want, f)
	}
	fixed, st := sim.Search(t, harness(true), f.Seed, 3*time.Second)
	if fixed != nil {
		t.Errorf("the fixed backend fails the simulation: %v (%v)", fixed, st)
	}
	return f, st
}

// activeToy is a backend whose active-runs index pages from its cursor
// inclusively (>= where the contract says strictly after): the run that ended
// one page starts the next again.
type activeToy struct {
	*memprovider.Provider
	fixed bool
}

func (p activeToy) ListActiveRuns(ctx context.Context, f provider.ActiveRunFilter, cursor string, limit int) ([]types.RunState, string, error) {
	all, _, err := p.Provider.ListActiveRuns(ctx, f, "", 1<<20)
	if err != nil {
		return nil, "", err
	}
	var after []types.RunState
	for _, r := range all {
		if r.RunID > cursor || (!p.fixed && r.RunID == cursor) {
			after = append(after, r)
		}
	}
	page, next := provider.ActivePage(after, limit)
	return page, next, nil
}

// TestSimCatchesActivePagingBug: ListActiveRuns is an operation of the
// simulation, whose referee finds a paging that repeats its cursor's run, and
// passes the same backend once it pages strictly after the cursor.
func TestSimCatchesActivePagingBug(t *testing.T) {
	harness := func(fixed bool) sim.Harness {
		b := memorytest.New()
		h := b.Harness(nil)
		h.Open = func(t *testing.T) provider.Provider { return activeToy{Provider: b.Open(t), fixed: fixed} }
		return sim.Harness{Harness: h, CorruptExpires: true, WatchWait: 5 * time.Second, WatchQuiet: time.Millisecond}
	}
	catches(t, harness, "ListActiveRuns")
}

// reindexToy is a backend whose active-runs index can lose entries
// (Harness.DropActiveEntry: lost) and whose ReindexRun, unless fixed, trusts
// its own record that a run's entry exists (the memory backend's answer:
// unchanged) instead of looking, so a lost entry stays lost.
type reindexToy struct {
	*memprovider.Provider
	mu    *sync.Mutex
	lost  map[string]bool
	fixed bool
}

func (p reindexToy) ListActiveRuns(ctx context.Context, f provider.ActiveRunFilter, cursor string, limit int) ([]types.RunState, string, error) {
	all, _, err := p.Provider.ListActiveRuns(ctx, f, "", 1<<20)
	if err != nil {
		return nil, "", err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var after []types.RunState
	for _, r := range all {
		if r.RunID > cursor && !p.lost[r.RunID] {
			after = append(after, r)
		}
	}
	page, next := provider.ActivePage(after, limit)
	return page, next, nil
}

func (p reindexToy) ReindexRun(ctx context.Context, id string) (bool, error) {
	if !p.fixed {
		return p.Provider.ReindexRun(ctx, id)
	}
	r, err := p.GetRunState(ctx, id)
	if err != nil {
		return false, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	lost := p.lost[id]
	delete(p.lost, id)
	return lost && r != nil && !r.Status.Terminal(), nil
}

// TestSimCatchesToyReindexBug: dropped index entries and ReindexRun are
// operations of the simulation, whose referee finds a ReindexRun that does not
// restore a lost entry, and passes the same backend once it does.
func TestSimCatchesToyReindexBug(t *testing.T) {
	harness := func(fixed bool) sim.Harness {
		b := memorytest.New()
		h := b.Harness(nil)
		var mu sync.Mutex
		lost := map[string]map[string]bool{}
		lostOf := func(t *testing.T) map[string]bool {
			mu.Lock()
			defer mu.Unlock()
			if lost[t.Name()] == nil {
				lost[t.Name()] = map[string]bool{}
			}
			return lost[t.Name()]
		}
		h.Open = func(t *testing.T) provider.Provider {
			return reindexToy{Provider: b.Open(t), mu: &mu, lost: lostOf(t), fixed: fixed}
		}
		h.DropActiveEntry = func(t *testing.T, id string) {
			l := lostOf(t)
			mu.Lock()
			defer mu.Unlock()
			l[id] = true
		}
		return sim.Harness{Harness: h, CorruptExpires: true, WatchWait: 5 * time.Second, WatchQuiet: time.Millisecond}
	}
	f, st := catches(t, harness, "")
	if !strings.Contains(f.Trace, "Harness.DropActiveEntry") || !strings.Contains(f.Trace, "ReindexRun") {
		t.Errorf("the failure is not the lost entry that ReindexRun left lost: %v", f)
	}
	if st.Kinds["reindex"] == 0 {
		t.Errorf("the fixed backend's runs made no reindex operation: %v", st)
	}
}

// TestSimCatchesToyReadOnlyBug: reads through a read-only instance are part
// of the simulation, which finds a backend whose read-only option does not
// refuse writes, and passes it once it does.
func TestSimCatchesToyReadOnlyBug(t *testing.T) {
	harness := func(fixed bool) sim.Harness {
		b := memorytest.New()
		h := b.Harness(nil)
		h.OpenReadOnly = func(t *testing.T) provider.Provider {
			if fixed {
				return b.Open(t, memprovider.WithReadOnly())
			}
			return b.Open(t) // the bug: the option is dropped
		}
		return sim.Harness{Harness: h, CorruptExpires: true, WatchWait: 5 * time.Second, WatchQuiet: time.Millisecond}
	}
	if _, st := catches(t, harness, "read-only"); st.Kinds["readonly"] == 0 {
		t.Errorf("the fixed backend's runs made no readonly operation: %v", st)
	}
}

// retryToy is a backend whose client retries a write whose reply was lost
// (Harness.Faults arms it: the next write is applied, then sent again) and,
// unless fixed, does not recognise its own retry: a CAS that swapped reports
// false, a create that created reports false, an append is doubled. Through
// the instance of OpenNoRetry, a write whose reply was lost fails after it was
// applied.
type retryToy struct {
	*memprovider.Provider
	f       *toyFault
	noRetry bool
}

// toyFault is the fault of one test's toys: armed, and whether it fired.
type toyFault struct {
	mu           sync.Mutex
	armed, fired bool
	fixed        bool
}

// take reports whether the fault fires on this call, disarming it.
func (f *toyFault) take() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.armed {
		return false
	}
	f.armed, f.fired = false, true
	return true
}

var errToyTimeout = errors.New("toy: the reply was lost")

// call makes a write: once, or, when the fault fires, once more as a retry,
// returning the retry's outcome (the fixed toy's retry returns the first's).
func call[R any](p retryToy, do func() (R, error)) (R, error) {
	if !p.f.take() {
		return do()
	}
	first, err := do()
	if p.noRetry {
		return first, errors.Join(errToyTimeout, err)
	}
	if err != nil {
		return first, err
	}
	if p.f.fixed {
		return first, nil
	}
	return do()
}

func (p retryToy) PutRunState(ctx context.Context, r types.RunState) error {
	_, err := call(p, func() (bool, error) { return true, p.Provider.PutRunState(ctx, r) })
	return err
}

func (p retryToy) CompareAndSwapRunState(ctx context.Context, id string, v int, r types.RunState) (bool, error) {
	return call(p, func() (bool, error) { return p.Provider.CompareAndSwapRunState(ctx, id, v, r) })
}

func (p retryToy) CreateRunState(ctx context.Context, r types.RunState) (bool, error) {
	return call(p, func() (bool, error) { return p.Provider.CreateRunState(ctx, r) })
}

func (p retryToy) AppendEvent(ctx context.Context, e types.Event) error {
	_, err := call(p, func() (bool, error) { return true, p.Provider.AppendEvent(ctx, e) })
	return err
}

// retryToyHarness is the retry toy's harness, with Faults.
func retryToyHarness(fixed bool) sim.Harness {
	b := memorytest.New()
	var mu sync.Mutex
	faults := map[string]*toyFault{}
	fault := func(t *testing.T) *toyFault {
		mu.Lock()
		defer mu.Unlock()
		f, ok := faults[t.Name()]
		if !ok {
			f = &toyFault{fixed: fixed}
			faults[t.Name()] = f
		}
		return f
	}
	h := b.Harness(nil)
	h.Open = func(t *testing.T) provider.Provider { return retryToy{Provider: b.Open(t), f: fault(t)} }
	return sim.Harness{Harness: h, CorruptExpires: true, WatchWait: 5 * time.Second, WatchQuiet: time.Millisecond,
		Faults: &sim.Faults{
			LoseReply: func(t *testing.T) {
				f := fault(t)
				f.mu.Lock()
				f.armed, f.fired = true, false
				f.mu.Unlock()
			},
			Disarm: func(t *testing.T) bool {
				f := fault(t)
				f.mu.Lock()
				defer f.mu.Unlock()
				f.armed = false
				return f.fired
			},
			OpenNoRetry: func(t *testing.T) provider.Provider {
				return retryToy{Provider: b.Open(t), f: fault(t), noRetry: true}
			},
		}}
}

// TestSimCatchesToyRetryBug: lost replies are a fault of the simulation, whose
// referee finds a backend whose retry after a lost reply does not report its
// first attempt's outcome, and passes it once it does (with timeouts after
// apply, which the referee settles by reading the run).
func TestSimCatchesToyRetryBug(t *testing.T) {
	f, st := catches(t, retryToyHarness, "")
	if !strings.Contains(f.Trace, "reply lost") {
		t.Errorf("the failure is not the retry bug: %v", f)
	}
	if st.Kinds["lost"] == 0 || st.Kinds["timeout"] == 0 {
		t.Errorf("the fixed toy's runs made no lost or timeout operation: %v", st)
	}
}
