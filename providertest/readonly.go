package providertest

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// RunReadOnly tests a read-only handle (Harness.OpenReadOnly, the backend's
// read-only option): on storage a writer filled through every write method,
// every read of the handle (of the base interface and of the optional ones it
// has) returns what the writer's returns; every write (of the base interface,
// provider.Leaser and provider.RunCreator) returns an error wrapping
// provider.ErrReadOnly, also with invalid arguments (read-only comes before the
// arguments in the opening order), and changes nothing the writer reads: no
// lock or lease released or taken. It skips without OpenReadOnly.
func RunReadOnly(t *testing.T, h Harness) {
	t.Helper()
	group(t, "ReadOnly", h, func(t *testing.T, s *suite) {
		if h.OpenReadOnly == nil {
			t.Skip("Harness.OpenReadOnly is nil: the backend has no read-only handle to test")
		}
		s.run(t, "reads_work", testReadOnlyReadsWork)
		s.run(t, "writes_refused", testReadOnlyWritesRefused)
		s.run(t, "refused_before_arguments", testReadOnlyRefusedBeforeArguments)
	})
}

// openReadOnly opens a read-only handle on the test's storage.
func (s *suite) openReadOnly(t *testing.T) provider.Provider {
	t.Helper()
	p := s.h.OpenReadOnly(t)
	if p == nil {
		t.Fatal("providertest: Harness.OpenReadOnly returned nil")
	}
	return p
}

// readOnlySeed fills the test's storage through p's writes: a record of every
// kind, a lock and (with provider.Leaser) a lease that p holds. It returns the
// lease (zero without a Leaser).
func readOnlySeed(t *testing.T, p provider.Provider, k ids) types.Lease {
	t.Helper()
	ctx := t.Context()
	noErr(t, p.RegisterPipeline(ctx, newPipeline(k.pipeline)), "RegisterPipeline")
	noErr(t, p.PutTrait(ctx, k.pipeline, newTrait(k.trait), longTTL), "PutTrait")
	noErr(t, p.PutReadiness(ctx, newReadiness(k.pipeline)), "PutReadiness")
	noErr(t, p.PutRunState(ctx, newRun(k.pipeline, k.run, at(0))), "PutRunState")
	for i := range 3 {
		noErr(t, p.AppendEvent(ctx, newEvent(k.pipeline, i)), "AppendEvent")
	}
	noErr(t, p.PutRunLog(ctx, newRunLog(k.pipeline, k.date, "")), "PutRunLog")
	noErr(t, p.WriteCascadeMarker(ctx, k.pipeline, "", k.date, k.other), "WriteCascadeMarker")
	noErr(t, p.PutLateArrival(ctx, newLateArrival(k.pipeline, k.date, "", at(1), 3)), "PutLateArrival")
	noErr(t, p.PutRerun(ctx, newRerun(k.rerun, k.pipeline, at(2))), "PutRerun")
	noErr(t, p.PutReplay(ctx, newReplay(k.pipeline, k.date, "", at(3))), "PutReplay")
	wantAcquire(t, p, k.lock, longTTL, true, "AcquireLock")
	if l, ok := p.(provider.Leaser); ok {
		return mustLease(t, l, k.lock+"-lease", longTTL)
	}
	return types.Lease{}
}

