package redisprovider

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/ids"
	"github.com/pipestate/pipestate/internal/redisx"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// RegisterPipeline implements provider.PipelineStore: it writes the global list
// entry (provisional), the config, then the final list entry — three round trips;
// see "Cross-slot writes" in the package doc.
func (p *Provider) RegisterPipeline(ctx context.Context, cfg types.PipelineConfig) error {
	if err := p.life.EnterWrite(ctx, "register pipeline", provider.Validate(cfg)); err != nil {
		return err
	}
	data, err := p.encode(cfg)
	if err != nil {
		return err
	}
	_, _, err = p.putIndexed(ctx, "register pipeline", indexedRecord{
		key: p.k.config(cfg.ID), id: cfg.ID, member: cfg.ID, data: data, pipeline: cfg.ID,
		lists: []index{p.k.globalPipelines()},
		mode:  putMove,
		life:  lifetimeOf(p.now(), 0), // kept forever; now starts a new config's sequence
	})
	return err
}

// GetPipeline implements provider.PipelineStore with one HGET.
func (p *Provider) GetPipeline(ctx context.Context, id string) (*types.PipelineConfig, error) {
	if err := p.life.Enter(ctx, provider.CheckID("pipeline ID", id)); err != nil {
		return nil, err
	}
	key := p.k.config(id)
	name := func() (string, string) { return id, where(key, "") }
	return getJSON[types.PipelineConfig](p, "get pipeline", provider.KindPipeline, name, func() *goredis.StringCmd {
		return p.c.HGet(ctx, key, "j")
	})
}

// ListPipelines implements provider.PipelineStore: it pages through the global list
// (sorted by ID) and reads the configs, skipping (and repairing) entries whose config
// is gone.
func (p *Provider) ListPipelines(ctx context.Context) ([]types.PipelineConfig, error) {
	if err := p.life.Enter(ctx); err != nil {
		return nil, err
	}
	return listIndexed(ctx, p, "list pipelines", listSpec{
		kind: provider.KindPipeline,
		ix:   p.k.globalPipelines(),
		key:  p.k.config,
		want: func(r record) string {
			if !r.hasJSON {
				return ""
			}
			return r.member
		},
	}, 0, decodeJSON[types.PipelineConfig](provider.KindPipeline))
}

// decodeJSON is listIndexed's decode of a record that is its JSON alone.
func decodeJSON[T any](kind provider.RecordKind) func(r record, id, key string, v *T) error {
	return func(r record, id, key string, v *T) error {
		return decode(kind, r.json, v, func() (string, string) { return id, where(key, "") })
	}
}

// DeletePipeline implements provider.PipelineStore: it deletes the config (one
// script), then its global list entry; deleting a missing pipeline is one round trip
// and returns nil. Other data of the pipeline (runs, events, ...) is kept.
func (p *Provider) DeletePipeline(ctx context.Context, id string) error {
	if err := p.life.EnterWrite(ctx, "delete pipeline", provider.CheckID("pipeline ID", id)); err != nil {
		return err
	}
	key := p.k.config(id)
	seq, err := p.run(ctx, scriptRecordDel, []string{key, p.k.call(key, ids.Random())}, callMemory.Milliseconds(), tombstoneTTL.Milliseconds(), p.now().UnixMicro()).Int64()
	if err != nil || seq == 0 {
		return p.wrap("delete pipeline", err)
	}
	_, err = p.runBatch(ctx, "delete pipeline", []call{setCall(p.k.globalPipelines(), id, "", seq, p.stampBound(), 0)})
	return err
}

