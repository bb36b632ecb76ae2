package ddbprovider_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/pipestate/pipestate/internal/testkit/foreignbody"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/types"
)

// TestActiveRunsCostIndependentOfPipelines finds the same 5 stuck runs
// (RUNNING, not updated for 2 hours) among 10 and among 300 pipelines, each
// with a finished run of its own, and counts ListActiveRuns's requests: the
// same for both, one Query per shard of the index and one GetItem per stuck
// run (16 + 5), where the scan it replaces (ListPipelines, then ListRuns of
// each pipeline) makes 1 + pipelines.
//
// PIPESTATE_ACTIVE_SCALE (e.g. "100000") adds sizes, for the measurement at
// scale in docs/benchmarks.md (minutes of loading; not in make test).
func TestActiveRunsCostIndependentOfPipelines(t *testing.T) {
	sizes := []int{10, 300}
	for s := range strings.SplitSeq(os.Getenv("PIPESTATE_ACTIVE_SCALE"), ",") {
		if n, err := strconv.Atoi(s); err == nil {
			sizes = append(sizes, n)
		}
	}
	requests := map[int]int64{}
	for _, pipelines := range sizes {
		t.Run(fmt.Sprint(pipelines), func(t *testing.T) {
			hc, n := testenv.CountingHTTPClient()
			e := testEnv(t, func(o *ddb.Options) { o.HTTPClient = hc })
			p := openOn(t, e.client, e)
			ctx := t.Context()
			var stuck []string
			for i := range 5 {
				id := fmt.Sprintf("stuck-%d", i)
				stuck = append(stuck, id)
				if err := p.PutRunState(ctx, types.RunState{RunID: id, PipelineID: fmt.Sprintf("p-%d", i), Status: types.RunRunning}); err != nil {
					t.Fatal(err)
				}
			}
			e.clock.Advance(2 * time.Hour)
			g, gctx := errgroup.WithContext(ctx)
			g.SetLimit(16)
			for i := range pipelines {
				g.Go(func() error {
					id := fmt.Sprintf("p-%d", i)
					if err := p.RegisterPipeline(gctx, types.PipelineConfig{ID: id}); err != nil {
						return err
					}
					return p.PutRunState(gctx, types.RunState{RunID: "done-" + id, PipelineID: id, Status: types.RunCompleted})
				})
			}
			if err := g.Wait(); err != nil {
				t.Fatal(err)
			}
			filter := provider.ActiveRunFilter{Statuses: []types.RunStatus{types.RunRunning}, NotUpdatedSince: e.clock.Now().Add(-time.Hour)}
			n.Reset()
			start := time.Now()
			runs, next, err := p.ListActiveRuns(ctx, filter, "", 100)
			requests[pipelines] = n.Load()
			took := time.Since(start)
			var got []string
			for _, r := range runs {
				got = append(got, r.RunID)
			}
			if err != nil || next != "" || !slices.Equal(got, stuck) {
				t.Fatalf("ListActiveRuns = %v, %q, %v; want %v", got, next, err, stuck)
			}
			t.Logf("%d pipelines: %d requests in %v (a scan: %d)", pipelines, requests[pipelines], took.Round(time.Millisecond), 1+pipelines)
		})
	}
	for _, pipelines := range sizes {
		if requests[pipelines] != 16+5 {
			t.Errorf("requests: %v, want %d for every number of pipelines", requests, 16+5)
			break
		}
	}
}

