package providertest

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// RunRerunStore tests provider.RerunStore: round trip, upsert, ListReruns and
// ListAllReruns newest RequestedAt first with ties and limits, moving a rerun to
// another pipeline, the lists agreeing with GetRerun after (concurrent) updates,
// aliasing, sizes, adversarial IDs, bad input and cancellation.
func RunRerunStore(t *testing.T, h Harness) {
	t.Helper()
	group(t, "RerunStore", h, func(t *testing.T, s *suite) {
		s.probe = probeReruns
		s.run(t, "put_get_round_trip", testRerunStorePutGetRoundTrip)
		s.run(t, "get_missing", testRerunStoreGetMissing)
		s.run(t, "list_empty", testRerunStoreListEmpty)
		s.run(t, "put_fills_zero_requested_at", testRerunStorePutFillsZeroRequestedAt)
		s.run(t, "put_replaces", testRerunStorePutReplaces)
		s.run(t, "put_identical_twice", testRerunStorePutIdenticalTwice)
		s.run(t, "list_reruns_newest_first", testRerunStoreListRerunsNewestFirst)
		s.run(t, "list_ties_by_rerun_id_descending", testRerunStoreListTiesByRerunIDDescending)
		s.run(t, "list_all_reruns_across_pipelines", testRerunStoreListAllRerunsAcrossPipelines)
		s.run(t, "move_between_pipelines", testRerunStoreMoveBetweenPipelines)
		s.run(t, "lists_match_record_after_updates", testRerunStoreListsMatchRecordAfterUpdates)
		s.run(t, "lists_match_record_after_concurrent_updates", testRerunStoreListsMatchRecordAfterConcurrentUpdates)
		s.run(t, "no_aliasing", testRerunStoreNoAliasing)
		testRerunStoreSizes(t, s)
		s.run(t, "list_large_items", testRerunStoreListLargeItems)
		s.run(t, "adversarial_ids", testRerunStoreAdversarialIDs)
		testRerunStoreBadInputAndCancelled(t, s)
	})
}

// testRerunStoreSizes runs the size subtests (large_value_round_trips, huge_value_too_large_or_stored, huge_update_keeps_old_value) of the RerunStore group.
func testRerunStoreSizes(t *testing.T, s *suite) {
	s.checkSizes(t, sizeCheck{
		put: func(ctx context.Context, p provider.Provider, k ids, payload string) error {
			r := newRerun(k.rerun, k.pipeline, at(0))
			r.Metadata["payload"] = payload
			return p.PutRerun(ctx, r)
		},
		read: func(t *testing.T, p provider.Provider, k ids) (string, bool) {
			got, err := p.GetRerun(t.Context(), k.rerun)
			noErr(t, err, "GetRerun")
			list, lerr := p.ListReruns(t.Context(), k.pipeline, 10)
			noErr(t, lerr, "ListReruns")
			if got == nil {
				if len(list) != 0 {
					t.Errorf("ListReruns has %d reruns, GetRerun none", len(list))
				}
				return "", false
			}
			if len(list) != 1 || payloadOf(list[0].Metadata) != payloadOf(got.Metadata) {
				t.Errorf("ListReruns disagrees with GetRerun (%d reruns)", len(list))
			}
			return payloadOf(got.Metadata), true
		},
	})
}

