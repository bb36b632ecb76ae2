package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/testkit/fakeclock"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/monoid/sketch/bloom"
	"github.com/pipestate/pipestate/monoid/sketch/hll"
	"github.com/pipestate/pipestate/monoid/sketch/topk"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/provider/memprovider"
	"github.com/pipestate/pipestate/provider/redisprovider"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/ddbstate"
	"github.com/pipestate/pipestate/state/memstate"
	"github.com/pipestate/pipestate/state/redisstate"
	"github.com/pipestate/pipestate/types"
)

// harness is one backend holding the fixtures, and how the tests run the command
// against it.
type harness struct {
	name       string
	line       string   // what the backend line must say, after "backend: "
	storeLine  string   // the same for state get
	env        []string // the connection variables
	storeFlags []string // what names the state stores: --prefix P or --table T
	// open returns a provider on the fixtures with the fixture clock and lock owner
	// owner ("": random), as another process would open it.
	open func(t *testing.T, owner string) provider.Provider
	// run runs the command; memory runs it in process, the others run the binary.
	run func(t *testing.T, args ...string) result
	// dial is how the command reaches memory in process; nil for the others.
	dial func(ctx context.Context, t target, now func() time.Time) (backend, error)
	// lease is the fixture lease; its token, random, is shown as TOKEN in golden files.
	lease types.Lease
	// expiring opens a provider on the fixtures whose events retention drops an
	// hour after they are appended (memory, DynamoDB); nil where retention is by
	// count, and trimEvents drops every event of a pipeline instead (Redis).
	expiring   func(t *testing.T) provider.Provider
	trimEvents func(t *testing.T, pipelineID string)
	// audit holds the cursors of the audit pipeline's events, oldest first: the
	// first three dropped by retention, the last two kept.
	audit []string
	// corrupt writes a value that does not decode over the stored run runID,
	// with the backend's raw client; nil where the test cannot (memory).
	corrupt func(t *testing.T, runID string)
	// unindex removes every run stored now from the active-runs index, as a
	// version before the index left them (a later write indexes a run again);
	// nil where the test cannot (DynamoDB).
	unindex func(t *testing.T)
	// loseEntries removes every entry of the active-runs index and nothing else
	// (each run keeps its mark that its entry was added), as entries lost by
	// hand or in a failover; nil where the index is not kept apart (memory,
	// DynamoDB: the run item carries its key).
	loseEntries func(t *testing.T)
	// unindexed is the memory harness's runs hidden by unindex; nil for the others.
	unindexed *unindexed
}

// at is a fixture time on 2026-11-day.
func at(day, hour, minute int) time.Time {
	return time.Date(2026, 11, day, hour, minute, 0, 0, time.UTC)
}

func ptr[T any](v T) *T { return &v }

// stores are the state stores of the fixtures, one per kind.
type stores struct {
	int64sum, int64max state.Store[int64]
	float64sum         state.Store[float64]
	hll, topk, bloom   state.Store[[]byte]
}

// Monoids of the fixtures' sketch stores.
var (
	hllM   = must(hll.New(hll.DefaultPrecision))
	topkM  = must(topk.New(10))
	bloomM = must(bloom.New(1024, 4))
)

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// backends returns the harnesses to run: memory and miniredis always, redis-server,
// the Redis Cluster and DynamoDB Local when testenv finds them (as subtests that
// skip otherwise). Each holds freshly written fixtures.
func backends(t *testing.T, fn func(t *testing.T, h *harness)) {
	t.Run("memory", func(t *testing.T) { fn(t, memoryHarness(t)) })
	t.Run("miniredis", func(t *testing.T) {
		fn(t, redisHarness(t, "redis", miniredis.RunT(t).Addr(), nil))
	})
	t.Run("redis", func(t *testing.T) { fn(t, redisHarness(t, "redis", testenv.RedisAddr(t), nil)) })
	t.Run("cluster", func(t *testing.T) {
		seeds := testenv.RedisClusterAddrs(t)
		fn(t, redisHarness(t, "redis-cluster", strings.Join(seeds, ","), seeds))
	})
	t.Run("dynamodb", func(t *testing.T) { fn(t, dynamoHarness(t)) })
}

