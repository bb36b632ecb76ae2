package providertest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// RunFencing tests fenced writes (package fence, provider.Fenced) on every write
// that takes a fence: once a lease key's fence f has written a record, a write
// of the same record carrying a lower fence of that key fails with an error
// wrapping provider.ErrFenced (and provider.ErrLockNotHeld), from any instance,
// with nothing written; an equal or higher fence writes; another lease key's
// fences neither pass nor block; an unfenced write passes and leaves what the
// record remembers as it was; a write that writes nothing (a CAS that lost, a
// create that found the run) remembers nothing; a record rewritten (unfenced,
// or fenced again) still refuses a stale fence once the first write's retention
// has passed (with Harness.Sleep and Harness.Retention, see fencingTime); and a
// holder that paused past its lease, while another took the lease over and
// wrote, is refused. The fence is
// checked before a CAS's version and a create's existence. Every provider must
// pass it: fencing is not optional. Its leases are made up (any valid key and
// fence from 1), except the takeover test's, which skips without provider.Leaser.
func RunFencing(t *testing.T, h Harness) {
	t.Helper()
	group(t, "Fencing", h, func(t *testing.T, s *suite) {
		for _, w := range fencedWrites() {
			t.Run(w.name, func(t *testing.T) {
				fencingRules(t, s, w)
			})
		}
		s.run(t, "cas_checks_fence_before_version", testFencingCASChecksFenceBeforeVersion)
		s.run(t, "create_checks_fence_before_existence", testFencingCreateChecksFenceBeforeExistence)
		s.run(t, "takeover_refuses_paused_holder", testFencingTakeoverRefusesPausedHolder)
		s.run(t, "bad_lease_refused_by_view", testFencingBadLeaseRefusedByView)
	})
}

func testFencingCASChecksFenceBeforeVersion(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	noErr(t, p.PutRunState(t.Context(), newRun(k.pipeline, k.run, at(0))), "PutRunState")
	swapped, err := fenced(t, p, k.lock, 5).CompareAndSwapRunState(t.Context(), k.run, 0, fencedRun(k, 1))
	if err != nil || !swapped {
		t.Fatalf("CAS fenced 5 = (%v, %v), want (true, nil)", swapped, err)
	}
	// A CAS that loses on its version writes nothing and so remembers
	// nothing: fence 6 with the old version, then fence 5 with the right one.
	swapped, err = fenced(t, q, k.lock, 6).CompareAndSwapRunState(t.Context(), k.run, 0, fencedRun(k, 2))
	if err != nil || swapped {
		t.Fatalf("CAS fenced 6 on a stale version = (%v, %v), want (false, nil)", swapped, err)
	}
	swapped, err = fenced(t, p, k.lock, 5).CompareAndSwapRunState(t.Context(), k.run, 1, fencedRun(k, 3))
	if err != nil || !swapped {
		t.Fatalf("CAS fenced 5 after a lost CAS fenced 6 = (%v, %v), want (true, nil): a CAS that swapped nothing must remember no fence", swapped, err)
	}
	// A stale fence is refused even when its version is wrong too.
	swapped, err = fenced(t, q, k.lock, 6).CompareAndSwapRunState(t.Context(), k.run, 2, fencedRun(k, 4))
	if err != nil || !swapped {
		t.Fatalf("CAS fenced 6 = (%v, %v), want (true, nil)", swapped, err)
	}
	_, err = fenced(t, p, k.lock, 5).CompareAndSwapRunState(t.Context(), k.run, 0, fencedRun(k, 5))
	wantFenced(t, err, "CAS fenced 5 on a stale version after fence 6 wrote")
	got, err := q.GetRunState(t.Context(), k.run)
	if r := mustGet(t, got, err, "GetRunState"); r.Version != 3 || step(r) != 4 {
		t.Errorf("run after the refused CAS = version %d step %d, want 3 and 4", r.Version, step(r))
	}
}

func testFencingCreateChecksFenceBeforeExistence(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	if _, ok := p.(provider.RunCreator); !ok {
		t.Skip("the provider does not implement provider.RunCreator")
	}
	run := newRun(k.pipeline, k.run, at(0))
	created, err := fenced(t, p, k.lock, 5).(provider.RunCreator).CreateRunState(t.Context(), run)
	if err != nil || !created {
		t.Fatalf("CreateRunState fenced 5 = (%v, %v), want (true, nil)", created, err)
	}
	created, err = fenced(t, q, k.lock, 5).(provider.RunCreator).CreateRunState(t.Context(), run)
	if err != nil || created {
		t.Fatalf("CreateRunState fenced 5 again = (%v, %v), want (false, nil)", created, err)
	}
	_, err = fenced(t, q, k.lock, 4).(provider.RunCreator).CreateRunState(t.Context(), run)
	wantFenced(t, err, "CreateRunState fenced 4 of a run fence 5 created")
	// A create that found the run remembers nothing.
	_, err = fenced(t, q, k.lock, 9).(provider.RunCreator).CreateRunState(t.Context(), run)
	noErr(t, err, "CreateRunState fenced 9 of an existing run")
	noErr(t, fenced(t, p, k.lock, 5).PutRunState(t.Context(), fencedRun(k, 1)),
		"PutRunState fenced 5 after a create fenced 9 that found the run (it wrote nothing, so it must remember nothing)")
}

