package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/pipestate/pipestate/types"
)

var pipelinesListCmd = &spec{
	name:    "pipelines list",
	summary: "the registered pipelines ('pipestate pipelines' alone too)",
	about: "Lists every registered pipeline config, sorted by ID. On DynamoDB the list is read from\n" +
		"an eventually consistent index. --json prints one types.PipelineConfig per line.",
	example: "pipestate pipelines list --redis localhost:6379",
	define: func(in *inv, _ *flag.FlagSet) action {
		return func(ctx context.Context, pos []string) error {
			if _, err := args(pos); err != nil {
				return err
			}
			p, err := in.provider(ctx)
			if err != nil {
				return err
			}
			cfgs, err := p.ListPipelines(ctx)
			switch {
			case err != nil:
				return err
			case in.json:
				return emitAll(in, cfgs)
			case len(cfgs) == 0:
				in.say("no pipelines registered")
				return nil
			}
			t := in.table("PIPELINE", "ARCHETYPE", "TIER", "TRAITS", "SCHEDULES", "DOWNSTREAM")
			for _, c := range cfgs {
				var sched []string
				for _, s := range c.Schedules {
					sched = append(sched, s.ID)
				}
				t.row(c.ID, c.Archetype, strconv.Itoa(c.Tier), strings.Join(slices.Sorted(maps.Keys(c.Traits)), ","),
					strings.Join(sched, ","), strings.Join(c.Downstream, ","))
			}
			return t.flush()
		}
	},
}

var pipelinesShowCmd = &spec{
	name:    "pipelines show",
	args:    "PIPELINE",
	summary: "one pipeline's config",
	about:   "Shows a pipeline's registered config. --json prints it as one types.PipelineConfig.",
	example: "pipestate pipelines show orders --dynamodb http://localhost:8000 --table pipestate",
	define: func(in *inv, _ *flag.FlagSet) action {
		return func(ctx context.Context, pos []string) error {
			a, err := args(pos, "PIPELINE")
			if err != nil {
				return err
			}
			p, err := in.provider(ctx)
			if err != nil {
				return err
			}
			c, err := p.GetPipeline(ctx, a[0])
			switch {
			case err != nil:
				return err
			case c == nil:
				return notFoundf("no pipeline %q is registered; 'pipestate pipelines list' lists them", a[0])
			case in.json:
				return in.emit(c)
			}
			return in.fields(pipelineFields(*c)...)
		}
	},
}

// pipelineFields is the key/value view of a config: what is set, one line each.
func pipelineFields(c types.PipelineConfig) []string {
	kv := []string{"pipeline", c.ID}
	add := func(k, v string) {
		if v != "" {
			kv = append(kv, k, v)
		}
	}
	add("archetype", c.Archetype)
	add("tier", strconv.Itoa(c.Tier))
	if t := c.Trigger; t != nil {
		add("trigger", strings.TrimSpace(t.Type+" "+compact(t.Config)))
	}
	for _, id := range slices.Sorted(maps.Keys(c.Traits)) {
		tc := c.Traits[id]
		var parts []string
		if tc.Evaluator != "" {
			parts = append(parts, "evaluator "+tc.Evaluator)
		}
		if tc.Required {
			parts = append(parts, "required")
		}
		if tc.TTL > 0 {
			parts = append(parts, "ttl "+dur(tc.TTL))
		}
		if tc.Timeout > 0 {
			parts = append(parts, "timeout "+dur(tc.Timeout))
		}
		if s := compact(tc.Config); s != "" {
			parts = append(parts, "config "+s)
		}
		kv = append(kv, "trait "+id, strings.Join(parts, ", "))
	}
	for _, s := range c.Schedules {
		kv = append(kv, "schedule "+s.ID, strings.Join(nonEmpty("cron "+s.Cron, "at "+s.Time, "tz "+s.Timezone), ", "))
	}
	if r := c.Retry; r != nil {
		add("retry", fmt.Sprintf("%d attempts, backoff %s, at most %s", r.MaxAttempts, dur(r.Backoff), dur(r.MaxBackoff)))
	}
	if s := c.SLA; s != nil {
		add("sla", strings.Join(nonEmpty("evaluation by "+s.EvaluationDeadline, "completion by "+s.CompletionDeadline, "tz "+s.Timezone), ", "))
	}
	if e := c.Exclusions; e != nil {
		var parts []string
		if e.Weekends {
			parts = append(parts, "weekends")
		}
		add("exclusions", strings.Join(append(parts, e.Dates...), ", "))
	}
	add("downstream", strings.Join(c.Downstream, ", "))
	add("metadata", compact(c.Metadata))
	return kv
}

