// Package readcheck holds the tests' common part of "reads never write" (issue
// 22): a keyspace populated through every write method of a provider, every read
// method called on it, and every write method called once, for the backends'
// tests of their read-only modes and of credentials that allow reads only.
package readcheck

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// At is the time Seed's records carry where a write takes one.
var At = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

func run(pid, id string, created time.Time) types.RunState {
	return types.RunState{RunID: id, PipelineID: pid, Status: types.RunPending, CreatedAt: created, UpdatedAt: created}
}

// Seed populates p's storage through every write method of p (and of
// provider.Leaser and provider.RunCreator, which p must implement), then calls
// expire, which must move p's clock on by 2 minutes: the traits "orders/old" and
// the 50 "big/short-*" expire. Pipeline "big" also gets live traits "keep-*",
// put before the short ones so that no later put prunes them (250 make a Redis
// hash larger than one HSCAN reads). Its lock "held" is p's, taken for good, and
// "lease" a lease of 2 hours.
func Seed(t testing.TB, p provider.Provider, live int, expire func()) {
	t.Helper()
	ctx := context.Background()
	at := At
	check := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("seed: %s: %v", what, err)
		}
	}
	for _, id := range []string{"orders", "billing", "gone"} {
		check("RegisterPipeline", p.RegisterPipeline(ctx, types.PipelineConfig{ID: id}))
	}
	check("DeletePipeline", p.DeletePipeline(ctx, "gone"))
	trait := func(pid, typ string, ttl time.Duration) {
		t.Helper()
		check("PutTrait", p.PutTrait(ctx, pid, types.TraitEvaluation{TraitType: typ, Status: types.TraitPass}, ttl))
	}
	trait("orders", "old", time.Minute)
	trait("orders", "live", 24*time.Hour)
	trait("orders", "forever", 0)
	for i := range live {
		trait("big", fmt.Sprintf("keep-%03d", i), 0)
	}
	for i := range 50 {
		trait("big", fmt.Sprintf("short-%03d", i), time.Minute)
	}
	check("PutReadiness", p.PutReadiness(ctx, types.ReadinessResult{PipelineID: "orders", Status: types.Ready, EvaluatedAt: at}))
	for i, id := range []string{"r1", "r2", "r3", "r4"} {
		check("PutRunState", p.PutRunState(ctx, run("orders", id, at.Add(time.Duration(i)*time.Hour))))
	}
	check("PutRunState", p.PutRunState(ctx, run("billing", "rb1", at)))
	created, err := p.(provider.RunCreator).CreateRunState(ctx, run("orders", "r5", at.Add(4*time.Hour)))
	check("CreateRunState", err)
	if !created {
		t.Fatal("seed: CreateRunState did not create r5")
	}
	swapped, err := p.CompareAndSwapRunState(ctx, "r1", 0, types.RunState{RunID: "r1", PipelineID: "orders", Status: types.RunRunning})
	check("CompareAndSwapRunState", err)
	if !swapped {
		t.Fatal("seed: the CAS of r1 lost")
	}
	for i := range 5 {
		check("AppendEvent", p.AppendEvent(ctx, types.Event{PipelineID: "orders", Kind: "K", Message: fmt.Sprint(i)}))
	}
	for _, d := range []string{"2026-02-27", "2026-02-28"} {
		check("PutRunLog", p.PutRunLog(ctx, types.RunLogEntry{PipelineID: "orders", Date: d, Status: types.RunCompleted, RunID: "r1"}))
	}
	check("WriteCascadeMarker", p.WriteCascadeMarker(ctx, "billing", "daily", "2026-02-28", "orders"))
	check("WriteCascadeMarker", p.WriteCascadeMarker(ctx, "billing", "daily", "2026-03-01", "orders"))
	check("PutLateArrival", p.PutLateArrival(ctx, types.LateArrival{PipelineID: "orders", Date: "2026-02-28", RecordDelta: 3}))
	for i, rr := range []types.RerunRecord{
		{RerunID: "rr1", PipelineID: "orders", OriginalDate: "2026-02-27"},
		{RerunID: "rr2", PipelineID: "orders", OriginalDate: "2026-02-26"},
		{RerunID: "rr3", PipelineID: "billing", OriginalDate: "2026-02-27"},
	} {
		rr.Status, rr.RequestedAt = types.RequestPending, at.Add(time.Duration(i)*time.Minute)
		check("PutRerun", p.PutRerun(ctx, rr))
	}
	for i, pid := range []string{"orders", "billing"} {
		check("PutReplay", p.PutReplay(ctx, types.ReplayRequest{PipelineID: pid, Date: "2026-02-28", Status: types.RequestPending,
			CreatedAt: at.Add(time.Duration(i) * time.Minute)}))
	}
	held, err := p.AcquireLock(ctx, "held", 0)
	check("AcquireLock", err)
	if !held {
		t.Fatal("seed: lock held already")
	}
	_, err = p.AcquireLock(ctx, "tmp", time.Hour)
	check("AcquireLock", err)
	check("ReleaseLock", p.ReleaseLock(ctx, "tmp"))
	leaser := p.(provider.Leaser)
	lease, err := leaser.AcquireLease(ctx, "lease", time.Hour)
	check("AcquireLease", err)
	_, err = leaser.RenewLease(ctx, *lease, 2*time.Hour)
	check("RenewLease", err)
	other, err := leaser.AcquireLease(ctx, "other", time.Hour)
	check("AcquireLease", err)
	check("ReleaseLease", leaser.ReleaseLease(ctx, *other))
	expire() // "old" and the "short-" traits expire
}

