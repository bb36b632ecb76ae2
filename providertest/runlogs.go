package providertest

import (
	"context"
	"fmt"
	"testing"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// RunRunLogStore tests provider.RunLogStore: round trip, the default schedule on
// put and get, schedules kept apart, upsert, ListRunLogs newest Date first with
// ties and limits, aliasing, adversarial keys, bad input and cancellation.
func RunRunLogStore(t *testing.T, h Harness) {
	t.Helper()
	group(t, "RunLogStore", h, func(t *testing.T, s *suite) {
		s.run(t, "put_get_round_trip", testRunLogStorePutGetRoundTrip)
		s.run(t, "get_missing", testRunLogStoreGetMissing)
		s.run(t, "list_empty", testRunLogStoreListEmpty)
		s.run(t, "empty_schedule_is_default_on_put", testRunLogStoreEmptyScheduleIsDefaultOnPut)
		s.run(t, "empty_schedule_is_default_on_get", testRunLogStoreEmptyScheduleIsDefaultOnGet)
		s.run(t, "schedules_independent", testRunLogStoreSchedulesIndependent)
		s.run(t, "put_replaces", testRunLogStorePutReplaces)
		s.run(t, "put_identical_twice", testRunLogStorePutIdenticalTwice)
		testRunLogStoreSizes(t, s)
		s.run(t, "list_newest_date_first", testRunLogStoreListNewestDateFirst)
		s.run(t, "list_ties_by_schedule", testRunLogStoreListTiesBySchedule)
		s.run(t, "list_limit", testRunLogStoreListLimit)
		s.run(t, "list_per_pipeline", testRunLogStoreListPerPipeline)
		s.run(t, "no_aliasing", testRunLogStoreNoAliasing)
		s.run(t, "adversarial_keys", testRunLogStoreAdversarialKeys)
		testRunLogStoreBadInputAndCancelled(t, s)
	})
}

// testRunLogStoreSizes runs the size subtests (large_value_round_trips, huge_value_too_large_or_stored, huge_update_keeps_old_value) of the RunLogStore group.
func testRunLogStoreSizes(t *testing.T, s *suite) {
	s.checkSizes(t, sizeCheck{
		put: func(ctx context.Context, p provider.Provider, k ids, payload string) error {
			e := newRunLog(k.pipeline, k.date, "")
			e.FailureMessage = payload
			return p.PutRunLog(ctx, e)
		},
		read: func(t *testing.T, p provider.Provider, k ids) (string, bool) {
			got, err := p.GetRunLog(t.Context(), k.pipeline, k.date, "")
			noErr(t, err, "GetRunLog")
			list, lerr := p.ListRunLogs(t.Context(), k.pipeline, 10)
			noErr(t, lerr, "ListRunLogs")
			if got == nil {
				if len(list) != 0 {
					t.Errorf("ListRunLogs has %d entries, GetRunLog none", len(list))
				}
				return "", false
			}
			if len(list) != 1 || list[0].FailureMessage != got.FailureMessage {
				t.Errorf("ListRunLogs disagrees with GetRunLog (%d entries)", len(list))
			}
			return got.FailureMessage, true
		},
	})
}

// testRunLogStoreBadInputAndCancelled runs the bad-input table (bad_input/...) and the cancelled-context subtest of the RunLogStore group.
func testRunLogStoreBadInputAndCancelled(t *testing.T, s *suite) {
	var bad []badCase
	for _, b := range badIDs {
		bad = append(bad,
			badCase{name: "put_pipeline_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				return p.PutRunLog(ctx, newRunLog(b.id, k.date, ""))
			}},
			badCase{name: "put_date_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				return p.PutRunLog(ctx, newRunLog(k.pipeline, b.id, ""))
			}},
			badCase{name: "get_pipeline_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				_, err := p.GetRunLog(ctx, b.id, k.date, "")
				return err
			}},
			badCase{name: "get_date_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				_, err := p.GetRunLog(ctx, k.pipeline, b.id, "")
				return err
			}},
			badCase{name: "list_pipeline_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				_, err := p.ListRunLogs(ctx, b.id, 10)
				return err
			}})
		if b.id != "" { // an empty schedule is the default one
			bad = append(bad,
				badCase{name: "put_schedule_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
					return p.PutRunLog(ctx, newRunLog(k.pipeline, k.date, b.id))
				}},
				badCase{name: "get_schedule_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
					_, err := p.GetRunLog(ctx, k.pipeline, k.date, b.id)
					return err
				}})
		}
	}
	bad = append(bad,
		badCase{name: "put_bad_status", call: func(ctx context.Context, p provider.Provider, k ids) error {
			e := newRunLog(k.pipeline, k.date, "")
			e.Status = "OK"
			return p.PutRunLog(ctx, e)
		}},
		badCase{name: "put_negative_attempt", call: func(ctx context.Context, p provider.Provider, k ids) error {
			e := newRunLog(k.pipeline, k.date, "")
			e.AttemptNumber = -1
			return p.PutRunLog(ctx, e)
		}},
		badCase{name: "put_bad_run_id", call: func(ctx context.Context, p provider.Provider, k ids) error {
			e := newRunLog(k.pipeline, k.date, "")
			e.RunID = "run:1"
			return p.PutRunLog(ctx, e)
		}},
		badCase{name: "list_limit_zero", call: func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.ListRunLogs(ctx, k.pipeline, 0)
			return err
		}},
	)
	s.checkBadInput(t, bad, func(t *testing.T, p provider.Provider, k ids) {
		t.Helper()
		list, err := p.ListRunLogs(t.Context(), k.pipeline, 10)
		wantLen(t, list, err, 0, "ListRunLogs after a rejected call")
	})
	s.checkCancelled(t, []call{
		{"PutRunLog", func(ctx context.Context, p provider.Provider, k ids) error {
			return p.PutRunLog(ctx, newRunLog(k.pipeline, k.date, ""))
		}},
		{"GetRunLog", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.GetRunLog(ctx, k.pipeline, k.date, "")
			return err
		}},
		{"ListRunLogs", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.ListRunLogs(ctx, k.pipeline, 10)
			return err
		}},
	}, nil, func(t *testing.T, p provider.Provider, k ids) {
		t.Helper()
		list, err := p.ListRunLogs(t.Context(), k.pipeline, 10)
		wantLen(t, list, err, 0, "ListRunLogs after a cancelled PutRunLog")
	})
}

