package redisprovider

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/testkit/faults"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// lostReply is one row of the lost-reply table: the write method, the request
// whose reply is dropped (after the server applied it, so go-redis retries it),
// and the documented outcome.
type lostReply struct {
	method string // the Provider method under test
	step   string // which request of the method loses its reply
	// match selects the request, from p's keys and scripts.
	match func(p *Provider) func([]byte) bool
	// setup prepares the state (no fault armed), call makes the call under test
	// and check asserts the outcome. a is the provider making the call, b another
	// instance (another owner) on the same data.
	setup func(ctx context.Context, a, b *Provider) error
	call  func(ctx context.Context, a *Provider) error
	check func(t *testing.T, ctx context.Context, a, b *Provider)
}

// Names in the table.
const (
	lrPipe = "pipe1"
	lrRun  = "run1"
	lrDate = "2026-01-02"
)

// script requests and MULTI blocks, as go-redis writes them (lower-case names).
func evalsha(s script, parts ...string) func(p *Provider) func([]byte) bool {
	return func(*Provider) func([]byte) bool {
		return faults.Contains(append([]string{"evalsha", s.Hash()}, parts...)...)
	}
}

// resp is how a short bulk argument (an idx_apply mode) appears in a request.
func resp(arg string) string { return fmt.Sprintf("\r\n$%d\r\n%s\r\n", len(arg), arg) }

// idxStep matches the idx_apply request of mode on the list ix(p).
func idxStep(mode string, ix func(p *Provider) index) func(p *Provider) func([]byte) bool {
	return func(p *Provider) func([]byte) bool {
		return faults.Contains("evalsha", scriptIdxApply.Hash(), ix(p).h, resp(mode))
	}
}

