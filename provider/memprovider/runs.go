package memprovider

import (
	"context"
	"slices"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// PutRunState implements provider.RunStore.
func (p *Provider) PutRunState(ctx context.Context, run types.RunState) error {
	now := p.now()
	r, err := stored(provider.PrepareRunState(run, now))
	if err = p.enterWrite(ctx, "put run state", err); err != nil {
		return err
	}
	defer p.s.mu.Unlock()
	if old, ok := found(p, runs, r.RunID, now); ok && old.PipelineID != r.PipelineID {
		return provider.Invalidf("run %s belongs to pipeline %s, not %s", r.RunID, old.PipelineID, r.PipelineID)
	}
	remember, err := p.s.admit(ctx, runs.ref(r.RunID))
	if err != nil {
		return err
	}
	put(p, now, runs, r.RunID, r)
	remember()
	return nil
}

// GetRunState implements provider.RunStore.
func (p *Provider) GetRunState(ctx context.Context, runID string) (*types.RunState, error) {
	if err := p.enter(ctx, provider.CheckID("run ID", runID)); err != nil {
		return nil, err
	}
	defer p.s.mu.Unlock()
	return get(p, runs, runID)
}

// ListRuns implements provider.RunStore.
func (p *Provider) ListRuns(ctx context.Context, pipelineID string, limit int) ([]types.RunState, error) {
	if err := p.enter(ctx, provider.CheckID("pipeline ID", pipelineID), provider.CheckLimit(limit)); err != nil {
		return nil, err
	}
	defer p.s.mu.Unlock()
	return list(ctx, p, limit, runs,
		func(r types.RunState) bool { return r.PipelineID == pipelineID },
		func(a, b types.RunState) int { return newestFirst(a.CreatedAt, b.CreatedAt, a.RunID, b.RunID) }), nil
}

// CompareAndSwapRunState implements provider.RunStore.
func (p *Provider) CompareAndSwapRunState(ctx context.Context, runID string, expectedVersion int, newState types.RunState) (bool, error) {
	r, err := clone(newState)
	if err = p.enterWrite(ctx, "compare and swap run state", provider.CheckCAS(runID, expectedVersion, newState), err); err != nil {
		return false, err
	}
	defer p.s.mu.Unlock()
	now := p.now()
	old, ok := found(p, runs, runID, now) // an expired run is missing
	if !ok {
		return false, nil
	}
	if old.PipelineID != r.PipelineID {
		return false, provider.Invalidf("run %s belongs to pipeline %s, not %s", runID, old.PipelineID, r.PipelineID)
	}
	remember, err := p.s.admit(ctx, runs.ref(runID))
	if err != nil {
		return false, err
	}
	if old.Version != expectedVersion {
		return false, nil
	}
	r.Version = expectedVersion + 1
	r.CreatedAt = old.CreatedAt
	r.UpdatedAt = now
	put(p, now, runs, runID, r)
	remember()
	return true, nil
}

// CreateRunState implements provider.RunCreator.
func (p *Provider) CreateRunState(ctx context.Context, run types.RunState) (bool, error) {
	now := p.now()
	r, err := stored(provider.PrepareCreateRun(run, now))
	if err = p.enterWrite(ctx, "create run state", err); err != nil {
		return false, err
	}
	defer p.s.mu.Unlock()
	remember, err := p.s.admit(ctx, runs.ref(r.RunID))
	if err != nil {
		return false, err
	}
	if _, ok := found(p, runs, r.RunID, now); ok { // an expired run is created again
		return false, nil
	}
	put(p, now, runs, r.RunID, r)
	remember()
	return true, nil
}

// ReindexRun implements provider.ActiveRunReindexer. The reference backend's
// index is its run map itself (see ListActiveRuns), which never disagrees with
// the truth: it checks its arguments, writes nothing and reports no change.
func (p *Provider) ReindexRun(ctx context.Context, runID string) (bool, error) {
	if err := p.enterWrite(ctx, "reindex run", provider.CheckID("run ID", runID)); err != nil {
		return false, err
	}
	p.s.mu.Unlock()
	return false, nil
}

// ListActiveRuns implements provider.ActiveRunLister. The reference backend's
// index is its run map itself, read under the lock: a run is in it exactly
// while the truth is unfinished and live, with no entry to go stale. It costs
// no round trip, and CPU in the number of runs stored.
func (p *Provider) ListActiveRuns(ctx context.Context, filter provider.ActiveRunFilter, cursor string, limit int) ([]types.RunState, string, error) {
	if err := p.enter(ctx, provider.CheckActiveRuns(filter, cursor, limit)); err != nil {
		return nil, "", err
	}
	defer p.s.mu.Unlock()
	now := p.now()
	var idsAfter []string
	for id := range p.s.runs {
		if id > cursor && p.s.alive(runs.ref(id), now) {
			idsAfter = append(idsAfter, id)
		}
	}
	slices.Sort(idsAfter)
	var out []types.RunState
	for _, id := range idsAfter {
		if len(out) == limit {
			break
		}
		if r, ok := loadOrSkip(ctx, p, runs.ref(id), p.s.runs[id]); ok && filter.Match(r) {
			out = append(out, r)
		}
	}
	page, next := provider.ActivePage(out, limit)
	return page, next, nil
}
