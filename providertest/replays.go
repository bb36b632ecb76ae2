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

// RunReplayStore tests provider.ReplayStore: round trip, upsert by (pipeline, date,
// schedule), the default schedule, a filled CreatedAt, ListReplays newest first
// across pipelines with limits, adversarial keys, bad input and cancellation.
func RunReplayStore(t *testing.T, h Harness) {
	t.Helper()
	group(t, "ReplayStore", h, func(t *testing.T, s *suite) {
		s.probe = probeReplays
		s.run(t, "put_get_round_trip", testReplayStorePutGetRoundTrip)
		s.run(t, "get_missing", testReplayStoreGetMissing)
		s.run(t, "list_empty", testReplayStoreListEmpty)
		s.run(t, "upsert_by_key", testReplayStoreUpsertByKey)
		s.run(t, "empty_schedule_is_default", testReplayStoreEmptyScheduleIsDefault)
		s.run(t, "put_fills_zero_created_at", testReplayStorePutFillsZeroCreatedAt)
		s.run(t, "put_identical_twice", testReplayStorePutIdenticalTwice)
		s.run(t, "re_put_fills_zero_created_at_again", testReplayStoreRePutFillsZeroCreatedAtAgain)
		testReplayStoreSizes(t, s)
		s.run(t, "list_newest_first_across_pipelines", testReplayStoreListNewestFirstAcrossPipelines)
		s.run(t, "upsert_moves_in_list", testReplayStoreUpsertMovesInList)
		s.run(t, "adversarial_keys", testReplayStoreAdversarialKeys)
		testReplayStoreBadInputAndCancelled(t, s)
	})
}

// testReplayStoreSizes runs the size subtests (large_value_round_trips, huge_value_too_large_or_stored, huge_update_keeps_old_value) of the ReplayStore group.
func testReplayStoreSizes(t *testing.T, s *suite) {
	s.checkSizes(t, sizeCheck{
		put: func(ctx context.Context, p provider.Provider, k ids, payload string) error {
			r := newReplay(k.pipeline, k.date, "", at(0))
			r.Reason = payload
			return p.PutReplay(ctx, r)
		},
		read: func(t *testing.T, p provider.Provider, k ids) (string, bool) {
			got, err := p.GetReplay(t.Context(), k.pipeline, k.date, "")
			noErr(t, err, "GetReplay")
			list, lerr := p.ListReplays(t.Context(), 10)
			noErr(t, lerr, "ListReplays")
			if got == nil {
				if len(list) != 0 {
					t.Errorf("ListReplays has %d requests, GetReplay none", len(list))
				}
				return "", false
			}
			if len(list) != 1 || list[0].Reason != got.Reason {
				t.Errorf("ListReplays disagrees with GetReplay (%d requests)", len(list))
			}
			return got.Reason, true
		},
	})
}

// testReplayStoreBadInputAndCancelled runs the bad-input table (bad_input/...) and the cancelled-context subtest of the ReplayStore group.
func testReplayStoreBadInputAndCancelled(t *testing.T, s *suite) {
	var bad []badCase
	for _, b := range badIDs {
		bad = append(bad,
			badCase{name: "put_pipeline_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				return p.PutReplay(ctx, newReplay(b.id, k.date, "", at(0)))
			}},
			badCase{name: "put_date_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				return p.PutReplay(ctx, newReplay(k.pipeline, b.id, "", at(0)))
			}},
			badCase{name: "get_pipeline_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				_, err := p.GetReplay(ctx, b.id, k.date, "")
				return err
			}},
			badCase{name: "get_date_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				_, err := p.GetReplay(ctx, k.pipeline, b.id, "")
				return err
			}})
		if b.id != "" {
			bad = append(bad, badCase{name: "put_schedule_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				return p.PutReplay(ctx, newReplay(k.pipeline, k.date, b.id, at(0)))
			}})
		}
	}
	bad = append(bad,
		badCase{name: "put_bad_status", call: func(ctx context.Context, p provider.Provider, k ids) error {
			r := newReplay(k.pipeline, k.date, "", at(0))
			r.Status = ""
			return p.PutReplay(ctx, r)
		}},
		badCase{name: "list_limit_zero", call: func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.ListReplays(ctx, 0)
			return err
		}},
	)
	s.checkBadInput(t, bad, func(t *testing.T, p provider.Provider, k ids) {
		t.Helper()
		list, err := p.ListReplays(t.Context(), 10)
		wantLen(t, list, err, 0, "ListReplays after a rejected call")
	})
	s.checkCancelled(t, []call{
		{"PutReplay", func(ctx context.Context, p provider.Provider, k ids) error {
			return p.PutReplay(ctx, newReplay(k.pipeline, k.date, "", at(0)))
		}},
		{"GetReplay", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.GetReplay(ctx, k.pipeline, k.date, "")
			return err
		}},
		{"ListReplays", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.ListReplays(ctx, 10)
			return err
		}},
	}, nil, func(t *testing.T, p provider.Provider, k ids) {
		t.Helper()
		list, err := p.ListReplays(t.Context(), 10)
		wantLen(t, list, err, 0, "ListReplays after a cancelled PutReplay")
	})
}

