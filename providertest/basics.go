package providertest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// basic is one step of the order to implement the base interface in: its
// methods, the simplest rule they must keep (a missing entity, one write read
// back), and the groups that step turns on.
type basic struct {
	name    string   // the Basics subtest
	methods []string // the base methods of the step
	groups  []string // the groups (and optional interfaces) the step turns on
	check   func(ctx context.Context, p provider.Provider, k ids) error
}

// basics are the 34 methods of provider.Provider in the order to implement
// them in; the package doc's first screen prints the same table, and
// TestBasicsDocumented keeps the two equal.
var basics = []basic{
	{"lifecycle", []string{"Start", "Stop", "Ping"}, []string{"Lifecycle"},
		func(ctx context.Context, p provider.Provider, _ ids) error {
			return wrapIf(p.Ping(ctx), "Ping")
		}},
	{"pipelines", []string{"RegisterPipeline", "GetPipeline", "ListPipelines", "DeletePipeline"}, []string{"PipelineStore"},
		func(ctx context.Context, p provider.Provider, k ids) error {
			if err := missingErr(p.GetPipeline(ctx, k.pipeline)); err != nil {
				return fmt.Errorf("GetPipeline of a missing pipeline: %w", err)
			}
			if err := p.RegisterPipeline(ctx, newPipeline(k.pipeline)); err != nil {
				return fmt.Errorf("RegisterPipeline: %w", err)
			}
			got, err := p.GetPipeline(ctx, k.pipeline)
			return foundErr(got, err, "GetPipeline of the pipeline registered", func(c types.PipelineConfig) bool { return c.ID == k.pipeline })
		}},
	{"traits", []string{"PutTrait", "GetTrait", "GetTraits"}, []string{"TraitStore"},
		func(ctx context.Context, p provider.Provider, k ids) error {
			if err := missingErr(p.GetTrait(ctx, k.pipeline, k.trait)); err != nil {
				return fmt.Errorf("GetTrait of a missing trait: %w", err)
			}
			if err := p.PutTrait(ctx, k.pipeline, newTrait(k.trait), 0); err != nil {
				return fmt.Errorf("PutTrait: %w", err)
			}
			got, err := p.GetTrait(ctx, k.pipeline, k.trait)
			return foundErr(got, err, "GetTrait of the trait put", func(tr types.TraitEvaluation) bool { return tr.TraitType == k.trait })
		}},
	{"runs", []string{"PutRunState", "GetRunState", "ListRuns", "CompareAndSwapRunState"}, []string{"RunStore", "RunCreator"},
		func(ctx context.Context, p provider.Provider, k ids) error {
			if err := missingErr(p.GetRunState(ctx, k.run)); err != nil {
				return fmt.Errorf("GetRunState of a missing run: %w", err)
			}
			if err := p.PutRunState(ctx, newRun(k.pipeline, k.run, at(0))); err != nil {
				return fmt.Errorf("PutRunState: %w", err)
			}
			got, err := p.GetRunState(ctx, k.run)
			return foundErr(got, err, "GetRunState of the run put", func(r types.RunState) bool { return r.RunID == k.run })
		}},
	{"events", []string{"AppendEvent", "ListEvents", "ReadEventsSince"}, []string{"EventStore", "EventFollower"},
		func(ctx context.Context, p provider.Provider, k ids) error {
			if err := p.AppendEvent(ctx, newEvent(k.pipeline, 1)); err != nil {
				return fmt.Errorf("AppendEvent: %w", err)
			}
			evs, err := p.ListEvents(ctx, k.pipeline, listAll)
			return listedErr(len(evs), err, 1, "ListEvents after one AppendEvent")
		}},
	{"run_logs", []string{"PutRunLog", "GetRunLog", "ListRunLogs"}, []string{"RunLogStore"},
		func(ctx context.Context, p provider.Provider, k ids) error {
			if err := missingErr(p.GetRunLog(ctx, k.pipeline, k.date, "")); err != nil {
				return fmt.Errorf("GetRunLog of a missing run log: %w", err)
			}
			if err := p.PutRunLog(ctx, newRunLog(k.pipeline, k.date, "")); err != nil {
				return fmt.Errorf("PutRunLog: %w", err)
			}
			got, err := p.GetRunLog(ctx, k.pipeline, k.date, "")
			return foundErr(got, err, "GetRunLog of the run log put", func(e types.RunLogEntry) bool { return e.Date == k.date })
		}},
	{"reruns", []string{"PutRerun", "GetRerun", "ListReruns", "ListAllReruns"}, []string{"RerunStore"},
		func(ctx context.Context, p provider.Provider, k ids) error {
			if err := missingErr(p.GetRerun(ctx, k.rerun)); err != nil {
				return fmt.Errorf("GetRerun of a missing rerun: %w", err)
			}
			if err := p.PutRerun(ctx, newRerun(k.rerun, k.pipeline, at(0))); err != nil {
				return fmt.Errorf("PutRerun: %w", err)
			}
			got, err := p.GetRerun(ctx, k.rerun)
			return foundErr(got, err, "GetRerun of the rerun put", func(r types.RerunRecord) bool { return r.RerunID == k.rerun })
		}},
	{"cascade_markers", []string{"WriteCascadeMarker"}, []string{"CascadeStore", "CascadeReader", "MarkerWatcher"},
		func(ctx context.Context, p provider.Provider, k ids) error {
			return wrapIf(p.WriteCascadeMarker(ctx, k.pipeline, "", k.date, k.other), "WriteCascadeMarker")
		}},
	{"late_arrivals", []string{"PutLateArrival", "ListLateArrivals"}, []string{"LateArrivalStore"},
		func(ctx context.Context, p provider.Provider, k ids) error {
			if err := p.PutLateArrival(ctx, newLateArrival(k.pipeline, k.date, "", at(0), 1)); err != nil {
				return fmt.Errorf("PutLateArrival: %w", err)
			}
			las, err := p.ListLateArrivals(ctx, k.pipeline, k.date, "")
			return listedErr(len(las), err, 1, "ListLateArrivals after one PutLateArrival")
		}},
	{"replays", []string{"PutReplay", "GetReplay", "ListReplays"}, []string{"ReplayStore"},
		func(ctx context.Context, p provider.Provider, k ids) error {
			if err := missingErr(p.GetReplay(ctx, k.pipeline, k.date, "")); err != nil {
				return fmt.Errorf("GetReplay of a missing replay: %w", err)
			}
			if err := p.PutReplay(ctx, newReplay(k.pipeline, k.date, "", at(0))); err != nil {
				return fmt.Errorf("PutReplay: %w", err)
			}
			got, err := p.GetReplay(ctx, k.pipeline, k.date, "")
			return foundErr(got, err, "GetReplay of the replay put", func(r types.ReplayRequest) bool { return r.Date == k.date })
		}},
	{"locks", []string{"AcquireLock", "ReleaseLock"}, []string{"Locker", "Leaser", "KeepAlive", "LockInspector", "LockLister"},
		func(ctx context.Context, p provider.Provider, k ids) error {
			ok, err := p.AcquireLock(ctx, k.lock, longTTL)
			if err != nil || !ok {
				return fmt.Errorf("AcquireLock of a free key = (%v, %v), want (true, nil)", ok, err)
			}
			return wrapIf(p.ReleaseLock(ctx, k.lock), "ReleaseLock by the holder")
		}},
	{"readiness", []string{"PutReadiness", "GetReadiness"}, []string{"Readiness"},
		func(ctx context.Context, p provider.Provider, k ids) error {
			if err := missingErr(p.GetReadiness(ctx, k.pipeline)); err != nil {
				return fmt.Errorf("GetReadiness of a pipeline never evaluated: %w", err)
			}
			if err := p.PutReadiness(ctx, newReadiness(k.pipeline)); err != nil {
				return fmt.Errorf("PutReadiness: %w", err)
			}
			got, err := p.GetReadiness(ctx, k.pipeline)
			return foundErr(got, err, "GetReadiness after PutReadiness", func(r types.ReadinessResult) bool { return r.PipelineID == k.pipeline })
		}},
}