// Result is what Read read: the IDs of each listing, and every value read, as
// text (lock expiries left out: a server's remaining TTL shrinks between reads).
type Result struct {
	IDs    map[string]string
	Values []string
}

// Read calls every read method of p, and of the optional interfaces p
// implements (provider.EventFollower, provider.MarkerWatcher,
// provider.CascadeReader, provider.LockInspector, provider.LockLister), on what
// Seed wrote, and fails
// t on any error.
func Read(t testing.TB, p provider.Provider) Result {
	t.Helper()
	ctx := context.Background()
	res := Result{IDs: map[string]string{}}
	check := func(what string, v any, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		res.Values = append(res.Values, fmt.Sprintf("%s: %+v", what, v))
	}
	idsOf := func(what string, n int, id func(i int) string) {
		var out []string
		for i := range n {
			out = append(out, id(i))
		}
		res.IDs[what] = fmt.Sprint(out)
	}
	check("Ping", nil, p.Ping(ctx))
	cfg, err := p.GetPipeline(ctx, "orders")
	check("GetPipeline", cfg, err)
	gone, err := p.GetPipeline(ctx, "gone")
	check("GetPipeline gone", gone, err)
	cfgs, err := p.ListPipelines(ctx)
	check("ListPipelines", cfgs, err)
	idsOf("pipelines", len(cfgs), func(i int) string { return cfgs[i].ID })
	traits, err := p.GetTraits(ctx, "orders")
	check("GetTraits", traits, err)
	idsOf("traits", len(traits), func(i int) string { return traits[i].TraitType })
	big, err := p.GetTraits(ctx, "big")
	check("GetTraits big", len(big), err)
	res.IDs["big traits"] = fmt.Sprint(len(big))
	for _, typ := range []string{"old", "live"} {
		tr, err := p.GetTrait(ctx, "orders", typ)
		check("GetTrait "+typ, tr, err)
	}
	ready, err := p.GetReadiness(ctx, "orders")
	check("GetReadiness", ready, err)
	for _, id := range []string{"r1", "r3"} {
		r, err := p.GetRunState(ctx, id)
		check("GetRunState "+id, r, err)
	}
	for _, l := range []struct {
		what  string
		limit int
	}{{"runs limit 2", 2}, {"runs", 10}} { // in this order: the second repairs what the first does not read
		what, limit := l.what, l.limit
		runs, err := p.ListRuns(ctx, "orders", limit)
		check("ListRuns "+what, runs, err)
		idsOf(what, len(runs), func(i int) string { return runs[i].RunID })
	}
	evs, err := p.ListEvents(ctx, "orders", 10)
	check("ListEvents", evs, err)
	recs, err := p.ReadEventsSince(ctx, "orders", "", 10)
	check("ReadEventsSince", recs, err)
	followed := 0
	for r, err := range p.(provider.EventFollower).FollowEvents(ctx, "orders", "") {
		check("FollowEvents", r, err)
		if followed++; followed == len(recs) {
			break
		}
	}
	log, err := p.GetRunLog(ctx, "orders", "2026-02-28", "")
	check("GetRunLog", log, err)
	logs, err := p.ListRunLogs(ctx, "orders", 10)
	check("ListRunLogs", logs, err)
	for _, id := range []string{"rr1", "rr2"} {
		rr, err := p.GetRerun(ctx, id)
		check("GetRerun "+id, rr, err)
	}
	reruns, err := p.ListReruns(ctx, "orders", 10)
	check("ListReruns", reruns, err)
	idsOf("reruns", len(reruns), func(i int) string { return reruns[i].RerunID })
	all, err := p.ListAllReruns(ctx, 10)
	check("ListAllReruns", all, err)
	idsOf("all reruns", len(all), func(i int) string { return all[i].RerunID })
	replay, err := p.GetReplay(ctx, "orders", "2026-02-28", "")
	check("GetReplay", replay, err)
	replays, err := p.ListReplays(ctx, 10)
	check("ListReplays", replays, err)
	late, err := p.ListLateArrivals(ctx, "orders", "2026-02-28", "")
	check("ListLateArrivals", late, err)
	markers, err := p.(provider.CascadeReader).ListCascadeMarkers(ctx, "billing", 10)
	// Both markers carry one WrittenAt, and the order of ties is the backend's
	// (provider/memprovider's is not even stable): compare them in date order.
	slices.SortStableFunc(markers, func(a, b types.CascadeMarker) int { return strings.Compare(a.Date, b.Date) })
	check("ListCascadeMarkers", markers, err)
	watched := 0
	for m, err := range p.(provider.MarkerWatcher).WatchCascadeMarkers(ctx, "") {
		check("WatchCascadeMarkers", m, err)
		if watched++; watched == 2 {
			break
		}
	}
	for _, key := range []string{"held", "lease", "tmp"} {
		info, err := p.(provider.LockInspector).GetLockInfo(ctx, key)
		if info != nil && info.ExpiresAt != nil {
			info.ExpiresAt = nil // the server's remaining TTL shrinks between reads
		}
		check("GetLockInfo "+key, info, err)
	}
	locks, err := p.(provider.LockLister).ListLocks(ctx, "", 10)
	for i := range locks {
		locks[i].ExpiresAt = nil // as for GetLockInfo
	}
	check("ListLocks", locks, err)
	return res
}

