package providertest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// RunLateArrivalStore tests provider.LateArrivalStore: round trip, appending (never
// replacing), ListLateArrivals oldest first, a filled DetectedAt, the default
// schedule, keys kept apart, adversarial keys, bad input and cancellation.
func RunLateArrivalStore(t *testing.T, h Harness) {
	t.Helper()
	group(t, "LateArrivalStore", h, func(t *testing.T, s *suite) {
		s.probe = probeLateArrivals
		s.run(t, "put_list_round_trip", testLateArrivalStorePutListRoundTrip)
		s.run(t, "list_empty", testLateArrivalStoreListEmpty)
		s.run(t, "list_oldest_first", testLateArrivalStoreListOldestFirst)
		s.run(t, "put_appends", testLateArrivalStorePutAppends)
		s.run(t, "put_identical_appends", testLateArrivalStorePutIdenticalAppends)
		s.run(t, "put_fills_zero_detected_at", testLateArrivalStorePutFillsZeroDetectedAt)
		s.run(t, "empty_schedule_is_default", testLateArrivalStoreEmptyScheduleIsDefault)
		s.run(t, "keyed_by_pipeline_date_schedule", testLateArrivalStoreKeyedByPipelineDateSchedule)
		s.run(t, "adversarial_keys", testLateArrivalStoreAdversarialKeys)
		testLateArrivalStoreBadInputAndCancelled(t, s)
	})
}

// testLateArrivalStoreBadInputAndCancelled runs the bad-input table (bad_input/...) and the cancelled-context subtest of the LateArrivalStore group.
func testLateArrivalStoreBadInputAndCancelled(t *testing.T, s *suite) {
	var bad []badCase
	for _, b := range badIDs {
		bad = append(bad,
			badCase{name: "put_pipeline_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				return p.PutLateArrival(ctx, newLateArrival(b.id, k.date, "", at(0), 1))
			}},
			badCase{name: "put_date_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				return p.PutLateArrival(ctx, newLateArrival(k.pipeline, b.id, "", at(0), 1))
			}},
			badCase{name: "list_pipeline_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				_, err := p.ListLateArrivals(ctx, b.id, k.date, "")
				return err
			}},
			badCase{name: "list_date_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				_, err := p.ListLateArrivals(ctx, k.pipeline, b.id, "")
				return err
			}})
		if b.id != "" {
			bad = append(bad,
				badCase{name: "put_schedule_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
					return p.PutLateArrival(ctx, newLateArrival(k.pipeline, k.date, b.id, at(0), 1))
				}},
				badCase{name: "put_trait_type_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
					la := newLateArrival(k.pipeline, k.date, "", at(0), 1)
					la.TraitType = b.id
					return p.PutLateArrival(ctx, la)
				}})
		}
	}
	s.checkBadInput(t, bad, func(t *testing.T, p provider.Provider, k ids) {
		t.Helper()
		list, err := p.ListLateArrivals(t.Context(), k.pipeline, k.date, "")
		wantLen(t, list, err, 0, "ListLateArrivals after a rejected call")
	})
	s.checkCancelled(t, []call{
		{"PutLateArrival", func(ctx context.Context, p provider.Provider, k ids) error {
			return p.PutLateArrival(ctx, newLateArrival(k.pipeline, k.date, "", at(0), 1))
		}},
		{"ListLateArrivals", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.ListLateArrivals(ctx, k.pipeline, k.date, "")
			return err
		}},
	}, nil, func(t *testing.T, p provider.Provider, k ids) {
		t.Helper()
		list, err := p.ListLateArrivals(t.Context(), k.pipeline, k.date, "")
		wantLen(t, list, err, 0, "ListLateArrivals after a cancelled PutLateArrival")
	})
}

func testLateArrivalStorePutListRoundTrip(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	la := newLateArrival(k.pipeline, k.date, "hourly", at(0), 42)
	noErr(t, p.PutLateArrival(t.Context(), la), "PutLateArrival")
	list, err := p.ListLateArrivals(t.Context(), k.pipeline, k.date, "hourly")
	noErr(t, err, "ListLateArrivals")
	same(t, "ListLateArrivals", []types.LateArrival{jsonRoundTrip(t, la)}, list)
}

func testLateArrivalStoreListEmpty(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	list, err := p.ListLateArrivals(t.Context(), k.pipeline, k.date, "")
	wantLen(t, list, err, 0, "ListLateArrivals without records")
}