// testRerunStoreBadInputAndCancelled runs the bad-input table (bad_input/...) and the cancelled-context subtest of the RerunStore group.
func testRerunStoreBadInputAndCancelled(t *testing.T, s *suite) {
	var bad []badCase
	for _, b := range badIDs {
		bad = append(bad,
			badCase{name: "put_rerun_id_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				return p.PutRerun(ctx, newRerun(b.id, k.pipeline, at(0)))
			}},
			badCase{name: "put_pipeline_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				return p.PutRerun(ctx, newRerun(k.rerun, b.id, at(0)))
			}},
			badCase{name: "put_original_date_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				r := newRerun(k.rerun, k.pipeline, at(0))
				r.OriginalDate = b.id
				return p.PutRerun(ctx, r)
			}},
			badCase{name: "get_rerun_id_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				_, err := p.GetRerun(ctx, b.id)
				return err
			}},
			badCase{name: "list_pipeline_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				_, err := p.ListReruns(ctx, b.id, 10)
				return err
			}})
	}
	bad = append(bad,
		badCase{name: "put_bad_status", call: func(ctx context.Context, p provider.Provider, k ids) error {
			r := newRerun(k.rerun, k.pipeline, at(0))
			r.Status = "DONE"
			return p.PutRerun(ctx, r)
		}},
		badCase{name: "put_bad_rerun_run_id", call: func(ctx context.Context, p provider.Provider, k ids) error {
			r := newRerun(k.rerun, k.pipeline, at(0))
			r.RerunRunID = "run{1}"
			return p.PutRerun(ctx, r)
		}},
		badCase{name: "list_limit_zero", call: func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.ListReruns(ctx, k.pipeline, 0)
			return err
		}},
		badCase{name: "list_all_limit_zero", call: func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.ListAllReruns(ctx, 0)
			return err
		}},
		badCase{name: "list_all_limit_negative", call: func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.ListAllReruns(ctx, -3)
			return err
		}},
	)
	s.checkBadInput(t, bad, func(t *testing.T, p provider.Provider, k ids) {
		t.Helper()
		all, err := p.ListAllReruns(t.Context(), 10)
		wantLen(t, all, err, 0, "ListAllReruns after a rejected call")
		got, err := p.GetRerun(t.Context(), k.rerun)
		wantNil(t, got, err, "GetRerun after a rejected call")
	})
	s.checkCancelled(t, []call{
		{"PutRerun", func(ctx context.Context, p provider.Provider, k ids) error {
			return p.PutRerun(ctx, newRerun(k.rerun, k.pipeline, at(0)))
		}},
		{"GetRerun", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.GetRerun(ctx, k.rerun)
			return err
		}},
		{"ListReruns", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.ListReruns(ctx, k.pipeline, 10)
			return err
		}},
		{"ListAllReruns", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.ListAllReruns(ctx, 10)
			return err
		}},
	}, nil, func(t *testing.T, p provider.Provider, k ids) {
		t.Helper()
		got, err := p.GetRerun(t.Context(), k.rerun)
		wantNil(t, got, err, "GetRerun after a cancelled PutRerun")
		all, err := p.ListAllReruns(t.Context(), 10)
		wantLen(t, all, err, 0, "ListAllReruns after a cancelled PutRerun")
	})
}

func testRerunStorePutGetRoundTrip(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	r := newRerun(k.rerun, k.pipeline, at(0))
	noErr(t, p.PutRerun(t.Context(), r), "PutRerun")
	got, err := p.GetRerun(t.Context(), k.rerun)
	same(t, "GetRerun", jsonRoundTrip(t, r), mustGet(t, got, err, "GetRerun"))
	list, err := p.ListReruns(t.Context(), k.pipeline, 10)
	noErr(t, err, "ListReruns")
	same(t, "ListReruns", []types.RerunRecord{jsonRoundTrip(t, r)}, list)
	all, err := p.ListAllReruns(t.Context(), 10)
	noErr(t, err, "ListAllReruns")
	same(t, "ListAllReruns", []types.RerunRecord{jsonRoundTrip(t, r)}, all)
}

func testRerunStoreGetMissing(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	got, err := p.GetRerun(t.Context(), k.rerun)
	wantNil(t, got, err, "GetRerun of a missing rerun")
}

func testRerunStoreListEmpty(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	list, err := p.ListReruns(t.Context(), k.pipeline, 10)
	wantLen(t, list, err, 0, "ListReruns of a pipeline without reruns")
	all, err := p.ListAllReruns(t.Context(), 10)
	wantLen(t, all, err, 0, "ListAllReruns of an empty store")
}

