package ddbprovider_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/types"
)

// TestActiveRunsBulkScale is the measurement of the active-runs index at scale
// in docs/benchmarks.md: PIPESTATE_ACTIVE_BULK pipelines (e.g. "100000"), each
// with bulkRuns runs, of which 100 (one in every pipelines/100 pipelines) are
// stuck (RUNNING, not updated for 2 hours) and the rest COMPLETED. Writing
// through the provider loads only a few pipelines a second on DynamoDB Local, so
// the provider writes two template pipelines (one with a stuck run, one
// without) and the test clones their items, as DynamoDB holds them, under the
// other IDs with BatchWriteItem (bulkWorkers at once): the stored format is the
// provider's own, never a copy of it (only the index shard is recomputed, by
// the provider's function, for the new run IDs). It then measures ListActiveRuns
// (requests, wall time) and the scan that runs --all makes without the index
// (ListPipelines, then ListRuns of each pipeline, runsAtOnce at once), which
// stops after PIPESTATE_ACTIVE_BULK_SCAN (default 30m) and reports how far it
// got. PIPESTATE_ACTIVE_BULK_LOAD (default 2h) bounds the load: the test fails
// when it takes longer, deleting its table. Not in make test: it loads 21 items
// per pipeline.
func TestActiveRunsBulkScale(t *testing.T) {
	pipelines, err := strconv.Atoi(os.Getenv("PIPESTATE_ACTIVE_BULK"))
	if err != nil || pipelines < 2 {
		t.Skip("set PIPESTATE_ACTIVE_BULK=100000 to measure the active-runs index at scale")
	}
	budget := func(env string, d time.Duration) time.Duration {
		if s := os.Getenv(env); s != "" {
			if d, err = time.ParseDuration(s); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	scanBudget, loadBudget := budget("PIPESTATE_ACTIVE_BULK_SCAN", 30*time.Minute), budget("PIPESTATE_ACTIVE_BULK_LOAD", 2*time.Hour)
	const (
		bulkRuns    = 10 // runs per pipeline
		bulkWorkers = 16 // BatchWriteItem calls in flight
		runsAtOnce  = 8  // the ListRuns calls runs --all makes at once (cmd/pipestate)
	)
	stuckEvery := max(pipelines/100, 1)
	pid := func(i int) string { return fmt.Sprintf("p-%06d", i) }
	rid := func(i, j int) string { return fmt.Sprintf("r-%06d-%d", i, j) }
	hc, n := testenv.CountingHTTPClient()
	e := testEnv(t, func(o *ddb.Options) { o.HTTPClient = hc })
	p := openOn(t, e.client, e)
	ctx := t.Context()

	// The templates: pipeline 0 (run 0 stuck) and pipeline 1 (all finished).
	for i := range 2 {
		if err := p.RegisterPipeline(ctx, types.PipelineConfig{ID: pid(i)}); err != nil {
			t.Fatal(err)
		}
		for j := range bulkRuns {
			st := types.RunCompleted
			if i == 0 && j == 0 {
				st = types.RunRunning
			}
			if err := p.PutRunState(ctx, types.RunState{RunID: rid(i, j), PipelineID: pid(i), Status: st}); err != nil {
				t.Fatal(err)
			}
		}
	}
	templates := [2][]map[string]ddbtypes.AttributeValue{}
	consistent := true
	for in := (&ddb.ScanInput{TableName: &e.table, ConsistentRead: &consistent}); ; {
		out, err := e.client.Scan(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		for _, av := range out.Items {
			s := fmt.Sprint(av["PK"].(*ddbtypes.AttributeValueMemberS).Value)
			switch {
			case strings.Contains(s, pid(0)) || strings.Contains(s, rid(0, 0)[:9]):
				templates[0] = append(templates[0], av)
			case strings.Contains(s, pid(1)) || strings.Contains(s, rid(1, 0)[:9]):
				templates[1] = append(templates[1], av)
			default:
				t.Fatalf("an item of neither template: %v", s)
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	for i, tm := range templates {
		if len(tm) != 1+2*bulkRuns { // the config, each run's truth and list copy
			t.Fatalf("template %d has %d items, want %d", i, len(tm), 1+2*bulkRuns)
		}
	}
	// clone returns the items of template from as pipeline to's.
	clone := func(from, to int) ([]map[string]ddbtypes.AttributeValue, error) {
		r := strings.NewReplacer(pid(from), pid(to), rid(from, 0)[:9], rid(to, 0)[:9])
		var out []map[string]ddbtypes.AttributeValue
		for _, av := range templates[from] {
			c := make(map[string]ddbtypes.AttributeValue, len(av))
			for k, v := range av {
				switch v := v.(type) {
				case *ddbtypes.AttributeValueMemberS:
					c[k] = &ddbtypes.AttributeValueMemberS{Value: r.Replace(v.Value)}
				case *ddbtypes.AttributeValueMemberN:
					c[k] = v
				default:
					return nil, fmt.Errorf("attribute %s of type %T: the clone handles text and numbers only", k, v)
				}
			}
			if sk, ok := c["activeSK"].(*ddbtypes.AttributeValueMemberS); ok {
				c["activePK"] = &ddbtypes.AttributeValueMemberS{Value: ddbprovider.ActiveShard(sk.Value)}
			}
			out = append(out, c)
		}
		return out, nil
	}

	// The load.
	start := time.Now()
	batches := make(chan []ddbtypes.WriteRequest, bulkWorkers)
	var loaded atomic.Int64
	lctx, lcancel := context.WithTimeout(ctx, loadBudget)
	defer lcancel()
	g, gctx := errgroup.WithContext(lctx)
	g.Go(func() error {
		defer close(batches)
		var batch []ddbtypes.WriteRequest
		for i := 2; i < pipelines; i++ {
			from := 1
			if i%stuckEvery == 0 {
				from = 0
			}
			items, err := clone(from, i)
			if err != nil {
				return err
			}
			for _, av := range items {
				batch = append(batch, ddbtypes.WriteRequest{PutRequest: &ddbtypes.PutRequest{Item: av}})
				if len(batch) == 25 {
					select {
					case batches <- batch:
					case <-gctx.Done():
						return gctx.Err()
					}
					batch = nil
				}
			}
		}
		if len(batch) > 0 {
			batches <- batch
		}
		return nil
	})
	for range bulkWorkers {
		g.Go(func() error {
			for batch := range batches {
				for len(batch) > 0 {
					out, err := e.client.BatchWriteItem(gctx, &ddb.BatchWriteItemInput{RequestItems: map[string][]ddbtypes.WriteRequest{e.table: batch}})
					if err != nil {
						return err
					}
					done := len(batch) - len(out.UnprocessedItems[e.table])
					batch = out.UnprocessedItems[e.table]
					if k := loaded.Add(int64(done)); k/100000 != (k-int64(done))/100000 {
						t.Logf("loaded %d items in %v", k, time.Since(start).Round(time.Second))
					}
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("load: %d items in %v: %v", loaded.Load(), time.Since(start).Round(time.Second), err)
	}
	t.Logf("load: %d pipelines, %d runs, %d items in %v", pipelines, pipelines*bulkRuns, loaded.Load()+int64(len(templates[0])+len(templates[1])),
		time.Since(start).Round(time.Second))

	// The clones read back through the provider as what they claim to be.
	var want []string
	for i := 0; i < pipelines; i += stuckEvery {
		want = append(want, rid(i, 0))
	}
	slices.Sort(want)
	for _, i := range []int{pipelines - 1, stuckEvery, pipelines / 2} {
		runs, err := p.ListRuns(ctx, pid(i), 100)
		if err != nil || len(runs) != bulkRuns {
			t.Fatalf("ListRuns(%s) = %d runs, %v", pid(i), len(runs), err)
		}
		for _, r := range runs {
			if r.PipelineID != pid(i) || !strings.HasPrefix(r.RunID, rid(i, 0)[:9]) {
				t.Fatalf("ListRuns(%s) has %+v", pid(i), r)
			}
		}
	}

	e.clock.Advance(2 * time.Hour)
	filter := provider.ActiveRunFilter{Statuses: []types.RunStatus{types.RunRunning}, NotUpdatedSince: e.clock.Now().Add(-time.Hour)}
	n.Reset()
	start = time.Now()
	var got []string
	for cursor := ""; ; {
		page, next, err := p.ListActiveRuns(ctx, filter, cursor, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page {
			got = append(got, r.RunID)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	t.Logf("ListActiveRuns: %d stuck runs of %d in %d requests, %v", len(got), pipelines*bulkRuns, n.Load(), time.Since(start).Round(time.Millisecond))
	if !slices.Equal(got, want) {
		t.Fatalf("ListActiveRuns found %d runs, want the %d stuck ones", len(got), len(want))
	}

	// The scan, as runs --all without the index.
	n.Reset()
	start = time.Now()
	cfgs, err := p.ListPipelines(ctx)
	if err != nil || len(cfgs) != pipelines {
		t.Fatalf("ListPipelines = %d, %v; want %d", len(cfgs), err, pipelines)
	}
	t.Logf("scan: ListPipelines: %d pipelines in %d requests, %v", len(cfgs), n.Load(), time.Since(start).Round(time.Millisecond))
	sctx, cancel := context.WithTimeout(ctx, scanBudget)
	defer cancel()
	var read, stuck atomic.Int64
	g, gctx = errgroup.WithContext(sctx)
	g.SetLimit(runsAtOnce)
	for _, cfg := range cfgs {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			runs, err := p.ListRuns(gctx, cfg.ID, 1000)
			if err != nil {
				return err
			}
			for _, r := range runs {
				if filter.Match(r) {
					stuck.Add(1)
				}
			}
			if k := read.Add(1); k%10000 == 0 {
				t.Logf("scan: %d pipelines read in %v", k, time.Since(start).Round(time.Second))
			}
			return nil
		})
	}
	err = g.Wait()
	took := time.Since(start)
	switch {
	case errors.Is(err, context.DeadlineExceeded) || (err == nil && sctx.Err() != nil):
		t.Logf("scan: stopped after %v: %d of %d pipelines read, %d requests, %d stuck runs found; at that rate the whole scan takes about %v",
			took.Round(time.Second), read.Load(), pipelines, n.Load(), stuck.Load(),
			(took * time.Duration(pipelines) / time.Duration(max(read.Load(), 1))).Round(time.Minute))
	case err != nil:
		t.Fatal(err)
	default:
		t.Logf("scan: %d pipelines, %d stuck runs found in %d requests, %v", read.Load(), stuck.Load(), n.Load(), took.Round(time.Millisecond))
		if stuck.Load() != int64(len(want)) {
			t.Errorf("the scan found %d stuck runs, want %d", stuck.Load(), len(want))
		}
	}
}
