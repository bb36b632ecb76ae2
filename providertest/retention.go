package providertest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// retentionMargin is how long before a record's expiry the Retention group
// expects it still visible: Harness clocks may be real time plus an offset, so
// time passes between the suite's calls, by far less than this.
const retentionMargin = time.Second

// The retention of each record kind (a provider.Retention field), for the
// tables of the rules that move the clock past one.
func keepRuns(r provider.Retention) time.Duration           { return r.Runs }
func keepRunLogs(r provider.Retention) time.Duration        { return r.RunLogs }
func keepReruns(r provider.Retention) time.Duration         { return r.Reruns }
func keepReplays(r provider.Retention) time.Duration        { return r.Replays }
func keepCascadeMarkers(r provider.Retention) time.Duration { return r.CascadeMarkers }
func keepLateArrivals(r provider.Retention) time.Duration   { return r.LateArrivals }
func keepEvents(r provider.Retention) time.Duration         { return r.Events }

// retained is one record kind a provider.Retention field applies to, in one test.
type retained struct {
	name string
	keep func(r provider.Retention) time.Duration
	// appends marks a kind whose every write adds a record of its own (late
	// arrivals, events) rather than rewriting the test's one record.
	appends bool
	// needs is the optional interface the kind's reads need (nil: none).
	needs func(p provider.Provider) bool
	// write writes the test's record through p; tag tells the writes apart.
	write func(t *testing.T, p provider.Provider, k ids, tag int)
	// seen returns the tags of the records p sees, failing t when its reads (a
	// Get and every list of the kind) disagree: an expired record is invisible
	// to every read.
	seen func(t *testing.T, p provider.Provider, k ids) []int
}

// agree returns the tags the reads of one kind found, failing t when they differ.
func agree(t *testing.T, kind string, reads map[string][]int) []int {
	t.Helper()
	var first string
	for _, name := range slices.Sorted(maps.Keys(reads)) {
		if first == "" {
			first = name
			continue
		}
		if !slices.Equal(reads[first], reads[name]) {
			t.Fatalf("%s: %s sees %v but %s sees %v: an expired record is invisible to every read, a live one visible to every read",
				kind, first, reads[first], name, reads[name])
		}
	}
	return reads[first]
}

// gotTag is the tags of a Get's result: none when nil, else the record's tag.
func gotTag[T any](t *testing.T, v *T, err error, what string, tag func(T) int) []int {
	t.Helper()
	noErr(t, err, what)
	if v == nil {
		return []int{}
	}
	return []int{tag(*v)}
}

// tagsOf returns the tags of the records of list that belong to the test.
func tagsOf[T any](t *testing.T, list []T, err error, what string, mine func(T) bool, tag func(T) int) []int {
	t.Helper()
	noErr(t, err, what)
	out := []int{}
	for _, v := range list {
		if mine(v) {
			out = append(out, tag(v))
		}
	}
	slices.Sort(out)
	return out
}

