package main

import (
	"context"
	"sync"
	"testing"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// unindexed is the memory harness's stand-in for runs that a version before
// the active-runs index wrote: memory's index is its run map, so the runs in
// ids are hidden from ListActiveRuns until a write rewrites them.
type unindexed struct {
	mu  sync.Mutex
	ids map[string]bool
	// beforeWrite, when not nil, runs once before the next
	// CompareAndSwapRunState or ReindexRun.
	beforeWrite func(id string)
}

// all hides every run that p stores now (those of registered pipelines).
func (u *unindexed) all(t *testing.T, p provider.Provider) {
	t.Helper()
	ctx := context.Background()
	pipelines, err := p.ListPipelines(ctx)
	if err != nil {
		t.Fatal(err)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.ids = map[string]bool{}
	for _, cfg := range pipelines {
		runs, err := p.ListRuns(ctx, cfg.ID, 10000)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			u.ids[r.RunID] = true
		}
	}
}

// takeHook takes the hook to run before the next write (a no-op when none).
func (u *unindexed) takeHook() func(id string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	f := u.beforeWrite
	u.beforeWrite = nil
	if f == nil {
		return func(string) {}
	}
	return f
}

func (u *unindexed) any() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.ids) > 0
}

func (u *unindexed) hidden(id string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.ids[id]
}

// written indexes run id: a write of this version wrote it.
func (u *unindexed) written(id string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.ids, id)
}

// unindexedProvider is a memory provider whose index lacks the runs of u.
type unindexedProvider struct {
	provider.Provider
	u *unindexed
}

func (p unindexedProvider) ListActiveRuns(ctx context.Context, f provider.ActiveRunFilter, cursor string, limit int) ([]types.RunState, string, error) {
	runs, next, err := p.Provider.(provider.ActiveRunLister).ListActiveRuns(ctx, f, cursor, limit)
	var out []types.RunState
	for _, r := range runs {
		if !p.u.hidden(r.RunID) {
			out = append(out, r)
		}
	}
	return out, next, err
}

func (p unindexedProvider) CompareAndSwapRunState(ctx context.Context, id string, version int, run types.RunState) (bool, error) {
	p.u.takeHook()(id)
	ok, err := p.Provider.CompareAndSwapRunState(ctx, id, version, run)
	if ok {
		p.u.written(id)
	}
	return ok, err
}

func (p unindexedProvider) PutRunState(ctx context.Context, run types.RunState) error {
	err := p.Provider.PutRunState(ctx, run)
	if err == nil {
		p.u.written(run.RunID)
	}
	return err
}

// ReindexRun restores the entry of a hidden run, as the backends' repair does.
func (p unindexedProvider) ReindexRun(ctx context.Context, id string) (bool, error) {
	p.u.takeHook()(id)
	changed, err := p.Provider.(provider.ActiveRunReindexer).ReindexRun(ctx, id)
	if err != nil {
		return false, err
	}
	if p.u.hidden(id) {
		p.u.written(id)
		changed = true
	}
	return changed, nil
}
