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

// markerGap is the time between two marker writes whose WrittenAt must differ.
const markerGap = 10 * time.Millisecond

// RunCascadeStore tests provider.CascadeStore: writes and rewrites succeed, bad
// input is rejected (and, when the provider is a provider.CascadeReader, writes
// nothing), and cancellation. The markers' contents are checked by
// RunCascadeReader.
func RunCascadeStore(t *testing.T, h Harness) {
	t.Helper()
	group(t, "CascadeStore", h, func(t *testing.T, s *suite) {
		s.run(t, "write_and_rewrite", testCascadeStoreWriteAndRewrite)
		testCascadeStoreBadInputAndCancelled(t, s)
	})
}

// testCascadeStoreBadInputAndCancelled runs the bad-input table (bad_input/...) and the cancelled-context subtest of the CascadeStore group.
func testCascadeStoreBadInputAndCancelled(t *testing.T, s *suite) {
	var bad []badCase
	for _, b := range badIDs {
		bad = append(bad,
			badCase{name: "pipeline_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				return p.WriteCascadeMarker(ctx, b.id, "", k.date, k.other)
			}},
			badCase{name: "date_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				return p.WriteCascadeMarker(ctx, k.pipeline, "", b.id, k.other)
			}},
			badCase{name: "source_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				return p.WriteCascadeMarker(ctx, k.pipeline, "", k.date, b.id)
			}})
		if b.id != "" {
			bad = append(bad, badCase{name: "schedule_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				return p.WriteCascadeMarker(ctx, k.pipeline, b.id, k.date, k.other)
			}})
		}
	}
	s.checkBadInput(t, bad, func(t *testing.T, p provider.Provider, k ids) {
		t.Helper()
		if r, ok := p.(provider.CascadeReader); ok {
			list, err := r.ListCascadeMarkers(t.Context(), k.pipeline, 10)
			wantLen(t, list, err, 0, "ListCascadeMarkers after a rejected call")
		}
	})
	s.checkCancelled(t, []call{
		{"WriteCascadeMarker", func(ctx context.Context, p provider.Provider, k ids) error {
			return p.WriteCascadeMarker(ctx, k.pipeline, "", k.date, k.other)
		}},
	}, nil, func(t *testing.T, p provider.Provider, k ids) {
		t.Helper()
		if r, ok := p.(provider.CascadeReader); ok {
			list, err := r.ListCascadeMarkers(t.Context(), k.pipeline, 10)
			wantLen(t, list, err, 0, "ListCascadeMarkers after a cancelled WriteCascadeMarker")
		}
	})
}

func testCascadeStoreWriteAndRewrite(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	noErr(t, p.WriteCascadeMarker(t.Context(), k.pipeline, "", k.date, k.other), "WriteCascadeMarker")
	noErr(t, p.WriteCascadeMarker(t.Context(), k.pipeline, "", k.date, k.other), "WriteCascadeMarker again")
	noErr(t, p.WriteCascadeMarker(t.Context(), k.pipeline, "hourly", k.date, "source-2"), "WriteCascadeMarker other schedule")
}

func (s *suite) reader(t *testing.T) (provider.Provider, provider.CascadeReader) {
	t.Helper()
	p := s.open(t)
	return p, p.(provider.CascadeReader)
}

// RunCascadeReader tests the optional provider.CascadeReader together with
// WriteCascadeMarker: round trip, one marker per (pipeline, schedule, date), a
// rewrite updating Source and WrittenAt, newest first with limits, the default
// schedule, adversarial keys, bad input and cancellation. It skips when the
// provider does not implement provider.CascadeReader.
func RunCascadeReader(t *testing.T, h Harness) {
	t.Helper()
	group(t, "CascadeReader", h, func(t *testing.T, s *suite) {
		s.probe = probeMarkers
		if _, ok := s.open(t).(provider.CascadeReader); !ok {
			t.Skip("the provider does not implement provider.CascadeReader")
		}
		s.run(t, "write_list_round_trip", testCascadeReaderWriteListRoundTrip)
		s.run(t, "list_empty", testCascadeReaderListEmpty)
		s.run(t, "rewrite_updates_source_and_written_at", testCascadeReaderRewriteUpdatesSourceAndWrittenAt)
		s.run(t, "rewrite_identical_updates_written_at", testCascadeReaderRewriteIdenticalUpdatesWrittenAt)
		s.run(t, "list_newest_first", testCascadeReaderListNewestFirst)
		s.run(t, "empty_schedule_is_default", testCascadeReaderEmptyScheduleIsDefault)
		s.run(t, "adversarial_keys", testCascadeReaderAdversarialKeys)
		testCascadeReaderBadInputAndCancelled(t, s)
	})
}