func retainedKinds() []retained {
	runTag := func(r types.RunState) int { return int(r.Metadata["tag"].(float64)) }
	return []retained{
		{name: "runs", keep: keepRuns,
			write: func(t *testing.T, p provider.Provider, k ids, tag int) {
				run := newRun(k.pipeline, k.run, at(0))
				run.Metadata = map[string]any{"tag": tag}
				noErr(t, p.PutRunState(t.Context(), run), "PutRunState")
			},
			seen: func(t *testing.T, p provider.Provider, k ids) []int {
				got, err := p.GetRunState(t.Context(), k.run)
				list, lerr := p.ListRuns(t.Context(), k.pipeline, listAll)
				mine := func(r types.RunState) bool { return r.RunID == k.run }
				return agree(t, "runs", map[string][]int{
					"GetRunState": gotTag(t, got, err, "GetRunState", runTag),
					"ListRuns":    tagsOf(t, list, lerr, "ListRuns", mine, runTag),
				})
			}},
		{name: "run_logs", keep: keepRunLogs,
			write: func(t *testing.T, p provider.Provider, k ids, tag int) {
				e := newRunLog(k.pipeline, k.date, "")
				e.AttemptNumber = tag
				noErr(t, p.PutRunLog(t.Context(), e), "PutRunLog")
			},
			seen: func(t *testing.T, p provider.Provider, k ids) []int {
				tag := func(e types.RunLogEntry) int { return e.AttemptNumber }
				got, err := p.GetRunLog(t.Context(), k.pipeline, k.date, "")
				list, lerr := p.ListRunLogs(t.Context(), k.pipeline, listAll)
				return agree(t, "run logs", map[string][]int{
					"GetRunLog":   gotTag(t, got, err, "GetRunLog", tag),
					"ListRunLogs": tagsOf(t, list, lerr, "ListRunLogs", func(types.RunLogEntry) bool { return true }, tag),
				})
			}},
		{name: "reruns", keep: keepReruns,
			write: func(t *testing.T, p provider.Provider, k ids, tag int) {
				r := newRerun(k.rerun, k.pipeline, at(0))
				r.Metadata = map[string]any{"tag": tag}
				noErr(t, p.PutRerun(t.Context(), r), "PutRerun")
			},
			seen: func(t *testing.T, p provider.Provider, k ids) []int {
				tag := func(r types.RerunRecord) int { return int(r.Metadata["tag"].(float64)) }
				mine := func(r types.RerunRecord) bool { return r.RerunID == k.rerun }
				got, err := p.GetRerun(t.Context(), k.rerun)
				list, lerr := p.ListReruns(t.Context(), k.pipeline, listAll)
				all, aerr := p.ListAllReruns(t.Context(), listAll)
				return agree(t, "reruns", map[string][]int{
					"GetRerun":      gotTag(t, got, err, "GetRerun", tag),
					"ListReruns":    tagsOf(t, list, lerr, "ListReruns", mine, tag),
					"ListAllReruns": tagsOf(t, all, aerr, "ListAllReruns", mine, tag),
				})
			}},
		{name: "replays", keep: keepReplays,
			write: func(t *testing.T, p provider.Provider, k ids, tag int) {
				r := newReplay(k.pipeline, k.date, "", at(0))
				r.RequestedBy = eventName(tag)
				noErr(t, p.PutReplay(t.Context(), r), "PutReplay")
			},
			seen: func(t *testing.T, p provider.Provider, k ids) []int {
				tag := func(r types.ReplayRequest) int { return nameTag(r.RequestedBy) }
				mine := func(r types.ReplayRequest) bool { return r.PipelineID == k.pipeline }
				got, err := p.GetReplay(t.Context(), k.pipeline, k.date, "")
				list, lerr := p.ListReplays(t.Context(), listAll)
				return agree(t, "replays", map[string][]int{
					"GetReplay":   gotTag(t, got, err, "GetReplay", tag),
					"ListReplays": tagsOf(t, list, lerr, "ListReplays", mine, tag),
				})
			}},
		{name: "cascade_markers", keep: keepCascadeMarkers,
			needs: func(p provider.Provider) bool { _, ok := p.(provider.CascadeReader); return ok },
			write: func(t *testing.T, p provider.Provider, k ids, tag int) {
				noErr(t, p.WriteCascadeMarker(t.Context(), k.pipeline, "", k.date, eventName(tag)), "WriteCascadeMarker")
			},
			seen: func(t *testing.T, p provider.Provider, k ids) []int {
				list, err := p.(provider.CascadeReader).ListCascadeMarkers(t.Context(), k.pipeline, listAll)
				return tagsOf(t, list, err, "ListCascadeMarkers", func(types.CascadeMarker) bool { return true },
					func(m types.CascadeMarker) int { return nameTag(m.Source) })
			}},
		{name: "late_arrivals", keep: keepLateArrivals, appends: true,
			write: func(t *testing.T, p provider.Provider, k ids, tag int) {
				noErr(t, p.PutLateArrival(t.Context(), newLateArrival(k.pipeline, k.date, "", at(tag), int64(tag))), "PutLateArrival")
			},
			seen: func(t *testing.T, p provider.Provider, k ids) []int {
				list, err := p.ListLateArrivals(t.Context(), k.pipeline, k.date, "")
				return tagsOf(t, list, err, "ListLateArrivals", func(types.LateArrival) bool { return true },
					func(l types.LateArrival) int { return int(l.RecordDelta) })
			}},
		{name: "events", keep: keepEvents, appends: true,
			write: func(t *testing.T, p provider.Provider, k ids, tag int) {
				noErr(t, p.AppendEvent(t.Context(), newEvent(k.pipeline, tag)), "AppendEvent")
			},
			seen: func(t *testing.T, p provider.Provider, k ids) []int {
				tag := func(e types.Event) int { return nameTag(e.Message) }
				list, err := p.ListEvents(t.Context(), k.pipeline, listAll)
				recs, rerr := p.ReadEventsSince(t.Context(), k.pipeline, "", listAll)
				evs := make([]types.Event, len(recs))
				for i, r := range recs {
					evs[i] = r.Event
				}
				all := func(types.Event) bool { return true }
				return agree(t, "events", map[string][]int{
					"ListEvents":      tagsOf(t, list, err, "ListEvents", all, tag),
					"ReadEventsSince": tagsOf(t, evs, rerr, "ReadEventsSince", all, tag),
				})
			}},
	}
}

