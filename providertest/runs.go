package providertest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// RunRunStore tests provider.RunStore: round trip, filled times, ListRuns order,
// ties and limits, compare-and-swap (match, mismatch, missing run, ID mismatches,
// CreatedAt kept, fresh UpdatedAt, one winner among 32, no lost update among 8x50),
// the list reflecting the latest CAS, aliasing, sizes, adversarial IDs, bad input
// and cancellation.
func RunRunStore(t *testing.T, h Harness) {
	t.Helper()
	group(t, "RunStore", h, func(t *testing.T, s *suite) {
		s.probe = probeRuns
		s.run(t, "put_get_round_trip", testRunStorePutGetRoundTrip)
		s.run(t, "get_missing", testRunStoreGetMissing)
		s.run(t, "list_runs_empty", testRunStoreListRunsEmpty)
		s.run(t, "put_fills_zero_times", testRunStorePutFillsZeroTimes)
		s.run(t, "put_fills_each_zero_time_on_its_own", testRunStorePutFillsEachZeroTimeOnItsOwn)
		s.run(t, "put_replaces", testRunStorePutReplaces)
		s.run(t, "put_identical_twice", testRunStorePutIdenticalTwice)
		s.run(t, "put_under_other_pipeline", testRunStorePutUnderOtherPipeline)
		s.run(t, "list_runs_newest_first", testRunStoreListRunsNewestFirst)
		s.run(t, "list_runs_order_across_time_zones", testRunStoreListRunsOrderAcrossTimeZones)
		s.run(t, "list_runs_ties_by_run_id_descending", testRunStoreListRunsTiesByRunIDDescending)
		s.run(t, "list_runs_limit", testRunStoreListRunsLimit)
		s.run(t, "list_runs_per_pipeline", testRunStoreListRunsPerPipeline)
		s.run(t, "put_again_moves_in_list", testRunStorePutAgainMovesInList)
		s.run(t, "cas_match", testRunStoreCASMatch)
		s.run(t, "cas_version_mismatch", testRunStoreCASVersionMismatch)
		s.run(t, "cas_missing_run", testRunStoreCASMissingRun)
		s.run(t, "cas_run_id_mismatch", testRunStoreCASRunIDMismatch)
		s.run(t, "cas_pipeline_id_mismatch", testRunStoreCASPipelineIDMismatch)
		s.run(t, "cas_keeps_created_at", testRunStoreCASKeepsCreatedAt)
		s.run(t, "cas_version_is_expected_plus_one", testRunStoreCASVersionIsExpectedPlusOne)
		s.run(t, "cas_across_instances", testRunStoreCASAcrossInstances)
		s.run(t, "list_runs_reflects_latest_cas", testRunStoreListRunsReflectsLatestCAS)
		s.run(t, "cas_concurrent_one_winner", testRunStoreCASConcurrentOneWinner)
		s.run(t, "cas_concurrent_no_lost_update", testRunStoreCASConcurrentNoLostUpdate)
		s.run(t, "no_aliasing", testRunStoreNoAliasing)
		testRunStoreSizes(t, s)
		s.run(t, "list_runs_large_items", testRunStoreListRunsLargeItems)
		s.run(t, "huge_cas_keeps_old_value", testRunStoreHugeCASKeepsOldValue)
		s.run(t, "adversarial_ids", testRunStoreAdversarialIDs)
		testRunStoreBadInputAndCancelled(t, s)
	})
}

// testRunStoreSizes runs the size subtests (large_value_round_trips, huge_value_too_large_or_stored, huge_update_keeps_old_value) of the RunStore group.
func testRunStoreSizes(t *testing.T, s *suite) {
	s.checkSizes(t, sizeCheck{
		put: func(ctx context.Context, p provider.Provider, k ids, payload string) error {
			run := newRun(k.pipeline, k.run, at(0))
			run.Metadata["payload"] = payload
			return p.PutRunState(ctx, run)
		},
		read: func(t *testing.T, p provider.Provider, k ids) (string, bool) {
			got, err := p.GetRunState(t.Context(), k.run)
			noErr(t, err, "GetRunState")
			list, lerr := p.ListRuns(t.Context(), k.pipeline, listAll)
			noErr(t, lerr, "ListRuns")
			if got == nil {
				if len(list) != 0 {
					t.Errorf("ListRuns has %d runs, GetRunState none", len(list))
				}
				return "", false
			}
			if len(list) != 1 || payloadOf(list[0].Metadata) != payloadOf(got.Metadata) {
				t.Errorf("ListRuns disagrees with GetRunState (%d runs)", len(list))
			}
			return payloadOf(got.Metadata), true
		},
	})
}