// TestActiveRunIndexMissing opens a provider on a table made before the index
// ACTIVE: CreateTable accepts the table, run writes work, ListActiveRuns fails
// with ErrNoActiveRunIndex; EnsureActiveRunIndex adds the index (twice: it is
// idempotent), after which the runs written before it are listed (their writes
// carried the index key already).
func TestActiveRunIndexMissing(t *testing.T) {
	client := testenv.DynamoDBClient(t)
	table := testenv.UniqueName(t)
	testenv.DynamoDBTable(t, client, table, func(ctx context.Context, name string) error {
		in := ddbprovider.TableInput(name)
		in.GlobalSecondaryIndexes = slices.DeleteFunc(in.GlobalSecondaryIndexes, func(g ddbtypes.GlobalSecondaryIndex) bool {
			return aws.ToString(g.IndexName) == "ACTIVE"
		})
		in.AttributeDefinitions = slices.DeleteFunc(in.AttributeDefinitions, func(a ddbtypes.AttributeDefinition) bool {
			return aws.ToString(a.AttributeName) == "activePK" || aws.ToString(a.AttributeName) == "activeSK"
		})
		_, err := client.CreateTable(ctx, in)
		return err
	})
	ctx := t.Context()
	if err := ddbprovider.CreateTable(ctx, client, table); err != nil {
		t.Fatalf("CreateTable on a table without ACTIVE: %v", err)
	}
	p, err := ddbprovider.New(client, table)
	if err != nil {
		t.Fatal(err)
	}
	run := types.RunState{RunID: "r1", PipelineID: "p", Status: types.RunRunning}
	if err := p.PutRunState(ctx, run); err != nil {
		t.Fatal(err)
	}
	if ok, err := p.CompareAndSwapRunState(ctx, "r1", 0, run); !ok || err != nil {
		t.Fatalf("CAS = %v, %v", ok, err)
	}
	if _, _, err := p.ListActiveRuns(ctx, provider.ActiveRunFilter{}, "", 10); !errors.Is(err, ddbprovider.ErrNoActiveRunIndex) {
		t.Fatalf("ListActiveRuns without the index: err %v, want ErrNoActiveRunIndex", err)
	}
	for range 2 {
		if err := ddbprovider.EnsureActiveRunIndex(ctx, client, table); err != nil {
			t.Fatal(err)
		}
	}
	// Wait until DynamoDB built it (DynamoDB Local answers a Query of an index
	// being built with an InternalFailure, AWS with a ValidationException).
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		out, err := client.DescribeTable(ctx, &ddb.DescribeTableInput{TableName: &table})
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(out.Table.GlobalSecondaryIndexes, func(g ddbtypes.GlobalSecondaryIndexDescription) bool {
			return aws.ToString(g.IndexName) == "ACTIVE" && g.IndexStatus == ddbtypes.IndexStatusActive
		}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the index ACTIVE is not built after a minute: %+v", out.Table.GlobalSecondaryIndexes)
		}
	}
	runs, _, err := p.ListActiveRuns(ctx, provider.ActiveRunFilter{}, "", 10)
	if err != nil || len(runs) != 1 || runs[0].RunID != "r1" || runs[0].Version != 1 {
		t.Fatalf("ListActiveRuns after EnsureActiveRunIndex = %+v, %v; want r1 at version 1", runs, err)
	}
	if err := ddbprovider.CreateTable(ctx, client, table); err != nil {
		t.Fatalf("CreateTable on a table with ACTIVE: %v", err)
	}
	if err := ddbprovider.EnsureActiveRunIndex(ctx, nil, table); !errors.Is(err, provider.ErrInvalidArgument) {
		t.Fatalf("EnsureActiveRunIndex(nil client): err %v", err)
	}
}

// TestActiveRunIndexOtherSchema: an index named ACTIVE of another projection is
// a schema mismatch for CreateTable and EnsureActiveRunIndex alike.
func TestActiveRunIndexOtherSchema(t *testing.T) {
	client := testenv.DynamoDBClient(t)
	table := testenv.UniqueName(t)
	testenv.DynamoDBTable(t, client, table, func(ctx context.Context, name string) error {
		in := ddbprovider.TableInput(name)
		for i, g := range in.GlobalSecondaryIndexes {
			if aws.ToString(g.IndexName) == "ACTIVE" {
				in.GlobalSecondaryIndexes[i].Projection = &ddbtypes.Projection{ProjectionType: ddbtypes.ProjectionTypeAll}
			}
		}
		_, err := client.CreateTable(ctx, in)
		return err
	})
	if err := ddbprovider.CreateTable(t.Context(), client, table); !errors.Is(err, ddbprovider.ErrSchemaMismatch) {
		t.Errorf("CreateTable: err %v, want ErrSchemaMismatch", err)
	}
	if err := ddbprovider.EnsureActiveRunIndex(t.Context(), client, table); !errors.Is(err, ddbprovider.ErrSchemaMismatch) {
		t.Errorf("EnsureActiveRunIndex: err %v, want ErrSchemaMismatch", err)
	}
}