func testFencingTakeoverRefusesPausedHolder(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	lp, ok := p.(provider.Leaser)
	if !ok {
		t.Skip("the provider does not implement provider.Leaser")
	}
	noErr(t, p.PutRunState(t.Context(), newRun(k.pipeline, k.run, at(0))), "PutRunState")
	old := mustLease(t, lp, k.lock, shortTTL)
	stale := fencedLease(t, p, old)
	swapped, err := stale.CompareAndSwapRunState(t.Context(), k.run, 0, fencedRun(k, 1))
	if err != nil || !swapped {
		t.Fatalf("the first holder's CAS = (%v, %v), want (true, nil)", swapped, err)
	}
	s.sleep(t, expireWait) // the first holder pauses past its lease
	next := mustLease(t, q.(provider.Leaser), k.lock, longTTL)
	if next.Fence <= old.Fence {
		t.Fatalf("the next lease has fence %d, want above %d", next.Fence, old.Fence)
	}
	swapped, err = fencedLease(t, q, next).CompareAndSwapRunState(t.Context(), k.run, 1, fencedRun(k, 2))
	if err != nil || !swapped {
		t.Fatalf("the new holder's CAS = (%v, %v), want (true, nil)", swapped, err)
	}
	// The first holder wakes up and writes as if it still held the lease.
	_, err = stale.CompareAndSwapRunState(t.Context(), k.run, 2, fencedRun(k, 3))
	wantFenced(t, err, "the paused holder's CAS after the takeover")
	wantFenced(t, stale.PutRunState(t.Context(), fencedRun(k, 4)), "the paused holder's PutRunState after the takeover")
	got, err := p.GetRunState(t.Context(), k.run)
	if r := mustGet(t, got, err, "GetRunState"); r.Version != 2 || step(r) != 2 {
		t.Errorf("run = version %d step %d, want the new holder's (2, 2)", r.Version, step(r))
	}
}

func testFencingBadLeaseRefusedByView(t *testing.T, s *suite) {
	p := s.open(t)
	for _, l := range []types.Lease{{Key: "", Token: "t", Fence: 1}, {Key: "k", Token: "", Fence: 1}, {Key: "k", Token: "t", Fence: 0}} {
		if _, err := provider.Fenced(p, l); !errors.Is(err, provider.ErrInvalidArgument) {
			t.Errorf("provider.Fenced(%+v) error = %v, want ErrInvalidArgument", l, err)
		}
	}
}

// fencedWrite is one write that takes a fence, as the Fencing group drives it:
// write makes the i-th write of the test's record (each i stores something
// read tells apart), read returns a fingerprint of the record as stored.
type fencedWrite struct {
	name  string
	keep  func(provider.Retention) time.Duration // the retention of the record written
	setup func(t *testing.T, p provider.Provider, k ids)
	write func(ctx context.Context, p provider.Provider, k ids, i int) error
	read  func(t *testing.T, p provider.Provider, k ids) string
}