// testRunStoreBadInputAndCancelled runs the bad-input table (bad_input/...) and the cancelled-context subtest of the RunStore group.
func testRunStoreBadInputAndCancelled(t *testing.T, s *suite) {
	var bad []badCase
	for _, b := range badIDs {
		bad = append(bad,
			badCase{name: "put_run_id_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				return p.PutRunState(ctx, newRun(k.pipeline, b.id, at(0)))
			}},
			badCase{name: "put_pipeline_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				return p.PutRunState(ctx, newRun(b.id, k.run, at(0)))
			}},
			badCase{name: "get_run_id_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				_, err := p.GetRunState(ctx, b.id)
				return err
			}},
			badCase{name: "list_pipeline_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				_, err := p.ListRuns(ctx, b.id, 10)
				return err
			}},
			badCase{name: "cas_run_id_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				_, err := p.CompareAndSwapRunState(ctx, b.id, 0, newRun(k.pipeline, b.id, at(0)))
				return err
			}})
	}
	setupRun := func(t *testing.T, p provider.Provider, k ids) {
		t.Helper()
		noErr(t, p.PutRunState(t.Context(), newRun(k.pipeline, k.run, at(0))), "PutRunState")
	}
	bad = append(bad,
		badCase{name: "put_bad_status", call: func(ctx context.Context, p provider.Provider, k ids) error {
			run := newRun(k.pipeline, k.run, at(0))
			run.Status = "DONE"
			return p.PutRunState(ctx, run)
		}},
		badCase{name: "put_negative_version", call: func(ctx context.Context, p provider.Provider, k ids) error {
			run := newRun(k.pipeline, k.run, at(0))
			run.Version = -1
			return p.PutRunState(ctx, run)
		}},
		badCase{name: "put_over_existing_bad_status", setup: setupRun, call: func(ctx context.Context, p provider.Provider, k ids) error {
			run := newRun(k.pipeline, k.run, at(0))
			run.Status = ""
			return p.PutRunState(ctx, run)
		}},
		badCase{name: "put_under_other_pipeline", setup: setupRun, call: func(ctx context.Context, p provider.Provider, k ids) error {
			return p.PutRunState(ctx, newRun(k.other, k.run, at(1)))
		}},
		badCase{name: "list_limit_zero", call: func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.ListRuns(ctx, k.pipeline, 0)
			return err
		}},
		badCase{name: "list_limit_negative", call: func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.ListRuns(ctx, k.pipeline, -1)
			return err
		}},
		badCase{name: "cas_bad_status", setup: setupRun, call: func(ctx context.Context, p provider.Provider, k ids) error {
			next := newRun(k.pipeline, k.run, at(0))
			next.Status = "DONE"
			_, err := p.CompareAndSwapRunState(ctx, k.run, 0, next)
			return err
		}},
		badCase{name: "cas_new_run_id_differs", setup: setupRun, call: func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.CompareAndSwapRunState(ctx, k.run, 0, newRun(k.pipeline, k.run+"-x", at(0)))
			return err
		}},
		badCase{name: "cas_new_pipeline_differs", setup: setupRun, call: func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.CompareAndSwapRunState(ctx, k.run, 0, newRun(k.other, k.run, at(0)))
			return err
		}},
	)
	s.checkBadInput(t, bad, func(t *testing.T, p provider.Provider, k ids) {
		t.Helper()
		// The only run allowed is the unchanged one setup wrote, if any.
		want := jsonRoundTrip(t, newRun(k.pipeline, k.run, at(0)))
		got, err := p.GetRunState(t.Context(), k.run)
		noErr(t, err, "GetRunState")
		if got != nil {
			same(t, "run after a rejected call", want, *got)
		}
		for _, pid := range []string{k.pipeline, k.other} {
			list, err := p.ListRuns(t.Context(), pid, listAll)
			noErr(t, err, "ListRuns")
			for _, r := range list {
				same(t, "ListRuns after a rejected call", want, r)
			}
		}
	})
	s.checkCancelled(t, []call{
		{"PutRunState", func(ctx context.Context, p provider.Provider, k ids) error {
			return p.PutRunState(ctx, newRun(k.pipeline, k.run+"-new", at(1)))
		}},
		{"GetRunState", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.GetRunState(ctx, k.run)
			return err
		}},
		{"ListRuns", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.ListRuns(ctx, k.pipeline, 10)
			return err
		}},
		{"CompareAndSwapRunState", func(ctx context.Context, p provider.Provider, k ids) error {
			next := newRun(k.pipeline, k.run, at(0))
			next.Status = types.RunFailed
			_, err := p.CompareAndSwapRunState(ctx, k.run, 0, next)
			return err
		}},
	}, setupRun, func(t *testing.T, p provider.Provider, k ids) {
		t.Helper()
		got, err := p.GetRunState(t.Context(), k.run)
		same(t, "GetRunState after a cancelled CompareAndSwapRunState", jsonRoundTrip(t, newRun(k.pipeline, k.run, at(0))), mustGet(t, got, err, "GetRunState"))
		got, err = p.GetRunState(t.Context(), k.run+"-new")
		wantNil(t, got, err, "GetRunState after a cancelled PutRunState")
		list, err := p.ListRuns(t.Context(), k.pipeline, listAll)
		wantLen(t, list, err, 1, "ListRuns after cancelled writes")
	})
}