// PutTrait implements provider.TraitStore with one script, which stores the trait
// with its ExpiresAt (the clock's now + ttl; nil for ttl 0) and prunes up to 100
// of the pipeline's expired traits (see lua/traits.lua): pruning is a write's,
// never a read's.
func (p *Provider) PutTrait(ctx context.Context, pipelineID string, trait types.TraitEvaluation, ttl time.Duration) error {
	now := p.now()
	trait, err := provider.PrepareTrait(pipelineID, trait, ttl, now)
	if err = p.life.EnterWrite(ctx, "put trait", err); err != nil {
		return err
	}
	var expUS int64 // 0: no expiry
	if trait.ExpiresAt != nil {
		expUS = trait.ExpiresAt.UnixMicro()
	}
	data, err := p.encode(trait)
	if err != nil {
		return err
	}
	traits, exp := p.k.traits(pipelineID)
	err = p.run(ctx, scriptTraits, []string{traits, exp}, now.UnixMicro(), trait.TraitType, expUS, data).Err()
	return p.wrap("put trait", err)
}

// GetTraits implements provider.TraitStore with reads only: one HSCAN of the
// traits hash of up to traitScanCount fields when that reads the whole hash (the
// values read, less the expired ones, are the traits); otherwise the read-only
// traits_read script, one more round trip, which reads the live traits through
// the expiry index, so no call's work grows with the expired traits a large hash
// holds (PutTrait prunes them). A pipeline whose last GetTraits here ended in the
// script with more traits than one HSCAN reads goes to the script directly next
// time (one round trip), until the script finds it small; the provider keeps that
// hint for at most maxHints pipelines.
func (p *Provider) GetTraits(ctx context.Context, pipelineID string) ([]types.TraitEvaluation, error) {
	if err := p.life.Enter(ctx, provider.CheckID("pipeline ID", pipelineID)); err != nil {
		return nil, err
	}
	out, err := p.traits(ctx, pipelineID, "")
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b types.TraitEvaluation) int { return strings.Compare(a.TraitType, b.TraitType) })
	return out, nil
}

// GetTrait implements provider.TraitStore with one HGET.
func (p *Provider) GetTrait(ctx context.Context, pipelineID, traitType string) (*types.TraitEvaluation, error) {
	if err := p.life.Enter(ctx, provider.CheckIDs("pipeline ID", pipelineID, "trait type", traitType)); err != nil {
		return nil, err
	}
	out, err := p.traits(ctx, pipelineID, traitType)
	if err != nil || len(out) == 0 {
		return nil, err
	}
	return &out[0], nil
}

// traits reads the pipeline's traits (traitType "": all of them), decodes their
// "<expiry µs>|<JSON>" values and drops those expired by the clock: by the stored
// expiry at µs granularity, as the index and PutTrait's pruning judge it, and
// then exactly by ExpiresAt. Its caller has opened the method.
func (p *Provider) traits(ctx context.Context, pipelineID, traitType string) ([]types.TraitEvaluation, error) {
	now := p.now()
	traits, exp := p.k.traits(pipelineID)
	var vals []string
	var err error
	if traitType == "" {
		vals, err = p.allTraits(ctx, pipelineID, traits, exp, now)
	} else {
		var v string
		v, err = p.c.HGet(ctx, traits, traitType).Result()
		switch {
		case errors.Is(err, goredis.Nil):
			err = nil
		case err == nil:
			vals = []string{v}
		}
	}
	if err != nil {
		return nil, p.wrap("get traits", err)
	}
	out := make([]types.TraitEvaluation, len(vals))
	n := 0
	nowUS := now.UnixMicro()
	var fields map[string][]string // value -> the fields that hold it, read once a value is corrupt
	for _, v := range vals {
		name := func() (string, string) {
			field := traitType
			if field == "" { // GetTraits: find the field, one more round trip, on this rare path only
				if fields == nil {
					fields = p.traitFields(ctx, traits)
				}
				if fs := fields[v]; len(fs) > 0 {
					field, fields[v] = fs[0], fs[1:]
				}
			}
			return pipelineID + ":" + field, where(traits, fieldAt(field))
		}
		e, data, ok := strings.Cut(v, "|")
		expUS, err := strconv.ParseInt(e, 10, 64)
		switch {
		case !ok || err != nil:
			id, key := name()
			err = corrupt(provider.KindTrait, id, key, errors.New("value is not <expiry µs>|<JSON>"))
		case expUS > 0 && expUS < nowUS:
			continue // expired by the stored expiry, as the index and PutTrait's pruning judge it
		default:
			err = decode(provider.KindTrait, data, &out[n], name)
		}
		if err != nil {
			if traitType != "" || !provider.SkipCorrupt(ctx, p.sig, err) {
				return nil, err
			}
			out[n] = types.TraitEvaluation{}
			continue
		}
		if t := &out[n]; t.ExpiresAt == nil || now.Before(*t.ExpiresAt) {
			n++
		} else {
			*t = types.TraitEvaluation{}
		}
	}
	return out[:n], nil
}