func fencedWrites() []fencedWrite {
	putRun := func(t *testing.T, p provider.Provider, k ids) {
		noErr(t, p.PutRunState(t.Context(), newRun(k.pipeline, k.run, at(0))), "PutRunState (setup)")
	}
	readRun := func(t *testing.T, p provider.Provider, k ids) string {
		r, err := p.GetRunState(t.Context(), k.run)
		noErr(t, err, "GetRunState")
		if r == nil {
			return ""
		}
		return fmt.Sprintf("version %d step %d", r.Version, step(*r))
	}
	return []fencedWrite{
		{name: "PutRunState", keep: keepRuns, read: readRun,
			write: func(ctx context.Context, p provider.Provider, k ids, i int) error {
				return p.PutRunState(ctx, fencedRun(k, i))
			}},
		{name: "CompareAndSwapRunState", keep: keepRuns, setup: putRun, read: readRun,
			write: func(ctx context.Context, p provider.Provider, k ids, i int) error {
				cur, err := p.GetRunState(ctx, k.run)
				if err != nil || cur == nil {
					return fmt.Errorf("GetRunState before the CAS = (%v, %v)", cur, err)
				}
				swapped, err := p.CompareAndSwapRunState(ctx, k.run, cur.Version, fencedRun(k, i))
				if err == nil && !swapped {
					return errors.New("CAS on the current version returned false")
				}
				return err
			}},
		{name: "AppendEvent", keep: keepEvents,
			write: func(ctx context.Context, p provider.Provider, k ids, i int) error {
				return p.AppendEvent(ctx, newEvent(k.pipeline, i))
			},
			read: func(t *testing.T, p provider.Provider, k ids) string {
				evs, err := p.ListEvents(t.Context(), k.pipeline, listAll)
				noErr(t, err, "ListEvents")
				var names []string
				for _, ev := range evs {
					names = append(names, ev.Message)
				}
				return strings.Join(names, ",")
			}},
		{name: "PutLateArrival", keep: keepLateArrivals,
			write: func(ctx context.Context, p provider.Provider, k ids, i int) error {
				return p.PutLateArrival(ctx, newLateArrival(k.pipeline, k.date, "", at(i), int64(i)))
			},
			read: func(t *testing.T, p provider.Provider, k ids) string {
				las, err := p.ListLateArrivals(t.Context(), k.pipeline, k.date, "")
				noErr(t, err, "ListLateArrivals")
				var deltas []string
				for _, la := range las {
					deltas = append(deltas, fmt.Sprint(la.RecordDelta))
				}
				return strings.Join(deltas, ",")
			}},
		{name: "PutRunLog", keep: keepRunLogs,
			write: func(ctx context.Context, p provider.Provider, k ids, i int) error {
				e := newRunLog(k.pipeline, k.date, "")
				e.AttemptNumber = i
				return p.PutRunLog(ctx, e)
			},
			read: func(t *testing.T, p provider.Provider, k ids) string {
				e, err := p.GetRunLog(t.Context(), k.pipeline, k.date, "")
				noErr(t, err, "GetRunLog")
				if e == nil {
					return ""
				}
				return fmt.Sprint("attempt ", e.AttemptNumber)
			}},
		{name: "WriteCascadeMarker", keep: keepCascadeMarkers,
			write: func(ctx context.Context, p provider.Provider, k ids, i int) error {
				return p.WriteCascadeMarker(ctx, k.pipeline, "", k.date, fmt.Sprint("source-", i))
			},
			read: func(t *testing.T, p provider.Provider, k ids) string {
				cr, ok := p.(provider.CascadeReader)
				if !ok {
					return "(unreadable without provider.CascadeReader)"
				}
				ms, err := cr.ListCascadeMarkers(t.Context(), k.pipeline, listAll)
				noErr(t, err, "ListCascadeMarkers")
				var srcs []string
				for _, m := range ms {
					srcs = append(srcs, m.Source)
				}
				return strings.Join(srcs, ",")
			}},
		{name: "PutRerun", keep: keepReruns,
			write: func(ctx context.Context, p provider.Provider, k ids, i int) error {
				r := newRerun(k.rerun, k.pipeline, at(0))
				r.Reason = fmt.Sprint("reason-", i)
				return p.PutRerun(ctx, r)
			},
			read: func(t *testing.T, p provider.Provider, k ids) string {
				r, err := p.GetRerun(t.Context(), k.rerun)
				noErr(t, err, "GetRerun")
				if r == nil {
					return ""
				}
				return r.Reason
			}},
		{name: "PutReplay", keep: keepReplays,
			write: func(ctx context.Context, p provider.Provider, k ids, i int) error {
				r := newReplay(k.pipeline, k.date, "", at(0))
				r.Reason = fmt.Sprint("reason-", i)
				return p.PutReplay(ctx, r)
			},
			read: func(t *testing.T, p provider.Provider, k ids) string {
				r, err := p.GetReplay(t.Context(), k.pipeline, k.date, "")
				noErr(t, err, "GetReplay")
				if r == nil {
					return ""
				}
				return r.Reason
			}},
	}
}