func testRunStorePutGetRoundTrip(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	run := newRun(k.pipeline, k.run, at(0))
	run.Version, run.Status = 7, types.RunCompletedMonitoring
	noErr(t, p.PutRunState(t.Context(), run), "PutRunState")
	got, err := p.GetRunState(t.Context(), k.run)
	same(t, "GetRunState", jsonRoundTrip(t, run), mustGet(t, got, err, "GetRunState"))
	list, err := p.ListRuns(t.Context(), k.pipeline, listAll)
	noErr(t, err, "ListRuns")
	same(t, "ListRuns", []types.RunState{jsonRoundTrip(t, run)}, list)
}

func testRunStoreGetMissing(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	got, err := p.GetRunState(t.Context(), k.run)
	wantNil(t, got, err, "GetRunState of a missing run")
}

func testRunStoreListRunsEmpty(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	list, err := p.ListRuns(t.Context(), k.pipeline, 10)
	wantLen(t, list, err, 0, "ListRuns of a pipeline without runs")
}

func testRunStorePutFillsZeroTimes(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	run := newRun(k.pipeline, k.run, time.Time{})
	run.UpdatedAt = time.Time{}
	before := s.now(t, p)
	noErr(t, p.PutRunState(t.Context(), run), "PutRunState")
	after := s.now(t, p)
	got, err := p.GetRunState(t.Context(), k.run)
	g := mustGet(t, got, err, "GetRunState")
	wantWithin(t, "CreatedAt", g.CreatedAt, before, after)
	wantWithin(t, "UpdatedAt", g.UpdatedAt, before, after)
}

func testRunStorePutFillsEachZeroTimeOnItsOwn(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	onlyCreated := newRun(k.pipeline, k.run, time.Time{}) // UpdatedAt kept
	onlyUpdated := newRun(k.pipeline, k.run+"-2", t0)
	onlyUpdated.UpdatedAt = time.Time{}
	before := s.now(t, p)
	noErr(t, p.PutRunState(t.Context(), onlyCreated), "PutRunState with a zero CreatedAt")
	noErr(t, p.PutRunState(t.Context(), onlyUpdated), "PutRunState with a zero UpdatedAt")
	after := s.now(t, p)
	got, err := p.GetRunState(t.Context(), onlyCreated.RunID)
	g := mustGet(t, got, err, "GetRunState")
	wantWithin(t, "CreatedAt filled alone", g.CreatedAt, before, after)
	same(t, "UpdatedAt given with a zero CreatedAt", onlyCreated.UpdatedAt, g.UpdatedAt)
	got, err = p.GetRunState(t.Context(), onlyUpdated.RunID)
	g = mustGet(t, got, err, "GetRunState")
	same(t, "CreatedAt given with a zero UpdatedAt", onlyUpdated.CreatedAt, g.CreatedAt)
	wantWithin(t, "UpdatedAt filled alone", g.UpdatedAt, before, after)
}

