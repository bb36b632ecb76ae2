package providertest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// RunPipelineStore tests provider.PipelineStore: round trip, replace, ListPipelines
// sorted by ID, delete, missing entities, aliasing, sizes, adversarial IDs, bad
// input and cancellation.
func RunPipelineStore(t *testing.T, h Harness) {
	t.Helper()
	group(t, "PipelineStore", h, func(t *testing.T, s *suite) {
		s.run(t, "register_get_round_trip", testPipelineStoreRegisterGetRoundTrip)
		s.run(t, "visible_to_other_instance", testPipelineStoreVisibleToOtherInstance)
		s.run(t, "get_missing", testPipelineStoreGetMissing)
		s.run(t, "register_replaces", testPipelineStoreRegisterReplaces)
		s.run(t, "list_sorted_by_id", testPipelineStoreListSortedByID)
		s.run(t, "list_empty", testPipelineStoreListEmpty)
		s.run(t, "delete_removes", testPipelineStoreDeleteRemoves)
		s.run(t, "delete_keeps_other_data", testPipelineStoreDeleteKeepsOtherData)
		s.run(t, "register_identical_twice", testPipelineStoreRegisterIdenticalTwice)
		s.run(t, "delete_missing", testPipelineStoreDeleteMissing)
		s.run(t, "no_aliasing", testPipelineStoreNoAliasing)
		testPipelineStoreSizes(t, s)
		s.run(t, "list_large_items", testPipelineStoreListLargeItems)
		s.run(t, "adversarial_ids", testPipelineStoreAdversarialIDs)
		testPipelineStoreBadInputAndCancelled(t, s)
	})
}

// testPipelineStoreSizes runs the size subtests (large_value_round_trips, huge_value_too_large_or_stored, huge_update_keeps_old_value) of the PipelineStore group.
func testPipelineStoreSizes(t *testing.T, s *suite) {
	s.checkSizes(t, sizeCheck{
		put: func(ctx context.Context, p provider.Provider, k ids, payload string) error {
			cfg := newPipeline(k.pipeline)
			cfg.Metadata["payload"] = payload
			return p.RegisterPipeline(ctx, cfg)
		},
		read: func(t *testing.T, p provider.Provider, k ids) (string, bool) {
			got, err := p.GetPipeline(t.Context(), k.pipeline)
			noErr(t, err, "GetPipeline")
			if got == nil {
				return "", false
			}
			return payloadOf(got.Metadata), true
		},
	})
}

// testPipelineStoreBadInputAndCancelled runs the bad-input table (bad_input/...) and the cancelled-context subtest of the PipelineStore group.
func testPipelineStoreBadInputAndCancelled(t *testing.T, s *suite) {
	var bad []badCase
	for _, b := range badIDs {
		bad = append(bad,
			badCase{name: "register_id_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				return p.RegisterPipeline(ctx, types.PipelineConfig{ID: b.id})
			}},
			badCase{name: "get_id_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				_, err := p.GetPipeline(ctx, b.id)
				return err
			}},
			badCase{name: "delete_id_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				return p.DeletePipeline(ctx, b.id)
			}})
	}
	bad = append(bad,
		badCase{name: "register_negative_tier", call: func(ctx context.Context, p provider.Provider, k ids) error {
			return p.RegisterPipeline(ctx, types.PipelineConfig{ID: k.pipeline, Tier: -1})
		}},
		badCase{name: "register_bad_downstream", call: func(ctx context.Context, p provider.Provider, k ids) error {
			return p.RegisterPipeline(ctx, types.PipelineConfig{ID: k.pipeline, Downstream: []string{"a#b"}})
		}},
		badCase{name: "register_bad_trait_type", call: func(ctx context.Context, p provider.Provider, k ids) error {
			return p.RegisterPipeline(ctx, types.PipelineConfig{ID: k.pipeline, Traits: map[string]types.TraitConfig{"": {}}})
		}},
		badCase{name: "register_over_existing", setup: func(t *testing.T, p provider.Provider, k ids) {
			t.Helper()
			noErr(t, p.RegisterPipeline(t.Context(), types.PipelineConfig{ID: k.other}), "RegisterPipeline")
		}, call: func(ctx context.Context, p provider.Provider, k ids) error {
			return p.RegisterPipeline(ctx, types.PipelineConfig{ID: k.other, Archetype: "changed", Tier: -5})
		}},
	)
	s.checkBadInput(t, bad, func(t *testing.T, p provider.Provider, k ids) {
		t.Helper()
		list, err := p.ListPipelines(t.Context())
		noErr(t, err, "ListPipelines")
		for _, c := range list {
			if c.ID != k.other || c.Archetype != "" {
				t.Errorf("a rejected call wrote pipeline %+v", c)
			}
		}
	})
	s.checkCancelled(t, []call{
		{"RegisterPipeline", func(ctx context.Context, p provider.Provider, k ids) error {
			return p.RegisterPipeline(ctx, newPipeline(k.pipeline))
		}},
		{"GetPipeline", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.GetPipeline(ctx, k.pipeline)
			return err
		}},
		{"ListPipelines", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.ListPipelines(ctx)
			return err
		}},
		{"DeletePipeline", func(ctx context.Context, p provider.Provider, k ids) error {
			return p.DeletePipeline(ctx, k.other)
		}},
	}, func(t *testing.T, p provider.Provider, k ids) {
		t.Helper()
		noErr(t, p.RegisterPipeline(t.Context(), newPipeline(k.other)), "RegisterPipeline")
	}, func(t *testing.T, p provider.Provider, k ids) {
		t.Helper()
		got, err := p.GetPipeline(t.Context(), k.pipeline)
		wantNil(t, got, err, "GetPipeline after a cancelled RegisterPipeline")
		got, err = p.GetPipeline(t.Context(), k.other)
		mustGet(t, got, err, "GetPipeline after a cancelled DeletePipeline")
	})
}