func testRerunStorePutFillsZeroRequestedAt(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	before := s.now(t, p)
	noErr(t, p.PutRerun(t.Context(), newRerun(k.rerun, k.pipeline, time.Time{})), "PutRerun with a zero RequestedAt")
	after := s.now(t, p)
	got, err := p.GetRerun(t.Context(), k.rerun)
	wantWithin(t, "RequestedAt", mustGet(t, got, err, "GetRerun").RequestedAt, before, after)
	list, err := p.ListReruns(t.Context(), k.pipeline, 10)
	wantLen(t, list, err, 1, "ListReruns")
	wantWithin(t, "RequestedAt in ListReruns", list[0].RequestedAt, before, after)
}

func testRerunStorePutReplaces(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	noErr(t, p.PutRerun(t.Context(), newRerun(k.rerun, k.pipeline, at(0))), "PutRerun")
	r := newRerun(k.rerun, k.pipeline, at(0))
	r.Status, r.CompletedAt, r.Metadata = types.RequestFailed, nil, map[string]any{"err": "x"}
	noErr(t, p.PutRerun(t.Context(), r), "PutRerun again")
	got, err := p.GetRerun(t.Context(), k.rerun)
	same(t, "GetRerun after replace", jsonRoundTrip(t, r), mustGet(t, got, err, "GetRerun"))
	all, err := p.ListAllReruns(t.Context(), 10)
	noErr(t, err, "ListAllReruns")
	same(t, "ListAllReruns after replace", []types.RerunRecord{jsonRoundTrip(t, r)}, all)
}

func testRerunStorePutIdenticalTwice(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	r := newRerun(k.rerun, k.pipeline, at(0))
	noErr(t, p.PutRerun(t.Context(), r), "PutRerun")
	noErr(t, p.PutRerun(t.Context(), r), "PutRerun of the same record again")
	want := []types.RerunRecord{jsonRoundTrip(t, r)}
	list, err := p.ListReruns(t.Context(), k.pipeline, 10)
	noErr(t, err, "ListReruns")
	same(t, "ListReruns after putting one record twice", want, list)
	all, err := p.ListAllReruns(t.Context(), 10)
	noErr(t, err, "ListAllReruns")
	same(t, "ListAllReruns after putting one record twice", want, all)
}

func testRerunStoreListRerunsNewestFirst(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	for _, i := range []int{2, 0, 3, 1} {
		noErr(t, p.PutRerun(t.Context(), newRerun(fmt.Sprintf("%s-%d", k.rerun, i), k.pipeline, at(i))), "PutRerun")
	}
	list, err := p.ListReruns(t.Context(), k.pipeline, 10)
	noErr(t, err, "ListReruns")
	same(t, "ListReruns order", rerunNames(k.rerun, 3, 2, 1, 0), rerunIDs(list))
	list, err = p.ListReruns(t.Context(), k.pipeline, 2)
	noErr(t, err, "ListReruns")
	same(t, "ListReruns(limit 2)", rerunNames(k.rerun, 3, 2), rerunIDs(list))
}

func testRerunStoreListTiesByRerunIDDescending(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	for _, sfx := range []string{"b", "c", "a"} {
		noErr(t, p.PutRerun(t.Context(), newRerun(k.rerun+sfx, k.pipeline, at(0))), "PutRerun")
	}
	want := []string{k.rerun + "c", k.rerun + "b", k.rerun + "a"}
	list, err := p.ListReruns(t.Context(), k.pipeline, 10)
	noErr(t, err, "ListReruns")
	same(t, "ListReruns order", want, rerunIDs(list))
	all, err := p.ListAllReruns(t.Context(), 10)
	noErr(t, err, "ListAllReruns")
	same(t, "ListAllReruns order", want, rerunIDs(all))
}

