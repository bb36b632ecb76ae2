package ddbprovider_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider"
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
			errs[i] = ddbprovider.CreateTable(context.Background(), client, table)
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("CreateTable %d: %v", i, err)
		}
	}
	p, err := ddbprovider.New(client, table)
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
	if _, err := ddbprovider.New(c, "t"); !errors.Is(err, provider.ErrInvalidArgument) {
		t.Errorf("New(typed nil): err %v, want ErrInvalidArgument", err)
	}
	if _, err := ddbprovider.New(nil, "t"); !errors.Is(err, provider.ErrInvalidArgument) {
		t.Errorf("New(nil): err %v, want ErrInvalidArgument", err)
	}
	if err := ddbprovider.CreateTable(context.Background(), c, "t"); !errors.Is(err, provider.ErrInvalidArgument) {
		t.Errorf("CreateTable(typed nil): err %v, want ErrInvalidArgument", err)
	}
	if err := ddbprovider.CreateTable(context.Background(), nil, "t"); !errors.Is(err, provider.ErrInvalidArgument) {
		t.Errorf("CreateTable(nil): err %v, want ErrInvalidArgument", err)
	}
}

// TestReadPastExpiredEventsIsCheap reads one event past hundreds of expired ones:
// the number of requests must grow with the logarithm of the expired backlog, not
// with its length.
func TestReadPastExpiredEventsIsCheap(t *testing.T) {
	hc, n := testenv.CountingHTTPClient()
	e := testEnv(t, func(o *ddb.Options) { o.HTTPClient = hc })
	p := openOn(t, e.client, e, ddbprovider.WithEventRetention(time.Minute))
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
	// From a cursor, the first event after it decides: one request whatever the
	// backlog, expired or not.
	n.Reset()
	if recs, err := p.ReadEventsSince(ctx, "p", "1", 5); !errors.Is(err, provider.ErrCursorExpired) || len(recs) != 0 {
		t.Fatalf("ReadEventsSince(1) with events 2-%d expired = %+v, %v; want ErrCursorExpired", expired, recs, err)
	}
	if got := n.Load(); got != 1 {
		t.Errorf("ReadEventsSince(1) before %d expired events took %d requests, want 1", expired, got)
	}
	n.Reset()
	if recs, err := p.ReadEventsSince(ctx, "p", strconv.Itoa(expired), 5); err != nil || len(recs) != 1 || recs[0].Event.Message != "live" {
		t.Fatalf("ReadEventsSince(%d) = %+v, %v; want the live event", expired, recs, err)
	}
	if got := n.Load(); got != 1 {
		t.Errorf("ReadEventsSince(the newest expired cursor) took %d requests, want 1", got)
	}
	n.Reset()
	if list, err := p.ListEvents(ctx, "p", 2); err != nil || len(list) != 1 {
		t.Fatalf("ListEvents = %+v, %v; want the live event", list, err)
	}
	if got := n.Load(); got > 12 {
		t.Errorf("ListEvents(2) past %d expired events took %d requests, want at most 12", expired, got)
	}
}