// fencingRules runs the rule's tests on one write.
func fencingRules(t *testing.T, s *suite, w fencedWrite) {
	// open returns two instances on the test's storage, after w's setup.
	open := func(t *testing.T) (provider.Provider, provider.Provider, ids) {
		p, q, k := s.open(t), s.open(t), newIDs(t)
		if w.setup != nil {
			w.setup(t, p, k)
		}
		return p, q, k
	}
	// do makes write i through p fenced by (key, f); f 0 is unfenced.
	do := func(t *testing.T, p provider.Provider, k ids, key string, f int64, i int) error {
		if f == 0 {
			return w.write(t.Context(), p, k, i)
		}
		return w.write(t.Context(), fenced(t, p, key, f), k, i)
	}
	ok := func(t *testing.T, p provider.Provider, k ids, key string, f int64, i int, what string) {
		t.Helper()
		if err := do(t, p, k, key, f, i); err != nil {
			t.Fatalf("%s %s: %v", w.name, what, err)
		}
	}
	refused := func(t *testing.T, p, q provider.Provider, k ids, key string, f int64, i int, what string) {
		t.Helper()
		before := w.read(t, q, k)
		wantFenced(t, do(t, p, k, key, f, i), w.name+" "+what)
		if after := w.read(t, q, k); after != before {
			t.Errorf("%s %s was refused but wrote: the record went from %q to %q", w.name, what, before, after)
		}
	}
	test(t, "older_refused", func(t *testing.T) {
		p, q, k := open(t)
		ok(t, p, k, k.lock, 5, 1, "fenced 5")
		refused(t, q, p, k, k.lock, 4, 2, "fenced 4 (another instance) after fence 5 wrote")
		refused(t, p, q, k, k.lock, 1, 3, "fenced 1 after fence 5 wrote")
	})
	test(t, "equal_and_newer_pass", func(t *testing.T) {
		p, q, k := open(t)
		ok(t, p, k, k.lock, 5, 1, "fenced 5")
		ok(t, q, k, k.lock, 5, 2, "fenced 5 again (another instance)")
		ok(t, q, k, k.lock, 6, 3, "fenced 6")
		refused(t, p, q, k, k.lock, 5, 4, "fenced 5 after fence 6 wrote")
		ok(t, q, k, k.lock, 1<<62, 5, "fenced 2^62")
		refused(t, p, q, k, k.lock, 1<<62-1, 6, "fenced 2^62-1 after fence 2^62 wrote")
	})
	test(t, "keys_apart", func(t *testing.T) {
		p, q, k := open(t)
		a, b := k.lock+"-a", k.lock+"-a:b" // b extends a: no prefix may match
		ok(t, p, k, a, 5, 1, "fenced a/5")
		ok(t, q, k, b, 1, 2, "fenced a:b/1 after a/5 wrote")
		refused(t, p, q, k, a, 4, 3, "fenced a/4 after a:b/1 wrote")
		ok(t, p, k, b, 1, 4, "fenced a:b/1 again")
		ok(t, q, k, b, 7, 5, "fenced a:b/7")
		ok(t, p, k, a, 5, 6, "fenced a/5 after a:b/7 wrote")
	})
	test(t, "unfenced_passes_and_forgets_nothing", func(t *testing.T) {
		p, q, k := open(t)
		ok(t, p, k, k.lock, 5, 1, "fenced 5")
		ok(t, q, k, "", 0, 2, "unfenced")
		refused(t, p, q, k, k.lock, 4, 3, "fenced 4 after an unfenced write")
		ok(t, p, k, k.lock, 5, 4, "fenced 5 after an unfenced write")
	})
	test(t, "refusal_remembers_nothing", func(t *testing.T) {
		p, q, k := open(t)
		ok(t, p, k, k.lock, 5, 1, "fenced 5")
		refused(t, q, p, k, k.lock, 3, 2, "fenced 3")
		refused(t, q, p, k, k.lock, 4, 3, "fenced 4 after fence 5 wrote and fence 3 was refused")
		ok(t, p, k, k.lock, 5, 4, "fenced 5 after refused fences 3 and 4")
	})
	fencingTime(t, s, w, open, do, refused)
}

// fenced returns p seen by a made-up lease of key with fence f.
func fenced(t *testing.T, p provider.Provider, key string, f int64) provider.Provider {
	t.Helper()
	return fencedLease(t, p, types.Lease{Key: key, Token: fmt.Sprintf("token-%d", f), Fence: f, ExpiresAt: time.Now().Add(longTTL)})
}

// fencedLease returns provider.Fenced(p, l), failing t on an error.
func fencedLease(t *testing.T, p provider.Provider, l types.Lease) provider.Provider {
	t.Helper()
	fp, err := provider.Fenced(p, l)
	if err != nil {
		t.Fatalf("provider.Fenced(%+v): %v", l, err)
	}
	return fp
}

// fencedRun is the i-th state of the test's run, told apart by its metadata
// (see step).
func fencedRun(k ids, i int) types.RunState {
	r := newRun(k.pipeline, k.run, at(0))
	r.Metadata = map[string]any{"step": i}
	return r
}

// step returns the i of the fencedRun r is, or -1.
func step(r types.RunState) int {
	if f, ok := r.Metadata["step"].(float64); ok {
		return int(f)
	}
	return -1
}

// wantFenced fails t unless err wraps provider.ErrFenced and, with it,
// provider.ErrLockNotHeld.
func wantFenced(t *testing.T, err error, what string) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s: no error, want one wrapping ErrFenced", what)
	case !errors.Is(err, provider.ErrFenced):
		t.Errorf("%s: error %v, want one wrapping ErrFenced", what, err)
	case !errors.Is(err, provider.ErrLockNotHeld):
		t.Errorf("%s: error %v wraps ErrFenced but not ErrLockNotHeld", what, err)
	}
}