// nameTag is the tag of the name eventName(tag).
func nameTag(name string) int {
	var n int
	for _, c := range name[1:] {
		n = n*10 + int(c-'0')
	}
	return n
}

// openRetained opens a provider for a test of kind, skipping the test when the
// provider lacks the interface the kind's reads need.
func (s *suite) openRetained(t *testing.T, kind retained) provider.Provider {
	t.Helper()
	p := s.open(t)
	if kind.needs != nil && !kind.needs(p) {
		t.Skip("the provider lacks the interface this kind's reads need")
	}
	return p
}

// RunRetention tests provider.Retention on the fake clock, for each record kind
// whose field of Harness.Retention is positive: a record is visible to every
// read (its Get and its lists) until just before its retention ends and to none
// from the instant it ends; a write of the record restarts it (a CAS too); each
// late arrival and event has its own; an expired run is missing to a CAS and is
// created again by CreateRunState at the version it is given; a list whose
// first records expired still returns limit live ones. It skips without
// Harness.Retention, and on real time (Harness.Sleep nil).
func RunRetention(t *testing.T, h Harness) {
	t.Helper()
	group(t, "Retention", h, func(t *testing.T, s *suite) {
		r := s.h.Retention
		if r == (provider.Retention{}) {
			t.Skip("Harness.Retention is zero: the providers keep every record forever")
		}
		if s.h.Sleep == nil {
			t.Skip("the Retention group needs a clock the harness moves (Harness.Sleep)")
		}
		for _, kind := range retainedKinds() {
			d := kind.keep(r)
			if d == 0 {
				continue
			}
			if d < 4*retentionMargin {
				t.Fatalf("Harness.Retention of %s is %v; the group needs at least %v", kind.name, d, 4*retentionMargin)
			}
			test(t, kind.name+"/expires_at_retention", func(t *testing.T) { testRetentionExpiresAtRetention(t, s, kind, d) })
			if kind.appends {
				test(t, kind.name+"/each_record_its_own", func(t *testing.T) { testRetentionEachRecordItsOwn(t, s, kind, d) })
				continue
			}
			test(t, kind.name+"/write_restarts_retention", func(t *testing.T) { testRetentionWriteRestartsRetention(t, s, kind, d) })
		}
		if d := r.Runs; d > 0 {
			s.runRetention(t, d)
		}
	})
}

