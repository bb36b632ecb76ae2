package redisprovider

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/pipestate/pipestate/internal/ids"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// TestActiveRunsAtScale is the measurement of issue 37 (docs/benchmarks.md):
// `runs --all --status RUNNING --older-than 1h` through the active-runs index
// beside the scan it replaces (1 ListPipelines, then 1 ListRuns of the newest
// 1,000 runs per pipeline, 8 at once: cmd/pipestate's), at each size of
// PIPESTATE_ACTIVE_SCALE (pipeline counts, comma-separated; 10 runs each, of
// which 100 in all are RUNNING and were last updated two hours ago, the rest
// COMPLETED), on REDIS_ADDR and REDIS_CLUSTER_ADDRS. Not in make test: it
// loads the data with pipelined raw writes of the stored format (the truths,
// the pipelines' run lists, the pipeline list and the active-runs index, as
// the provider's writes leave them), checks that both reads return exactly the
// 100 stuck runs, logs round trips and wall time, and deletes its prefix.
//
//	PIPESTATE_ACTIVE_SCALE=1000,100000 go test -run TestActiveRunsAtScale -v -timeout 1h ./provider/redisprovider/
//
// PIPESTATE_ACTIVE_SCAN_MAX (default: no limit) skips the scan above that many
// pipelines, for a run that estimates it from the smaller sizes.
func TestActiveRunsAtScale(t *testing.T) {
	sizes := os.Getenv("PIPESTATE_ACTIVE_SCALE")
	if sizes == "" {
		t.Skip("PIPESTATE_ACTIVE_SCALE is not set")
	}
	scanMax := 1 << 62
	if s := os.Getenv("PIPESTATE_ACTIVE_SCAN_MAX"); s != "" {
		var err error
		if scanMax, err = strconv.Atoi(s); err != nil {
			t.Fatal(err)
		}
	}
	targets := map[string]goredis.UniversalClient{}
	if addr := os.Getenv("REDIS_ADDR"); addr != "" {
		targets["redis"] = goredis.NewClient(&goredis.Options{Addr: addr, PoolSize: 32, ReadTimeout: time.Minute, WriteTimeout: time.Minute})
	}
	if addrs := os.Getenv("REDIS_CLUSTER_ADDRS"); addrs != "" {
		targets["cluster"] = goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: strings.Split(addrs, ","), PoolSize: 32,
			ReadTimeout: time.Minute, WriteTimeout: time.Minute}) // the prefix's deletion meets a busy server
	}
	for _, name := range []string{"redis", "cluster"} {
		c, ok := targets[name]
		if !ok {
			continue
		}
		t.Cleanup(func() { _ = c.Close() })
		counter := testenv.CountRedis(c)
		for _, s := range strings.Split(sizes, ",") {
			pipelines, err := strconv.Atoi(s)
			if err != nil {
				t.Fatal(err)
			}
			t.Run(fmt.Sprintf("%s/%d", name, pipelines), func(t *testing.T) {
				prefix := fmt.Sprintf("pst:scale-%d", time.Now().UnixNano())
				t.Cleanup(func() {
					start := time.Now()
					if err := testenv.DeleteRedisPrefix(c, prefix); err != nil {
						t.Errorf("deleting %s: %v", prefix, err)
					}
					t.Logf("prefix deleted in %v", time.Since(start).Round(time.Millisecond))
				})
				measureActiveAtScale(t, c, counter, prefix, pipelines, pipelines <= scanMax)
			})
		}
	}
}

// scaleStuck is how many runs of the measurement are stuck.
const scaleStuck = 100