func testRunStorePutReplaces(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	noErr(t, p.PutRunState(t.Context(), newRun(k.pipeline, k.run, at(0))), "PutRunState")
	run := newRun(k.pipeline, k.run, at(0))
	run.Status, run.Version, run.Metadata = types.RunFailed, 3, map[string]any{"why": "oom"}
	noErr(t, p.PutRunState(t.Context(), run), "PutRunState again")
	got, err := p.GetRunState(t.Context(), k.run)
	same(t, "GetRunState after replace", jsonRoundTrip(t, run), mustGet(t, got, err, "GetRunState"))
	list, err := p.ListRuns(t.Context(), k.pipeline, listAll)
	noErr(t, err, "ListRuns")
	same(t, "ListRuns after replace", []types.RunState{jsonRoundTrip(t, run)}, list)
}

func testRunStorePutIdenticalTwice(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	run := newRun(k.pipeline, k.run, at(0))
	noErr(t, p.PutRunState(t.Context(), run), "PutRunState")
	noErr(t, p.PutRunState(t.Context(), run), "PutRunState of the same run again")
	got, err := p.GetRunState(t.Context(), k.run)
	same(t, "GetRunState", jsonRoundTrip(t, run), mustGet(t, got, err, "GetRunState"))
	list, err := p.ListRuns(t.Context(), k.pipeline, listAll)
	noErr(t, err, "ListRuns")
	same(t, "ListRuns after putting one run twice", []types.RunState{jsonRoundTrip(t, run)}, list)
}

func testRunStorePutUnderOtherPipeline(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	run := newRun(k.pipeline, k.run, at(0))
	noErr(t, p.PutRunState(t.Context(), run), "PutRunState")
	moved := newRun(k.other, k.run, at(1))
	wantErr(t, p.PutRunState(t.Context(), moved), provider.ErrInvalidArgument, "PutRunState of the run under another pipeline")
	got, err := p.GetRunState(t.Context(), k.run)
	same(t, "GetRunState", jsonRoundTrip(t, run), mustGet(t, got, err, "GetRunState"))
	list, err := p.ListRuns(t.Context(), k.other, listAll)
	wantLen(t, list, err, 0, "ListRuns of the other pipeline")
}

func testRunStoreListRunsNewestFirst(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	order := []int{3, 0, 4, 1, 2}
	for _, i := range order {
		noErr(t, p.PutRunState(t.Context(), newRun(k.pipeline, fmt.Sprintf("%s-%d", k.run, i), at(i*10))), "PutRunState")
	}
	list, err := p.ListRuns(t.Context(), k.pipeline, listAll)
	noErr(t, err, "ListRuns")
	same(t, "ListRuns order", []string{k.run + "-4", k.run + "-3", k.run + "-2", k.run + "-1", k.run + "-0"}, runIDs(list))
}

func testRunStoreListRunsOrderAcrossTimeZones(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	// Written in their zones, a's CreatedAt reads later ("2026-03-05T00:..+14:00")
	// than b's ("2026-03-03T23:..-12:00"), but b is an hour newer.
	a := newRun(k.pipeline, k.run+"-a", at(0).In(time.FixedZone("east", 14*3600)))
	b := newRun(k.pipeline, k.run+"-b", at(60).In(time.FixedZone("west", -12*3600)))
	noErr(t, p.PutRunState(t.Context(), a), "PutRunState a")
	noErr(t, p.PutRunState(t.Context(), b), "PutRunState b")
	list, err := p.ListRuns(t.Context(), k.pipeline, listAll)
	noErr(t, err, "ListRuns")
	same(t, "ListRuns order (newest instant first)", []string{b.RunID, a.RunID}, runIDs(list))
}

func testRunStoreListRunsTiesByRunIDDescending(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	for _, sfx := range []string{"b", "a", "c", "B"} {
		noErr(t, p.PutRunState(t.Context(), newRun(k.pipeline, k.run+sfx, at(0))), "PutRunState")
	}
	noErr(t, p.PutRunState(t.Context(), newRun(k.pipeline, k.run+"0", at(1))), "PutRunState")
	list, err := p.ListRuns(t.Context(), k.pipeline, listAll)
	noErr(t, err, "ListRuns")
	same(t, "ListRuns order", []string{k.run + "0", k.run + "c", k.run + "b", k.run + "a", k.run + "B"}, runIDs(list))
}

func testRunStoreListRunsLimit(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	for i := range 5 {
		noErr(t, p.PutRunState(t.Context(), newRun(k.pipeline, fmt.Sprintf("%s-%d", k.run, i), at(i))), "PutRunState")
	}
	for _, c := range []struct{ limit, want int }{{1, 1}, {2, 2}, {5, 5}, {6, 5}} {
		list, err := p.ListRuns(t.Context(), k.pipeline, c.limit)
		wantLen(t, list, err, c.want, fmt.Sprintf("ListRuns(limit %d)", c.limit))
		if list[0].RunID != k.run+"-4" {
			t.Errorf("ListRuns(limit %d) starts with %s, want the newest run", c.limit, list[0].RunID)
		}
	}
}

