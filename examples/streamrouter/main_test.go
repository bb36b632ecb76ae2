package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/google/go-cmp/cmp"

	"github.com/pipestate/pipestate/examples/internal/routing"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/types"
)

// setup is a pipestate table on DynamoDB Local with its stream, a provider
// writing to it, a Router on it, and what the Router routed and started.
type setup struct {
	client *ddb.Client
	table  string
	p      *ddbprovider.Provider
	stream *testenv.StreamReader
	router *Router

	mu      sync.Mutex
	routed  []types.CascadeMarker
	started []string // run IDs
}

func newSetup(t *testing.T) *setup {
	t.Helper()
	client := testenv.DynamoDBClient(t)
	table := testenv.UniqueName(t)
	testenv.DynamoDBTable(t, client, table, func(ctx context.Context, name string) error { return ddbprovider.CreateTable(ctx, client, name) })
	s := &setup{client: client, table: table, stream: testenv.NewStreamReader(t, client, table)}
	var err error
	if s.p, err = ddbprovider.New(client, table); err != nil {
		t.Fatal(err)
	}
	if s.router, err = routerOn(client, table); err != nil {
		t.Fatal(err)
	}
	s.router.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	s.router.Routed = func(m types.CascadeMarker, started bool) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.routed = append(s.routed, m)
		if started {
			s.started = append(s.started, routing.RunID(routing.TargetOf(m), 1))
		}
	}
	return s
}