// readOnlyView is what every read of p returns on readOnlySeed's storage, in
// an order of its own where a list's order of ties is the backend's.
func readOnlyView(t *testing.T, p provider.Provider, k ids) []any {
	t.Helper()
	ctx := t.Context()
	var out []any
	add := func(what string, v any, err error) {
		t.Helper()
		noErr(t, err, what)
		out = append(out, what, v)
	}
	add("Ping", nil, p.Ping(ctx))
	cfg, err := p.GetPipeline(ctx, k.pipeline)
	add("GetPipeline", cfg, err)
	cfgs, err := p.ListPipelines(ctx)
	add("ListPipelines", cfgs, err)
	traits, err := p.GetTraits(ctx, k.pipeline)
	slices.SortFunc(traits, func(a, b types.TraitEvaluation) int { return cmp.Compare(a.TraitType, b.TraitType) })
	add("GetTraits", traits, err)
	tr, err := p.GetTrait(ctx, k.pipeline, k.trait)
	add("GetTrait", tr, err)
	ready, err := p.GetReadiness(ctx, k.pipeline)
	add("GetReadiness", ready, err)
	run, err := p.GetRunState(ctx, k.run)
	add("GetRunState", run, err)
	runs, err := p.ListRuns(ctx, k.pipeline, listAll)
	add("ListRuns", runs, err)
	evs, err := p.ListEvents(ctx, k.pipeline, listAll)
	add("ListEvents", evs, err)
	recs, err := p.ReadEventsSince(ctx, k.pipeline, "", listAll)
	add("ReadEventsSince", recs, err)
	log, err := p.GetRunLog(ctx, k.pipeline, k.date, "")
	add("GetRunLog", log, err)
	logs, err := p.ListRunLogs(ctx, k.pipeline, listAll)
	add("ListRunLogs", logs, err)
	rr, err := p.GetRerun(ctx, k.rerun)
	add("GetRerun", rr, err)
	rrs, err := p.ListReruns(ctx, k.pipeline, listAll)
	add("ListReruns", rrs, err)
	all, err := p.ListAllReruns(ctx, listAll)
	add("ListAllReruns", all, err)
	rp, err := p.GetReplay(ctx, k.pipeline, k.date, "")
	add("GetReplay", rp, err)
	rps, err := p.ListReplays(ctx, listAll)
	add("ListReplays", rps, err)
	las, err := p.ListLateArrivals(ctx, k.pipeline, k.date, "")
	add("ListLateArrivals", las, err)
	if cr, ok := p.(provider.CascadeReader); ok {
		ms, err := cr.ListCascadeMarkers(ctx, k.pipeline, listAll)
		add("ListCascadeMarkers", ms, err)
	}
	if li, ok := p.(provider.LockInspector); ok {
		for _, key := range []string{k.lock, k.lock + "-lease"} {
			info, err := li.GetLockInfo(ctx, key)
			if info != nil {
				info.ExpiresAt = nil // a server's remaining ttl shrinks between reads
			}
			add("GetLockInfo "+key, info, err)
		}
	}
	if ll, ok := p.(provider.LockLister); ok {
		locks, err := ll.ListLocks(ctx, "", listAll)
		for i := range locks {
			locks[i].ExpiresAt = nil
		}
		add("ListLocks", locks, err)
	}
	if f, ok := p.(provider.EventFollower); ok {
		add("FollowEvents", take(t, consume(f.FollowEvents(ctx, k.pipeline, "")), len(recs), "FollowEvents"), nil)
	}
	if mw, ok := p.(provider.MarkerWatcher); ok {
		ms := take(t, consume(mw.WatchCascadeMarkers(ctx, "")), 1, "WatchCascadeMarkers")
		add("WatchCascadeMarkers", ms[0].Marker, nil)
	}
	return out
}

// readOnlyWatchedSince requires the marker log to hold, after readOnlySeed's
// marker, nothing but one the writer p appends now: a refused
// WriteCascadeMarker that reached it comes between (a watcher's view has no
// end to compare, so the writer's marker is the end).
func readOnlyWatchedSince(t *testing.T, p provider.Provider, k ids) {
	t.Helper()
	mw, ok := p.(provider.MarkerWatcher)
	if !ok {
		return
	}
	noErr(t, p.WriteCascadeMarker(t.Context(), k.other, "", k.date, k.pipeline), "WriteCascadeMarker by the writer")
	ms := take(t, consume(mw.WatchCascadeMarkers(t.Context(), "")), 2, "WatchCascadeMarkers")
	if got := ms[1].Marker; got.PipelineID != k.other {
		t.Errorf("WatchCascadeMarkers: the second marker is %+v, want the writer's (of %s): a refused WriteCascadeMarker reached the marker log", got, k.other)
	}
}

func testReadOnlyReadsWork(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	readOnlySeed(t, p, k)
	r := s.openReadOnly(t)
	want := readOnlyView(t, p, k)
	if d := cmpDiff(want, readOnlyView(t, r, k)); d != "" {
		t.Errorf("the read-only handle reads otherwise than the writer (-writer +read-only):\n%s", d)
	}
}