func testRetentionExpiresAtRetention(t *testing.T, s *suite, kind retained, d time.Duration) {
	p, k := s.openRetained(t, kind), newIDs(t)
	kind.write(t, p, k, 1)
	s.sleep(t, d-retentionMargin)
	same(t, "just before the retention ends", []int{1}, kind.seen(t, p, k))
	s.sleepToExpiry(t, retentionMargin)
	same(t, "from the instant the retention ends (now >= write + retention)", []int{}, kind.seen(t, p, k))
}

func testRetentionEachRecordItsOwn(t *testing.T, s *suite, kind retained, d time.Duration) {
	p, k := s.openRetained(t, kind), newIDs(t)
	kind.write(t, p, k, 1)
	s.sleep(t, d/2)
	kind.write(t, p, k, 2)
	s.sleepToExpiry(t, d-d/2)
	same(t, "once the first record expired (the second is younger)", []int{2}, kind.seen(t, p, k))
	s.sleepToExpiry(t, d/2)
	same(t, "once both expired", []int{}, kind.seen(t, p, k))
}

func testRetentionWriteRestartsRetention(t *testing.T, s *suite, kind retained, d time.Duration) {
	p, k := s.openRetained(t, kind), newIDs(t)
	kind.write(t, p, k, 1)
	s.sleep(t, d/2)
	kind.write(t, s.open(t), k, 2) // another instance's write restarts it too
	s.sleep(t, d-d/2)
	same(t, "at the first write's expiry, after a second write", []int{2}, kind.seen(t, p, k))
	s.sleepToExpiry(t, d/2)
	same(t, "at the second write's expiry", []int{}, kind.seen(t, p, k))
}