func testRunLogStorePutGetRoundTrip(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	e := newRunLog(k.pipeline, k.date, "hourly")
	noErr(t, p.PutRunLog(t.Context(), e), "PutRunLog")
	got, err := p.GetRunLog(t.Context(), k.pipeline, k.date, "hourly")
	same(t, "GetRunLog", jsonRoundTrip(t, e), mustGet(t, got, err, "GetRunLog"))
	list, err := p.ListRunLogs(t.Context(), k.pipeline, 10)
	noErr(t, err, "ListRunLogs")
	same(t, "ListRunLogs", []types.RunLogEntry{jsonRoundTrip(t, e)}, list)
}

func testRunLogStoreGetMissing(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	noErr(t, p.PutRunLog(t.Context(), newRunLog(k.pipeline, k.date, "hourly")), "PutRunLog")
	for _, c := range [][3]string{{k.pipeline, k.date, ""}, {k.pipeline, "2026-03-05", "hourly"}, {k.other, k.date, "hourly"}} {
		got, err := p.GetRunLog(t.Context(), c[0], c[1], c[2])
		wantNil(t, got, err, fmt.Sprintf("GetRunLog%q", c))
	}
}

func testRunLogStoreListEmpty(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	list, err := p.ListRunLogs(t.Context(), k.pipeline, 10)
	wantLen(t, list, err, 0, "ListRunLogs of a pipeline without run logs")
}