// Write is one write call.
type Write struct {
	Name string
	Do   func(ctx context.Context) error
}

// Writes calls each write method of p, and of provider.Leaser and
// provider.RunCreator, once.
func Writes(p provider.Provider) []Write {
	at := At
	lease := types.Lease{Key: "lease", Token: "t", Fence: 1, ExpiresAt: at}
	return []Write{
		{"RegisterPipeline", func(ctx context.Context) error { return p.RegisterPipeline(ctx, types.PipelineConfig{ID: "new"}) }},
		{"DeletePipeline", func(ctx context.Context) error { return p.DeletePipeline(ctx, "orders") }},
		{"PutTrait", func(ctx context.Context) error {
			return p.PutTrait(ctx, "orders", types.TraitEvaluation{TraitType: "x", Status: types.TraitPass}, 0)
		}},
		{"PutReadiness", func(ctx context.Context) error {
			return p.PutReadiness(ctx, types.ReadinessResult{PipelineID: "orders", Status: types.Ready, EvaluatedAt: at})
		}},
		{"PutRunState", func(ctx context.Context) error { return p.PutRunState(ctx, run("orders", "r9", at)) }},
		{"CreateRunState", func(ctx context.Context) error {
			_, err := p.(provider.RunCreator).CreateRunState(ctx, run("orders", "r9", at))
			return err
		}},
		{"CompareAndSwapRunState", func(ctx context.Context) error {
			_, err := p.CompareAndSwapRunState(ctx, "r1", 1, run("orders", "r1", at))
			return err
		}},
		{"AppendEvent", func(ctx context.Context) error {
			return p.AppendEvent(ctx, types.Event{PipelineID: "orders", Kind: "K"})
		}},
		{"PutRunLog", func(ctx context.Context) error {
			return p.PutRunLog(ctx, types.RunLogEntry{PipelineID: "orders", Date: "2026-03-01", Status: types.RunCompleted})
		}},
		{"WriteCascadeMarker", func(ctx context.Context) error { return p.WriteCascadeMarker(ctx, "orders", "", "2026-03-01", "x") }},
		{"PutLateArrival", func(ctx context.Context) error {
			return p.PutLateArrival(ctx, types.LateArrival{PipelineID: "orders", Date: "2026-03-01"})
		}},
		{"PutRerun", func(ctx context.Context) error {
			return p.PutRerun(ctx, types.RerunRecord{RerunID: "rr9", PipelineID: "orders", OriginalDate: "2026-03-01", Status: types.RequestPending})
		}},
		{"PutReplay", func(ctx context.Context) error {
			return p.PutReplay(ctx, types.ReplayRequest{PipelineID: "orders", Date: "2026-03-01", Status: types.RequestPending})
		}},
		{"AcquireLock", func(ctx context.Context) error { _, err := p.AcquireLock(ctx, "new", 0); return err }},
		{"ReleaseLock", func(ctx context.Context) error { return p.ReleaseLock(ctx, "held") }},
		{"AcquireLease", func(ctx context.Context) error {
			_, err := p.(provider.Leaser).AcquireLease(ctx, "new", time.Minute)
			return err
		}},
		{"RenewLease", func(ctx context.Context) error {
			_, err := p.(provider.Leaser).RenewLease(ctx, lease, time.Minute)
			return err
		}},
		{"ReleaseLease", func(ctx context.Context) error { return p.(provider.Leaser).ReleaseLease(ctx, lease) }},
	}
}
