package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	goredis "github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/types"
)

var cost = flag.Bool("cost", false, "run TestCost: the calls and time of runs --all and locks list at 1,000 pipelines")

// costPipelines is how many pipelines TestCost writes, each with costRuns runs
// and one lease; every 100th pipeline has a run stuck RUNNING for 2h.
const (
	costPipelines = 1000
	costRuns      = 3
)

// costCommands are what TestCost measures.
var costCommands = []string{
	"runs --all --status RUNNING,PENDING --older-than 1h --limit 100",
	"runs --all --limit 20",
	"locks list --limit 1000",
	"locks list --match sched:p-000* --limit 1000",
}

// TestCost measures, with -cost, the backend round trips (a go-redis hook; HTTP
// requests to DynamoDB) and wall time of costCommands on miniredis, Redis, the
// Redis Cluster and DynamoDB Local holding costPipelines pipelines, and prints
// a table (go test ./cmd/pipestate -run TestCost -cost -v). On a shared server
// the SCAN of locks list also walks the other tests' keys: the table gives the
// keys in the database.
func TestCost(t *testing.T) {
	if !*cost {
		t.Skip("measures at 1,000 pipelines: run with -cost")
	}
	var report strings.Builder
	fmt.Fprintf(&report, "%-13s %-66s %8s %10s  %s\n", "backend", "command", "trips", "wall", "keys/items")
	measure := func(t *testing.T, name string, env []string, b backend, trips func() int64, size func() int64) {
		p := must(b.provider("", true))
		seedCost(t, p)
		for _, cmd := range costCommands {
			c := &cli{stdout: new(strings.Builder), stderr: new(strings.Builder), now: func() time.Time { return now }, getenv: getenv(env),
				dial: func(context.Context, target, func() time.Time) (backend, error) { return keepOpen{b}, nil }}
			before, start := trips(), time.Now()
			code := c.main(context.Background(), words(cmd))
			wall := time.Since(start)
			if code != exitOK {
				t.Fatalf("%s: exit %d: %s", cmd, code, c.stderr)
			}
			if strings.HasPrefix(cmd, "runs --all --status") && !strings.Contains(fmt.Sprint(c.stdout), "p-0990") {
				t.Errorf("%s found no stuck run of p-0990:\n%s", cmd, c.stdout)
			}
			fmt.Fprintf(&report, "%-13s %-66s %8d %10s  %d\n", name, cmd, trips()-before, wall.Round(time.Millisecond), size())
		}
	}
	redis := func(t *testing.T, name string, c goredis.UniversalClient) {
		t.Cleanup(func() { _ = c.Close() })
		n := testenv.CountRedis(c)
		measure(t, name, []string{envRedis + "=counted"}, &redisBackend{t: target{kind: kindRedis, prefix: testenv.RedisPrefix(t)}, c: c, now: func() time.Time { return now }},
			n.Load, func() int64 {
				if cc, ok := c.(*goredis.ClusterClient); ok {
					var keys int64
					_ = cc.ForEachMaster(context.Background(), func(ctx context.Context, m *goredis.Client) error {
						keys += m.DBSize(ctx).Val() // the masters in turn: ForEachMaster's order
						return nil
					})
					return keys
				}
				return c.DBSize(context.Background()).Val()
			})
	}
	t.Run("miniredis", func(t *testing.T) {
		redis(t, "miniredis", goredis.NewClient(&goredis.Options{Addr: miniredis.RunT(t).Addr()}))
	})
	t.Run("redis", func(t *testing.T) { redis(t, "redis", goredis.NewClient(&goredis.Options{Addr: testenv.RedisAddr(t)})) })
	t.Run("cluster", func(t *testing.T) {
		redis(t, "redis-cluster", goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: testenv.RedisClusterAddrs(t)}))
	})
	t.Run("dynamodb", func(t *testing.T) {
		httpClient, n := testenv.CountingHTTPClient()
		client := testenv.DynamoDBClient(t, func(o *ddb.Options) { o.HTTPClient = httpClient })
		table := testenv.UniqueName(t)
		testenv.DynamoDBTable(t, client, table, func(ctx context.Context, name string) error { return ddbprovider.CreateTable(ctx, client, name) })
		measure(t, "dynamodb", []string{envDynamoDB + "=http://counted", envTable + "=" + table}, &dynamoBackend{t: target{kind: kindDynamoDB, table: table}, c: client, now: func() time.Time { return now }},
			n.Load, func() int64 {
				out, err := client.DescribeTable(context.Background(), &ddb.DescribeTableInput{TableName: &table})
				if err != nil || out.Table.ItemCount == nil {
					return -1
				}
				return *out.Table.ItemCount
			})
	})
	fmt.Fprint(os.Stdout, report.String())
}

// seedCost writes the pipelines, runs and leases of TestCost.
func seedCost(t *testing.T, p provider.Provider) {
	t.Helper()
	g, ctx := errgroup.WithContext(context.Background())
	g.SetLimit(16)
	for i := range costPipelines {
		g.Go(func() error {
			id := fmt.Sprintf("p-%04d", i)
			if err := p.RegisterPipeline(ctx, types.PipelineConfig{ID: id}); err != nil {
				return err
			}
			for r := range costRuns {
				run := types.RunState{RunID: fmt.Sprintf("%s-r%d", id, r), PipelineID: id, Status: types.RunCompleted,
					CreatedAt: now.Add(-time.Duration(costRuns-r) * 24 * time.Hour), UpdatedAt: now.Add(-time.Duration(costRuns-r) * 23 * time.Hour)}
				if r == costRuns-1 && i%100 == 90 {
					run.Status, run.CreatedAt, run.UpdatedAt = types.RunRunning, now.Add(-3*time.Hour), now.Add(-2*time.Hour)
				}
				if err := p.PutRunState(ctx, run); err != nil {
					return err
				}
			}
			_, err := p.(provider.Leaser).AcquireLease(ctx, "sched:"+id, time.Hour)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("seed: %v", err)
	}
}

// keepOpen is a backend whose close leaves its client open, for the next command.
type keepOpen struct{ backend }

func (keepOpen) close() {}