func testRunLogStoreEmptyScheduleIsDefaultOnPut(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	e := newRunLog(k.pipeline, k.date, "")
	noErr(t, p.PutRunLog(t.Context(), e), "PutRunLog with an empty schedule")
	want := jsonRoundTrip(t, e)
	want.ScheduleID = types.DefaultScheduleID
	for _, sched := range []string{types.DefaultScheduleID, ""} {
		got, err := p.GetRunLog(t.Context(), k.pipeline, k.date, sched)
		same(t, fmt.Sprintf("GetRunLog(schedule %q)", sched), want, mustGet(t, got, err, "GetRunLog"))
	}
	list, err := p.ListRunLogs(t.Context(), k.pipeline, 10)
	noErr(t, err, "ListRunLogs")
	same(t, "ListRunLogs", []types.RunLogEntry{want}, list)
}

func testRunLogStoreEmptyScheduleIsDefaultOnGet(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	e := newRunLog(k.pipeline, k.date, types.DefaultScheduleID)
	noErr(t, p.PutRunLog(t.Context(), e), "PutRunLog")
	got, err := p.GetRunLog(t.Context(), k.pipeline, k.date, "")
	same(t, `GetRunLog(schedule "")`, jsonRoundTrip(t, e), mustGet(t, got, err, "GetRunLog"))
	e.AttemptNumber = 5
	e.ScheduleID = ""
	noErr(t, p.PutRunLog(t.Context(), e), "PutRunLog with an empty schedule over the default one")
	list, err := p.ListRunLogs(t.Context(), k.pipeline, 10)
	wantLen(t, list, err, 1, "ListRunLogs (one entry for \"\" and the default schedule)")
	if list[0].AttemptNumber != 5 {
		t.Errorf("AttemptNumber = %d, want 5 (the second put)", list[0].AttemptNumber)
	}
}

func testRunLogStoreSchedulesIndependent(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	for i, sched := range []string{"", "hourly", "weekly"} {
		e := newRunLog(k.pipeline, k.date, sched)
		e.AttemptNumber = i + 1
		noErr(t, p.PutRunLog(t.Context(), e), "PutRunLog")
	}
	for i, sched := range []string{types.DefaultScheduleID, "hourly", "weekly"} {
		got, err := p.GetRunLog(t.Context(), k.pipeline, k.date, sched)
		if g := mustGet(t, got, err, "GetRunLog "+sched); g.AttemptNumber != i+1 || g.ScheduleID != sched {
			t.Errorf("GetRunLog(%s) = schedule %q attempt %d, want attempt %d", sched, g.ScheduleID, g.AttemptNumber, i+1)
		}
	}
	list, err := p.ListRunLogs(t.Context(), k.pipeline, 10)
	wantLen(t, list, err, 3, "ListRunLogs")
}

func testRunLogStorePutReplaces(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	noErr(t, p.PutRunLog(t.Context(), newRunLog(k.pipeline, k.date, "hourly")), "PutRunLog")
	e := newRunLog(k.pipeline, k.date, "hourly")
	e.Status, e.AttemptNumber, e.RetryHistory, e.CompletedAt = types.RunRunning, 3, nil, nil
	noErr(t, p.PutRunLog(t.Context(), e), "PutRunLog again")
	got, err := p.GetRunLog(t.Context(), k.pipeline, k.date, "hourly")
	same(t, "GetRunLog after replace", jsonRoundTrip(t, e), mustGet(t, got, err, "GetRunLog"))
	list, err := p.ListRunLogs(t.Context(), k.pipeline, 10)
	noErr(t, err, "ListRunLogs")
	same(t, "ListRunLogs after replace", []types.RunLogEntry{jsonRoundTrip(t, e)}, list)
}

func testRunLogStorePutIdenticalTwice(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	e := newRunLog(k.pipeline, k.date, "hourly")
	noErr(t, p.PutRunLog(t.Context(), e), "PutRunLog")
	noErr(t, p.PutRunLog(t.Context(), e), "PutRunLog of the same entry again")
	list, err := p.ListRunLogs(t.Context(), k.pipeline, 10)
	noErr(t, err, "ListRunLogs")
	same(t, "ListRunLogs after putting one entry twice", []types.RunLogEntry{jsonRoundTrip(t, e)}, list)
}