func keyed(parts func(p *Provider) []string) func(p *Provider) func([]byte) bool {
	return func(p *Provider) func([]byte) bool { return faults.Contains(parts(p)...) }
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func lrRunState(version int) types.RunState {
	return types.RunState{RunID: lrRun, PipelineID: lrPipe, Status: types.RunRunning, Version: version,
		CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func lrRerun() types.RerunRecord {
	return types.RerunRecord{RerunID: "rerun1", PipelineID: lrPipe, OriginalDate: lrDate, Status: types.RequestPending,
		RequestedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func lrReplay() types.ReplayRequest {
	return types.ReplayRequest{PipelineID: lrPipe, Date: lrDate, ScheduleID: types.DefaultScheduleID, Status: types.RequestPending,
		CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// one fails unless n == 1.
func one(t *testing.T, what string, n int, err error) {
	t.Helper()
	if err != nil || n != 1 {
		t.Fatalf("%s: %d, %v; want exactly 1", what, n, err)
	}
}

func lostReplies() []lostReply {
	noSetup := func(context.Context, *Provider, *Provider) error { return nil }
	register := func(ctx context.Context, a *Provider) error {
		return a.RegisterPipeline(ctx, types.PipelineConfig{ID: lrPipe, Tier: 2})
	}
	checkRegistered := func(t *testing.T, ctx context.Context, _, b *Provider) {
		got, err := b.GetPipeline(ctx, lrPipe)
		if err != nil || got == nil || got.Tier != 2 {
			t.Fatalf("GetPipeline = %+v, %v", got, err)
		}
		all, err := b.ListPipelines(ctx)
		one(t, "ListPipelines", len(all), err)
	}
	putRun := func(ctx context.Context, a *Provider) error { return a.PutRunState(ctx, lrRunState(0)) }
	checkRun := func(t *testing.T, ctx context.Context, _, b *Provider) {
		got, err := b.GetRunState(ctx, lrRun)
		if err != nil || got == nil || got.Version != 0 {
			t.Fatalf("GetRunState = %+v, %v", got, err)
		}
		runs, err := b.ListRuns(ctx, lrPipe, 10)
		one(t, "ListRuns", len(runs), err)
	}
	checkActive := func(want int) func(t *testing.T, ctx context.Context, _, b *Provider) {
		return func(t *testing.T, ctx context.Context, _, b *Provider) {
			runs, _, err := b.ListActiveRuns(ctx, provider.ActiveRunFilter{}, "", 10)
			if err != nil || len(runs) != want {
				t.Fatalf("ListActiveRuns = %d runs, %v; want %d", len(runs), err, want)
			}
		}
	}
	// putLost puts an unfinished run and removes its active-runs entry (as by
	// hand: its mark a stays).
	putLost := func(ctx context.Context, a, _ *Provider) error {
		if err := putRun(ctx, a); err != nil {
			return err
		}
		ix := a.k.activeRuns()
		return errors.Join(a.c.ZRem(ctx, ix.z, lrRun).Err(), a.c.HDel(ctx, ix.h, lrRun).Err(), a.c.ZRem(ctx, ix.x, lrRun).Err())
	}
	reindexRun := func(ctx context.Context, a *Provider) error {
		changed, err := a.ReindexRun(ctx, lrRun)
		if err == nil && !changed {
			err = errors.New("ReindexRun of a lost entry whose reply was lost reported no change")
		}
		return err
	}
	checkReindexed := func(t *testing.T, ctx context.Context, a, b *Provider) {
		checkRun(t, ctx, a, b) // version 0: the run is not written
		checkActive(1)(t, ctx, a, b)
		if changed, err := b.ReindexRun(ctx, lrRun); changed || err != nil {
			t.Fatalf("ReindexRun again = %v, %v; want no change", changed, err)
		}
		if ok, err := b.CompareAndSwapRunState(ctx, lrRun, 0, lrRunState(0)); !ok || err != nil {
			t.Fatalf("CAS after ReindexRun = %v, %v", ok, err)
		}
		checkActive(1)(t, ctx, a, b)
	}
	putFinished := func(ctx context.Context, a, _ *Provider) error {
		r := lrRunState(0)
		r.Status = types.RunFailed
		return a.PutRunState(ctx, r)
	}
	casTo := func(st types.RunStatus) func(ctx context.Context, a *Provider) error {
		return func(ctx context.Context, a *Provider) error {
			next := lrRunState(0)
			next.Status = st
			ok, err := a.CompareAndSwapRunState(ctx, lrRun, 0, next)
			if err == nil && !ok {
				err = errors.New("CAS whose reply was lost reported false")
			}
			return err
		}
	}
	createRun := func(ctx context.Context, a *Provider) error {
		created, err := a.CreateRunState(ctx, lrRunState(0))
		if err == nil && !created {
			err = errors.New("CreateRunState whose reply was lost reported false")
		}
		return err
	}
	checkCreated := func(t *testing.T, ctx context.Context, a, b *Provider) {
		checkRun(t, ctx, a, b)
		if created, err := b.CreateRunState(ctx, lrRunState(0)); created || err != nil {
			t.Fatalf("a second create = %v, %v; want false", created, err)
		}
	}
	writeMarker := func(ctx context.Context, a *Provider) error {
		return a.WriteCascadeMarker(ctx, lrPipe, "", lrDate, "up")
	}
	// checkMarker: the marker is stored once and its write delivered at least
	// once (a retried log append may deliver it twice): the watch waits up to
	// 10s for the first delivery (a loaded server may be slow), then 300ms more
	// for a second.
	checkMarker := func(t *testing.T, ctx context.Context, _, b *Provider) {
		ms, err := b.ListCascadeMarkers(ctx, lrPipe, 10)
		one(t, "ListCascadeMarkers", len(ms), err)
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		delivered := 0
		for r, err := range b.WatchCascadeMarkers(ctx, "") {
			if err != nil {
				break
			}
			if r.Marker != ms[0] {
				t.Errorf("delivered %+v, stored %+v", r.Marker, ms[0])
			}
			if delivered++; delivered == 1 {
				time.AfterFunc(300*time.Millisecond, cancel)
			}
		}
		if delivered < 1 || delivered > 2 {
			t.Errorf("the write was delivered %d times, want 1 or 2", delivered)
		}
	}
	putRerun := func(ctx context.Context, a *Provider) error { return a.PutRerun(ctx, lrRerun()) }
	checkRerun := func(t *testing.T, ctx context.Context, _, b *Provider) {
		if got, err := b.GetRerun(ctx, "rerun1"); err != nil || got == nil {
			t.Fatalf("GetRerun = %+v, %v", got, err)
		}
		rs, err := b.ListReruns(ctx, lrPipe, 10)
		one(t, "ListReruns", len(rs), err)
		rs, err = b.ListAllReruns(ctx, 10)
		one(t, "ListAllReruns", len(rs), err)
	}
	putReplay := func(ctx context.Context, a *Provider) error { return a.PutReplay(ctx, lrReplay()) }
	checkReplay := func(t *testing.T, ctx context.Context, _, b *Provider) {
		if got, err := b.GetReplay(ctx, lrPipe, lrDate, ""); err != nil || got == nil {
			t.Fatalf("GetReplay = %+v, %v", got, err)
		}
		rs, err := b.ListReplays(ctx, 10)
		one(t, "ListReplays", len(rs), err)
	}
	deletePipe := func(ctx context.Context, a *Provider) error { return a.DeletePipeline(ctx, lrPipe) }
	checkDeleted := func(t *testing.T, ctx context.Context, _, b *Provider) {
		if got, err := b.GetPipeline(ctx, lrPipe); err != nil || got != nil {
			t.Fatalf("GetPipeline after delete = %+v, %v", got, err)
		}
		if all, err := b.ListPipelines(ctx); err != nil || len(all) != 0 {
			t.Fatalf("ListPipelines after delete = %+v, %v", all, err)
		}
	}
	// lockHeldBy checks that a holds "lock" and b cannot take it, then frees it.
	lockHeldByA := func(t *testing.T, ctx context.Context, a, b *Provider) {
		if ok, err := b.AcquireLock(ctx, "lock", time.Minute); ok || err != nil {
			t.Fatalf("another instance took the lock: %v, %v", ok, err)
		}
		must(t, a.ReleaseLock(ctx, "lock"))
		if ok, err := b.AcquireLock(ctx, "lock", time.Minute); !ok || err != nil {
			t.Fatalf("the lock is not free after its release: %v, %v", ok, err)
		}
	}
	var lease *types.Lease // the lease of the current lease row
	acquireLease := func(ctx context.Context, a, _ *Provider) (err error) {
		lease, err = a.AcquireLease(ctx, "lease", time.Minute)
		return err
	}
	lockKey := func(key string) func(p *Provider) string {
		return func(p *Provider) string { l, _ := p.k.lock(key); return l }
	}
	return append([]lostReply{
		{"RegisterPipeline", "provisional", idxStep("p", func(p *Provider) index { return p.k.globalPipelines() }),
			noSetup, register, checkRegistered},
		{"RegisterPipeline", "truth", evalsha(scriptRecordPut), noSetup, register, checkRegistered},
		{"RegisterPipeline", "final", idxStep("s", func(p *Provider) index { return p.k.globalPipelines() }),
			noSetup, register, checkRegistered},
		{"DeletePipeline", "truth", evalsha(scriptRecordDel),
			func(ctx context.Context, a, _ *Provider) error { return register(ctx, a) }, deletePipe, checkDeleted},
		{"DeletePipeline", "final", idxStep("s", func(p *Provider) index { return p.k.globalPipelines() }),
			func(ctx context.Context, a, _ *Provider) error { return register(ctx, a) }, deletePipe, checkDeleted},
		{"PutTrait", "script", evalsha(scriptTraits), noSetup,
			func(ctx context.Context, a *Provider) error {
				return a.PutTrait(ctx, lrPipe, types.TraitEvaluation{TraitType: "t", Status: types.TraitPass}, time.Hour)
			},
			func(t *testing.T, ctx context.Context, _, b *Provider) {
				ts, err := b.GetTraits(ctx, lrPipe)
				one(t, "GetTraits", len(ts), err)
			}},
		{"PutRunState", "provisional", idxStep("p", func(p *Provider) index { return p.k.runs(lrPipe) }), noSetup, putRun, checkRun},
		{"PutRunState", "truth", evalsha(scriptRecordPut), noSetup, putRun, checkRun},
		{"PutRunState", "final", idxStep("s", func(p *Provider) index { return p.k.runs(lrPipe) }), noSetup, putRun, checkRun},
		{"CreateRunState", "provisional", idxStep("p", func(p *Provider) index { return p.k.runs(lrPipe) }), noSetup, createRun, checkCreated},
		{"CreateRunState", "truth", evalsha(scriptRecordPut), noSetup, createRun, checkCreated},
		{"CreateRunState", "final", idxStep("s", func(p *Provider) index { return p.k.runs(lrPipe) }), noSetup, createRun, checkCreated},
		// The active-runs index (issue 37): each step of a run write that enters
		// or leaves it, its reply lost, leaves the index as the truth is.
		{"PutRunState", "active provisional", idxStep("p", func(p *Provider) index { return p.k.activeRuns() }), noSetup, putRun, checkActive(1)},
		{"PutRunState", "active final", idxStep("s", func(p *Provider) index { return p.k.activeRuns() }), noSetup, putRun, checkActive(1)},
		// A CAS that reopens a finished run takes the index steps; one between
		// unfinished statuses takes none (the "script" row below).
		{"CompareAndSwapRunState", "active provisional", idxStep("p", func(p *Provider) index { return p.k.activeRuns() }),
			putFinished, casTo(types.RunRunning), checkActive(1)},
		{"CompareAndSwapRunState", "reopen script", evalsha(scriptRunCAS, resp(casAny)), putFinished, casTo(types.RunRunning), checkActive(1)},
		{"CompareAndSwapRunState", "active final", idxStep("s", func(p *Provider) index { return p.k.activeRuns() }),
			putFinished, casTo(types.RunRunning), checkActive(1)},
		{"CompareAndSwapRunState", "active removal", idxStep("s", func(p *Provider) index { return p.k.activeRuns() }),
			func(ctx context.Context, a, _ *Provider) error { return putRun(ctx, a) }, casTo(types.RunFailed), checkActive(0)},
		{"CompareAndSwapRunState", "script", evalsha(scriptRunCAS),
			func(ctx context.Context, a, _ *Provider) error { return putRun(ctx, a) },
			func(ctx context.Context, a *Provider) error {
				ok, err := a.CompareAndSwapRunState(ctx, lrRun, 0, lrRunState(0))
				if err == nil && !ok {
					err = errors.New("CAS whose reply was lost reported false")
				}
				return err
			},
			func(t *testing.T, ctx context.Context, _, b *Provider) {
				got, err := b.GetRunState(ctx, lrRun)
				if err != nil || got == nil || got.Version != 1 {
					t.Fatalf("after one CAS: %+v, %v; want version 1", got, err)
				}
				if ok, err := b.CompareAndSwapRunState(ctx, lrRun, 0, lrRunState(0)); ok || err != nil {
					t.Fatalf("a second CAS from version 0 = %v, %v", ok, err)
				}
				checkActive(1)(t, ctx, nil, b)
			}},
		// ReindexRun (issue 37): restoring a lost entry, each step's reply lost,
		// restores it once and leaves the run as it was; so does removing a
		// finished run's stale entry.
		{"ReindexRun", "active provisional", idxStep("p", func(p *Provider) index { return p.k.activeRuns() }), putLost, reindexRun, checkReindexed},
		{"ReindexRun", "mark script", evalsha(scriptRunMark), putLost, reindexRun, checkReindexed},
		{"ReindexRun", "active final", idxStep("s", func(p *Provider) index { return p.k.activeRuns() }), putLost, reindexRun, checkReindexed},
		{"ReindexRun", "active removal", idxStep("s", func(p *Provider) index { return p.k.activeRuns() }),
			func(ctx context.Context, a, b *Provider) error {
				if err := putFinished(ctx, a, b); err != nil {
					return err
				}
				_, err := a.runBatch(ctx, "stale entry", []call{setCall(a.k.activeRuns(), lrRun, lrRun, 1, 0, 0)})
				return err
			}, reindexRun,
			func(t *testing.T, ctx context.Context, a, b *Provider) {
				checkActive(0)(t, ctx, a, b)
				if n, err := b.c.HExists(ctx, b.k.activeRuns().h, lrRun).Result(); n || err != nil {
					t.Fatalf("the finished run's entry after ReindexRun: exists %v, %v", n, err)
				}
			}},
		{"AppendEvent", "script", evalsha(scriptAppendOnce), noSetup,
			func(ctx context.Context, a *Provider) error {
				return a.AppendEvent(ctx, types.Event{Kind: "K", PipelineID: lrPipe})
			},
			func(t *testing.T, ctx context.Context, _, b *Provider) {
				evs, err := b.ReadEventsSince(ctx, lrPipe, "", 10)
				one(t, "events", len(evs), err)
			}},
		{"PutRunLog", "script", evalsha(scriptSlotPut), noSetup,
			func(ctx context.Context, a *Provider) error {
				return a.PutRunLog(ctx, types.RunLogEntry{PipelineID: lrPipe, Date: lrDate, Status: types.RunRunning})
			},
			func(t *testing.T, ctx context.Context, _, b *Provider) {
				ls, err := b.ListRunLogs(ctx, lrPipe, 10)
				one(t, "ListRunLogs", len(ls), err)
			}},
		{"PutRerun", "provisional", idxStep("p", func(p *Provider) index { return p.k.reruns(lrPipe) }), noSetup, putRerun, checkRerun},
		{"PutRerun", "truth", evalsha(scriptRecordPut), noSetup, putRerun, checkRerun},
		{"PutRerun", "final", idxStep("s", func(p *Provider) index { return p.k.globalReruns() }), noSetup, putRerun, checkRerun},
		{"WriteCascadeMarker", "log", evalsha(scriptMarkerLog), noSetup, writeMarker, checkMarker},
		{"WriteCascadeMarker", "script", evalsha(scriptSlotPut), noSetup, writeMarker, checkMarker},
		{"PutLateArrival", "script", evalsha(scriptAppendOnce), noSetup,
			func(ctx context.Context, a *Provider) error {
				return a.PutLateArrival(ctx, types.LateArrival{PipelineID: lrPipe, Date: lrDate, RecordDelta: 3})
			},
			func(t *testing.T, ctx context.Context, _, b *Provider) {
				ls, err := b.ListLateArrivals(ctx, lrPipe, lrDate, "")
				one(t, "ListLateArrivals", len(ls), err)
			}},
		{"PutReplay", "provisional", idxStep("p", func(p *Provider) index { return p.k.globalReplays() }), noSetup, putReplay, checkReplay},
		{"PutReplay", "truth", evalsha(scriptRecordPut), noSetup, putReplay, checkReplay},
		{"PutReplay", "final", idxStep("s", func(p *Provider) index { return p.k.globalReplays() }), noSetup, putReplay, checkReplay},
		{"PutReadiness", "set", keyed(func(p *Provider) []string { return []string{"set", p.k.readiness(lrPipe)} }), noSetup,
			func(ctx context.Context, a *Provider) error {
				return a.PutReadiness(ctx, types.ReadinessResult{PipelineID: lrPipe, Status: types.Ready})
			},
			func(t *testing.T, ctx context.Context, _, b *Provider) {
				if got, err := b.GetReadiness(ctx, lrPipe); err != nil || got == nil || got.Status != types.Ready {
					t.Fatalf("GetReadiness = %+v, %v", got, err)
				}
			}},
		{"AcquireLock", "script", evalsha(scriptLockAcquire), noSetup,
			func(ctx context.Context, a *Provider) error {
				ok, err := a.AcquireLock(ctx, "lock", time.Minute)
				if err == nil && !ok {
					err = errors.New("AcquireLock whose reply was lost reported false")
				}
				return err
			}, lockHeldByA},
		{"ReleaseLock", "script", evalsha(scriptLockRelease),
			func(ctx context.Context, a, _ *Provider) error {
				_, err := a.AcquireLock(ctx, "lock", time.Minute)
				return err
			},
			func(ctx context.Context, a *Provider) error { return a.ReleaseLock(ctx, "lock") },
			func(t *testing.T, ctx context.Context, a, b *Provider) {
				if ok, err := b.AcquireLock(ctx, "lock", time.Minute); !ok || err != nil {
					t.Fatalf("the lock is not free after its release: %v, %v", ok, err)
				}
				if err := a.ReleaseLock(ctx, "lock"); !errors.Is(err, provider.ErrLockNotHeld) {
					t.Fatalf("a later release of b's lock by a = %v", err)
				}
			}},
		{"AcquireLease", "script", evalsha(scriptLeaseAcquire), noSetup,
			func(ctx context.Context, a *Provider) error { return acquireLease(ctx, a, nil) },
			func(t *testing.T, ctx context.Context, a, b *Provider) {
				if lease.Fence != 1 {
					t.Fatalf("first lease has fence %d, want 1 (a retry drew no second fence)", lease.Fence)
				}
				if _, err := b.AcquireLease(ctx, "lease", time.Minute); !errors.Is(err, provider.ErrLockHeld) {
					t.Fatalf("another instance took the lease: %v", err)
				}
				must(t, a.ReleaseLease(ctx, *lease))
				l2, err := b.AcquireLease(ctx, "lease", time.Minute)
				if err != nil || l2.Fence != 2 {
					t.Fatalf("next lease = %+v, %v; want fence 2", l2, err)
				}
			}},
		{"RenewLease", "script", keyed(func(p *Provider) []string {
			return []string{"evalsha", scriptLeaseRenew.Hash(), lockKey("lease")(p)}
		}),
			acquireLease,
			func(ctx context.Context, a *Provider) error {
				l, err := a.RenewLease(ctx, *lease, time.Hour)
				if err == nil && l.Fence != lease.Fence {
					err = fmt.Errorf("renewal changed the fence: %d to %d", lease.Fence, l.Fence)
				}
				return err
			},
			func(t *testing.T, ctx context.Context, a, b *Provider) {
				if ttl, err := a.c.PTTL(ctx, lockKey("lease")(a)).Result(); err != nil || ttl <= time.Minute {
					t.Fatalf("lease TTL after renewal = %v, %v; want about an hour", ttl, err)
				}
				if _, err := b.AcquireLease(ctx, "lease", time.Minute); !errors.Is(err, provider.ErrLockHeld) {
					t.Fatalf("another instance took a renewed lease: %v", err)
				}
				must(t, a.ReleaseLease(ctx, *lease))
			}},
		{"ReleaseLease", "script", evalsha(scriptLockRelease), acquireLease,
			func(ctx context.Context, a *Provider) error { return a.ReleaseLease(ctx, *lease) },
			func(t *testing.T, ctx context.Context, a, b *Provider) {
				l2, err := b.AcquireLease(ctx, "lease", time.Minute)
				if err != nil || l2.Fence != lease.Fence+1 {
					t.Fatalf("lease after the release = %+v, %v; want fence %d", l2, err, lease.Fence+1)
				}
				if err := a.ReleaseLease(ctx, *lease); !errors.Is(err, provider.ErrLockNotHeld) {
					t.Fatalf("a later release of the old lease = %v", err)
				}
			}},
	}, fencedLostReplies()...)
}

// readOnly reports whether a Provider method does not write: the lost-reply table
// must have a row for every other exported method.
func readOnly(name string) bool {
	for _, p := range []string{"Get", "List", "Read", "Follow", "Watch"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	switch name {
	case "Ping", "Start", "Stop", "Owner", "KeyPrefix":
		return true
	}
	return false
}

// TestLostReplyTable drops the reply to one request of every write method after
// the server applied it, lets go-redis retry, and checks the documented outcome:
// writes apply once (upserts, appends, CAS), locks and leases are neither lost nor
// doubled, fences never skip or repeat, and releases report their release.
func TestLostReplyTable(t *testing.T) {
	rows := lostReplies()
	covered := map[string]bool{}
	for _, r := range rows {
		covered[r.method] = true
	}
	typ := reflect.TypeFor[*Provider]()
	for i := range typ.NumMethod() {
		if m := typ.Method(i).Name; !readOnly(m) && !covered[m] {
			t.Errorf("write method %s has no row in the lost-reply table", m)
		}
	}

	targets := map[string]func(t *testing.T, n *faults.Net) (goredis.UniversalClient, string){
		"miniredis": func(t *testing.T, n *faults.Net) (goredis.UniversalClient, string) {
			m := miniredis.RunT(t)
			return goredis.NewClient(&goredis.Options{Addr: m.Addr(), Dialer: n.Dial, MinRetryBackoff: time.Millisecond}), "lr"
		},
	}
	if testenv.RedisWanted() {
		targets["redis"] = func(t *testing.T, n *faults.Net) (goredis.UniversalClient, string) {
			return goredis.NewClient(&goredis.Options{Addr: testenv.RedisAddr(t), Dialer: n.Dial, MinRetryBackoff: time.Millisecond}),
				"pst:" + testenv.RedisPrefix(t)
		}
	}
	if testenv.RedisClusterWanted() {
		targets["cluster"] = func(t *testing.T, n *faults.Net) (goredis.UniversalClient, string) {
			return goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: testenv.RedisClusterAddrs(t), Dialer: n.Dial,
				MinRetryBackoff: time.Millisecond}), "pst:" + testenv.RedisPrefix(t)
		}
	}
	for name, target := range targets {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			n := faults.NewNet()
			c, base := target(t, n)
			t.Cleanup(func() { _ = c.Close() })
			for i, r := range lostReplies() { // per target: rows share state (the lease)
				t.Run(r.method+"/"+r.step, func(t *testing.T) {
					ctx := t.Context()
					prefix := fmt.Sprintf("%s:%d", base, i)
					t.Cleanup(func() { _ = testenv.DeleteRedisPrefix(c, prefix) })
					a, err := New(c, WithKeyPrefix(prefix), WithOwner("worker-1"))
					must(t, err)
					b, err := New(c, WithKeyPrefix(prefix), WithOwner("worker-10"))
					must(t, err)
					must(t, a.Start(ctx))
					must(t, r.setup(ctx, a, b))
					before := n.Dropped()
					n.DropReply(r.match(a))
					err = r.call(ctx, a)
					n.Disarm()
					if got := n.Dropped() - before; got != 1 {
						t.Fatalf("the fault fired %d times, want 1 (the matcher missed the request)", got)
					}
					if err != nil {
						t.Fatalf("%s after a lost reply: %v", r.method, err)
					}
					r.check(t, ctx, a, b)
				})
			}
		})
	}
}