func testPipelineStoreRegisterGetRoundTrip(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	cfg := newPipeline(k.pipeline)
	noErr(t, p.RegisterPipeline(t.Context(), cfg), "RegisterPipeline")
	got, err := p.GetPipeline(t.Context(), k.pipeline)
	same(t, "GetPipeline", jsonRoundTrip(t, cfg), mustGet(t, got, err, "GetPipeline"))
}

func testPipelineStoreVisibleToOtherInstance(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	cfg := newPipeline(k.pipeline)
	noErr(t, p.RegisterPipeline(t.Context(), cfg), "RegisterPipeline")
	got, err := q.GetPipeline(t.Context(), k.pipeline)
	same(t, "GetPipeline on another instance", jsonRoundTrip(t, cfg), mustGet(t, got, err, "GetPipeline"))
}

func testPipelineStoreGetMissing(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	got, err := p.GetPipeline(t.Context(), k.pipeline)
	wantNil(t, got, err, "GetPipeline of a missing pipeline")
}

func testPipelineStoreRegisterReplaces(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	noErr(t, p.RegisterPipeline(t.Context(), newPipeline(k.pipeline)), "RegisterPipeline")
	cfg := types.PipelineConfig{ID: k.pipeline, Archetype: "streaming", Metadata: map[string]any{"v": 2}}
	noErr(t, p.RegisterPipeline(t.Context(), cfg), "RegisterPipeline again")
	got, err := p.GetPipeline(t.Context(), k.pipeline)
	same(t, "GetPipeline after replace", jsonRoundTrip(t, cfg), mustGet(t, got, err, "GetPipeline"))
	list, err := p.ListPipelines(t.Context())
	wantLen(t, list, err, 1, "ListPipelines after replace")
	same(t, "ListPipelines after replace", jsonRoundTrip(t, cfg), list[0])
}

func testPipelineStoreListSortedByID(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	// Byte order: '.' < '/' < digits < upper case < '_' < lower case.
	suffixes := []string{"b", "a", "B", "a.b", "_", "a/b", "10", "9", "ab", "a-"}
	var want []types.PipelineConfig
	for _, sfx := range suffixes {
		cfg := types.PipelineConfig{ID: k.pipeline + sfx, Archetype: sfx}
		noErr(t, p.RegisterPipeline(t.Context(), cfg), "RegisterPipeline "+cfg.ID)
		want = append(want, cfg)
	}
	slices.SortFunc(want, func(a, b types.PipelineConfig) int { return strings.Compare(a.ID, b.ID) })
	got, err := p.ListPipelines(t.Context())
	noErr(t, err, "ListPipelines")
	same(t, "ListPipelines", want, got)
}