// runRetention tests what retention means to runs besides a record's expiry:
// CAS, create-once, the pipeline check and lists whose first runs expired.
func (s *suite) runRetention(t *testing.T, d time.Duration) {
	t.Helper()
	test(t, "runs/cas_restarts_retention", func(t *testing.T) {
		p, k := s.open(t), newIDs(t)
		noErr(t, p.PutRunState(t.Context(), newRun(k.pipeline, k.run, at(0))), "PutRunState")
		s.sleep(t, d/2)
		next := newRun(k.pipeline, k.run, at(0))
		next.Status = types.RunRunning
		ok, err := p.CompareAndSwapRunState(t.Context(), k.run, 0, next)
		noErr(t, err, "CompareAndSwapRunState")
		if !ok {
			t.Fatal("CompareAndSwapRunState of a live run from its version = false")
		}
		s.sleep(t, d-d/2)
		got, err := p.GetRunState(t.Context(), k.run)
		if g := mustGet(t, got, err, "GetRunState at the put's expiry, after a CAS"); g.Version != 1 {
			t.Fatalf("GetRunState Version = %d, want 1", g.Version)
		}
		list, err := p.ListRuns(t.Context(), k.pipeline, listAll)
		wantLen(t, list, err, 1, "ListRuns at the put's expiry, after a CAS")
		s.sleepToExpiry(t, d/2)
		got, err = p.GetRunState(t.Context(), k.run)
		wantNil(t, got, err, "GetRunState at the CAS's expiry")
		list, err = p.ListRuns(t.Context(), k.pipeline, listAll)
		wantLen(t, list, err, 0, "ListRuns at the CAS's expiry")
	})
	test(t, "runs/cas_of_expired_run_is_missing", func(t *testing.T) {
		p, k := s.open(t), newIDs(t)
		noErr(t, p.PutRunState(t.Context(), newRun(k.pipeline, k.run, at(0))), "PutRunState")
		s.sleepToExpiry(t, d)
		ok, err := p.CompareAndSwapRunState(t.Context(), k.run, 0, newRun(k.pipeline, k.run, at(0)))
		noErr(t, err, "CompareAndSwapRunState of an expired run")
		if ok {
			t.Fatal("CompareAndSwapRunState of an expired run = true; an expired run is missing: (false, nil)")
		}
		got, err := p.GetRunState(t.Context(), k.run)
		wantNil(t, got, err, "GetRunState after a CAS of the expired run")
	})
	test(t, "runs/created_again_after_expiry", func(t *testing.T) {
		p, k := s.open(t), newIDs(t)
		c, ok := p.(provider.RunCreator)
		if !ok {
			t.Skip("the provider is not a provider.RunCreator")
		}
		created, err := c.CreateRunState(t.Context(), newRun(k.pipeline, k.run, at(0)))
		noErr(t, err, "CreateRunState")
		if !created {
			t.Fatal("CreateRunState of a new run = false")
		}
		for v := range 3 {
			ok, err := p.CompareAndSwapRunState(t.Context(), k.run, v, newRun(k.pipeline, k.run, at(0)))
			noErr(t, err, "CompareAndSwapRunState")
			if !ok {
				t.Fatalf("CompareAndSwapRunState from version %d = false", v)
			}
		}
		created, err = c.CreateRunState(t.Context(), newRun(k.pipeline, k.run, at(1)))
		noErr(t, err, "CreateRunState of a live run")
		if created {
			t.Fatal("CreateRunState of a live run = true")
		}
		s.sleepToExpiry(t, d)
		again := newRun(k.pipeline, k.run, at(5))
		again.Status = types.RunRunning
		created, err = c.CreateRunState(t.Context(), again)
		noErr(t, err, "CreateRunState of an expired run")
		if !created {
			t.Fatal("CreateRunState of an expired run = false; an expired run is created again")
		}
		got, err := p.GetRunState(t.Context(), k.run)
		g := mustGet(t, got, err, "GetRunState of the run created again")
		if g.Version != 0 || g.Status != types.RunRunning || !g.CreatedAt.Equal(at(5)) {
			t.Fatalf("the run created again is Version %d, Status %s, CreatedAt %v; want 0, %s, %v (nothing of the expired run)",
				g.Version, g.Status, g.CreatedAt, types.RunRunning, at(5))
		}
		list, err := p.ListRuns(t.Context(), k.pipeline, listAll)
		if wantLen(t, list, err, 1, "ListRuns after the run was created again"); list[0].Version != 0 {
			t.Fatalf("ListRuns Version = %d, want 0", list[0].Version)
		}
		for v, want := range map[int]bool{3: false, 0: true} {
			ok, err := p.CompareAndSwapRunState(t.Context(), k.run, v, newRun(k.pipeline, k.run, at(5)))
			noErr(t, err, "CompareAndSwapRunState")
			if ok != want {
				t.Fatalf("CompareAndSwapRunState from version %d of the run created again = %v, want %v", v, ok, want)
			}
		}
	})
	test(t, "runs/expired_run_put_under_another_pipeline", func(t *testing.T) {
		p, k := s.open(t), newIDs(t)
		noErr(t, p.PutRunState(t.Context(), newRun(k.pipeline, k.run, at(0))), "PutRunState")
		s.sleepToExpiry(t, d)
		noErr(t, p.PutRunState(t.Context(), newRun(k.other, k.run, at(1))),
			"PutRunState of an expired run under another pipeline (an expired run is missing)")
		list, err := p.ListRuns(t.Context(), k.pipeline, listAll)
		wantLen(t, list, err, 0, "ListRuns of the expired run's pipeline")
		list, err = p.ListRuns(t.Context(), k.other, listAll)
		wantLen(t, list, err, 1, "ListRuns of the new pipeline")
	})
	test(t, "runs/list_limit_counts_live_runs", func(t *testing.T) {
		p, k := s.open(t), newIDs(t)
		// The runs written first sort first (newest CreatedAt) and expire first.
		for i := range 3 {
			noErr(t, p.PutRunState(t.Context(), newRun(k.pipeline, k.run+"-old-"+eventName(i), at(100+i))), "PutRunState")
		}
		s.sleep(t, d/2)
		for i := range 3 {
			noErr(t, p.PutRunState(t.Context(), newRun(k.pipeline, k.run+"-new-"+eventName(i), at(i))), "PutRunState")
		}
		s.sleepToExpiry(t, d-d/2)
		list, err := p.ListRuns(t.Context(), k.pipeline, 2)
		wantLen(t, list, err, 2, "ListRuns(2) behind 3 expired runs (no short pages)")
		for i, want := range []string{k.run + "-new-" + eventName(2), k.run + "-new-" + eventName(1)} {
			if list[i].RunID != want {
				t.Fatalf("ListRuns(2)[%d] = %s, want %s", i, list[i].RunID, want)
			}
		}
	})
}