func testRerunStoreListAllRerunsAcrossPipelines(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	for _, i := range []int{1, 4, 0, 3, 2} {
		pid := []string{k.pipeline, k.other}[i%2]
		noErr(t, p.PutRerun(t.Context(), newRerun(fmt.Sprintf("%s-%d", k.rerun, i), pid, at(i))), "PutRerun")
	}
	all, err := p.ListAllReruns(t.Context(), 10)
	noErr(t, err, "ListAllReruns")
	same(t, "ListAllReruns order", rerunNames(k.rerun, 4, 3, 2, 1, 0), rerunIDs(all))
	all, err = p.ListAllReruns(t.Context(), 3)
	noErr(t, err, "ListAllReruns")
	same(t, "ListAllReruns(limit 3)", rerunNames(k.rerun, 4, 3, 2), rerunIDs(all))
	list, err := p.ListReruns(t.Context(), k.other, 10)
	noErr(t, err, "ListReruns")
	same(t, "ListReruns of one pipeline", rerunNames(k.rerun, 3, 1), rerunIDs(list))
}

func testRerunStoreMoveBetweenPipelines(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	noErr(t, p.PutRerun(t.Context(), newRerun(k.rerun, k.pipeline, at(0))), "PutRerun")
	moved := newRerun(k.rerun, k.other, at(1))
	noErr(t, p.PutRerun(t.Context(), moved), "PutRerun under another pipeline")
	list, err := p.ListReruns(t.Context(), k.pipeline, 10)
	wantLen(t, list, err, 0, "ListReruns of the old pipeline")
	list, err = p.ListReruns(t.Context(), k.other, 10)
	noErr(t, err, "ListReruns")
	same(t, "ListReruns of the new pipeline", []types.RerunRecord{jsonRoundTrip(t, moved)}, list)
	all, err := p.ListAllReruns(t.Context(), 10)
	noErr(t, err, "ListAllReruns")
	same(t, "ListAllReruns", []types.RerunRecord{jsonRoundTrip(t, moved)}, all)
}

func testRerunStoreListsMatchRecordAfterUpdates(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	noErr(t, p.PutRerun(t.Context(), newRerun(k.rerun+"-other", k.pipeline, at(5))), "PutRerun")
	steps := []struct {
		status types.RequestStatus
		at     int
	}{{types.RequestPending, 0}, {types.RequestRunning, 10}, {types.RequestFailed, 3}, {types.RequestCompleted, 7}}
	for i, st := range steps {
		r := newRerun(k.rerun, k.pipeline, at(st.at))
		r.Status = st.status
		noErr(t, []provider.Provider{p, q}[i%2].PutRerun(t.Context(), r), "PutRerun")
		checkRerunListsAgree(t, p, k.pipeline)
		checkRerunListsAgree(t, q, k.pipeline)
	}
}

func testRerunStoreListsMatchRecordAfterConcurrentUpdates(t *testing.T, s *suite) {
	insts := []provider.Provider{s.open(t), s.open(t)}
	k := newIDs(t)
	var e errs
	runConcurrently(8, func(i int) {
		for j := range 4 {
			r := newRerun(k.rerun, []string{k.pipeline, k.other}[(i+j)%2], at(i*4+j))
			r.Description = fmt.Sprintf("writer %d update %d", i, j)
			if err := insts[i%2].PutRerun(t.Context(), r); err != nil {
				e.add("writer %d: PutRerun: %v", i, err)
			}
		}
	})
	e.report(t)
	got, err := insts[0].GetRerun(t.Context(), k.rerun)
	g := mustGet(t, got, err, "GetRerun")
	checkRerunListsAgree(t, insts[1], g.PipelineID)
	stale := map[string]string{k.pipeline: k.other, k.other: k.pipeline}[g.PipelineID]
	list, err := insts[1].ListReruns(t.Context(), stale, 10)
	wantLen(t, list, err, 0, "ListReruns of the pipeline the rerun moved away from")
}