func testReplayStorePutGetRoundTrip(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	r := newReplay(k.pipeline, k.date, "hourly", at(0))
	noErr(t, p.PutReplay(t.Context(), r), "PutReplay")
	got, err := p.GetReplay(t.Context(), k.pipeline, k.date, "hourly")
	same(t, "GetReplay", jsonRoundTrip(t, r), mustGet(t, got, err, "GetReplay"))
	list, err := p.ListReplays(t.Context(), 10)
	noErr(t, err, "ListReplays")
	same(t, "ListReplays", []types.ReplayRequest{jsonRoundTrip(t, r)}, list)
}

func testReplayStoreGetMissing(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	noErr(t, p.PutReplay(t.Context(), newReplay(k.pipeline, k.date, "hourly", at(0))), "PutReplay")
	for _, c := range [][3]string{{k.pipeline, k.date, ""}, {k.pipeline, "2026-01-01", "hourly"}, {k.other, k.date, "hourly"}} {
		got, err := p.GetReplay(t.Context(), c[0], c[1], c[2])
		wantNil(t, got, err, fmt.Sprintf("GetReplay%q", c))
	}
}

func testReplayStoreListEmpty(t *testing.T, s *suite) {
	p := s.open(t)
	list, err := p.ListReplays(t.Context(), 10)
	wantLen(t, list, err, 0, "ListReplays of an empty store")
}

func testReplayStoreUpsertByKey(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	noErr(t, p.PutReplay(t.Context(), newReplay(k.pipeline, k.date, "hourly", at(0))), "PutReplay")
	r := newReplay(k.pipeline, k.date, "hourly", at(1))
	r.Status, r.Reason = types.RequestRunning, "second"
	noErr(t, p.PutReplay(t.Context(), r), "PutReplay again")
	got, err := p.GetReplay(t.Context(), k.pipeline, k.date, "hourly")
	same(t, "GetReplay after upsert", jsonRoundTrip(t, r), mustGet(t, got, err, "GetReplay"))
	list, err := p.ListReplays(t.Context(), 10)
	noErr(t, err, "ListReplays")
	same(t, "ListReplays after upsert (one request per key)", []types.ReplayRequest{jsonRoundTrip(t, r)}, list)
}

func testReplayStoreEmptyScheduleIsDefault(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	r := newReplay(k.pipeline, k.date, "", at(0))
	noErr(t, p.PutReplay(t.Context(), r), "PutReplay with an empty schedule")
	want := jsonRoundTrip(t, r)
	want.ScheduleID = types.DefaultScheduleID
	for _, sched := range []string{"", types.DefaultScheduleID} {
		got, err := p.GetReplay(t.Context(), k.pipeline, k.date, sched)
		same(t, fmt.Sprintf("GetReplay(schedule %q)", sched), want, mustGet(t, got, err, "GetReplay"))
	}
	r2 := newReplay(k.pipeline, k.date, types.DefaultScheduleID, at(1))
	noErr(t, p.PutReplay(t.Context(), r2), "PutReplay with the default schedule")
	list, err := p.ListReplays(t.Context(), 10)
	noErr(t, err, "ListReplays")
	same(t, "ListReplays (one request for \"\" and the default schedule)", []types.ReplayRequest{jsonRoundTrip(t, r2)}, list)
}

