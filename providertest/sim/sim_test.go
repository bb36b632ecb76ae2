package sim_test

import (
	"context"
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
	f, st := sim.Search(t, toyHarness(false), uint64(time.Now().UnixNano()), 20*time.Second)
	t.Logf("sim: %v", st)
	if f == nil {
		t.Fatal("the simulation did not find the toy's expiry bug (GetRunState at the exact expiry instant) in 20s")
	}
	t.Logf("found after %d runs, %d operations, %v:\n%v", st.FirstHit, st.HitOps, st.Elapsed, f)
	if !strings.Contains(f.Err.Error(), "GetRunState") || !strings.Contains(f.Trace, "to an expiry instant") {
		t.Errorf("the failure is not the toy's bug: %v", f)
	}
	fixed, st := sim.Search(t, toyHarness(true), uint64(time.Now().UnixNano()), 3*time.Second)
	if fixed != nil {
		t.Errorf("the fixed toy fails the simulation: %v", fixed)
	}
	t.Logf("fixed toy: %v", st)
}
