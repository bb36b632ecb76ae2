package redisprovider

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/types"
)

// BenchmarkCASActiveIndex puts the run writes' active-runs index protocol
// beside the one it replaced, in one run, on miniredis, on REDIS_ADDR and on
// REDIS_CLUSTER_ADDRS when set: "before" is the three steps on every CAS to an
// unfinished status (step 1, the swap, the entry: the previous version's
// CompareAndSwapRunState, kept here as casThreeSteps), "after" is
// CompareAndSwapRunState. Workloads: "heartbeat", a CAS from RUNNING to
// RUNNING (what an orchestrator writes while a run makes progress), and
// "lifecycle", a run created PENDING, swapped to RUNNING, then to COMPLETED.
// It reports round trips per op (trips/op) beside ns/op:
//
//	go test -run '^$' -bench CASActiveIndex -benchtime 2000x ./provider/redisprovider/
func BenchmarkCASActiveIndex(b *testing.B) {
	type target struct {
		name string
		c    goredis.UniversalClient
	}
	m := miniredis.RunT(b)
	targets := []target{{"miniredis", goredis.NewClient(&goredis.Options{Addr: m.Addr()})}}
	if addr := os.Getenv("REDIS_ADDR"); addr != "" {
		targets = append(targets, target{"redis", goredis.NewClient(&goredis.Options{Addr: addr})})
	}
	if addrs := os.Getenv("REDIS_CLUSTER_ADDRS"); addrs != "" {
		targets = append(targets, target{"cluster", goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: strings.Split(addrs, ",")})})
	}
	for _, tg := range targets {
		b.Cleanup(func() { _ = tg.c.Close() })
		counter := testenv.CountRedis(tg.c)
		for _, work := range []string{"heartbeat", "lifecycle"} {
			for _, protocol := range []string{"before", "after"} {
				cas := func(ctx context.Context, p *Provider, id string, v int, st types.RunState) (bool, error) {
					if protocol == "before" {
						return p.casThreeSteps(ctx, id, v, st)
					}
					return p.CompareAndSwapRunState(ctx, id, v, st)
				}
				b.Run(tg.name+"/"+work+"/"+protocol, func(b *testing.B) {
					ctx := context.Background()
					prefix := fmt.Sprintf("pst:bench-casidx-%d", time.Now().UnixNano())
					b.Cleanup(func() { _ = testenv.DeleteRedisPrefix(tg.c, prefix) })
					p, err := New(tg.c, WithKeyPrefix(prefix))
					if err != nil {
						b.Fatal(err)
					}
					if err := p.Start(ctx); err != nil {
						b.Fatal(err)
					}
					run := types.RunState{RunID: "hb", PipelineID: "p", Status: types.RunRunning}
					if err := p.PutRunState(ctx, run); err != nil {
						b.Fatal(err)
					}
					counter.Reset()
					b.ResetTimer()
					for i := range b.N {
						switch work {
						case "heartbeat":
							run.Metadata = map[string]any{"beat": i}
							if ok, err := cas(ctx, p, "hb", i, run); !ok || err != nil {
								b.Fatalf("CAS from %d = %v, %v", i, ok, err)
							}
						case "lifecycle":
							r := types.RunState{RunID: "run-" + strconv.Itoa(i), PipelineID: "p", Status: types.RunPending}
							if ok, err := p.CreateRunState(ctx, r); !ok || err != nil {
								b.Fatalf("create = %v, %v", ok, err)
							}
							for v, st := range []types.RunStatus{types.RunRunning, types.RunCompleted} {
								r.Status = st
								if ok, err := cas(ctx, p, r.RunID, v, r); !ok || err != nil {
									b.Fatalf("CAS to %s = %v, %v", st, ok, err)
								}
							}
						}
					}
					b.StopTimer()
					b.ReportMetric(float64(counter.Load())/float64(b.N), "trips/op")
				})
			}
		}
	}
}

// casThreeSteps is CompareAndSwapRunState as the previous version wrote it, for
// BenchmarkCASActiveIndex: every CAS to an unfinished status adds or stamps the
// run's entry before the swap and sets it after.
func (p *Provider) casThreeSteps(ctx context.Context, runID string, expectedVersion int, newState types.RunState) (bool, error) {
	const op = "compare and swap run state"
	newState.Version = expectedVersion + 1
	newState.UpdatedAt = p.now()
	newState.CreatedAt = time.Time{}
	data, err := p.encode(newState)
	if err != nil {
		return false, err
	}
	key, active, stamp := p.k.run(runID), p.k.activeRuns(), newState.UpdatedAt.UnixMilli()
	mark := ""
	if !newState.Status.Terminal() {
		mark = strconv.Itoa(newState.Version)
		if _, err := p.runBatch(ctx, op, []call{idxCall(active, "p", runID, runID, stamp)}); err != nil {
			return false, err
		}
	}
	life := lifetimeOf(newState.UpdatedAt, p.retention.Runs)
	keys, args, t, fenced := fenceArgs(ctx, p.k.fences(key), []string{key, p.k.newCall(key)}, []any{int64(expectedVersion),
		newState.PipelineID, data, int64(newState.Version), callMemoryMS, life.now, life.exp, life.ttl, casAny, mark})
	n, err := p.casScript(ctx, op, runID, keys, args, t, fenced)
	if err != nil || n <= 0 {
		return false, err
	}
	set := setCall(active, runID, runID, n, stamp, life.exp)
	if newState.Status.Terminal() {
		set = setCall(active, runID, "", n, p.stampBound(), 0)
	}
	_, _ = p.runBatch(ctx, op, []call{set})
	return true, nil
}