// expiryHeardWithin bounds how long a reader behind retention may take to
// hear it when nothing newer was written: its first read, or the poll after it.
const expiryHeardWithin = 5 * time.Second

// testMarkerWatcherExpiredCursorFailsBeforeNextWrite: a watch from a cursor
// whose successors retention dropped fails with ErrCursorExpired at once,
// also when nothing was written after them: the watcher must not believe it is
// caught up until some later write reveals the gap.
func testMarkerWatcherExpiredCursorFailsBeforeNextWrite(t *testing.T, s *suite) {
	if s.h.ExpireMarkers == nil {
		t.Skip("Harness.ExpireMarkers is nil")
	}
	p, k := s.open(t), newIDs(t)
	want := map[string]int{}
	var dates []string
	for i := range 3 {
		date := fmt.Sprintf("2026-03-0%d", i+1)
		dates = append(dates, date)
		noErr(t, p.WriteCascadeMarker(t.Context(), k.pipeline, "", date, k.other), "WriteCascadeMarker")
		want[markerKey(types.CascadeMarker{PipelineID: k.pipeline, ScheduleID: types.DefaultScheduleID, Date: date, Source: k.other})] = 1
	}
	recs := untilMarkers(t, watchMarkers(t.Context(), p, ""), want, "watch before the retention")
	first := recs[slices.IndexFunc(recs, func(r types.CascadeMarkerRecord) bool { return r.Marker.Date == dates[0] })].Cursor
	s.h.ExpireMarkers(t)
	for _, inst := range []provider.Provider{p, s.open(t)} {
		ch := watchMarkers(t.Context(), inst, first)
		select {
		case it, ok := <-ch:
			switch {
			case !ok:
				t.Fatalf("watch from the cursor of the first of 3 dropped writes, nothing written since: ended without an error, want ErrCursorExpired")
			case !errors.Is(it.err, provider.ErrCursorExpired):
				t.Fatalf("watch from the cursor of the first of 3 dropped writes, nothing written since: %+v, %v; want an error wrapping ErrCursorExpired",
					it.r, it.err)
			}
		case <-time.After(expiryHeardWithin):
			t.Fatalf("watch from the cursor of the first of 3 dropped writes, nothing written since: nothing within %v, want ErrCursorExpired at once: "+
				"a watcher behind retention hears it before the next write", expiryHeardWithin)
		}
	}
	// Numbers are never reused: the next write follows the last dropped one,
	// whose cursor reads it first.
	last := recs[slices.IndexFunc(recs, func(r types.CascadeMarkerRecord) bool { return r.Marker.Date == dates[2] })].Cursor
	noErr(t, s.open(t).WriteCascadeMarker(t.Context(), k.pipeline, "", "2026-03-09", k.other), "WriteCascadeMarker after the retention")
	select {
	case it, ok := <-watchMarkers(t.Context(), p, last):
		if !ok || it.err != nil || it.r.Marker.PipelineID != k.pipeline || it.r.Marker.Date != "2026-03-09" {
			t.Fatalf("watch from the cursor of the last dropped write, after a new write: %+v, %v (open %v); want the new write first: "+
				"numbers are never reused, whatever retention dropped", it.r, it.err, ok)
		}
	case <-time.After(deliveryWait):
		t.Fatalf("watch from the cursor of the last dropped write: nothing within %v, want the write made after the retention", deliveryWait)
	}
}