// traitFields maps each value of the traits hash to the fields that hold it, to
// name a corrupt trait that a read found by value; empty when the read fails.
func (p *Provider) traitFields(ctx context.Context, traits string) map[string][]string {
	all, err := p.c.HGetAll(ctx, traits).Result()
	if err != nil {
		return map[string][]string{}
	}
	out := make(map[string][]string, len(all))
	for f, v := range all {
		out[v] = append(out[v], f)
	}
	return out
}

// allTraits returns the values of the pipeline's traits, expired ones included:
// by scanTraits unless the pipeline is hinted to the script, else (or when
// scanTraits did not read the whole hash) by the traits_read script, whose flag
// updates the hint.
func (p *Provider) allTraits(ctx context.Context, pipelineID, traits, exp string, now time.Time) ([]string, error) {
	if !p.traitsByScript.has(pipelineID) {
		if vals, err := p.scanTraits(ctx, traits); vals != nil || err != nil {
			return vals, err
		}
	}
	vals, err := p.run(ctx, scriptTraitsRead, []string{traits, exp}, now.UnixMicro(), traitScanCount).StringSlice()
	if err != nil {
		return nil, err
	}
	if len(vals) == 0 {
		return nil, errors.New("corrupt traits script reply")
	}
	if vals[0] == "1" {
		p.traitsByScript.remove(pipelineID)
	} else {
		p.traitsByScript.add(pipelineID)
	}
	return vals[1:], nil
}

// traitScanCount bounds the fields GetTraits' HSCAN reads: a hash of more fields
// is read by the script instead, which reads only the live ones.
const traitScanCount = 256

// scanTraits returns every value of the traits hash when one HSCAN of up to
// traitScanCount fields reads it whole (an empty, non-nil slice for a pipeline
// without traits); otherwise nil, for the script.
func (p *Provider) scanTraits(ctx context.Context, traits string) ([]string, error) {
	fields, cursor, err := p.c.HScan(ctx, traits, 0, "", traitScanCount).Result()
	if err != nil {
		return nil, err
	}
	if cursor != 0 || len(fields)/2 > traitScanCount {
		return nil, nil
	}
	vals := make([]string, 0, len(fields)/2)
	for i := 1; i < len(fields); i += 2 {
		vals = append(vals, fields[i])
	}
	return vals, nil
}

// PutReadiness implements provider.Provider with one SET ... PX of the readiness TTL.
func (p *Provider) PutReadiness(ctx context.Context, result types.ReadinessResult) error {
	if err := p.life.EnterWrite(ctx, "put readiness", provider.Validate(result)); err != nil {
		return err
	}
	data, err := p.encode(result)
	if err != nil {
		return err
	}
	ttl := time.Duration(redisx.Millis(p.readinessTTL)) * time.Millisecond
	return p.wrap("put readiness", p.c.Set(ctx, p.k.readiness(result.PipelineID), data, ttl).Err())
}

// GetReadiness implements provider.Provider with one GET.
func (p *Provider) GetReadiness(ctx context.Context, pipelineID string) (*types.ReadinessResult, error) {
	if err := p.life.Enter(ctx, provider.CheckID("pipeline ID", pipelineID)); err != nil {
		return nil, err
	}
	key := p.k.readiness(pipelineID)
	name := func() (string, string) { return pipelineID, where(key, "") }
	return getJSON[types.ReadinessResult](p, "get readiness", provider.KindReadiness, name, func() *goredis.StringCmd {
		return p.c.Get(ctx, key)
	})
}