// readOnlyWrites are every write of p, with arguments that would write (or,
// with bad, arguments that are invalid), on readOnlySeed's storage.
func readOnlyWrites(p provider.Provider, k ids, lease types.Lease, bad bool) []call {
	id := func(valid string) string {
		if bad {
			return ""
		}
		return valid
	}
	calls := []call{
		{"RegisterPipeline", func(ctx context.Context, p provider.Provider, _ ids) error {
			return p.RegisterPipeline(ctx, newPipeline(id(k.other)))
		}},
		{"DeletePipeline", func(ctx context.Context, p provider.Provider, _ ids) error {
			return p.DeletePipeline(ctx, id(k.pipeline))
		}},
		{"PutTrait", func(ctx context.Context, p provider.Provider, _ ids) error {
			return p.PutTrait(ctx, id(k.pipeline), newTrait(k.trait+"-2"), 0)
		}},
		{"PutReadiness", func(ctx context.Context, p provider.Provider, _ ids) error {
			r := newReadiness(id(k.pipeline)) // what the view reads, changed
			r.Status, r.Blocking = types.Ready, nil
			return p.PutReadiness(ctx, r)
		}},
		{"PutRunState", func(ctx context.Context, p provider.Provider, _ ids) error {
			return p.PutRunState(ctx, newRun(k.pipeline, id(k.run+"-2"), at(4)))
		}},
		{"CompareAndSwapRunState", func(ctx context.Context, p provider.Provider, _ ids) error {
			_, err := p.CompareAndSwapRunState(ctx, id(k.run), 0, newRun(k.pipeline, k.run, at(0)))
			return err
		}},
		{"AppendEvent", func(ctx context.Context, p provider.Provider, _ ids) error {
			return p.AppendEvent(ctx, newEvent(id(k.pipeline), 9))
		}},
		{"PutRunLog", func(ctx context.Context, p provider.Provider, _ ids) error {
			return p.PutRunLog(ctx, newRunLog(id(k.pipeline), "2026-03-05", ""))
		}},
		{"WriteCascadeMarker", func(ctx context.Context, p provider.Provider, _ ids) error {
			return p.WriteCascadeMarker(ctx, id(k.pipeline), "", "2026-03-05", k.other)
		}},
		{"PutLateArrival", func(ctx context.Context, p provider.Provider, _ ids) error {
			return p.PutLateArrival(ctx, newLateArrival(id(k.pipeline), k.date, "", at(5), 1))
		}},
		{"PutRerun", func(ctx context.Context, p provider.Provider, _ ids) error {
			return p.PutRerun(ctx, newRerun(id(k.rerun+"-2"), k.pipeline, at(6)))
		}},
		{"PutReplay", func(ctx context.Context, p provider.Provider, _ ids) error {
			return p.PutReplay(ctx, newReplay(id(k.pipeline), "2026-03-05", "", at(7)))
		}},
		{"AcquireLock", func(ctx context.Context, p provider.Provider, _ ids) error {
			_, err := p.AcquireLock(ctx, id(k.lock+"-2"), longTTL)
			return err
		}},
		{"ReleaseLock", func(ctx context.Context, p provider.Provider, _ ids) error { return p.ReleaseLock(ctx, id(k.lock)) }},
	}
	if _, ok := p.(provider.Leaser); ok {
		l := lease
		if bad {
			l.Token = ""
		}
		calls = append(calls,
			call{"AcquireLease", func(ctx context.Context, p provider.Provider, _ ids) error {
				_, err := p.(provider.Leaser).AcquireLease(ctx, id(k.lock+"-3"), longTTL)
				return err
			}},
			call{"RenewLease", func(ctx context.Context, p provider.Provider, _ ids) error {
				_, err := p.(provider.Leaser).RenewLease(ctx, l, longTTL)
				return err
			}},
			call{"ReleaseLease", func(ctx context.Context, p provider.Provider, _ ids) error {
				return p.(provider.Leaser).ReleaseLease(ctx, l)
			}})
	}
	if _, ok := p.(provider.ActiveRunReindexer); ok {
		calls = append(calls, call{"ReindexRun", func(ctx context.Context, p provider.Provider, _ ids) error {
			_, err := p.(provider.ActiveRunReindexer).ReindexRun(ctx, id(k.run))
			return err
		}})
	}
	if _, ok := p.(provider.RunCreator); ok {
		calls = append(calls, call{"CreateRunState", func(ctx context.Context, p provider.Provider, _ ids) error {
			_, err := p.(provider.RunCreator).CreateRunState(ctx, newRun(k.pipeline, id(k.run+"-3"), at(8)))
			return err
		}})
	}
	return calls
}

// checkReadOnlyRefuses makes every write through a read-only handle, valid or
// bad, and requires ErrReadOnly of each and no change the writer sees.
func checkReadOnlyRefuses(t *testing.T, s *suite, bad bool) {
	p, k := s.open(t), newIDs(t)
	lease := readOnlySeed(t, p, k)
	r := s.openReadOnly(t)
	before := readOnlyView(t, p, k)
	for _, c := range readOnlyWrites(r, k, lease, bad) {
		err := c.do(t.Context(), r, k)
		if !errors.Is(err, provider.ErrReadOnly) {
			what := c.name + " through the read-only handle"
			if bad {
				what += ", with invalid arguments (read-only comes before the arguments)"
			}
			t.Errorf("%s: error %v, want one wrapping ErrReadOnly", what, err)
		}
	}
	if d := cmpDiff(before, readOnlyView(t, p, k)); d != "" {
		t.Errorf("writes refused by the read-only handle changed what the writer reads (-before +after):\n%s", d)
	}
	readOnlyWatchedSince(t, p, k)
	other := s.open(t)
	wantAcquire(t, other, k.lock, longTTL, false, "AcquireLock of the writer's lock after the read-only handle's ReleaseLock")
	wantAcquire(t, other, k.lock+"-2", longTTL, true, "AcquireLock of the key the read-only handle's AcquireLock was refused")
	if l, ok := other.(provider.Leaser); ok {
		_, err := l.AcquireLease(t.Context(), lease.Key, longTTL)
		wantErr(t, err, provider.ErrLockHeld, "AcquireLease of the writer's lease after the read-only handle's ReleaseLease")
		_, err = l.AcquireLease(t.Context(), k.lock+"-3", longTTL)
		noErr(t, err, "AcquireLease of the key the read-only handle's AcquireLease was refused")
	}
}

func testReadOnlyWritesRefused(t *testing.T, s *suite) { checkReadOnlyRefuses(t, s, false) }

func testReadOnlyRefusedBeforeArguments(t *testing.T, s *suite) { checkReadOnlyRefuses(t, s, true) }