func testRunStoreListRunsPerPipeline(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	noErr(t, p.PutRunState(t.Context(), newRun(k.pipeline, k.run+"-a", at(0))), "PutRunState")
	noErr(t, p.PutRunState(t.Context(), newRun(k.other, k.run+"-b", at(1))), "PutRunState")
	list, err := p.ListRuns(t.Context(), k.pipeline, listAll)
	noErr(t, err, "ListRuns")
	same(t, "ListRuns of one pipeline", []string{k.run + "-a"}, runIDs(list))
}

func testRunStorePutAgainMovesInList(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	noErr(t, p.PutRunState(t.Context(), newRun(k.pipeline, k.run+"-1", at(1))), "PutRunState")
	noErr(t, p.PutRunState(t.Context(), newRun(k.pipeline, k.run+"-2", at(2))), "PutRunState")
	noErr(t, p.PutRunState(t.Context(), newRun(k.pipeline, k.run+"-1", at(3))), "PutRunState with a new CreatedAt")
	list, err := p.ListRuns(t.Context(), k.pipeline, listAll)
	noErr(t, err, "ListRuns")
	same(t, "ListRuns after re-putting a run (no stale copy)", []string{k.run + "-1", k.run + "-2"}, runIDs(list))
}

func testRunStoreCASMatch(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	run := newRun(k.pipeline, k.run, at(0))
	run.Version = 3
	noErr(t, p.PutRunState(t.Context(), run), "PutRunState")
	next := run
	next.Status, next.Metadata = types.RunRunning, map[string]any{"step": 2}
	before := s.now(t, p)
	swapped, err := p.CompareAndSwapRunState(t.Context(), k.run, 3, next)
	noErr(t, err, "CompareAndSwapRunState")
	if !swapped {
		t.Fatal("CompareAndSwapRunState with the stored version returned false")
	}
	after := s.now(t, p)
	got, err := p.GetRunState(t.Context(), k.run)
	g := mustGet(t, got, err, "GetRunState")
	want := jsonRoundTrip(t, next)
	want.Version = 4
	want.UpdatedAt = g.UpdatedAt
	same(t, "GetRunState after CAS", want, g)
	wantWithin(t, "UpdatedAt after CAS", g.UpdatedAt, before, after)
}

func testRunStoreCASVersionMismatch(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	run := newRun(k.pipeline, k.run, at(0))
	run.Version = 2
	noErr(t, p.PutRunState(t.Context(), run), "PutRunState")
	for _, v := range []int{0, 1, 3, 100} {
		next := run
		next.Status = types.RunFailed
		swapped, err := p.CompareAndSwapRunState(t.Context(), k.run, v, next)
		noErr(t, err, "CompareAndSwapRunState with a stale version")
		if swapped {
			t.Errorf("CompareAndSwapRunState(expected %d) succeeded on version 2", v)
		}
	}
	got, err := p.GetRunState(t.Context(), k.run)
	same(t, "GetRunState after failed CAS", jsonRoundTrip(t, run), mustGet(t, got, err, "GetRunState"))
}

func testRunStoreCASMissingRun(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	swapped, err := p.CompareAndSwapRunState(t.Context(), k.run, 0, newRun(k.pipeline, k.run, at(0)))
	noErr(t, err, "CompareAndSwapRunState of a missing run")
	if swapped {
		t.Error("CompareAndSwapRunState of a missing run returned true")
	}
	got, err := p.GetRunState(t.Context(), k.run)
	wantNil(t, got, err, "GetRunState after CAS of a missing run")
	list, err := p.ListRuns(t.Context(), k.pipeline, listAll)
	wantLen(t, list, err, 0, "ListRuns after CAS of a missing run")
}