func testLateArrivalStoreListOldestFirst(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	for _, i := range []int{3, 1, 4, 0, 2} {
		noErr(t, p.PutLateArrival(t.Context(), newLateArrival(k.pipeline, k.date, "", at(i), int64(i))), "PutLateArrival")
	}
	list, err := p.ListLateArrivals(t.Context(), k.pipeline, k.date, "")
	noErr(t, err, "ListLateArrivals")
	same(t, "ListLateArrivals order (RecordDelta = minute)", []int64{0, 1, 2, 3, 4}, lateDeltas(list))
}

func testLateArrivalStorePutAppends(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	for _, d := range []int64{7, 8, 9} { // the same key and DetectedAt three times
		noErr(t, p.PutLateArrival(t.Context(), newLateArrival(k.pipeline, k.date, "", at(0), d)), "PutLateArrival")
	}
	list, err := p.ListLateArrivals(t.Context(), k.pipeline, k.date, "")
	noErr(t, err, "ListLateArrivals")
	got := lateDeltas(list)
	slices.Sort(got) // the order of equal DetectedAt is not specified
	same(t, "ListLateArrivals (every record appended)", []int64{7, 8, 9}, got)
}

func testLateArrivalStorePutIdenticalAppends(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	la := newLateArrival(k.pipeline, k.date, "hourly", at(0), 5) // the same record three times
	for range 3 {
		noErr(t, p.PutLateArrival(t.Context(), la), "PutLateArrival")
	}
	list, err := p.ListLateArrivals(t.Context(), k.pipeline, k.date, "hourly")
	noErr(t, err, "ListLateArrivals")
	want := jsonRoundTrip(t, la)
	same(t, "ListLateArrivals after putting one record three times", []types.LateArrival{want, want, want}, list)
}

func testLateArrivalStorePutFillsZeroDetectedAt(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	before := s.now(t, p)
	noErr(t, p.PutLateArrival(t.Context(), newLateArrival(k.pipeline, k.date, "", time.Time{}, 1)), "PutLateArrival")
	after := s.now(t, p)
	list, err := p.ListLateArrivals(t.Context(), k.pipeline, k.date, "")
	wantLen(t, list, err, 1, "ListLateArrivals")
	wantWithin(t, "DetectedAt", list[0].DetectedAt, before, after)
}

func testLateArrivalStoreEmptyScheduleIsDefault(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	noErr(t, p.PutLateArrival(t.Context(), newLateArrival(k.pipeline, k.date, "", at(0), 1)), "PutLateArrival")
	noErr(t, p.PutLateArrival(t.Context(), newLateArrival(k.pipeline, k.date, types.DefaultScheduleID, at(1), 2)), "PutLateArrival")
	for _, sched := range []string{"", types.DefaultScheduleID} {
		list, err := p.ListLateArrivals(t.Context(), k.pipeline, k.date, sched)
		noErr(t, err, "ListLateArrivals")
		same(t, fmt.Sprintf("ListLateArrivals(schedule %q)", sched), []int64{1, 2}, lateDeltas(list))
		for _, la := range list {
			if la.ScheduleID != types.DefaultScheduleID {
				t.Errorf("ScheduleID = %q, want %q", la.ScheduleID, types.DefaultScheduleID)
			}
		}
	}
}

func testLateArrivalStoreKeyedByPipelineDateSchedule(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	keys := [][3]string{{k.pipeline, k.date, "a"}, {k.pipeline, k.date, "b"}, {k.pipeline, "2026-01-01", "a"}, {k.other, k.date, "a"}}
	for i, key := range keys {
		noErr(t, p.PutLateArrival(t.Context(), newLateArrival(key[0], key[1], key[2], at(i), int64(i))), "PutLateArrival")
	}
	for i, key := range keys {
		list, err := p.ListLateArrivals(t.Context(), key[0], key[1], key[2])
		noErr(t, err, "ListLateArrivals")
		same(t, fmt.Sprintf("ListLateArrivals%q", key), []int64{int64(i)}, lateDeltas(list))
	}
}

func testLateArrivalStoreAdversarialKeys(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	checkDistinct(t, adversarialTuples(k.pipeline, 3),
		func(key []string, tag int) error {
			return p.PutLateArrival(t.Context(), newLateArrival(key[0], key[1], key[2], at(0), int64(tag)))
		},
		func(key []string) (int, bool, error) {
			list, err := p.ListLateArrivals(t.Context(), key[0], key[1], key[2])
			if err != nil || len(list) == 0 {
				return 0, false, err
			}
			if len(list) > 1 {
				return 0, false, fmt.Errorf("ListLateArrivals%q has %d records, want 1", key, len(list))
			}
			return int(list[0].RecordDelta), true, nil
		})
}

func lateDeltas(list []types.LateArrival) []int64 {
	out := make([]int64, len(list))
	for i, la := range list {
		out[i] = la.RecordDelta
	}
	return out
}