func measureActiveAtScale(t *testing.T, c goredis.UniversalClient, counter *testenv.Counter, prefix string, pipelines int, scan bool) {
	ctx := context.Background()
	p, err := New(c, WithKeyPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	const perPipeline = 10
	now := time.Now()
	start := time.Now()
	if err := loadScale(ctx, p, pipelines, perPipeline, now); err != nil {
		t.Fatal(err)
	}
	t.Logf("loaded %d pipelines, %d runs (%d stuck) in %v", pipelines, pipelines*perPipeline, scaleStuck, time.Since(start).Round(time.Millisecond))

	filter := provider.ActiveRunFilter{Statuses: []types.RunStatus{types.RunRunning}, NotUpdatedSince: now.Add(-time.Hour)}
	counter.Reset()
	start = time.Now()
	var found []types.RunState
	for cursor := ""; ; { // as cmd/pipestate reads it: pages of 1,000
		page, next, err := p.ListActiveRuns(ctx, filter, cursor, 1000)
		if err != nil {
			t.Fatal(err)
		}
		found = append(found, page...)
		if cursor = next; next == "" {
			break
		}
	}
	took, trips := time.Since(start), counter.Load()
	if len(found) != scaleStuck {
		t.Fatalf("index: %d runs, want %d", len(found), scaleStuck)
	}
	t.Logf("index: %d stuck runs in %d round trips, %v", len(found), trips, took.Round(time.Microsecond))
	if !scan {
		t.Logf("scan: skipped (PIPESTATE_ACTIVE_SCAN_MAX)")
		return
	}
	counter.Reset()
	start = time.Now()
	cfgs, err := p.ListPipelines(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var stuck atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for _, cfg := range cfgs {
		g.Go(func() error {
			runs, err := p.ListRuns(gctx, cfg.ID, 1000)
			for _, r := range runs {
				if filter.Match(r) {
					stuck.Add(1)
				}
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	took, trips = time.Since(start), counter.Load()
	if len(cfgs) != pipelines || stuck.Load() != scaleStuck {
		t.Fatalf("scan: %d pipelines, %d stuck runs; want %d, %d", len(cfgs), stuck.Load(), pipelines, scaleStuck)
	}
	t.Logf("scan: %d stuck runs in %d round trips, %v", stuck.Load(), trips, took.Round(time.Millisecond))
}

// loadScale writes pipelines pipelines of perPipeline runs each, scaleStuck of
// them RUNNING since two hours before now, in the stored format of
// RegisterPipeline and PutRunState (sequence 1, settled list entries, no
// expiry), 500 pipelines per pipelined batch, 4 batches at once.
func loadScale(ctx context.Context, p *Provider, pipelines, perPipeline int, now time.Time) error {
	const batch = 500
	stuckEvery := pipelines * perPipeline / scaleStuck
	old := now.Add(-2 * time.Hour)
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for from := 0; from < pipelines; from += batch {
		g.Go(func() error {
			_, err := p.c.Pipelined(ctx, func(pipe goredis.Pipeliner) error {
				gp, active := p.k.globalPipelines(), p.k.activeRuns()
				for i := from; i < min(from+batch, pipelines); i++ {
					pid := fmt.Sprintf("pipe-%06d", i)
					cfg, err := p.encode(types.PipelineConfig{ID: pid})
					if err != nil {
						return err
					}
					pipe.HSet(ctx, p.k.config(pid), "s", 1, "m", pid, "p", pid, "j", cfg, "x", "0")
					pipe.ZAdd(ctx, gp.z, goredis.Z{Member: pid})
					pipe.HSet(ctx, gp.h, pid, "1|"+pid)
					runs := p.k.runs(pid)
					for j := range perPipeline {
						n := i*perPipeline + j
						r := types.RunState{RunID: fmt.Sprintf("%s-run-%02d", pid, j), PipelineID: pid, Status: types.RunCompleted,
							CreatedAt: old.Add(-time.Duration(perPipeline-j) * time.Minute)}
						r.UpdatedAt = r.CreatedAt
						mark := ""
						if n%stuckEvery == stuckEvery-1 {
							r.Status, r.UpdatedAt, mark = types.RunRunning, old, "0"
							pipe.ZAdd(ctx, active.z, goredis.Z{Member: r.RunID})
							pipe.HSet(ctx, active.h, r.RunID, "1|"+r.RunID)
						}
						data, err := p.encode(r)
						if err != nil {
							return err
						}
						m := ids.TimeKey(r.CreatedAt) + r.RunID
						pipe.HSet(ctx, p.k.run(r.RunID), "s", 1, "m", m, "p", pid, "j", data, "x", "0", "v", "0",
							"c", r.CreatedAt.Format(time.RFC3339Nano), "a", mark)
						pipe.ZAdd(ctx, runs.z, goredis.Z{Member: m})
						pipe.HSet(ctx, runs.h, r.RunID, "1|"+m)
					}
				}
				return nil
			})
			return err
		})
	}
	return g.Wait()
}