func testRunStoreCASRunIDMismatch(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	run := newRun(k.pipeline, k.run, at(0))
	noErr(t, p.PutRunState(t.Context(), run), "PutRunState")
	noErr(t, p.PutRunState(t.Context(), newRun(k.pipeline, k.run+"-x", at(1))), "PutRunState")
	next := newRun(k.pipeline, k.run+"-x", at(0))
	next.Status = types.RunCancelled
	swapped, err := p.CompareAndSwapRunState(t.Context(), k.run, 0, next)
	wantErr(t, err, provider.ErrInvalidArgument, "CompareAndSwapRunState with newState.RunID != runID")
	if swapped {
		t.Error("swapped = true")
	}
	for _, want := range []types.RunState{run, newRun(k.pipeline, k.run+"-x", at(1))} {
		got, err := p.GetRunState(t.Context(), want.RunID)
		same(t, "GetRunState "+want.RunID, jsonRoundTrip(t, want), mustGet(t, got, err, "GetRunState"))
	}
}

func testRunStoreCASPipelineIDMismatch(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	run := newRun(k.pipeline, k.run, at(0))
	noErr(t, p.PutRunState(t.Context(), run), "PutRunState")
	next := newRun(k.other, k.run, at(0))
	swapped, err := p.CompareAndSwapRunState(t.Context(), k.run, 0, next)
	wantErr(t, err, provider.ErrInvalidArgument, "CompareAndSwapRunState with another PipelineID")
	if swapped {
		t.Error("swapped = true")
	}
	got, err := p.GetRunState(t.Context(), k.run)
	same(t, "GetRunState", jsonRoundTrip(t, run), mustGet(t, got, err, "GetRunState"))
	list, err := p.ListRuns(t.Context(), k.other, listAll)
	wantLen(t, list, err, 0, "ListRuns of the other pipeline")
}

func testRunStoreCASKeepsCreatedAt(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	run := newRun(k.pipeline, k.run, at(0))
	noErr(t, p.PutRunState(t.Context(), run), "PutRunState")
	next := run
	next.CreatedAt = at(500)
	swapped, err := p.CompareAndSwapRunState(t.Context(), k.run, 0, next)
	noErr(t, err, "CompareAndSwapRunState")
	if !swapped {
		t.Fatal("swapped = false")
	}
	got, err := p.GetRunState(t.Context(), k.run)
	if g := mustGet(t, got, err, "GetRunState"); !g.CreatedAt.Equal(run.CreatedAt) {
		t.Errorf("CreatedAt = %v after CAS, want the stored %v", g.CreatedAt, run.CreatedAt)
	}
}

func testRunStoreCASVersionIsExpectedPlusOne(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	run := newRun(k.pipeline, k.run, at(0))
	run.Version = 5
	noErr(t, p.PutRunState(t.Context(), run), "PutRunState")
	for i, v := range []int{0, 99, 5} { // newState.Version is ignored
		next := run
		next.Version = v
		swapped, err := p.CompareAndSwapRunState(t.Context(), k.run, 5+i, next)
		noErr(t, err, "CompareAndSwapRunState")
		if !swapped {
			t.Fatalf("CompareAndSwapRunState(expected %d) = false", 5+i)
		}
		got, err := p.GetRunState(t.Context(), k.run)
		if g := mustGet(t, got, err, "GetRunState"); g.Version != 6+i {
			t.Errorf("Version = %d after CAS from %d, want %d", g.Version, 5+i, 6+i)
		}
	}
}

func testRunStoreCASAcrossInstances(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	run := newRun(k.pipeline, k.run, at(0))
	noErr(t, p.PutRunState(t.Context(), run), "PutRunState")
	next := run
	next.Status = types.RunRunning
	swapped, err := q.CompareAndSwapRunState(t.Context(), k.run, 0, next)
	noErr(t, err, "CompareAndSwapRunState on another instance")
	if !swapped {
		t.Fatal("swapped = false")
	}
	swapped, err = p.CompareAndSwapRunState(t.Context(), k.run, 0, next)
	noErr(t, err, "CompareAndSwapRunState with the old version")
	if swapped {
		t.Error("CAS from the old version succeeded after another instance's CAS")
	}
}

func testRunStoreListRunsReflectsLatestCAS(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	run := newRun(k.pipeline, k.run, at(0))
	noErr(t, p.PutRunState(t.Context(), run), "PutRunState")
	noErr(t, p.PutRunState(t.Context(), newRun(k.pipeline, k.run+"-old", at(-1))), "PutRunState")
	for v, st := range []types.RunStatus{types.RunTriggering, types.RunRunning, types.RunCompleted} {
		next := run
		next.Status = st
		next.Metadata = map[string]any{"step": v}
		inst := []provider.Provider{p, q}[v%2]
		swapped, err := inst.CompareAndSwapRunState(t.Context(), k.run, v, next)
		noErr(t, err, "CompareAndSwapRunState")
		if !swapped {
			t.Fatalf("CAS to %s = false", st)
		}
		got, err := p.GetRunState(t.Context(), k.run)
		g := mustGet(t, got, err, "GetRunState")
		for _, reader := range []provider.Provider{p, q} {
			list, err := reader.ListRuns(t.Context(), k.pipeline, listAll)
			wantLen(t, list, err, 2, "ListRuns")
			same(t, fmt.Sprintf("ListRuns[0] after CAS to %s", st), g, list[0])
		}
	}
}

