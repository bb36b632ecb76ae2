package redisprovider_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/fence"
	"github.com/pipestate/pipestate/internal/fencectx"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/redisprovider"
	"github.com/pipestate/pipestate/types"
)

// budget is one row of the round-trip table in the package doc.
type budget struct {
	name string
	n    int64 // round trips on a standalone server
	hot  bool  // single-slot: also n on a cluster
	call func(ctx context.Context, p *redisprovider.Provider) error
}

func budgets() []budget {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	run := types.RunState{RunID: "r1", PipelineID: "p", Status: types.RunPending, CreatedAt: at}
	var lease *types.Lease
	var cursor string
	return []budget{
		{"Ping", 1, true, func(ctx context.Context, p *redisprovider.Provider) error { return p.Ping(ctx) }},
		{"RegisterPipeline", 3, false, func(ctx context.Context, p *redisprovider.Provider) error {
			return p.RegisterPipeline(ctx, types.PipelineConfig{ID: "p"})
		}},
		{"GetPipeline", 1, true, func(ctx context.Context, p *redisprovider.Provider) error {
			_, err := p.GetPipeline(ctx, "p")
			return err
		}},
		{"ListPipelines", 2, false, func(ctx context.Context, p *redisprovider.Provider) error { _, err := p.ListPipelines(ctx); return err }},
		{"PutTrait", 1, true, func(ctx context.Context, p *redisprovider.Provider) error {
			return p.PutTrait(ctx, "p", types.TraitEvaluation{TraitType: "t", Status: types.TraitPass}, time.Hour)
		}},
		{"GetTraits", 1, true, func(ctx context.Context, p *redisprovider.Provider) error {
			_, err := p.GetTraits(ctx, "p")
			return err
		}},
		{"GetTrait", 1, true, func(ctx context.Context, p *redisprovider.Provider) error {
			_, err := p.GetTrait(ctx, "p", "t")
			return err
		}},
		{"PutReadiness", 1, true, func(ctx context.Context, p *redisprovider.Provider) error {
			return p.PutReadiness(ctx, types.ReadinessResult{PipelineID: "p", Status: types.Ready})
		}},
		{"GetReadiness", 1, true, func(ctx context.Context, p *redisprovider.Provider) error {
			_, err := p.GetReadiness(ctx, "p")
			return err
		}},
		{"PutRunState", 3, false, func(ctx context.Context, p *redisprovider.Provider) error { return p.PutRunState(ctx, run) }},
		{"CreateRunState_exists", 2, false, func(ctx context.Context, p *redisprovider.Provider) error {
			_, err := p.CreateRunState(ctx, run)
			return err
		}},
		{"CreateRunState", 3, false, func(ctx context.Context, p *redisprovider.Provider) error {
			_, err := p.CreateRunState(ctx, types.RunState{RunID: "r2", PipelineID: "p", Status: types.RunPending, CreatedAt: at})
			return err
		}},
		{"GetRunState", 1, true, func(ctx context.Context, p *redisprovider.Provider) error {
			_, err := p.GetRunState(ctx, "r1")
			return err
		}},
		// A CAS to an unfinished status: step 1 of the active-runs index, the
		// swap, the index entry (see "Active runs" in the package doc).
		{"CompareAndSwapRunState", 3, false, func(ctx context.Context, p *redisprovider.Provider) error {
			_, err := p.CompareAndSwapRunState(ctx, "r1", 0, run)
			return err
		}},
		{"ListActiveRuns", 2, false, func(ctx context.Context, p *redisprovider.Provider) error {
			_, _, err := p.ListActiveRuns(ctx, provider.ActiveRunFilter{}, "", 10)
			return err
		}},
		// A CAS that finishes the run: the swap, then its index entry's removal.
		{"CompareAndSwapRunState_finish", 2, false, func(ctx context.Context, p *redisprovider.Provider) error {
			done := run
			done.Status = types.RunCompleted
			_, err := p.CompareAndSwapRunState(ctx, "r1", 1, done)
			return err
		}},
		{"ListRuns", 2, false, func(ctx context.Context, p *redisprovider.Provider) error {
			_, err := p.ListRuns(ctx, "p", 10)
			return err
		}},
		{"AppendEvent", 1, true, func(ctx context.Context, p *redisprovider.Provider) error {
			return p.AppendEvent(ctx, types.Event{Kind: "K", PipelineID: "p"})
		}},
		{"ListEvents", 1, true, func(ctx context.Context, p *redisprovider.Provider) error {
			_, err := p.ListEvents(ctx, "p", 10)
			return err
		}},
		{"ReadEventsSince", 1, true, func(ctx context.Context, p *redisprovider.Provider) error {
			recs, err := p.ReadEventsSince(ctx, "p", cursor, 10)
			if len(recs) > 0 {
				cursor = recs[0].StreamID
			}
			return err
		}},
		{"ReadEventsSince_cursor", 1, true, func(ctx context.Context, p *redisprovider.Provider) error {
			recs, err := p.ReadEventsSince(ctx, "p", cursor, 10) // after the newest event: the expiry check finds nothing trimmed
			if err == nil && len(recs) != 0 {
				return fmt.Errorf("%d events after the newest", len(recs))
			}
			return err
		}},
		{"FollowEvents", 1, true, func(ctx context.Context, p *redisprovider.Provider) error {
			for _, err := range p.FollowEvents(ctx, "p", "") {
				return err // the first batch holds the appended event
			}
			return nil
		}},
		{"FollowEvents_cursor", 1, true, func(ctx context.Context, p *redisprovider.Provider) error {
			for _, err := range p.FollowEvents(ctx, "p", "0-1") {
				return err // the first batch, read as ReadEventsSince reads, holds the appended event
			}
			return nil
		}},
		{"PutRunLog", 1, true, func(ctx context.Context, p *redisprovider.Provider) error {
			return p.PutRunLog(ctx, types.RunLogEntry{PipelineID: "p", Date: "2026-01-01", Status: types.RunRunning})
		}},
		{"GetRunLog", 1, true, func(ctx context.Context, p *redisprovider.Provider) error {
			_, err := p.GetRunLog(ctx, "p", "2026-01-01", "")
			return err
		}},
		{"ListRunLogs", 1, true, func(ctx context.Context, p *redisprovider.Provider) error {
			_, err := p.ListRunLogs(ctx, "p", 10)
			return err
		}},
		{"PutRerun", 3, false, func(ctx context.Context, p *redisprovider.Provider) error {
			return p.PutRerun(ctx, types.RerunRecord{RerunID: "x", PipelineID: "p", OriginalDate: "2026-01-01", Status: types.RequestPending})
		}},
		{"GetRerun", 1, true, func(ctx context.Context, p *redisprovider.Provider) error { _, err := p.GetRerun(ctx, "x"); return err }},
		{"ListReruns", 2, false, func(ctx context.Context, p *redisprovider.Provider) error {
			_, err := p.ListReruns(ctx, "p", 10)
			return err
		}},
		{"ListAllReruns", 2, false, func(ctx context.Context, p *redisprovider.Provider) error {
			_, err := p.ListAllReruns(ctx, 10)
			return err
		}},
		{"WriteCascadeMarker", 2, true, func(ctx context.Context, p *redisprovider.Provider) error {
			return p.WriteCascadeMarker(ctx, "p", "", "2026-01-01", "up")
		}},
		{"WatchCascadeMarkers", 1, true, func(ctx context.Context, p *redisprovider.Provider) error {
			for _, err := range p.WatchCascadeMarkers(ctx, "") {
				return err // the first batch holds the marker written
			}
			return nil
		}},
		{"ListCascadeMarkers", 1, true, func(ctx context.Context, p *redisprovider.Provider) error {
			_, err := p.ListCascadeMarkers(ctx, "p", 10)
			return err
		}},
		{"PutLateArrival", 1, true, func(ctx context.Context, p *redisprovider.Provider) error {
			return p.PutLateArrival(ctx, types.LateArrival{PipelineID: "p", Date: "2026-01-01"})
		}},
		{"ListLateArrivals", 1, true, func(ctx context.Context, p *redisprovider.Provider) error {
			_, err := p.ListLateArrivals(ctx, "p", "2026-01-01", "")
			return err
		}},
		{"PutReplay", 3, false, func(ctx context.Context, p *redisprovider.Provider) error {
			return p.PutReplay(ctx, types.ReplayRequest{PipelineID: "p", Date: "2026-01-01", Status: types.RequestPending})
		}},
		{"GetReplay", 1, true, func(ctx context.Context, p *redisprovider.Provider) error {
			_, err := p.GetReplay(ctx, "p", "2026-01-01", "")
			return err
		}},
		{"ListReplays", 2, false, func(ctx context.Context, p *redisprovider.Provider) error {
			_, err := p.ListReplays(ctx, 10)
			return err
		}},
		{"AcquireLock", 1, true, func(ctx context.Context, p *redisprovider.Provider) error {
			_, err := p.AcquireLock(ctx, "lock", time.Minute)
			return err
		}},
		{"ReleaseLock", 1, true, func(ctx context.Context, p *redisprovider.Provider) error { return p.ReleaseLock(ctx, "lock") }},
		{"AcquireLease", 1, true, func(ctx context.Context, p *redisprovider.Provider) error {
			var err error
			lease, err = p.AcquireLease(ctx, "lease", time.Minute)
			return err
		}},
		{"GetLockInfo", 1, true, func(ctx context.Context, p *redisprovider.Provider) error {
			_, err := p.GetLockInfo(ctx, "lease")
			return err
		}},
		{"GetLockInfo_free", 1, true, func(ctx context.Context, p *redisprovider.Provider) error {
			_, err := p.GetLockInfo(ctx, "lock")
			return err
		}},
		{"RenewLease", 1, true, func(ctx context.Context, p *redisprovider.Provider) error {
			_, err := p.RenewLease(ctx, *lease, time.Minute)
			return err
		}},
		{"ReleaseLease", 1, true, func(ctx context.Context, p *redisprovider.Provider) error { return p.ReleaseLease(ctx, *lease) }},
		{"DeletePipeline", 2, false, func(ctx context.Context, p *redisprovider.Provider) error { return p.DeletePipeline(ctx, "p") }},
		{"DeletePipeline_missing", 1, true, func(ctx context.Context, p *redisprovider.Provider) error { return p.DeletePipeline(ctx, "p") }},
		{"Stop", 0, true, func(ctx context.Context, p *redisprovider.Provider) error { return p.Stop(ctx) }},
	}
}