func testRerunStoreNoAliasing(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	r := newRerun(k.rerun, k.pipeline, at(0))
	want := jsonRoundTrip(t, r)
	noErr(t, p.PutRerun(t.Context(), r), "PutRerun")
	mutateMetadata(r.Metadata)
	*r.CompletedAt = at(99)
	got, err := p.GetRerun(t.Context(), k.rerun)
	first := mustGet(t, got, err, "GetRerun")
	same(t, "GetRerun after mutating the put value", want, first)
	mutateMetadata(first.Metadata)
	list, err := p.ListReruns(t.Context(), k.pipeline, 10)
	wantLen(t, list, err, 1, "ListReruns")
	mutateMetadata(list[0].Metadata)
	all, err := p.ListAllReruns(t.Context(), 10)
	wantLen(t, all, err, 1, "ListAllReruns")
	mutateMetadata(all[0].Metadata)
	got, err = p.GetRerun(t.Context(), k.rerun)
	same(t, "GetRerun after mutating returned values", want, mustGet(t, got, err, "GetRerun"))
}

func testRerunStoreListLargeItems(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	for i := range largeItems {
		r := newRerun(fmt.Sprintf("%s-%d", k.rerun, i), k.pipeline, at(i))
		r.Metadata["payload"] = bigString(largeValue)
		noErr(t, p.PutRerun(t.Context(), r), "PutRerun")
	}
	list, err := p.ListReruns(t.Context(), k.pipeline, largeItems)
	wantLen(t, list, err, largeItems, "ListReruns of reruns holding 256 KB each")
	all, err := p.ListAllReruns(t.Context(), largeItems)
	wantLen(t, all, err, largeItems, "ListAllReruns of reruns holding 256 KB each")
}

func testRerunStoreAdversarialIDs(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	accepted := checkDistinct(t, singles(adversarialIDs(k.rerun)),
		func(key []string, tag int) error {
			r := newRerun(key[0], k.pipeline, at(tag))
			r.Reason = strconv.Itoa(tag)
			return p.PutRerun(t.Context(), r)
		},
		func(key []string) (int, bool, error) {
			got, err := p.GetRerun(t.Context(), key[0])
			if err != nil || got == nil {
				return 0, false, err
			}
			tag, err := strconv.Atoi(got.Reason)
			return tag, true, err
		})
	list, err := p.ListReruns(t.Context(), k.pipeline, listAll)
	wantLen(t, list, err, len(accepted), "ListReruns of the reruns with adversarial IDs")
	all, err := p.ListAllReruns(t.Context(), listAll)
	wantLen(t, all, err, len(accepted), "ListAllReruns of the reruns with adversarial IDs")
}

// checkRerunListsAgree checks that every rerun ListReruns and ListAllReruns return
// equals what GetRerun returns for it.
func checkRerunListsAgree(t *testing.T, p provider.Provider, pipelineID string) {
	t.Helper()
	list, err := p.ListReruns(t.Context(), pipelineID, listAll)
	noErr(t, err, "ListReruns")
	all, err := p.ListAllReruns(t.Context(), listAll)
	noErr(t, err, "ListAllReruns")
	for _, r := range append(list, all...) {
		got, err := p.GetRerun(t.Context(), r.RerunID)
		same(t, "listed rerun "+r.RerunID+" vs GetRerun", mustGet(t, got, err, "GetRerun"), r)
	}
	var listed []string
	for _, r := range all {
		if r.PipelineID == pipelineID {
			listed = append(listed, r.RerunID)
		}
	}
	same(t, "ListReruns vs the pipeline's reruns in ListAllReruns", listed, rerunIDs(list))
}

func rerunIDs(list []types.RerunRecord) []string {
	out := make([]string, len(list))
	for i, r := range list {
		out[i] = r.RerunID
	}
	return out
}

// rerunNames returns base-i for each i.
func rerunNames(base string, is ...int) []string {
	out := make([]string, len(is))
	for j, i := range is {
		out[j] = fmt.Sprintf("%s-%d", base, i)
	}
	return out
}