// testCascadeReaderBadInputAndCancelled runs the bad-input table (bad_input/...) and the cancelled-context subtest of the CascadeReader group.
func testCascadeReaderBadInputAndCancelled(t *testing.T, s *suite) {
	var bad []badCase
	for _, b := range badIDs {
		bad = append(bad, badCase{name: "list_pipeline_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.(provider.CascadeReader).ListCascadeMarkers(ctx, b.id, 10)
			return err
		}})
	}
	bad = append(bad, badCase{name: "list_limit_zero", call: func(ctx context.Context, p provider.Provider, k ids) error {
		_, err := p.(provider.CascadeReader).ListCascadeMarkers(ctx, k.pipeline, 0)
		return err
	}})
	s.checkBadInput(t, bad, nil)
	s.checkCancelled(t, []call{
		{"ListCascadeMarkers", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.(provider.CascadeReader).ListCascadeMarkers(ctx, k.pipeline, 10)
			return err
		}},
	}, nil, nil)
}

func testCascadeReaderWriteListRoundTrip(t *testing.T, s *suite) {
	p, r := s.reader(t)
	k := newIDs(t)
	before := s.now(t, p)
	noErr(t, p.WriteCascadeMarker(t.Context(), k.pipeline, "hourly", k.date, k.other), "WriteCascadeMarker")
	after := s.now(t, p)
	list, err := r.ListCascadeMarkers(t.Context(), k.pipeline, 10)
	wantLen(t, list, err, 1, "ListCascadeMarkers")
	want := types.CascadeMarker{PipelineID: k.pipeline, ScheduleID: "hourly", Date: k.date, Source: k.other, WrittenAt: list[0].WrittenAt}
	same(t, "ListCascadeMarkers", want, list[0])
	wantWithin(t, "WrittenAt", list[0].WrittenAt, before, after)
}

func testCascadeReaderListEmpty(t *testing.T, s *suite) {
	_, r := s.reader(t)
	list, err := r.ListCascadeMarkers(t.Context(), newIDs(t).pipeline, 10)
	wantLen(t, list, err, 0, "ListCascadeMarkers without markers")
}

func testCascadeReaderRewriteUpdatesSourceAndWrittenAt(t *testing.T, s *suite) {
	p, r := s.reader(t)
	k := newIDs(t)
	noErr(t, p.WriteCascadeMarker(t.Context(), k.pipeline, "", k.date, "first"), "WriteCascadeMarker")
	list, err := r.ListCascadeMarkers(t.Context(), k.pipeline, 10)
	wantLen(t, list, err, 1, "ListCascadeMarkers")
	first := list[0]
	s.sleep(t, markerGap)
	noErr(t, p.WriteCascadeMarker(t.Context(), k.pipeline, "", k.date, "second"), "WriteCascadeMarker again")
	list, err = r.ListCascadeMarkers(t.Context(), k.pipeline, 10)
	wantLen(t, list, err, 1, "ListCascadeMarkers after a rewrite (one marker per key)")
	if list[0].Source != "second" || !list[0].WrittenAt.After(first.WrittenAt) {
		t.Errorf("after a rewrite: Source %q WrittenAt %v, want \"second\" and later than %v",
			list[0].Source, list[0].WrittenAt, first.WrittenAt)
	}
}