// afterBasics are the groups that need every step of basics.
var afterBasics = []string{"Expiry", "Retention", "Fidelity", "Lists", "Limits", "Corrupt", "Fencing", "FencingRace", "ReadOnly"}

func wrapIf(err error, what string) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// missingErr is nil when a Get of a missing entity returned (nil, nil).
func missingErr[T any](v *T, err error) error {
	switch {
	case err != nil:
		return fmt.Errorf("got error %w, want (nil, nil)", err)
	case v != nil:
		return fmt.Errorf("got %+v, want (nil, nil)", *v)
	}
	return nil
}

// foundErr is nil when a Get returned a value that ok accepts.
func foundErr[T any](v *T, err error, what string, ok func(T) bool) error {
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", what, err)
	case v == nil:
		return fmt.Errorf("%s: got (nil, nil), want the value written", what)
	case !ok(*v):
		return fmt.Errorf("%s: got %+v, not the value written", what, *v)
	}
	return nil
}

// listedErr is nil when a list returned n items.
func listedErr(got int, err error, n int, what string) error {
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", what, err)
	case got != n:
		return fmt.Errorf("%s: got %d items, want %d", what, got, n)
	}
	return nil
}

// runBasics runs the steps of basics in order as the subtests of Basics, on
// one provider, and returns the failure of the first step that failed ("" when
// none did, or when -run left Basics out). Later steps skip, naming it.
func runBasics(t *testing.T, h Harness) string {
	t.Helper()
	var first string
	t.Run("Basics", func(t *testing.T) {
		s := &suite{h: h}
		p, k := s.open(t), newIDs(t)
		for i, b := range basics {
			t.Run(b.name, func(t *testing.T) {
				if first != "" {
					t.Skipf("skipped: fix %s first", first)
				}
				if err := b.check(t.Context(), p, k); err != nil {
					first = fmt.Sprintf("Basics/%s (%s)", b.name, strings.Join(b.methods, ", "))
					t.Errorf("step %d of the order to implement the base methods in: %v\n"+
						"Every group reads and writes through these methods: the suite skips them until this passes (see the providertest package doc).",
						i+1, err)
				}
			})
		}
	})
	return first
}

// basicsTable renders basics as the table of the package doc: step, methods,
// the groups the step turns on, and last the groups that need every step.
func basicsTable() string {
	var b strings.Builder
	row := func(step, methods, groups string) {
		fmt.Fprintf(&b, "%-19s %-62s %s\n", step, methods, groups)
	}
	row("STEP", "METHODS", "TURNS ON")
	for i, s := range basics {
		row(fmt.Sprintf("%d %s", i+1, s.name), strings.Join(s.methods, ", "), strings.Join(s.groups, ", "))
	}
	row("(all)", "", strings.Join(afterBasics, ", "))
	return b.String()
}