// worstMetadata returns kinds of 256 KB metadata strings that JSON escaping blows up:
// control characters (6 bytes each as \u00XX), quotes and backslashes (2 bytes),
// invalid UTF-8 (3 bytes each as U+FFFD), and a random mix of control and
// printable characters, which also compresses worst.
func worstMetadata() map[string]string {
	const n = 256 * 1024
	rng := rand.New(rand.NewPCG(1, 2))
	gen := func(f func() byte) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = f()
		}
		return string(b)
	}
	return map[string]string{
		"control": strings.Repeat("\u0001", n),
		"quotes":  strings.Repeat(`"\`, n/2),
		"bytes":   gen(func() byte { return byte(rng.IntN(256)) }),
		"mix": gen(func() byte {
			if rng.IntN(2) == 0 {
				return byte(rng.IntN(32))
			}
			return byte(32 + rng.IntN(95))
		}),
	}
}

// TestWorstCaseMetadataFits stores 256 KB metadata strings that need the most JSON
// escaping: the contract says 256 KB of metadata always fits, and a Get returns its
// JSON round trip. Every kind goes through PutRunState (truth and list copy); the
// other writes, which share the encoding, get the control characters only (the
// mix compresses slowly under the race detector).
func TestWorstCaseMetadataFits(t *testing.T) {
	p := open(t)
	ctx := context.Background()
	for name, s := range worstMetadata() {
		t.Run(name, func(t *testing.T) {
			md := map[string]any{"m": s}
			want := jsonRoundTrip(t, md)
			run := types.RunState{RunID: "r-" + name, PipelineID: "p-" + name, Status: types.RunPending, Metadata: md}
			if err := p.PutRunState(ctx, run); err != nil {
				t.Fatalf("PutRunState: %v", err)
			}
			got, err := p.GetRunState(ctx, run.RunID)
			if err != nil || got == nil || !reflect.DeepEqual(got.Metadata, want) {
				t.Fatalf("GetRunState: metadata differs (err %v)", err)
			}
			list, err := p.ListRuns(ctx, run.PipelineID, 1)
			if err != nil || len(list) != 1 || !reflect.DeepEqual(list[0].Metadata, want) {
				t.Fatalf("ListRuns: metadata differs (err %v)", err)
			}
			if name != "control" {
				return
			}
			if ok, err := p.CompareAndSwapRunState(ctx, run.RunID, 0, run); !ok || err != nil {
				t.Fatalf("CompareAndSwapRunState: %v, %v", ok, err)
			}
			if err := p.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: run.PipelineID, Details: md}); err != nil {
				t.Fatalf("AppendEvent: %v", err)
			}
			evs, err := p.ReadEventsSince(ctx, run.PipelineID, "", 1)
			if err != nil || len(evs) != 1 || !reflect.DeepEqual(evs[0].Event.Details, want) {
				t.Fatalf("ReadEventsSince: details differ (err %v)", err)
			}
			rerun := types.RerunRecord{RerunID: "x-" + name, PipelineID: run.PipelineID, OriginalDate: "2026-01-01",
				Status: types.RequestPending, Metadata: md}
			if err := p.PutRerun(ctx, rerun); err != nil {
				t.Fatalf("PutRerun: %v", err)
			}
		})
	}
}

// jsonRoundTrip returns v after a JSON encode and decode, as the contract's Get does.
func jsonRoundTrip(t *testing.T, v map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestUnstorableInputDoesNoIO gives every write that stores caller data a value
// JSON cannot encode (NaN), and a CAS a value too large to store: each returns
// the documented error before any request is sent.
func TestUnstorableInputDoesNoIO(t *testing.T) {
	hc, n := testenv.CountingHTTPClient()
	e := testEnv(t, func(o *ddb.Options) { o.HTTPClient = hc })
	p := openOn(t, e.client, e)
	ctx := context.Background()
	now := e.clock.Now()
	if err := p.PutRunState(ctx, types.RunState{RunID: "r", PipelineID: "p", Status: types.RunPending, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	nan := map[string]any{"x": math.NaN()}
	run := func(created time.Time, md map[string]any) types.RunState {
		return types.RunState{RunID: "r", PipelineID: "p", Status: types.RunRunning, CreatedAt: created, Metadata: md}
	}
	cas := func(r types.RunState) error {
		ok, err := p.CompareAndSwapRunState(ctx, "r", 0, r)
		if ok {
			return errors.New("swapped")
		}
		return err
	}
	for _, tc := range []struct {
		name string
		want error
		call func() error
	}{
		{"register pipeline", provider.ErrInvalidArgument, func() error {
			return p.RegisterPipeline(ctx, types.PipelineConfig{ID: "p", Metadata: nan})
		}},
		{"put trait", provider.ErrInvalidArgument, func() error {
			return p.PutTrait(ctx, "p", types.TraitEvaluation{TraitType: "t", Status: types.TraitPass, Value: nan}, 0)
		}},
		{"put readiness", provider.ErrInvalidArgument, func() error {
			return p.PutReadiness(ctx, types.ReadinessResult{PipelineID: "p", Status: types.Ready,
				Traits: []types.TraitEvaluation{{TraitType: "t", Status: types.TraitPass, Value: nan}}})
		}},
		{"put run", provider.ErrInvalidArgument, func() error { return p.PutRunState(ctx, run(now, nan)) }},
		{"cas", provider.ErrInvalidArgument, func() error { return cas(run(now, nan)) }},
		{"cas zero created", provider.ErrInvalidArgument, func() error { return cas(run(time.Time{}, nan)) }},
		{"cas zero created too large", provider.ErrTooLarge, func() error {
			return cas(run(time.Time{}, map[string]any{"x": incompressible(600 * 1024)}))
		}},
		{"append event", provider.ErrInvalidArgument, func() error {
			return p.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p", Details: nan})
		}},
		{"put rerun", provider.ErrInvalidArgument, func() error {
			return p.PutRerun(ctx, types.RerunRecord{RerunID: "x", PipelineID: "p", OriginalDate: "2026-01-01",
				Status: types.RequestPending, Metadata: nan})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n.Reset()
			if err := tc.call(); !errors.Is(err, tc.want) {
				t.Errorf("err %v, want %v", err, tc.want)
			}
			if got := n.Load(); got != 0 {
				t.Errorf("%d requests sent, want none", got)
			}
		})
	}
	if got, err := p.GetRunState(ctx, "r"); err != nil || got == nil || got.Version != 0 || got.Status != types.RunPending {
		t.Fatalf("run changed: %+v, %v", got, err)
	}
}