func testCascadeReaderRewriteIdenticalUpdatesWrittenAt(t *testing.T, s *suite) {
	p, r := s.reader(t)
	k := newIDs(t)
	noErr(t, p.WriteCascadeMarker(t.Context(), k.pipeline, "", k.date, k.other), "WriteCascadeMarker")
	list, err := r.ListCascadeMarkers(t.Context(), k.pipeline, 10)
	wantLen(t, list, err, 1, "ListCascadeMarkers")
	first := list[0]
	s.sleep(t, markerGap)
	before := s.now(t, p)
	noErr(t, p.WriteCascadeMarker(t.Context(), k.pipeline, "", k.date, k.other), "WriteCascadeMarker with the same source again")
	after := s.now(t, p)
	list, err = r.ListCascadeMarkers(t.Context(), k.pipeline, 10)
	wantLen(t, list, err, 1, "ListCascadeMarkers after an identical rewrite (one marker per key)")
	if !list[0].WrittenAt.After(first.WrittenAt) {
		t.Errorf("WrittenAt = %v after an identical rewrite, want later than the first write's %v (WrittenAt = now)", list[0].WrittenAt, first.WrittenAt)
	}
	wantWithin(t, "WrittenAt of the rewrite", list[0].WrittenAt, before, after)
}

func testCascadeReaderListNewestFirst(t *testing.T, s *suite) {
	p, r := s.reader(t)
	k := newIDs(t)
	writes := [][2]string{{"", "2026-03-01"}, {"hourly", "2026-03-01"}, {"", "2026-02-01"}, {"", "2026-03-01"}, {"weekly", "2026-01-01"}}
	for i, w := range writes {
		if i > 0 {
			s.sleep(t, markerGap)
		}
		noErr(t, p.WriteCascadeMarker(t.Context(), k.pipeline, w[0], w[1], fmt.Sprintf("src-%d", i)), "WriteCascadeMarker")
	}
	noErr(t, p.WriteCascadeMarker(t.Context(), k.other, "", "2026-03-01", "elsewhere"), "WriteCascadeMarker other pipeline")
	list, err := r.ListCascadeMarkers(t.Context(), k.pipeline, 10)
	noErr(t, err, "ListCascadeMarkers")
	same(t, "ListCascadeMarkers sources (newest write first)", []string{"src-4", "src-3", "src-2", "src-1"}, markerSources(list))
	list, err = r.ListCascadeMarkers(t.Context(), k.pipeline, 2)
	noErr(t, err, "ListCascadeMarkers")
	same(t, "ListCascadeMarkers(limit 2)", []string{"src-4", "src-3"}, markerSources(list))
}

func testCascadeReaderEmptyScheduleIsDefault(t *testing.T, s *suite) {
	p, r := s.reader(t)
	k := newIDs(t)
	noErr(t, p.WriteCascadeMarker(t.Context(), k.pipeline, "", k.date, "first"), "WriteCascadeMarker")
	s.sleep(t, markerGap)
	noErr(t, p.WriteCascadeMarker(t.Context(), k.pipeline, types.DefaultScheduleID, k.date, "second"), "WriteCascadeMarker")
	list, err := r.ListCascadeMarkers(t.Context(), k.pipeline, 10)
	wantLen(t, list, err, 1, "ListCascadeMarkers (one marker for \"\" and the default schedule)")
	if list[0].ScheduleID != types.DefaultScheduleID || list[0].Source != "second" {
		t.Errorf("marker = %+v, want schedule %q source \"second\"", list[0], types.DefaultScheduleID)
	}
}

func testCascadeReaderAdversarialKeys(t *testing.T, s *suite) {
	p, r := s.reader(t)
	k := newIDs(t)
	checkDistinct(t, adversarialTuples(k.pipeline, 3),
		func(key []string, tag int) error {
			return p.WriteCascadeMarker(t.Context(), key[0], key[1], key[2], "src-"+strconv.Itoa(tag))
		},
		func(key []string) (int, bool, error) {
			list, err := r.ListCascadeMarkers(t.Context(), key[0], listAll)
			if err != nil {
				return 0, false, err
			}
			for _, m := range list {
				if m.ScheduleID == key[1] && m.Date == key[2] {
					tag, err := strconv.Atoi(m.Source[len("src-"):])
					return tag, true, err
				}
			}
			return 0, false, nil
		})
}

func markerSources(list []types.CascadeMarker) []string {
	out := make([]string, len(list))
	for i, m := range list {
		out[i] = m.Source
	}
	return out
}