// TestCorruptActiveKey gives a run's truth item an index key that is not its
// own (DynamoDB refuses one of another type, so TestCorruptEveryAttribute's
// change of type cannot reach it on AWS): GetRunState returns ErrCorrupt, and
// ListActiveRuns skips and reports it and lists the other runs.
func TestCorruptActiveKey(t *testing.T) {
	for _, c := range []struct{ attr, v string }{
		{"activeSK", "r-0"}, {"activeSK", "zz"}, {"activePK", "ACTIVE#99"}, {"activePK", "seven"},
	} {
		t.Run(c.attr+"="+c.v, func(t *testing.T) {
			e := testEnv(t)
			p := openOn(t, e.client, e)
			ctx := t.Context()
			for _, id := range []string{"r-1", "r-2", "r-3"} {
				if err := p.PutRunState(ctx, types.RunState{RunID: id, PipelineID: "p", Status: types.RunRunning}); err != nil {
					t.Fatal(err)
				}
			}
			if err := setAttr(ctx, e, "RUN#r-2", "STATE", c.attr, sAV(c.v)); err != nil {
				t.Fatal(err)
			}
			if _, err := p.GetRunState(ctx, "r-2"); !errors.Is(err, provider.ErrCorrupt) {
				t.Errorf("GetRunState: err %v, want ErrCorrupt", err)
			}
			rctx, reported := reports(ctx)
			runs, _, err := p.ListActiveRuns(rctx, provider.ActiveRunFilter{}, "", 10)
			var got []string
			for _, r := range runs {
				got = append(got, r.RunID)
			}
			if err != nil || !slices.Equal(got, []string{"r-1", "r-3"}) {
				t.Errorf("ListActiveRuns = %v, %v; want [r-1 r-3]", got, err)
			}
			// An entry moved out of every shard (activePK) is not read: only
			// GetRunState can tell.
			if want := c.attr == "activeSK"; want != slices.Equal(reported(), []string{"r-2"}) {
				t.Errorf("ListActiveRuns reported %v", reported())
			}
		})
	}
}

// TestActiveRunsBodyNamingAnotherRun: a run item whose body names another run
// is corrupt (see package foreignbody): before provider.Decode said so, a
// paging of ListActiveRuns went on from the body's ID forever, and ReindexRun
// indexed the item under the other run's key.
func TestActiveRunsBodyNamingAnotherRun(t *testing.T) {
	e := testEnv(t)
	key := func(id string) map[string]ddbtypes.AttributeValue {
		return map[string]ddbtypes.AttributeValue{"PK": &ddbtypes.AttributeValueMemberS{Value: "RUN#" + id}, "SK": &ddbtypes.AttributeValueMemberS{Value: "STATE"}}
	}
	item := func(ctx context.Context, id string) map[string]ddbtypes.AttributeValue {
		out, err := e.client.GetItem(ctx, &ddb.GetItemInput{TableName: aws.String(e.table), Key: key(id), ConsistentRead: aws.Bool(true)})
		if err != nil || out.Item == nil {
			t.Fatalf("GetItem RUN#%s: %v, %v", id, out, err)
		}
		return out.Item
	}
	rename := func(ctx context.Context, id, to string) {
		it := item(ctx, id)
		body := it["data"].(*ddbtypes.AttributeValueMemberS).Value
		it["data"] = &ddbtypes.AttributeValueMemberS{Value: strings.Replace(body, `"runId":"`+id+`"`, `"runId":"`+to+`"`, 1)}
		if _, err := e.client.PutItem(ctx, &ddb.PutItemInput{TableName: aws.String(e.table), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	foreignbody.Check(t, openOn(t, e.client, e), rename, func(ctx context.Context, id string) any { return item(ctx, id) })
}