// batches are recs as the Lambda events an event source mapping of batch size
// n delivers.
func batches(t *testing.T, recs []streamtypes.Record, n int) []Batch {
	t.Helper()
	var out []Batch
	for chunk := range slices.Chunk(recs, n) {
		var ev events.DynamoDBEvent
		for _, r := range chunk {
			var rec events.DynamoDBEventRecord
			if err := json.Unmarshal(testenv.LambdaRecordJSON(t, r), &rec); err != nil {
				t.Fatal(err)
			}
			ev.Records = append(ev.Records, rec)
		}
		// The batch as Lambda passes it: the JSON of the whole event.
		data, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		var b Batch
		if err := json.Unmarshal(data, &b); err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// handle feeds evs to the router and returns the sequence numbers it reported
// as failed.
func (s *setup) handle(t *testing.T, evs []Batch) []string {
	t.Helper()
	var failed []string
	for _, ev := range evs {
		resp, err := s.router.Handle(context.Background(), ev)
		if err != nil {
			t.Fatalf("Handle: %v", err)
		}
		for _, f := range resp.BatchItemFailures {
			failed = append(failed, f.ItemIdentifier)
		}
	}
	return failed
}

// watch reads n marker writes with WatchCascadeMarkers from the oldest.
func (s *setup) watch(t *testing.T, n int) []types.CascadeMarker {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []types.CascadeMarker
	for rec, err := range s.p.WatchCascadeMarkers(ctx, "") {
		if err != nil {
			t.Fatalf("watch after %d markers: %v", len(out), err)
		}
		if out = append(out, rec.Marker); len(out) == n {
			break
		}
	}
	return out
}

// perPipeline groups markers by pipeline, keeping their order.
func perPipeline(ms []types.CascadeMarker) map[string][]types.CascadeMarker {
	out := map[string][]types.CascadeMarker{}
	for _, m := range ms {
		out[m.PipelineID] = append(out[m.PipelineID], m)
	}
	return out
}

// TestRouteAgreesWithWatch: after real provider writes (markers of several
// pipelines and dates, a rewrite, concurrent writers, and other kinds of
// items, a foreign one too), the router fed the table's real stream records
// routes the markers WatchCascadeMarkers yields for the same writes, in the
// same order per pipeline, and starts each target's run once; the batch
// redelivered starts nothing again.
func TestRouteAgreesWithWatch(t *testing.T) {
	s := newSetup(t)
	ctx := context.Background()
	for _, id := range []string{"up", "p1", "p2", "p3"} {
		if err := s.p.RegisterPipeline(ctx, types.PipelineConfig{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	write := func(pipeline, date, source string) {
		if err := s.p.WriteCascadeMarker(ctx, pipeline, "", date, source); err != nil {
			t.Error(err)
		}
	}
	write("p1", "2026-11-27", "up")
	if err := s.p.PutRunState(ctx, types.RunState{RunID: "r-up", PipelineID: "up", Status: types.RunCompleted}); err != nil {
		t.Fatal(err)
	}
	if err := s.p.AppendEvent(ctx, types.Event{PipelineID: "up", Kind: "RUN_STATE_CHANGED"}); err != nil {
		t.Fatal(err)
	}
	write("p2", "2026-11-27", "up")
	write("p1", "2026-11-27", "up-again") // a rewrite: the same target
	var wg sync.WaitGroup
	for _, pipeline := range []string{"p1", "p2", "p3"} {
		wg.Go(func() {
			for _, date := range []string{"2026-11-28", "2026-11-29"} {
				write(pipeline, date, "up")
			}
		})
	}
	wg.Wait()
	write("ghost", "2026-11-28", "up") // no such pipeline: routed, starts nothing
	if _, err := s.client.PutItem(ctx, &ddb.PutItemInput{TableName: &s.table, Item: map[string]ddbtypes.AttributeValue{
		"PK": &ddbtypes.AttributeValueMemberS{Value: "MARKER#"}, "SK": &ddbtypes.AttributeValueMemberS{Value: "someone else's"}}}); err != nil {
		t.Fatal(err)
	}
	const markers = 1 + 1 + 1 + 3*2 + 1

	recs := s.stream.Read(t)
	if failed := s.handle(t, batches(t, recs, 7)); len(failed) > 0 {
		t.Fatalf("records failed: %v", failed)
	}
	watched := s.watch(t, markers)
	if len(s.routed) != markers {
		t.Fatalf("routed %d markers, watched %d", len(s.routed), markers)
	}
	if diff := cmp.Diff(perPipeline(watched), perPipeline(s.routed)); diff != "" {
		t.Errorf("routed markers differ from watched ones (-watch +routed):\n%s", diff)
	}
	wantStarted := map[string]bool{}
	for _, m := range watched {
		if m.PipelineID != "ghost" {
			wantStarted[routing.RunID(routing.TargetOf(m), 1)] = true
		}
	}
	if len(s.started) != len(wantStarted) {
		t.Errorf("started %v, want each of %v once", s.started, wantStarted)
	}
	for id := range wantStarted {
		run, err := s.p.GetRunState(ctx, id)
		if err != nil || run == nil || run.Status != types.RunPending {
			t.Errorf("run %s: %+v %v, want PENDING", id, run, err)
		}
	}

	// Redelivery: the same records again, in other batches. Routed again,
	// started never.
	startedBefore := len(s.started)
	if failed := s.handle(t, batches(t, recs, 3)); len(failed) > 0 {
		t.Fatalf("records failed on redelivery: %v", failed)
	}
	if len(s.routed) != 2*markers || len(s.started) != startedBefore {
		t.Errorf("after redelivery: routed %d (want %d), started %d (want %d)", len(s.routed), 2*markers, len(s.started), startedBefore)
	}
}

// TestCorruptRecordFailsAlone: a record whose image does not decode is the
// only one of its batch reported in BatchItemFailures; the others route.
func TestCorruptRecordFailsAlone(t *testing.T) {
	s := newSetup(t)
	ctx := context.Background()
	for _, id := range []string{"p1", "p2"} {
		if err := s.p.RegisterPipeline(ctx, types.PipelineConfig{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.p.WriteCascadeMarker(ctx, "p1", "", "2026-11-28", "up"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.client.PutItem(ctx, &ddb.PutItemInput{TableName: &s.table, Item: map[string]ddbtypes.AttributeValue{
		"PK": &ddbtypes.AttributeValueMemberS{Value: "MARKER#p1"}, "SK": &ddbtypes.AttributeValueMemberS{Value: "2026-11-29#daily"},
		"data": &ddbtypes.AttributeValueMemberS{Value: `{"pipelineId": "p1", "date": 2026`}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.p.WriteCascadeMarker(ctx, "p2", "", "2026-11-28", "up"); err != nil {
		t.Fatal(err)
	}
	recs := s.stream.Read(t)
	var corrupt string
	for _, r := range recs {
		if k, ok := r.Dynamodb.Keys["SK"].(*streamtypes.AttributeValueMemberS); ok && k.Value == "2026-11-29#daily" {
			corrupt = *r.Dynamodb.SequenceNumber
		}
	}
	failed := s.handle(t, batches(t, recs, len(recs)))
	if !slices.Equal(failed, []string{corrupt}) || corrupt == "" {
		t.Errorf("BatchItemFailures %v, want only the corrupt record %q", failed, corrupt)
	}
	if want := []string{"p1-2026-11-28-daily-1", "p2-2026-11-28-daily-1"}; !slices.Equal(s.started, want) {
		t.Errorf("started %v, want %v", s.started, want)
	}
}

// failingStarter fails its first n starts.
type failingStarter struct {
	Starter
	n int
}

func (f *failingStarter) Start(ctx context.Context, t routing.Target) (bool, error) {
	if f.n > 0 {
		f.n--
		return false, errors.New("throttled")
	}
	return f.Starter.Start(ctx, t)
}

// TestStartFailureRetried: a start that fails is reported; Lambda's retry of
// the batch from it starts it then, and what had started starts nothing again.
func TestStartFailureRetried(t *testing.T) {
	s := newSetup(t)
	ctx := context.Background()
	for i := range 3 {
		id := fmt.Sprintf("p%d", i)
		if err := s.p.RegisterPipeline(ctx, types.PipelineConfig{ID: id}); err != nil {
			t.Fatal(err)
		}
		if err := s.p.WriteCascadeMarker(ctx, id, "", "2026-11-28", "up"); err != nil {
			t.Fatal(err)
		}
	}
	s.router.Starter = &failingStarter{Starter: s.router.Starter, n: 1}
	evs := batches(t, s.stream.Read(t), 100)
	failed := s.handle(t, evs) // p0's start fails; p1's and p2's go on
	if len(failed) != 1 || len(s.started) != 2 {
		t.Fatalf("failed %v, started %v: want one record failed, two started", failed, s.started)
	}
	// Lambda retries from the failed record: redeliver the records from it on.
	var retry Batch
	for i, r := range evs[0].Records {
		var rec events.DynamoDBEventRecord
		if err := json.Unmarshal(r, &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Change.SequenceNumber == failed[0] {
			retry.Records = evs[0].Records[i:]
		}
	}
	if f := s.handle(t, []Batch{retry}); len(f) > 0 {
		t.Fatalf("retry failed: %v", f)
	}
	slices.Sort(s.started)
	if want := []string{"p0-2026-11-28-daily-1", "p1-2026-11-28-daily-1", "p2-2026-11-28-daily-1"}; !slices.Equal(s.started, want) {
		t.Errorf("started %v, want each once: %v", s.started, want)
	}
}

// TestNewRouter: main's set-up, without Lambda: the function's configuration
// opens a router; a missing table name is refused before any request.
func TestNewRouter(t *testing.T) {
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	if _, err := newRouter(context.Background(), ""); !errors.Is(err, provider.ErrInvalidArgument) {
		t.Errorf("newRouter with no table: %v, want ErrInvalidArgument", err)
	}
	if r, err := newRouter(context.Background(), "pipestate"); err != nil || r.Decoder == nil || r.Starter == nil {
		t.Errorf("newRouter: %+v %v", r, err)
	}
}

func TestMain(m *testing.M) { testenv.Main(m) }