func testPipelineStoreListEmpty(t *testing.T, s *suite) {
	p := s.open(t)
	got, err := p.ListPipelines(t.Context())
	wantLen(t, got, err, 0, "ListPipelines of an empty store")
}

func testPipelineStoreDeleteRemoves(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	keep := newPipeline(k.other)
	noErr(t, p.RegisterPipeline(t.Context(), newPipeline(k.pipeline)), "RegisterPipeline")
	noErr(t, p.RegisterPipeline(t.Context(), keep), "RegisterPipeline other")
	noErr(t, p.DeletePipeline(t.Context(), k.pipeline), "DeletePipeline")
	got, err := p.GetPipeline(t.Context(), k.pipeline)
	wantNil(t, got, err, "GetPipeline after delete")
	list, err := p.ListPipelines(t.Context())
	noErr(t, err, "ListPipelines")
	same(t, "ListPipelines after delete", []types.PipelineConfig{jsonRoundTrip(t, keep)}, list)
}

func testPipelineStoreDeleteKeepsOtherData(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	pid, other := k.pipeline, k.pipeline+"-2" // DeletePipeline("p") leaves "p-2" alone too
	noErr(t, p.RegisterPipeline(t.Context(), newPipeline(pid)), "RegisterPipeline")
	noErr(t, p.RegisterPipeline(t.Context(), newPipeline(other)), "RegisterPipeline")
	writePipelineData(t, p, pid, k)
	noErr(t, p.DeletePipeline(t.Context(), pid), "DeletePipeline")
	got, err := q.GetPipeline(t.Context(), pid)
	wantNil(t, got, err, "GetPipeline after DeletePipeline")
	got, err = q.GetPipeline(t.Context(), other)
	mustGet(t, got, err, "GetPipeline of "+other+" after DeletePipeline("+pid+")")
	checkPipelineData(t, q, pid, k)
}

func testPipelineStoreRegisterIdenticalTwice(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	cfg := newPipeline(k.pipeline)
	noErr(t, p.RegisterPipeline(t.Context(), cfg), "RegisterPipeline")
	noErr(t, p.RegisterPipeline(t.Context(), cfg), "RegisterPipeline of the same config again")
	list, err := p.ListPipelines(t.Context())
	noErr(t, err, "ListPipelines")
	same(t, "ListPipelines after registering one config twice", []types.PipelineConfig{jsonRoundTrip(t, cfg)}, list)
}

func testPipelineStoreDeleteMissing(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	noErr(t, p.DeletePipeline(t.Context(), k.pipeline), "DeletePipeline of a missing pipeline")
}

func testPipelineStoreNoAliasing(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	cfg := newPipeline(k.pipeline)
	want := jsonRoundTrip(t, cfg)
	noErr(t, p.RegisterPipeline(t.Context(), cfg), "RegisterPipeline")
	mutatePipeline(&cfg)
	got, err := p.GetPipeline(t.Context(), k.pipeline)
	first := mustGet(t, got, err, "GetPipeline")
	same(t, "GetPipeline after mutating the registered value", want, first)
	mutatePipeline(&first)
	list, err := p.ListPipelines(t.Context())
	wantLen(t, list, err, 1, "ListPipelines")
	mutatePipeline(&list[0])
	got, err = p.GetPipeline(t.Context(), k.pipeline)
	same(t, "GetPipeline after mutating returned values", want, mustGet(t, got, err, "GetPipeline"))
}

func testPipelineStoreListLargeItems(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	for i := range largeItems {
		cfg := newPipeline(fmt.Sprintf("%s-%d", k.pipeline, i))
		cfg.Metadata["payload"] = bigString(largeValue)
		noErr(t, p.RegisterPipeline(t.Context(), cfg), "RegisterPipeline")
	}
	list, err := p.ListPipelines(t.Context())
	wantLen(t, list, err, largeItems, "ListPipelines of configs holding 256 KB each")
}

func testPipelineStoreAdversarialIDs(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	checkDistinct(t, singles(adversarialIDs(k.pipeline)),
		func(key []string, tag int) error {
			return p.RegisterPipeline(t.Context(), types.PipelineConfig{ID: key[0], Archetype: strconv.Itoa(tag)})
		},
		func(key []string) (int, bool, error) {
			got, err := p.GetPipeline(t.Context(), key[0])
			if err != nil || got == nil {
				return 0, false, err
			}
			tag, err := strconv.Atoi(got.Archetype)
			return tag, true, err
		})
}

