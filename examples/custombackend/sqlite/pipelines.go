package sqlite

import (
	"context"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// RegisterPipeline implements provider.PipelineStore.
func (p *Provider) RegisterPipeline(ctx context.Context, cfg types.PipelineConfig) error {
	if err := p.enterWrite(ctx, "RegisterPipeline", provider.Validate(cfg)); err != nil {
		return err
	}
	return p.put(ctx, "register pipeline", cfg,
		`INSERT INTO pipelines (id, body) VALUES (?, ?)
		 ON CONFLICT (id) DO UPDATE SET body = excluded.body`, cfg.ID)
}

// GetPipeline implements provider.PipelineStore.
func (p *Provider) GetPipeline(ctx context.Context, id string) (*types.PipelineConfig, error) {
	if err := p.enter(ctx, provider.CheckID("pipeline ID", id)); err != nil {
		return nil, err
	}
	return getOne[types.PipelineConfig](ctx, p, "get pipeline", provider.KindPipeline, "pipelines",
		`SELECT id, body FROM pipelines WHERE id = ?`, id)
}

// ListPipelines implements provider.PipelineStore.
func (p *Provider) ListPipelines(ctx context.Context) ([]types.PipelineConfig, error) {
	if err := p.enter(ctx); err != nil {
		return nil, err
	}
	return getAll[types.PipelineConfig](ctx, p, "list pipelines", provider.KindPipeline, "pipelines", 0,
		`SELECT id, body FROM pipelines ORDER BY id`)
}

// DeletePipeline implements provider.PipelineStore. It deletes only the config,
// not the pipeline's runs, events or logs.
func (p *Provider) DeletePipeline(ctx context.Context, id string) error {
	if err := p.enterWrite(ctx, "DeletePipeline", provider.CheckID("pipeline ID", id)); err != nil {
		return err
	}
	_, err := p.exec(ctx, p.db, "delete pipeline", `DELETE FROM pipelines WHERE id = ?`, id)
	return err
}

// PutTrait implements provider.TraitStore.
func (p *Provider) PutTrait(ctx context.Context, pipelineID string, trait types.TraitEvaluation, ttl time.Duration) error {
	t, err := provider.PrepareTrait(pipelineID, trait, ttl, p.now())
	if err = p.enterWrite(ctx, "PutTrait", err); err != nil {
		return err
	}
	return p.put(ctx, "put trait", t,
		`INSERT INTO traits (pipeline_id, trait_type, expires_at, body) VALUES (?, ?, ?, ?)
		 ON CONFLICT (pipeline_id, trait_type) DO UPDATE SET expires_at = excluded.expires_at, body = excluded.body`,
		t.PipelineID, t.TraitType, expiresAt(t.ExpiresAt))
}

// GetTraits implements provider.TraitStore.
func (p *Provider) GetTraits(ctx context.Context, pipelineID string) ([]types.TraitEvaluation, error) {
	if err := p.enter(ctx, provider.CheckID("pipeline ID", pipelineID)); err != nil {
		return nil, err
	}
	return getAll[types.TraitEvaluation](ctx, p, "get traits", provider.KindTrait, "traits", 0,
		`SELECT pipeline_id || ':' || trait_type, body FROM traits WHERE pipeline_id = ? AND `+liveSQL+` ORDER BY trait_type`,
		pipelineID, sortTime(p.now()))
}

// GetTrait implements provider.TraitStore.
func (p *Provider) GetTrait(ctx context.Context, pipelineID, traitType string) (*types.TraitEvaluation, error) {
	if err := p.enter(ctx, provider.CheckIDs("pipeline ID", pipelineID, "trait type", traitType)); err != nil {
		return nil, err
	}
	return getOne[types.TraitEvaluation](ctx, p, "get trait", provider.KindTrait, "traits",
		`SELECT pipeline_id || ':' || trait_type, body FROM traits WHERE pipeline_id = ? AND trait_type = ? AND `+liveSQL,
		pipelineID, traitType, sortTime(p.now()))
}

// PutReadiness implements provider.Provider: the result is kept for the
// provider's readiness TTL (WithReadinessTTL).
func (p *Provider) PutReadiness(ctx context.Context, result types.ReadinessResult) error {
	if err := p.enterWrite(ctx, "PutReadiness", provider.Validate(result)); err != nil {
		return err
	}
	return p.put(ctx, "put readiness", result,
		`INSERT INTO readiness (pipeline_id, expires_at, body) VALUES (?, ?, ?)
		 ON CONFLICT (pipeline_id) DO UPDATE SET expires_at = excluded.expires_at, body = excluded.body`,
		result.PipelineID, expiresAt(after(p.now(), p.readinessTTL)))
}

// GetReadiness implements provider.Provider.
func (p *Provider) GetReadiness(ctx context.Context, pipelineID string) (*types.ReadinessResult, error) {
	if err := p.enter(ctx, provider.CheckID("pipeline ID", pipelineID)); err != nil {
		return nil, err
	}
	return getOne[types.ReadinessResult](ctx, p, "get readiness", provider.KindReadiness, "readiness",
		`SELECT pipeline_id, body FROM readiness WHERE pipeline_id = ? AND `+liveSQL, pipelineID, sortTime(p.now()))
}