func testRunStoreCASConcurrentOneWinner(t *testing.T, s *suite) {
	insts := []provider.Provider{s.open(t), s.open(t)}
	k := newIDs(t)
	const n = 16
	for round, start := 0, time.Now(); raceAgain(round, start) && !t.Failed(); round++ {
		run := newRun(k.pipeline, fmt.Sprintf("%s-r%04d", k.run, round), at(0))
		run.Version = 4
		noErr(t, insts[0].PutRunState(t.Context(), run), "PutRunState")
		won := make([]bool, n)
		var e errs
		runConcurrently(n, func(i int) {
			next := run
			next.Status = types.RunRunning
			next.Metadata = map[string]any{"winner": i}
			ok, err := insts[i%2].CompareAndSwapRunState(t.Context(), run.RunID, 4, next)
			if err != nil {
				e.add("goroutine %d: CompareAndSwapRunState: %v", i, err)
			}
			won[i] = ok
		})
		e.report(t)
		var winners []int
		for i, w := range won {
			if w {
				winners = append(winners, i)
			}
		}
		if len(winners) != 1 {
			t.Fatalf("round %d: %d of %d concurrent CAS calls from one version won (%v), want exactly 1", round, len(winners), n, winners)
		}
		got, err := insts[1].GetRunState(t.Context(), run.RunID)
		g := mustGet(t, got, err, "GetRunState")
		if g.Version != 5 || g.Metadata["winner"] != float64(winners[0]) {
			t.Fatalf("round %d: stored version %d, winner %v; want version 5 written by goroutine %d", round, g.Version, g.Metadata["winner"], winners[0])
		}
	}
}

func testRunStoreCASConcurrentNoLostUpdate(t *testing.T, s *suite) {
	insts := []provider.Provider{s.open(t), s.open(t)}
	k := newIDs(t)
	run := newRun(k.pipeline, k.run, at(0))
	run.Metadata = map[string]any{"counter": 0}
	noErr(t, insts[0].PutRunState(t.Context(), run), "PutRunState")
	const workers, increments = 8, 50
	var e errs
	runConcurrently(workers, func(i int) {
		p := insts[i%2]
		for done, tries := 0, 0; done < increments; tries++ {
			if tries > 100*increments*workers {
				e.add("goroutine %d: gave up after %d tries", i, tries)
				return
			}
			cur, err := p.GetRunState(t.Context(), k.run)
			if err != nil || cur == nil {
				e.add("goroutine %d: GetRunState = %v, %v", i, cur, err)
				return
			}
			next := *cur
			c, _ := cur.Metadata["counter"].(float64)
			next.Metadata = map[string]any{"counter": c + 1}
			ok, err := p.CompareAndSwapRunState(t.Context(), k.run, cur.Version, next)
			if err != nil {
				e.add("goroutine %d: CompareAndSwapRunState: %v", i, err)
				return
			}
			if ok {
				done++
				continue
			}
			// Lost the race: back off a little, with jitter.
			time.Sleep(rand.N(time.Duration(min(tries+1, 20)) * 50 * time.Microsecond))
		}
	})
	e.report(t)
	got, err := insts[0].GetRunState(t.Context(), k.run)
	g := mustGet(t, got, err, "GetRunState")
	if g.Version != workers*increments || g.Metadata["counter"] != float64(workers*increments) {
		t.Errorf("after %d successful CAS increments: version %d, counter %v; want both %d",
			workers*increments, g.Version, g.Metadata["counter"], workers*increments)
	}
	list, err := insts[1].ListRuns(t.Context(), k.pipeline, listAll)
	wantLen(t, list, err, 1, "ListRuns")
	same(t, "ListRuns after the concurrent CAS increments", g, list[0])
}