// writePipelineData writes one entity of every kind that belongs to pipeline pid
// (the lock key and readiness too); checkPipelineData checks they are all there.
func writePipelineData(t *testing.T, p provider.Provider, pid string, k ids) {
	t.Helper()
	ctx := t.Context()
	noErr(t, p.PutTrait(ctx, pid, newTrait(k.trait), 0), "PutTrait")
	noErr(t, p.PutRunState(ctx, newRun(pid, k.run, at(0))), "PutRunState")
	noErr(t, p.AppendEvent(ctx, newEvent(pid, 1)), "AppendEvent")
	noErr(t, p.PutRunLog(ctx, newRunLog(pid, k.date, "")), "PutRunLog")
	noErr(t, p.PutRerun(ctx, newRerun(k.rerun, pid, at(0))), "PutRerun")
	noErr(t, p.PutReplay(ctx, newReplay(pid, k.date, "", at(0))), "PutReplay")
	noErr(t, p.PutLateArrival(ctx, newLateArrival(pid, k.date, "", at(0), 1)), "PutLateArrival")
	noErr(t, p.WriteCascadeMarker(ctx, pid, "", k.date, k.other), "WriteCascadeMarker")
	noErr(t, p.PutReadiness(ctx, newReadiness(pid)), "PutReadiness")
	wantAcquire(t, p, pid, longTTL, true, "AcquireLock of the pipeline's ID")
}

func checkPipelineData(t *testing.T, p provider.Provider, pid string, k ids) {
	t.Helper()
	ctx := t.Context()
	what := func(m string) string { return m + " of the deleted pipeline (DeletePipeline removes the config only)" }
	traits, err := p.GetTraits(ctx, pid)
	wantLen(t, traits, err, 1, what("GetTraits"))
	run, err := p.GetRunState(ctx, k.run)
	mustGet(t, run, err, what("GetRunState"))
	runs, err := p.ListRuns(ctx, pid, 10)
	wantLen(t, runs, err, 1, what("ListRuns"))
	events, err := p.ListEvents(ctx, pid, 10)
	wantLen(t, events, err, 1, what("ListEvents"))
	rl, err := p.GetRunLog(ctx, pid, k.date, "")
	mustGet(t, rl, err, what("GetRunLog"))
	logs, err := p.ListRunLogs(ctx, pid, 10)
	wantLen(t, logs, err, 1, what("ListRunLogs"))
	rerun, err := p.GetRerun(ctx, k.rerun)
	mustGet(t, rerun, err, what("GetRerun"))
	reruns, err := p.ListReruns(ctx, pid, 10)
	wantLen(t, reruns, err, 1, what("ListReruns"))
	replay, err := p.GetReplay(ctx, pid, k.date, "")
	mustGet(t, replay, err, what("GetReplay"))
	late, err := p.ListLateArrivals(ctx, pid, k.date, "")
	wantLen(t, late, err, 1, what("ListLateArrivals"))
	ready, err := p.GetReadiness(ctx, pid)
	mustGet(t, ready, err, what("GetReadiness"))
	if r, ok := p.(provider.CascadeReader); ok {
		markers, err := r.ListCascadeMarkers(ctx, pid, 10)
		wantLen(t, markers, err, 1, what("ListCascadeMarkers"))
	}
	wantAcquire(t, p, pid, longTTL, false, what("AcquireLock (the lock must still be held)"))
}

// mutatePipeline changes every map and slice reachable from cfg in place.
func mutatePipeline(cfg *types.PipelineConfig) {
	cfg.Metadata["owner"] = "mallory"
	cfg.Metadata["tags"].([]any)[0] = "mutated"
	cfg.Traits["freshness"].Config["threshold"] = 99
	cfg.Trigger.Config["url"] = "http://evil"
	cfg.Retry.MaxAttempts = 99
	cfg.Schedules[0].ID = "mutated"
	cfg.Exclusions.Dates[0] = "1999-01-01"
	cfg.Downstream[0] = "mutated"
	delete(cfg.Traits, "volume")
}