// checkBudgets runs every budget in order on a fresh provider over c and compares
// the round trips counted by the hook.
//
// It runs them twice: unfenced, and with every call's context carrying a fence
// (as provider.Fenced's view passes it), on a fresh prefix: a fenced write
// costs the same round trips, its fence being checked in the write's own script.
func checkBudgets(t *testing.T, c goredis.UniversalClient, counter *testenv.Counter, cluster bool, opts ...redisprovider.Option) {
	t.Helper()
	checkBudgetsCtx(t, t.Context(), c, counter, cluster, opts...)
	prefix := redisprovider.DefaultKeyPrefix + "-fenced"
	if p, err := redisprovider.New(c, opts...); err == nil {
		prefix = p.KeyPrefix() + "-fenced"
	}
	ctx := fencectx.With(t.Context(), fence.Token{Key: "job", Fence: 1})
	checkBudgetsCtx(t, ctx, c, counter, cluster, append(opts, redisprovider.WithKeyPrefix(prefix))...)
}

func checkBudgetsCtx(t *testing.T, ctx context.Context, c goredis.UniversalClient, counter *testenv.Counter, cluster bool, opts ...redisprovider.Option) {
	t.Helper()
	p, err := redisprovider.New(c, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for _, b := range budgets() {
		counter.Reset()
		if err := b.call(ctx, p); err != nil {
			t.Fatalf("%s: %v", b.name, err)
		}
		got := counter.Load()
		switch {
		case !cluster && got != b.n:
			t.Errorf("%s: %d round trips, budget %d", b.name, got, b.n)
		case cluster && b.hot && got != b.n:
			t.Errorf("%s on a cluster: %d round trips, budget %d", b.name, got, b.n)
		case cluster && !b.hot && got > 3*b.n:
			t.Errorf("%s on a cluster: %d round trips, budget %d per node", b.name, got, b.n)
		}
	}
}

func TestRoundTripBudgets(t *testing.T) {
	t.Run("miniredis", func(t *testing.T) {
		m := miniredis.RunT(t)
		c := goredis.NewClient(&goredis.Options{Addr: m.Addr()})
		defer c.Close()
		checkBudgets(t, c, testenv.CountRedis(c), false)
	})
	t.Run("redis", func(t *testing.T) {
		c := realClient(t)
		prefix := "pst:" + testenv.RedisPrefix(t)
		checkBudgets(t, c, testenv.CountRedis(c), false, redisprovider.WithKeyPrefix(prefix))
	})
	t.Run("cluster", func(t *testing.T) {
		addrs := testenv.RedisClusterAddrs(t)
		c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs})
		defer c.Close()
		counter := testenv.CountRedis(c)
		if err := c.Ping(t.Context()).Err(); err != nil { // warm up the slot map
			t.Fatal(err)
		}
		checkBudgets(t, c, counter, true, redisprovider.WithKeyPrefix("pst:"+testenv.RedisPrefix(t)))
	})
}