// memoryHarness is the memory backend, reached in process through cli.dial.
func memoryHarness(t *testing.T) *harness {
	clk := fakeclock.New(time.Time{})
	data := must(memprovider.New(memprovider.WithClock(clk.Now), memprovider.WithReadinessTTL(24*time.Hour)))
	mb := &memBackend{data: data, stores: stores{
		int64sum:   must(memstate.New[int64](monoid.Sum[int64]{})),
		int64max:   must(memstate.New[int64](monoid.Max[int64]{})),
		float64sum: must(memstate.New[float64](monoid.Sum[float64]{})),
		hll:        must(memstate.New(monoid.Monoid[[]byte](hllM))),
		topk:       must(memstate.New(monoid.Monoid[[]byte](topkM))),
		bloom:      must(memstate.New(monoid.Monoid[[]byte](bloomM))),
	}}
	h := &harness{
		name:       "memory",
		line:       "memory",
		storeLine:  "memory",
		env:        []string{envRedis + "=in-process"},
		storeFlags: []string{"--prefix", "fixtures"},
		open: func(t *testing.T, owner string) provider.Provider {
			opts := []memprovider.Option{memprovider.WithClock(clk.Now), memprovider.WithReadinessTTL(24 * time.Hour)}
			if owner != "" {
				opts = append(opts, memprovider.WithOwner(owner))
			}
			return must(data.NewHandle(opts...))
		},
		expiring: func(t *testing.T) provider.Provider {
			return must(data.NewHandle(memprovider.WithClock(clk.Now), memprovider.WithEventRetention(time.Hour)))
		},
	}
	h.dial = mb.dial
	h.run = func(t *testing.T, args ...string) result {
		return runInProcess(context.Background(), h.env, h.dial, args...)
	}
	mb.unindexed = &unindexed{}
	h.unindexed = mb.unindexed
	h.unindex = func(t *testing.T) { mb.unindexed.all(t, h.open(t, "")) }
	seed(t, h, clk, mb.stores)
	return h
}

// memBackend is the memory backend as the command sees it.
type memBackend struct {
	data      *memprovider.Provider
	stores    stores
	now       func() time.Time
	unindexed *unindexed // nil: none
}

func (b *memBackend) dial(_ context.Context, _ target, now func() time.Time) (backend, error) {
	return &memBackend{data: b.data, stores: b.stores, now: now, unindexed: b.unindexed}, nil
}

func (b *memBackend) String() string { return "memory" }

func (b *memBackend) provider(owner string, write bool) (provider.Provider, error) {
	opts := []memprovider.Option{memprovider.WithClock(b.now)}
	if owner != "" {
		opts = append(opts, memprovider.WithOwner(owner))
	}
	if !write {
		opts = append(opts, memprovider.WithReadOnly())
	}
	p, err := b.data.NewHandle(opts...)
	if err != nil || b.unindexed == nil || !b.unindexed.any() {
		return p, err
	}
	return unindexedProvider{p, b.unindexed}, nil
}

// handle is another handle on a memory store, so that the command closing it
// leaves the fixtures' open.
func handle[V any](s state.Store[V]) state.Store[V] { return s.(*memstate.Store[V]).NewHandle() }

func (b *memBackend) int64Store(kind string) (state.Store[int64], error) {
	if kind == storeInt64Max {
		return handle(b.stores.int64max), nil
	}
	return handle(b.stores.int64sum), nil
}

func (b *memBackend) float64Store() (state.Store[float64], error) {
	return handle(b.stores.float64sum), nil
}

func (b *memBackend) bytesStore(m monoid.Monoid[[]byte]) (state.Store[[]byte], error) {
	switch m.Kind() {
	case monoid.KindHLL:
		return handle(b.stores.hll), nil
	case monoid.KindTopK:
		return handle(b.stores.topk), nil
	}
	return handle(b.stores.bloom), nil
}

func (b *memBackend) close() {}

