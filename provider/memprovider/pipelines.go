package memprovider

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
	if err = p.enterWrite(ctx, "register pipeline", err); err != nil {
		return err
	}
	defer p.s.mu.Unlock()
	put(p, p.now(), pipelines, c.ID, c)
	return nil
}

// GetPipeline implements provider.PipelineStore.
func (p *Provider) GetPipeline(ctx context.Context, id string) (*types.PipelineConfig, error) {
	if err := p.enter(ctx, provider.CheckID("pipeline ID", id)); err != nil {
		return nil, err
	}
	defer p.s.mu.Unlock()
	return get(p, pipelines, id)
}

// ListPipelines implements provider.PipelineStore.
func (p *Provider) ListPipelines(ctx context.Context) ([]types.PipelineConfig, error) {
	if err := p.enter(ctx); err != nil {
		return nil, err
	}
	defer p.s.mu.Unlock()
	return list(ctx, p, math.MaxInt, pipelines, nil, func(a, b types.PipelineConfig) int { return cmp.Compare(a.ID, b.ID) }), nil
}

// DeletePipeline implements provider.PipelineStore.
func (p *Provider) DeletePipeline(ctx context.Context, id string) error {
	if err := p.enterWrite(ctx, "delete pipeline", provider.CheckID("pipeline ID", id)); err != nil {
		return err
	}
	defer p.s.mu.Unlock()
	delete(p.s.pipelines, id)
	p.s.wrote(pipelines.ref(id))
	return nil
}

// PutTrait implements provider.TraitStore.
func (p *Provider) PutTrait(ctx context.Context, pipelineID string, trait types.TraitEvaluation, ttl time.Duration) error {
	t, err := stored(provider.PrepareTrait(pipelineID, trait, ttl, p.now()))
	if err = p.enterWrite(ctx, "put trait", err); err != nil {
		return err
	}
	defer p.s.mu.Unlock()
	if p.s.traits[pipelineID] == nil {
		p.s.traits[pipelineID] = map[string]types.TraitEvaluation{}
	}
	p.s.traits[pipelineID][t.TraitType] = t
	p.s.wrote(traitRef(pipelineID, t.TraitType))
	return nil
}

// traitRef is the record key of a trait.
func traitRef(pipelineID, traitType string) rawKey {
	return rawKey{kind: provider.KindTrait, a: pipelineID, b: traitType}
}

func (p *Provider) traitLive(t types.TraitEvaluation) bool {
	return t.ExpiresAt == nil || p.now().Before(*t.ExpiresAt)
}

// GetTraits implements provider.TraitStore.
func (p *Provider) GetTraits(ctx context.Context, pipelineID string) ([]types.TraitEvaluation, error) {
	if err := p.enter(ctx, provider.CheckID("pipeline ID", pipelineID)); err != nil {
		return nil, err
	}
	defer p.s.mu.Unlock()
	live := sortedValues(p.s.traits[pipelineID], p.traitLive, func(a, b types.TraitEvaluation) int {
		return cmp.Compare(a.TraitType, b.TraitType)
	})
	out := make([]types.TraitEvaluation, 0, len(live))
	for _, t := range live {
		if v, ok := loadOrSkip(ctx, p, traitRef(pipelineID, t.TraitType), t); ok {
			out = append(out, v)
		}
	}
	return out, nil
}

// GetTrait implements provider.TraitStore.
func (p *Provider) GetTrait(ctx context.Context, pipelineID, traitType string) (*types.TraitEvaluation, error) {
	if err := p.enter(ctx, provider.CheckIDs("pipeline ID", pipelineID, "trait type", traitType)); err != nil {
		return nil, err
	}
	defer p.s.mu.Unlock()
	t, ok := p.s.traits[pipelineID][traitType]
	if !ok || !p.traitLive(t) {
		return nil, nil
	}
	v, err := load(p.s, traitRef(pipelineID, traitType), t)
	if err != nil {
		return nil, err
	}
	return &v, nil
}

type readiness struct {
	result  types.ReadinessResult
	expires time.Time
}

// PutReadiness implements provider.Provider.
func (p *Provider) PutReadiness(ctx context.Context, result types.ReadinessResult) error {
	r, err := stored(result, provider.Validate(result))
	if err = p.enterWrite(ctx, "put readiness", err); err != nil {
		return err
	}
	defer p.s.mu.Unlock()
	p.s.readiness[r.PipelineID] = readiness{result: r, expires: p.now().Add(p.readinessTTL)}
	p.s.wrote(readinessRef(r.PipelineID))
	return nil
}

// GetReadiness implements provider.Provider.
func (p *Provider) GetReadiness(ctx context.Context, pipelineID string) (*types.ReadinessResult, error) {
	if err := p.enter(ctx, provider.CheckID("pipeline ID", pipelineID)); err != nil {
		return nil, err
	}
	defer p.s.mu.Unlock()
	r, ok := p.s.readiness[pipelineID]
	if !ok || !provider.Live(r.expires, p.now()) {
		return nil, nil // an expired result stays until the next PutReadiness: reads never write
	}
	v, err := load(p.s, readinessRef(pipelineID), r.result)
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// readinessRef is the record key of a pipeline's readiness result.
func readinessRef(pipelineID string) rawKey {
	return rawKey{kind: provider.KindReadiness, a: pipelineID}
}
