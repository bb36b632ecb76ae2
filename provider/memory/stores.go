package memory

import (
	"cmp"
	"context"
	"math"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// RegisterPipeline implements provider.PipelineStore.
func (p *Provider) RegisterPipeline(ctx context.Context, cfg types.PipelineConfig) error {
	c, err := stored(cfg, provider.Validate(cfg))
	if err != nil {
		return err
	}
	return p.write(ctx, func(s *data) { s.pipelines[c.ID] = c })
}

// GetPipeline implements provider.PipelineStore.
func (p *Provider) GetPipeline(ctx context.Context, id string) (*types.PipelineConfig, error) {
	if err := provider.CheckID("pipeline ID", id); err != nil {
		return nil, err
	}
	return get(ctx, p, pipelines, id)
}

// ListPipelines implements provider.PipelineStore.
func (p *Provider) ListPipelines(ctx context.Context) ([]types.PipelineConfig, error) {
	return list(ctx, p, math.MaxInt, pipelines, nil, func(a, b types.PipelineConfig) int { return cmp.Compare(a.ID, b.ID) })
}

// DeletePipeline implements provider.PipelineStore.
func (p *Provider) DeletePipeline(ctx context.Context, id string) error {
	if err := provider.CheckID("pipeline ID", id); err != nil {
		return err
	}
	return p.write(ctx, func(s *data) { delete(s.pipelines, id) })
}

// PutTrait implements provider.TraitStore.
func (p *Provider) PutTrait(ctx context.Context, pipelineID string, trait types.TraitEvaluation, ttl time.Duration) error {
	t, err := stored(provider.PrepareTrait(pipelineID, trait, ttl, p.now()))
	if err != nil {
		return err
	}
	if err := p.begin(ctx); err != nil {
		return err
	}
	defer p.s.mu.Unlock()
	if p.s.traits[pipelineID] == nil {
		p.s.traits[pipelineID] = map[string]types.TraitEvaluation{}
	}
	p.s.traits[pipelineID][t.TraitType] = t
	return nil
}

func (p *Provider) traitLive(t types.TraitEvaluation) bool {
	return t.ExpiresAt == nil || p.now().Before(*t.ExpiresAt)
}

// GetTraits implements provider.TraitStore.
func (p *Provider) GetTraits(ctx context.Context, pipelineID string) ([]types.TraitEvaluation, error) {
	if err := provider.CheckID("pipeline ID", pipelineID); err != nil {
		return nil, err
	}
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	defer p.s.mu.Unlock()
	out := sortedValues(p.s.traits[pipelineID], p.traitLive, func(a, b types.TraitEvaluation) int {
		return cmp.Compare(a.TraitType, b.TraitType)
	})
	return cloneAll(out), nil
}

// GetTrait implements provider.TraitStore.
func (p *Provider) GetTrait(ctx context.Context, pipelineID, traitType string) (*types.TraitEvaluation, error) {
	if err := provider.CheckIDs("pipeline ID", pipelineID, "trait type", traitType); err != nil {
		return nil, err
	}
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	defer p.s.mu.Unlock()
	t, ok := p.s.traits[pipelineID][traitType]
	if !ok || !p.traitLive(t) {
		return nil, nil
	}
	return clonePtr(t), nil
}

// PutReadiness implements provider.Provider.
func (p *Provider) PutReadiness(ctx context.Context, result types.ReadinessResult) error {
	r, err := stored(result, provider.Validate(result))
	if err != nil {
		return err
	}
	return p.write(ctx, func(s *data) {
		s.readiness[r.PipelineID] = readiness{result: r, expires: p.now().Add(p.readinessTTL)}
	})
}

// GetReadiness implements provider.Provider.
func (p *Provider) GetReadiness(ctx context.Context, pipelineID string) (*types.ReadinessResult, error) {
	if err := provider.CheckID("pipeline ID", pipelineID); err != nil {
		return nil, err
	}
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	defer p.s.mu.Unlock()
	r, ok := p.s.readiness[pipelineID]
	if !ok || !live(r.expires, p.now()) {
		delete(p.s.readiness, pipelineID)
		return nil, nil
	}
	return clonePtr(r.result), nil
}

// PutRunState implements provider.RunStore.
func (p *Provider) PutRunState(ctx context.Context, run types.RunState) error {
	r, err := stored(provider.PrepareRunState(run, p.now()))
	if err != nil {
		return err
	}
	if err := p.begin(ctx); err != nil {
		return err
	}
	defer p.s.mu.Unlock()
	if old, ok := p.s.runs[r.RunID]; ok && old.PipelineID != r.PipelineID {
		return provider.Invalidf("run %s belongs to pipeline %s, not %s", r.RunID, old.PipelineID, r.PipelineID)
	}
	p.s.runs[r.RunID] = r
	return nil
}

// GetRunState implements provider.RunStore.
func (p *Provider) GetRunState(ctx context.Context, runID string) (*types.RunState, error) {
	if err := provider.CheckID("run ID", runID); err != nil {
		return nil, err
	}
	return get(ctx, p, runs, runID)
}

// ListRuns implements provider.RunStore.
func (p *Provider) ListRuns(ctx context.Context, pipelineID string, limit int) ([]types.RunState, error) {
	if err := provider.CheckID("pipeline ID", pipelineID); err != nil {
		return nil, err
	}
	return list(ctx, p, limit, runs,
		func(r types.RunState) bool { return r.PipelineID == pipelineID },
		func(a, b types.RunState) int { return newestFirst(a.CreatedAt, b.CreatedAt, a.RunID, b.RunID) })
}

// CompareAndSwapRunState implements provider.RunStore.
func (p *Provider) CompareAndSwapRunState(ctx context.Context, runID string, expectedVersion int, newState types.RunState) (bool, error) {
	if err := provider.CheckCAS(runID, expectedVersion, newState); err != nil {
		return false, err
	}
	r, err := clone(newState)
	if err != nil {
		return false, err
	}
	if err := p.begin(ctx); err != nil {
		return false, err
	}
	defer p.s.mu.Unlock()
	old, ok := p.s.runs[runID]
	if !ok {
		return false, nil
	}
	if old.PipelineID != r.PipelineID {
		return false, provider.Invalidf("run %s belongs to pipeline %s, not %s", runID, old.PipelineID, r.PipelineID)
	}
	if old.Version != expectedVersion {
		return false, nil
	}
	r.Version = expectedVersion + 1
	r.CreatedAt = old.CreatedAt
	r.UpdatedAt = p.now()
	p.s.runs[runID] = r
	return true, nil
}

// AppendEvent implements provider.EventStore.
func (p *Provider) AppendEvent(ctx context.Context, ev types.Event) error {
	e, err := stored(provider.PrepareEvent(ev, p.now()))
	if err != nil {
		return err
	}
	if err := p.begin(ctx); err != nil {
		return err
	}
	defer p.s.mu.Unlock()
	log := p.s.events[e.PipelineID]
	if log == nil {
		log = &eventLog{}
		p.s.events[e.PipelineID] = log
	}
	log.seq++
	log.records = append(log.records, record{seq: log.seq, ev: e, expires: expiry(p.now(), p.eventRetention)})
	return nil
}

// retained returns the records of pipelineID's log, from index from on, that
// retention has not dropped; the store must be locked.
func (p *Provider) retained(pipelineID string, from int64) []record {
	log := p.s.events[pipelineID]
	if log == nil {
		return nil
	}
	now := p.now()
	var out []record
	for _, r := range log.records[min(from, int64(len(log.records))):] {
		if live(r.expires, now) {
			out = append(out, r)
		}
	}
	return out
}

// ListEvents implements provider.EventStore.
func (p *Provider) ListEvents(ctx context.Context, pipelineID string, limit int) ([]types.Event, error) {
	if err := provider.CheckID("pipeline ID", pipelineID); err != nil {
		return nil, err
	}
	if err := provider.CheckLimit(limit); err != nil {
		return nil, err
	}
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	defer p.s.mu.Unlock()
	recs := p.retained(pipelineID, 0)
	recs = recs[max(0, len(recs)-limit):]
	out := make([]types.Event, len(recs))
	for i, r := range recs {
		out[i] = mustClone(r.ev)
	}
	return out, nil
}

// ReadEventsSince implements provider.EventStore. Cursors are decimal sequence numbers.
func (p *Provider) ReadEventsSince(ctx context.Context, pipelineID, sinceID string, count int64) ([]types.EventRecord, error) {
	if err := provider.CheckID("pipeline ID", pipelineID); err != nil {
		return nil, err
	}
	if err := provider.CheckCount(count); err != nil {
		return nil, err
	}
	since, err := provider.ParseSeqCursor(sinceID)
	if err != nil {
		return nil, err
	}
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	defer p.s.mu.Unlock()
	var out []types.EventRecord
	// Sequence numbers start at 1 and have no gaps, so record i has seq i+1.
	for _, r := range p.retained(pipelineID, since) {
		if int64(len(out)) == count {
			break
		}
		out = append(out, types.EventRecord{StreamID: provider.FormatSeqCursor(r.seq), Event: mustClone(r.ev)})
	}
	return out, nil
}