func testReplayStorePutFillsZeroCreatedAt(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	before := s.now(t, p)
	noErr(t, p.PutReplay(t.Context(), newReplay(k.pipeline, k.date, "", time.Time{})), "PutReplay")
	after := s.now(t, p)
	got, err := p.GetReplay(t.Context(), k.pipeline, k.date, "")
	wantWithin(t, "CreatedAt", mustGet(t, got, err, "GetReplay").CreatedAt, before, after)
}

func testReplayStorePutIdenticalTwice(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	r := newReplay(k.pipeline, k.date, "hourly", at(0))
	noErr(t, p.PutReplay(t.Context(), r), "PutReplay")
	noErr(t, p.PutReplay(t.Context(), r), "PutReplay of the same request again")
	list, err := p.ListReplays(t.Context(), 10)
	noErr(t, err, "ListReplays")
	same(t, "ListReplays after putting one request twice", []types.ReplayRequest{jsonRoundTrip(t, r)}, list)
}

func testReplayStoreRePutFillsZeroCreatedAtAgain(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	noErr(t, p.PutReplay(t.Context(), newReplay(k.pipeline, k.date, "", time.Time{})), "PutReplay")
	s.sleep(t, expireWait)
	before := s.now(t, p)
	noErr(t, p.PutReplay(t.Context(), newReplay(k.pipeline, k.date, "", time.Time{})), "PutReplay again with a zero CreatedAt")
	after := s.now(t, p)
	got, err := p.GetReplay(t.Context(), k.pipeline, k.date, "")
	wantWithin(t, "CreatedAt of the second put (filled from the clock, not kept from the first)", mustGet(t, got, err, "GetReplay").CreatedAt, before, after)
}

func testReplayStoreListNewestFirstAcrossPipelines(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	for _, i := range []int{2, 4, 0, 3, 1} {
		pid := []string{k.pipeline, k.other}[i%2]
		noErr(t, p.PutReplay(t.Context(), newReplay(pid, fmt.Sprintf("2026-01-0%d", i+1), "", at(i))), "PutReplay")
	}
	list, err := p.ListReplays(t.Context(), 10)
	noErr(t, err, "ListReplays")
	same(t, "ListReplays order", []string{"2026-01-05", "2026-01-04", "2026-01-03", "2026-01-02", "2026-01-01"}, replayDates(list))
	list, err = p.ListReplays(t.Context(), 2)
	noErr(t, err, "ListReplays")
	same(t, "ListReplays(limit 2)", []string{"2026-01-05", "2026-01-04"}, replayDates(list))
}

func testReplayStoreUpsertMovesInList(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	noErr(t, p.PutReplay(t.Context(), newReplay(k.pipeline, "2026-01-01", "", at(0))), "PutReplay")
	noErr(t, p.PutReplay(t.Context(), newReplay(k.pipeline, "2026-01-02", "", at(1))), "PutReplay")
	noErr(t, p.PutReplay(t.Context(), newReplay(k.pipeline, "2026-01-01", "", at(2))), "PutReplay again, newer")
	list, err := p.ListReplays(t.Context(), 10)
	noErr(t, err, "ListReplays")
	same(t, "ListReplays after an upsert with a newer CreatedAt", []string{"2026-01-01", "2026-01-02"}, replayDates(list))
}

func testReplayStoreAdversarialKeys(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	accepted := checkDistinct(t, adversarialTuples(k.pipeline, 3),
		func(key []string, tag int) error {
			r := newReplay(key[0], key[1], key[2], at(tag))
			r.Reason = strconv.Itoa(tag)
			return p.PutReplay(t.Context(), r)
		},
		func(key []string) (int, bool, error) {
			got, err := p.GetReplay(t.Context(), key[0], key[1], key[2])
			if err != nil || got == nil {
				return 0, false, err
			}
			tag, err := strconv.Atoi(got.Reason)
			return tag, true, err
		})
	list, err := p.ListReplays(t.Context(), listAll)
	wantLen(t, list, err, len(accepted), "ListReplays of the replays with adversarial keys")
}

func replayDates(list []types.ReplayRequest) []string {
	out := make([]string, len(list))
	for i, r := range list {
		out[i] = r.Date
	}
	return out
}