func testRunStoreNoAliasing(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	run := newRun(k.pipeline, k.run, at(0))
	want := jsonRoundTrip(t, run)
	noErr(t, p.PutRunState(t.Context(), run), "PutRunState")
	mutateMetadata(run.Metadata)
	got, err := p.GetRunState(t.Context(), k.run)
	first := mustGet(t, got, err, "GetRunState")
	same(t, "GetRunState after mutating the put value", want, first)
	mutateMetadata(first.Metadata)
	list, err := p.ListRuns(t.Context(), k.pipeline, listAll)
	wantLen(t, list, err, 1, "ListRuns")
	mutateMetadata(list[0].Metadata)
	got, err = p.GetRunState(t.Context(), k.run)
	same(t, "GetRunState after mutating returned values", want, mustGet(t, got, err, "GetRunState"))
	list, err = p.ListRuns(t.Context(), k.pipeline, listAll)
	wantLen(t, list, err, 1, "ListRuns")
	same(t, "ListRuns after mutating returned values", want, list[0])
}

func testRunStoreListRunsLargeItems(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	for i := range largeItems {
		run := newRun(k.pipeline, fmt.Sprintf("%s-%d", k.run, i), at(i))
		run.Metadata["payload"] = bigString(largeValue)
		noErr(t, p.PutRunState(t.Context(), run), "PutRunState")
	}
	list, err := p.ListRuns(t.Context(), k.pipeline, largeItems)
	wantLen(t, list, err, largeItems, "ListRuns of runs holding 256 KB each (more than one page of most stores)")
}

func testRunStoreHugeCASKeepsOldValue(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	run := newRun(k.pipeline, k.run, at(0))
	noErr(t, p.PutRunState(t.Context(), run), "PutRunState")
	next := run
	next.Metadata = map[string]any{"payload": bigString(hugeValue)}
	swapped, err := p.CompareAndSwapRunState(t.Context(), k.run, 0, next)
	got, gerr := p.GetRunState(t.Context(), k.run)
	g := mustGet(t, got, gerr, "GetRunState")
	switch {
	case err == nil && swapped:
		if g.Version != 1 || payloadOf(g.Metadata) != payloadOf(next.Metadata) {
			t.Errorf("1 MB CAS accepted but stored version %d with %d bytes", g.Version, len(payloadOf(g.Metadata)))
		}
	case wantErr(t, err, provider.ErrTooLarge, "CAS with a 1 MB value (want success or ErrTooLarge)"):
		same(t, "run after a rejected 1 MB CAS", jsonRoundTrip(t, run), g)
		list, err := p.ListRuns(t.Context(), k.pipeline, listAll)
		wantLen(t, list, err, 1, "ListRuns")
		same(t, "ListRuns after a rejected 1 MB CAS", jsonRoundTrip(t, run), list[0])
	}
}

func testRunStoreAdversarialIDs(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	runKeys := singles(adversarialIDs(k.run))
	accepted := checkDistinct(t, runKeys,
		func(key []string, tag int) error {
			run := newRun(k.pipeline, key[0], at(tag))
			run.Version = tag
			return p.PutRunState(t.Context(), run)
		},
		func(key []string) (int, bool, error) {
			got, err := p.GetRunState(t.Context(), key[0])
			if err != nil || got == nil {
				return 0, false, err
			}
			return got.Version, true, nil
		})
	list, err := p.ListRuns(t.Context(), k.pipeline, listAll)
	wantLen(t, list, err, len(accepted), "ListRuns of the runs with adversarial IDs")
	checkDistinct(t, singles(adversarialIDs(k.other)),
		func(key []string, tag int) error {
			run := newRun(key[0], fmt.Sprintf("%s-p%d", k.run, tag), at(0))
			run.Version = tag
			return p.PutRunState(t.Context(), run)
		},
		func(key []string) (int, bool, error) {
			list, err := p.ListRuns(t.Context(), key[0], listAll)
			if err != nil || len(list) == 0 {
				return 0, false, err
			}
			if len(list) > 1 {
				return 0, false, fmt.Errorf("ListRuns(%q) has %d runs, want 1", key[0], len(list))
			}
			return list[0].Version, true, nil
		})
}

func runIDs(list []types.RunState) []string {
	out := make([]string, len(list))
	for i, r := range list {
		out[i] = r.RunID
	}
	return out
}

// mutateMetadata changes a sampleMetadata map, and what it holds, in place.
func mutateMetadata(m map[string]any) {
	m["owner"] = "mallory"
	m["tags"].([]any)[0] = "mutated"
	m["nested"].(map[string]any)["k"] = "mutated"
	m["added"] = true
}