// nonEmpty keeps the "label value" parts whose value is set.
func nonEmpty(parts ...string) []string {
	var out []string
	for _, p := range parts {
		if !strings.HasSuffix(p, " ") {
			out = append(out, p)
		}
	}
	return out
}

var traitsCmd = &spec{
	name:    "traits",
	args:    "PIPELINE",
	summary: "a pipeline's live trait evaluations",
	about: "Lists the live (unexpired) trait evaluations of a pipeline, and the traits its config\n" +
		"names that have none (expired or never evaluated): those block readiness when required.\n" +
		"--json prints one types.TraitEvaluation per live evaluation.",
	example: "pipestate traits orders --redis localhost:6379",
	define: func(in *inv, _ *flag.FlagSet) action {
		return func(ctx context.Context, pos []string) error {
			a, err := args(pos, "PIPELINE")
			if err != nil {
				return err
			}
			p, err := in.provider(ctx)
			if err != nil {
				return err
			}
			traits, err := p.GetTraits(ctx, a[0])
			if err != nil {
				return err
			}
			cfg, err := p.GetPipeline(ctx, a[0])
			switch {
			case err != nil:
				return err
			case cfg == nil && len(traits) == 0:
				return notFoundf("no pipeline %q: it is not registered and has no live traits", a[0])
			case in.json:
				return emitAll(in, traits)
			}
			required := func(tt string) string {
				switch {
				case cfg == nil:
					return "?"
				case cfg.Traits[tt].Required:
					return "yes"
				}
				return "no"
			}
			t := in.table("TRAIT", "STATUS", "REQUIRED", "EVALUATED", "EXPIRES", "REASON")
			live := map[string]bool{}
			for _, tr := range traits {
				live[tr.TraitType] = true
				t.row(tr.TraitType, string(tr.Status), required(tr.TraitType), in.ago(tr.EvaluatedAt), in.agoPtr(tr.ExpiresAt),
					failure(tr.FailureCategory, tr.Reason))
			}
			if cfg != nil {
				for _, tt := range slices.Sorted(maps.Keys(cfg.Traits)) {
					if !live[tt] {
						t.row(tt, "(none)", required(tt), "-", "-", "no live evaluation: expired or never evaluated")
					}
				}
			}
			return t.flush()
		}
	},
}

var readinessCmd = &spec{
	name:    "readiness",
	args:    "PIPELINE",
	summary: "a pipeline's cached readiness verdict",
	about: "Shows the cached readiness result of a pipeline: the verdict, the traits blocking it and\n" +
		"the trait evaluations it was made from. It is cached for the backend's readiness TTL\n" +
		"(5 minutes unless configured); none cached exits 3. --json prints one types.ReadinessResult.",
	example: "pipestate readiness orders --redis localhost:6379",
	define: func(in *inv, _ *flag.FlagSet) action {
		return func(ctx context.Context, pos []string) error {
			a, err := args(pos, "PIPELINE")
			if err != nil {
				return err
			}
			p, err := in.provider(ctx)
			if err != nil {
				return err
			}
			r, err := p.GetReadiness(ctx, a[0])
			switch {
			case err != nil:
				return err
			case r == nil:
				return notFoundf("no cached readiness for pipeline %q: none was stored within the readiness TTL (or the ID is wrong)", a[0])
			case in.json:
				return in.emit(r)
			}
			if err := in.fields("pipeline", r.PipelineID, "status", string(r.Status), "evaluated", in.stamp(r.EvaluatedAt),
				"blocking", strings.Join(r.Blocking, ", ")); err != nil {
				return err
			}
			if len(r.Traits) == 0 {
				return nil
			}
			in.say("")
			t := in.table("TRAIT", "STATUS", "EVALUATED", "REASON")
			for _, tr := range r.Traits {
				t.row(tr.TraitType, string(tr.Status), in.ago(tr.EvaluatedAt), failure(tr.FailureCategory, tr.Reason))
			}
			return t.flush()
		}
	},
}