func testRunLogStoreListNewestDateFirst(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	for _, d := range []string{"2026-03-02", "2026-03-10", "2026-02-28", "2026-03-09", "2025-12-31"} {
		noErr(t, p.PutRunLog(t.Context(), newRunLog(k.pipeline, d, "")), "PutRunLog")
	}
	list, err := p.ListRunLogs(t.Context(), k.pipeline, 10)
	noErr(t, err, "ListRunLogs")
	same(t, "ListRunLogs dates", []string{"2026-03-10", "2026-03-09", "2026-03-02", "2026-02-28", "2025-12-31"}, runLogDates(list))
}

func testRunLogStoreListTiesBySchedule(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	for _, sched := range []string{"b", "daily", "a", "c"} {
		noErr(t, p.PutRunLog(t.Context(), newRunLog(k.pipeline, k.date, sched)), "PutRunLog")
	}
	noErr(t, p.PutRunLog(t.Context(), newRunLog(k.pipeline, "2026-03-01", "z")), "PutRunLog")
	list, err := p.ListRunLogs(t.Context(), k.pipeline, 10)
	noErr(t, err, "ListRunLogs")
	got := make([]string, len(list))
	for i, e := range list {
		got[i] = e.Date + "/" + e.ScheduleID
	}
	d := k.date + "/"
	same(t, "ListRunLogs order (newest date, then schedule descending)",
		[]string{d + "daily", d + "c", d + "b", d + "a", "2026-03-01/z"}, got)
}

func testRunLogStoreListLimit(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	for i := 1; i <= 5; i++ {
		noErr(t, p.PutRunLog(t.Context(), newRunLog(k.pipeline, fmt.Sprintf("2026-03-%02d", i), "")), "PutRunLog")
	}
	list, err := p.ListRunLogs(t.Context(), k.pipeline, 2)
	noErr(t, err, "ListRunLogs")
	same(t, "ListRunLogs(limit 2)", []string{"2026-03-05", "2026-03-04"}, runLogDates(list))
}

func testRunLogStoreListPerPipeline(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	noErr(t, p.PutRunLog(t.Context(), newRunLog(k.pipeline, "2026-03-01", "")), "PutRunLog")
	noErr(t, p.PutRunLog(t.Context(), newRunLog(k.other, "2026-03-02", "")), "PutRunLog")
	list, err := p.ListRunLogs(t.Context(), k.pipeline, 10)
	noErr(t, err, "ListRunLogs")
	same(t, "ListRunLogs of one pipeline", []string{"2026-03-01"}, runLogDates(list))
}

func testRunLogStoreNoAliasing(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	e := newRunLog(k.pipeline, k.date, "hourly")
	want := jsonRoundTrip(t, e)
	noErr(t, p.PutRunLog(t.Context(), e), "PutRunLog")
	e.RetryHistory[0].FailureMessage = "mutated"
	*e.CompletedAt = at(999)
	got, err := p.GetRunLog(t.Context(), k.pipeline, k.date, "hourly")
	first := mustGet(t, got, err, "GetRunLog")
	same(t, "GetRunLog after mutating the put value", want, first)
	first.RetryHistory[0].FailureMessage = "mutated"
	*first.CompletedAt = at(999)
	list, err := p.ListRunLogs(t.Context(), k.pipeline, 10)
	wantLen(t, list, err, 1, "ListRunLogs")
	list[0].RetryHistory[0].Attempt = 99
	got, err = p.GetRunLog(t.Context(), k.pipeline, k.date, "hourly")
	same(t, "GetRunLog after mutating returned values", want, mustGet(t, got, err, "GetRunLog"))
}

func testRunLogStoreAdversarialKeys(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	checkDistinct(t, adversarialTuples(k.pipeline, 3),
		func(key []string, tag int) error {
			e := newRunLog(key[0], key[1], key[2])
			e.AttemptNumber = tag
			return p.PutRunLog(t.Context(), e)
		},
		func(key []string) (int, bool, error) {
			got, err := p.GetRunLog(t.Context(), key[0], key[1], key[2])
			if err != nil || got == nil {
				return 0, false, err
			}
			return got.AttemptNumber, true, nil
		})
}

func runLogDates(list []types.RunLogEntry) []string {
	out := make([]string, len(list))
	for i, e := range list {
		out[i] = e.Date
	}
	return out
}