// redisHarness is a Redis server (kind redis) or cluster (kind redis-cluster) at
// addr: the provider under a unique prefix, the stores under another.
func redisHarness(t *testing.T, kind, addr string, seeds []string) *harness {
	prefix := testenv.RedisPrefix(t)
	var client goredis.UniversalClient = goredis.NewClient(&goredis.Options{Addr: addr})
	env := []string{envRedis + "=" + addr, envPrefix + "=" + prefix}
	if seeds != nil {
		client = goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: seeds})
		env = []string{envRedisCluster + "=" + addr, envPrefix + "=" + prefix}
	}
	t.Cleanup(func() { _ = client.Close() })
	clk := fakeclock.New(time.Time{})
	storePrefix := prefix + "-state"
	h := &harness{
		name:       kind,
		line:       kind + " " + addr + ", prefix " + prefix,
		storeLine:  kind + " " + addr + ", prefix " + storePrefix,
		env:        env,
		storeFlags: []string{"--prefix", storePrefix},
		open: func(t *testing.T, owner string) provider.Provider {
			opts := []redisprovider.Option{redisprovider.WithKeyPrefix(prefix), redisprovider.WithClock(clk.Now),
				redisprovider.WithReadinessTTL(24 * time.Hour)}
			if owner != "" {
				opts = append(opts, redisprovider.WithOwner(owner))
			}
			return must(redisprovider.New(client, opts...))
		},
		trimEvents: func(t *testing.T, pipelineID string) {
			if err := client.XTrimMaxLen(context.Background(), prefix+":{"+pipelineID+"}:events", 0).Err(); err != nil {
				t.Fatalf("trim events: %v", err)
			}
		},
	}
	h.run = func(t *testing.T, args ...string) result { return runBinary(t, h.env, args...) }
	h.loseEntries = func(t *testing.T) {
		active := prefix + ":{:active}"
		for _, key := range []string{active, active + ":ids", active + ":exp"} {
			if err := client.Del(context.Background(), key).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	h.unindex = func(t *testing.T) {
		ctx := context.Background()
		h.loseEntries(t)
		// and each run's mark that its entry was added (field a), as on the runs
		// the backfill is for: written by a version without the index.
		unmark := func(ctx context.Context, c *goredis.Client) error {
			iter := c.Scan(ctx, 0, prefix+":{run:*}", 1000).Iterator()
			for iter.Next(ctx) {
				if err := c.HDel(ctx, iter.Val(), "a").Err(); err != nil {
					return err
				}
			}
			return iter.Err()
		}
		var err error
		if cc, ok := client.(*goredis.ClusterClient); ok {
			err = cc.ForEachMaster(ctx, unmark)
		} else {
			err = unmark(ctx, client.(*goredis.Client))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	h.corrupt = func(t *testing.T, runID string) {
		if err := client.HSet(context.Background(), prefix+":{run:"+runID+"}", "j", `{"RunID": tru`).Err(); err != nil {
			t.Fatal(err)
		}
	}
	seed(t, h, clk, stores{
		int64sum:   must(redisstate.NewInt64SumStore(client, storePrefix)),
		int64max:   must(redisstate.NewInt64MaxStore(client, storePrefix)),
		float64sum: must(redisstate.NewFloat64SumStore(client, storePrefix)),
		hll:        must(redisstate.NewBytesStore(client, storePrefix, hllM)),
		topk:       must(redisstate.NewBytesStore(client, storePrefix, topkM)),
		bloom:      must(redisstate.NewBytesStore(client, storePrefix, bloomM)),
	})
	return h
}

// dynamoHarness is DynamoDB Local: the provider on a unique table, the stores on
// another.
func dynamoHarness(t *testing.T) *harness {
	client := testenv.DynamoDBClient(t)
	endpoint := testenv.DynamoDBEndpoint(t)
	table := testenv.UniqueName(t)
	storeTable := table + "-state"
	testenv.DynamoDBTable(t, client, table, func(ctx context.Context, name string) error { return ddbprovider.CreateTable(ctx, client, name) })
	testenv.DynamoDBTable(t, client, storeTable, func(ctx context.Context, name string) error { return ddbstate.CreateStoreTable(ctx, client, name) })
	clk := fakeclock.New(time.Time{})
	h := &harness{
		name:       "dynamodb",
		line:       "dynamodb " + endpoint + ", table " + table,
		storeLine:  "dynamodb " + endpoint + ", table " + storeTable,
		env:        []string{envDynamoDB + "=" + endpoint, envTable + "=" + table},
		storeFlags: []string{"--table", storeTable},
		open: func(t *testing.T, owner string) provider.Provider {
			opts := []ddbprovider.Option{ddbprovider.WithClock(clk.Now), ddbprovider.WithReadinessTTL(24 * time.Hour)}
			if owner != "" {
				opts = append(opts, ddbprovider.WithOwner(owner))
			}
			return must(ddbprovider.New(client, table, opts...))
		},
		expiring: func(t *testing.T) provider.Provider {
			return must(ddbprovider.New(client, table, ddbprovider.WithClock(clk.Now), ddbprovider.WithEventRetention(time.Hour)))
		},
	}
	h.run = func(t *testing.T, args ...string) result { return runBinary(t, h.env, args...) }
	h.unindex = func(t *testing.T) {
		// Remove the index keys from every run truth item, as on the runs an
		// older version wrote.
		ctx := context.Background()
		pages := ddb.NewScanPaginator(client, &ddb.ScanInput{TableName: &table, ConsistentRead: aws.Bool(true),
			FilterExpression: aws.String("attribute_exists(activePK)")})
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range page.Items {
				if _, err := client.UpdateItem(ctx, &ddb.UpdateItemInput{TableName: &table,
					Key:              map[string]ddbtypes.AttributeValue{"PK": it["PK"], "SK": it["SK"]},
					UpdateExpression: aws.String("REMOVE activePK, activeSK")}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	h.corrupt = func(t *testing.T, runID string) {
		// The truth item and its list copy both hold the run's data.
		ctx := context.Background()
		out, err := client.GetItem(ctx, &ddb.GetItemInput{TableName: &table, ConsistentRead: aws.Bool(true),
			Key: map[string]ddbtypes.AttributeValue{"PK": &ddbtypes.AttributeValueMemberS{Value: "RUN#" + runID},
				"SK": &ddbtypes.AttributeValueMemberS{Value: "STATE"}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []map[string]ddbtypes.AttributeValue{
			{"PK": out.Item["PK"], "SK": out.Item["SK"]},
			{"PK": out.Item["listPK"], "SK": out.Item["listSK"]},
		} {
			if _, err := client.UpdateItem(ctx, &ddb.UpdateItemInput{TableName: &table, Key: key,
				UpdateExpression:          aws.String("SET #d = :v"),
				ExpressionAttributeNames:  map[string]string{"#d": "data"},
				ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":v": &ddbtypes.AttributeValueMemberS{Value: `{"RunID": tru`}},
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	seed(t, h, clk, stores{
		int64sum:   must(ddbstate.NewInt64SumStore(client, storeTable)),
		int64max:   must(ddbstate.NewInt64MaxStore(client, storeTable)),
		float64sum: must(ddbstate.NewFloat64SumStore(client, storeTable)),
		hll:        must(ddbstate.NewBytesStore(client, storeTable, hllM)),
		topk:       must(ddbstate.NewBytesStore(client, storeTable, topkM)),
		bloom:      must(ddbstate.NewBytesStore(client, storeTable, bloomM)),
	})
	return h
}

func deleteTables(client *ddb.Client, tables ...string) {
	for _, tb := range tables {
		_, _ = client.DeleteTable(context.Background(), &ddb.DeleteTableInput{TableName: aws.String(tb)})
	}
}

// seed writes the fixtures through h's provider (its clock set to each write's
// time) and into ss.
func seed(t *testing.T, h *harness, clk *fakeclock.Clock, ss stores) {
	t.Helper()
	ctx := context.Background()
	p := h.open(t, "")
	check := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("seed %s: %v", h.name, err)
		}
	}
	clk.Set(at(21, 0, 0))
	for _, cfg := range []types.PipelineConfig{
		{
			ID: "orders", Archetype: "batch", Tier: 1,
			Traits: map[string]types.TraitConfig{
				"freshness": {Evaluator: "sql", Required: true, TTL: time.Hour, Config: map[string]any{"maxLagMinutes": 30}},
				"volume":    {Evaluator: "sql", Required: true},
				"schema":    {Evaluator: "registry", TTL: 30 * time.Minute, Timeout: 45 * time.Second},
			},
			Trigger:    &types.TriggerConfig{Type: "http", Config: map[string]any{"url": "https://jobs.internal/orders"}},
			Retry:      &types.RetryPolicy{MaxAttempts: 3, Backoff: time.Minute, MaxBackoff: 10 * time.Minute},
			SLA:        &types.SLAConfig{EvaluationDeadline: "03:30", CompletionDeadline: "05:00", Timezone: "UTC"},
			Schedules:  []types.ScheduleConfig{{ID: "daily", Cron: "0 3 * * *", Timezone: "UTC"}, {ID: "hourly", Cron: "0 * * * *"}},
			Exclusions: &types.ExclusionConfig{Weekends: true, Dates: []string{"2026-12-25"}},
			Downstream: []string{"billing"},
			Metadata:   map[string]any{"owner": "team-data"},
		},
		{ID: "billing", Archetype: "batch", Tier: 2, Traits: map[string]types.TraitConfig{"upstream": {Required: true}},
			Schedules: []types.ScheduleConfig{{ID: "daily", Time: "06:00"}}},
		{ID: "empty"},
	} {
		check(p.RegisterPipeline(ctx, cfg))
	}
	for _, r := range []types.RunState{
		{RunID: "r-0001", PipelineID: "orders", Status: types.RunCompleted, Version: 3, CreatedAt: at(20, 3, 0), UpdatedAt: at(20, 4, 10)},
		{RunID: "r-0002", PipelineID: "orders", Status: types.RunFailed, Version: 2, CreatedAt: at(21, 3, 0), UpdatedAt: at(21, 3, 40),
			Metadata: map[string]any{"attempt": 1}},
		{RunID: "r-0003", PipelineID: "orders", Status: types.RunRunning, Version: 4, CreatedAt: at(21, 3, 45), UpdatedAt: at(21, 5, 48),
			Metadata: map[string]any{"attempt": 2, "host": "worker-7"}},
		{RunID: "r-0004", PipelineID: "orders", Status: types.RunPending, CreatedAt: at(21, 5, 55), UpdatedAt: at(21, 5, 55)},
		{RunID: "r-b1", PipelineID: "billing", Status: types.RunPending, Version: 1, CreatedAt: at(21, 5, 10), UpdatedAt: at(21, 5, 10)},
		{RunID: "r-b0", PipelineID: "billing", Status: types.RunRunning, Version: 2, CreatedAt: at(21, 4, 0), UpdatedAt: at(21, 4, 20)},
	} {
		check(p.PutRunState(ctx, r))
	}
	for _, e := range []types.Event{
		{Kind: "RUN_STATE_CHANGED", RunID: "r-0002", Status: "RUNNING", Message: "attempt 1 started", Timestamp: at(21, 3, 0)},
		{Kind: "RUN_STATE_CHANGED", RunID: "r-0002", Status: "FAILED", Message: "upstream timeout\nretrying in 5m", Timestamp: at(21, 3, 40)},
		{Kind: "RUN_STATE_CHANGED", RunID: "r-0003", Status: "RUNNING", Message: "attempt 2 started", Timestamp: at(21, 3, 45)},
		{Kind: "TRAIT_EVALUATED", TraitType: "freshness", Status: "PASS", Timestamp: at(21, 5, 30)},
		{Kind: "TRAIT_EVALUATED", TraitType: "volume", Status: "FAIL", Timestamp: at(21, 5, 45),
			Message: "row count 120 is below the minimum of 1000 expected for a weekday partition"},
		{Kind: "RUN_STATE_CHANGED", RunID: "r-0004", Status: "PENDING", Message: "queued behind r-0003", Timestamp: at(21, 5, 55),
			Details: map[string]any{"queue": "default"}},
	} {
		e.PipelineID = "orders"
		check(p.AppendEvent(ctx, e))
	}
	for _, l := range []types.RunLogEntry{
		{PipelineID: "orders", Date: "2026-11-20", Status: types.RunCompleted, AttemptNumber: 1, RunID: "r-0001",
			StartedAt: at(20, 3, 0), CompletedAt: ptr(at(20, 4, 10)), UpdatedAt: at(20, 4, 10)},
		{PipelineID: "orders", Date: "2026-11-21", ScheduleID: "daily", Status: types.RunRunning, AttemptNumber: 2, RunID: "r-0003",
			StartedAt: at(21, 3, 45), UpdatedAt: at(21, 5, 48),
			RetryHistory: []types.RetryRecord{{Attempt: 1, RunID: "r-0002", Status: types.RunFailed, FailureMessage: "upstream timeout", At: at(21, 3, 40)}}},
		{PipelineID: "orders", Date: "2026-11-21T04", ScheduleID: "hourly", Status: types.RunFailed, AttemptNumber: 1, RunID: "r-h04",
			FailureCategory: "TIMEOUT", FailureMessage: "no data after 30m", AlertSent: true,
			StartedAt: at(21, 4, 0), CompletedAt: ptr(at(21, 4, 30)), UpdatedAt: at(21, 4, 30)},
	} {
		check(p.PutRunLog(ctx, l))
	}
	for _, r := range []types.RerunRecord{
		{RerunID: "rr-1", PipelineID: "orders", OriginalDate: "2026-11-19", Status: types.RequestPending, Reason: "late data from the vendor",
			RequestedAt: at(21, 4, 0)},
		{RerunID: "rr-2", PipelineID: "orders", OriginalDate: "2026-11-18", OriginalRunID: "r-0000", Status: types.RequestCompleted,
			RerunRunID: "r-rr2", RequestedAt: at(20, 9, 0), CompletedAt: ptr(at(20, 10, 0))},
		{RerunID: "rr-3", PipelineID: "billing", OriginalDate: "2026-11-20", Status: types.RequestRunning, RequestedAt: at(21, 5, 0)},
	} {
		check(p.PutRerun(ctx, r))
	}
	for _, r := range []types.ReplayRequest{
		{PipelineID: "orders", Date: "2026-11-20", ScheduleID: "daily", Status: types.RequestPending, RequestedBy: "alice",
			Reason: "backfill after the fix", CreatedAt: at(21, 5, 20)},
		{PipelineID: "billing", Date: "2026-11-20", Status: types.RequestCompleted, RequestedBy: "bob", CreatedAt: at(21, 2, 0)},
	} {
		check(p.PutReplay(ctx, r))
	}
	for _, l := range []types.LateArrival{
		{PipelineID: "orders", Date: "2026-11-20", DetectedAt: at(21, 1, 0), RecordDelta: 120},
		{PipelineID: "orders", Date: "2026-11-20", DetectedAt: at(21, 2, 0), RecordDelta: -5, TraitType: "volume"},
	} {
		check(p.PutLateArrival(ctx, l))
	}
	clk.Set(at(21, 4, 10))
	check(p.WriteCascadeMarker(ctx, "billing", "daily", "2026-11-20", "orders"))
	clk.Set(at(21, 5, 40))
	check(p.WriteCascadeMarker(ctx, "billing", "hourly", "2026-11-21T04", "orders"))
	for _, tr := range []struct {
		eval types.TraitEvaluation
		ttl  time.Duration
	}{
		{types.TraitEvaluation{TraitType: "schema", Status: types.TraitPass, EvaluatedAt: at(21, 4, 0)}, 30 * time.Minute}, // expired by now
		{types.TraitEvaluation{TraitType: "freshness", Status: types.TraitPass, EvaluatedAt: at(21, 5, 30),
			Value: map[string]any{"lagMinutes": 12}}, time.Hour},
		{types.TraitEvaluation{TraitType: "volume", Status: types.TraitFail, EvaluatedAt: at(21, 5, 45),
			Reason: "row count 120 below 1000", FailureCategory: "DATA"}, 0},
	} {
		clk.Set(tr.eval.EvaluatedAt)
		check(p.PutTrait(ctx, "orders", tr.eval, tr.ttl))
	}
	clk.Set(at(21, 5, 46))
	check(p.PutReadiness(ctx, types.ReadinessResult{PipelineID: "orders", Status: types.NotReady, Blocking: []string{"schema", "volume"},
		EvaluatedAt: at(21, 5, 46), Traits: []types.TraitEvaluation{
			{TraitType: "freshness", Status: types.TraitPass, EvaluatedAt: at(21, 5, 30)},
			{TraitType: "volume", Status: types.TraitFail, EvaluatedAt: at(21, 5, 45), Reason: "row count 120 below 1000", FailureCategory: "DATA"},
		}}))
	held, err := h.open(t, "worker-7").AcquireLock(ctx, "eval:orders:daily", 0)
	check(err)
	if !held {
		t.Fatal("seed: the lock is held already")
	}
	seedAudit(t, h, clk)
	clk.Set(now)
	// The second lease of its key (fence 2), expiring in 12h30m: on Redis the server
	// counts its ttl in real time, so the tests see it expire a little earlier than
	// now+12h30m, but still "in 12h".
	leaser := p.(provider.Leaser)
	first, err := leaser.AcquireLease(ctx, "sched:orders", time.Minute)
	check(err)
	check(leaser.ReleaseLease(ctx, *first))
	lease, err := leaser.AcquireLease(ctx, "sched:orders", 12*time.Hour+30*time.Minute)
	check(err)
	h.lease = *lease
	seedStores(t, ss)
}

// seedAudit appends the events of the audit pipeline (not registered): three that
// retention drops before now, then two it keeps, and records their cursors in
// h.audit.
func seedAudit(t *testing.T, h *harness, clk *fakeclock.Clock) {
	t.Helper()
	ctx := context.Background()
	p := h.open(t, "")
	w := p
	if h.expiring != nil {
		w = h.expiring(t)
	}
	add := func(w provider.Provider, i int, at time.Time) {
		t.Helper()
		clk.Set(at)
		ev := types.Event{PipelineID: "audit", Kind: "AUDIT", Message: fmt.Sprintf("audit %d", i), Timestamp: at}
		if err := w.AppendEvent(ctx, ev); err != nil {
			t.Fatalf("seed %s: %v", h.name, err)
		}
	}
	for i := range 3 {
		add(w, i, at(21, 1, i))
	}
	recs, err := p.ReadEventsSince(ctx, "audit", "", 10)
	if err != nil || len(recs) != 3 {
		t.Fatalf("seed %s: the audit events: %+v, %v", h.name, recs, err)
	}
	if h.trimEvents != nil {
		h.trimEvents(t, "audit")
	}
	for i := 3; i < 5; i++ {
		add(p, i, at(21, 5, i))
	}
	kept, err := p.ReadEventsSince(ctx, "audit", recs[2].StreamID, 10)
	if err != nil || len(kept) != 2 {
		t.Fatalf("seed %s: the audit events kept: %+v, %v", h.name, kept, err)
	}
	for _, r := range append(recs, kept...) {
		h.audit = append(h.audit, r.StreamID)
	}
}

// seedStores merges the fixture values into ss.
func seedStores(t *testing.T, ss stores) {
	t.Helper()
	ctx := context.Background()
	hour := state.Tumbling(time.Hour)
	key := func(entity string, tm time.Time) state.Key { return must(hour.Key(entity, tm)) }
	merge := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("seed stores: %v", err)
		}
	}
	for _, d := range []struct {
		k state.Key
		v int64
	}{
		{state.Key{Entity: "page:/home"}, 40}, {state.Key{Entity: "page:/home"}, 2},
		{key("page:/home", at(21, 3, 10)), 5}, {key("page:/home", at(21, 4, 20)), 7}, {key("page:/home", at(21, 5, 59)), 9},
	} {
		merge(ss.int64sum.MergeUpdate(ctx, d.k, d.v, 0))
	}
	for _, v := range []int64{120, 250, 90} {
		merge(ss.int64max.MergeUpdate(ctx, state.Key{Entity: "latency"}, v, 0))
	}
	for _, v := range []float64{1000.25, 234.25} {
		merge(ss.float64sum.MergeUpdate(ctx, state.Key{Entity: "revenue"}, v, 0))
	}
	merge(ss.hll.MergeUpdate(ctx, state.Key{Entity: "site"}, hllM.Delta("alice"), 0))
	merge(ss.hll.MergeUpdate(ctx, key("site", at(21, 3, 0)), hllM.Delta("alice", "bob"), 0))
	merge(ss.hll.MergeUpdate(ctx, key("site", at(21, 4, 0)), hllM.Delta("bob", "carol"), 0))
	merge(ss.hll.MergeUpdate(ctx, key("site", at(21, 5, 0)), hllM.Delta("dave"), 0))
	merge(ss.topk.MergeUpdate(ctx, key("pages", at(21, 3, 0)), must(topkM.Delta("/home", "/home", "/about")), 0))
	merge(ss.topk.MergeUpdate(ctx, key("pages", at(21, 5, 0)), must(topkM.Delta("/home", "/pricing")), 0))
	merge(ss.bloom.MergeUpdate(ctx, state.Key{Entity: "urls"}, bloomM.Delta("/a", "/b"), 0))
}
