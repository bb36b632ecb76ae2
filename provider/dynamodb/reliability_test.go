package dynamodb_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/pipestate/pipestate/internal/testenv"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/dynamodb"
	"github.com/pipestate/pipestate/types"
)

// TestCreateTableConcurrent calls CreateTable on one new table from many goroutines
// released at once: every call succeeds and the table is usable.
func TestCreateTableConcurrent(t *testing.T) {
	client := testenv.DynamoDBClient(t)
	table := testenv.UniqueName(t)
	t.Cleanup(func() { _, _ = client.DeleteTable(context.Background(), &ddb.DeleteTableInput{TableName: &table}) })
	errs := make([]error, 12)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = dynamodb.CreateTable(context.Background(), client, table)
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("CreateTable %d: %v", i, err)
		}
	}
	p, err := dynamodb.New(client, table)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := p.RegisterPipeline(ctx, types.PipelineConfig{ID: "p"}); err != nil {
		t.Fatalf("table unusable: %v", err)
	}
}

// TestNilClient passes typed-nil clients: New and CreateTable refuse them with
// ErrInvalidArgument instead of panicking later.
func TestNilClient(t *testing.T) {
	var c *ddb.Client
	if _, err := dynamodb.New(c, "t"); !errors.Is(err, provider.ErrInvalidArgument) {
		t.Errorf("New(typed nil): err %v, want ErrInvalidArgument", err)
	}
	if _, err := dynamodb.New(nil, "t"); !errors.Is(err, provider.ErrInvalidArgument) {
		t.Errorf("New(nil): err %v, want ErrInvalidArgument", err)
	}
	if err := dynamodb.CreateTable(context.Background(), c, "t"); !errors.Is(err, provider.ErrInvalidArgument) {
		t.Errorf("CreateTable(typed nil): err %v, want ErrInvalidArgument", err)
	}
	if err := dynamodb.CreateTable(context.Background(), nil, "t"); !errors.Is(err, provider.ErrInvalidArgument) {
		t.Errorf("CreateTable(nil): err %v, want ErrInvalidArgument", err)
	}
}

// TestReadPastExpiredEventsIsCheap reads one event past hundreds of expired ones:
// the number of requests must grow with the logarithm of the expired backlog, not
// with its length.
func TestReadPastExpiredEventsIsCheap(t *testing.T) {
	hc, n := testenv.CountingHTTPClient()
	e := testEnv(t, func(o *ddb.Options) { o.HTTPClient = hc })
	p := openOn(t, e.client, e, dynamodb.WithEventRetention(time.Minute))
	ctx := context.Background()
	const expired = 300
	var wg sync.WaitGroup
	for i := range expired { // concurrent appends share transactions (group commit)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p", Message: strconv.Itoa(i)}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	e.clock.Advance(2 * time.Minute)
	if err := p.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p", Message: "live"}); err != nil {
		t.Fatal(err)
	}
	for _, count := range []int64{1, 5} {
		n.Reset()
		recs, err := p.ReadEventsSince(ctx, "p", "", count)
		if err != nil || len(recs) != 1 || recs[0].Event.Message != "live" {
			t.Fatalf("ReadEventsSince(count %d) = %+v, %v; want the live event", count, recs, err)
		}
		if got := n.Load(); got > 12 {
			t.Errorf("ReadEventsSince(count %d) past %d expired events took %d requests, want at most 12", count, expired, got)
		}
	}
	n.Reset()
	if list, err := p.ListEvents(ctx, "p", 2); err != nil || len(list) != 1 {
		t.Fatalf("ListEvents = %+v, %v; want the live event", list, err)
	}
	if got := n.Load(); got > 12 {
		t.Errorf("ListEvents(2) past %d expired events took %d requests, want at most 12", expired, got)
	}
}
