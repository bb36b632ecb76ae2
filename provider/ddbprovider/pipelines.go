package ddbprovider

import (
	"context"
	"fmt"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// RegisterPipeline implements provider.PipelineStore with one PutItem.
func (p *Provider) RegisterPipeline(ctx context.Context, cfg types.PipelineConfig) error {
	if err := p.life.EnterWrite(ctx, "RegisterPipeline", provider.Validate(cfg)); err != nil {
		return err
	}
	data, err := encode(cfg)
	if err != nil {
		return err
	}
	return p.put(ctx, "RegisterPipeline", item{
		PK: pipelinePrefix + cfg.ID, SK: skConfig,
		GSI1PK: gsiPipelines, GSI1SK: cfg.ID,
		Data: data,
	})
}

// GetPipeline implements provider.PipelineStore with one GetItem.
func (p *Provider) GetPipeline(ctx context.Context, id string) (*types.PipelineConfig, error) {
	if err := p.life.Enter(ctx, provider.CheckID("pipeline ID", id)); err != nil {
		return nil, err
	}
	return getData[types.PipelineConfig](ctx, p, "GetPipeline", provider.KindPipeline, pipelinePrefix+id, skConfig)
}

// ListPipelines implements provider.PipelineStore with a query of GSI1, which is
// eventually consistent: a pipeline registered or deleted a moment ago may be
// missing or still listed.
func (p *Provider) ListPipelines(ctx context.Context) ([]types.PipelineConfig, error) {
	if err := p.life.Enter(ctx); err != nil {
		return nil, err
	}
	out, err := queryData[types.PipelineConfig](ctx, p, "ListPipelines", queryIn{kind: provider.KindPipeline, index: indexGSI1, key: gsi1(gsiPipelines)})
	if out == nil && err == nil {
		out = []types.PipelineConfig{}
	}
	return out, err
}

// DeletePipeline implements provider.PipelineStore with one DeleteItem. It removes
// the config only; the pipeline's runs, events and other records stay.
func (p *Provider) DeletePipeline(ctx context.Context, id string) error {
	if err := p.life.EnterWrite(ctx, "DeletePipeline", provider.CheckID("pipeline ID", id)); err != nil {
		return err
	}
	_, err := p.api.DeleteItem(ctx, &ddb.DeleteItemInput{TableName: &p.table, Key: key(pipelinePrefix+id, skConfig)}, p.sdk("DeletePipeline"))
	if err != nil {
		return fmt.Errorf("dynamodb: DeletePipeline: %w", err)
	}
	return nil
}

// PutTrait implements provider.TraitStore with one PutItem.
func (p *Provider) PutTrait(ctx context.Context, pipelineID string, trait types.TraitEvaluation, ttl time.Duration) error {
	trait, err := provider.PrepareTrait(pipelineID, trait, ttl, p.now())
	if err := p.life.EnterWrite(ctx, "PutTrait", err); err != nil {
		return err
	}
	data, err := encode(trait)
	if err != nil {
		return err
	}
	it := item{PK: pipelinePrefix + pipelineID, SK: skTrait + trait.TraitType, Data: data}
	if trait.ExpiresAt != nil {
		it.setExpiry(*trait.ExpiresAt)
	}
	return p.put(ctx, "PutTrait", it)
}

// GetTraits implements provider.TraitStore with one strongly consistent Query (more
// for over 1 MB of traits, expired ones included), filtered by DynamoDB: expired
// traits it has not deleted yet are read there but not sent.
func (p *Provider) GetTraits(ctx context.Context, pipelineID string) ([]types.TraitEvaluation, error) {
	if err := p.life.Enter(ctx, provider.CheckID("pipeline ID", pipelineID)); err != nil {
		return nil, err
	}
	key, filter := livePartition(pipelinePrefix+pipelineID, skTrait, p.now())
	out, err := queryData[types.TraitEvaluation](ctx, p, "GetTraits", queryIn{kind: provider.KindTrait, key: key, filter: filter})
	if out == nil && err == nil {
		out = []types.TraitEvaluation{}
	}
	return out, err
}

// GetTrait implements provider.TraitStore with one GetItem.
func (p *Provider) GetTrait(ctx context.Context, pipelineID, traitType string) (*types.TraitEvaluation, error) {
	if err := p.life.Enter(ctx, provider.CheckIDs("pipeline ID", pipelineID, "trait type", traitType)); err != nil {
		return nil, err
	}
	return getData[types.TraitEvaluation](ctx, p, "GetTrait", provider.KindTrait, pipelinePrefix+pipelineID, skTrait+traitType)
}

// PutReadiness implements provider.Provider with one PutItem; the result expires
// after the readiness TTL (WithReadinessTTL).
func (p *Provider) PutReadiness(ctx context.Context, result types.ReadinessResult) error {
	if err := p.life.EnterWrite(ctx, "PutReadiness", provider.Validate(result)); err != nil {
		return err
	}
	data, err := encode(result)
	if err != nil {
		return err
	}
	it := item{PK: pipelinePrefix + result.PipelineID, SK: skReadiness, Data: data}
	it.setExpiry(p.now().Add(p.readinessTTL))
	return p.put(ctx, "PutReadiness", it)
}

// GetReadiness implements provider.Provider with one GetItem.
func (p *Provider) GetReadiness(ctx context.Context, pipelineID string) (*types.ReadinessResult, error) {
	if err := p.life.Enter(ctx, provider.CheckID("pipeline ID", pipelineID)); err != nil {
		return nil, err
	}
	return getData[types.ReadinessResult](ctx, p, "GetReadiness", provider.KindReadiness, pipelinePrefix+pipelineID, skReadiness)
}
