package ddbprovider_test

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/types"
)

func TestNewRejectsBadOptions(t *testing.T) {
	client := ddb.New(ddb.Options{Region: "us-east-1"}) // New does no I/O
	for _, tc := range []struct {
		name   string
		client ddbprovider.API
		table  string
		opt    ddbprovider.Option
	}{
		{name: "nil client", table: "t"},
		{name: "empty table", client: client},
		{name: "nil option", client: client, table: "t"},
		{name: "empty owner", client: client, table: "t", opt: ddbprovider.WithOwner("")},
		{name: "nil clock", client: client, table: "t", opt: ddbprovider.WithClock(nil)},
		{name: "zero readiness ttl", client: client, table: "t", opt: ddbprovider.WithReadinessTTL(0)},
		{name: "negative readiness ttl", client: client, table: "t", opt: ddbprovider.WithReadinessTTL(-time.Second)},
		{name: "readiness ttl over max", client: client, table: "t", opt: ddbprovider.WithReadinessTTL(provider.MaxTTL + 1)},
		{name: "negative retention", client: client, table: "t", opt: ddbprovider.WithEventRetention(-time.Second)},
		{name: "retention over max", client: client, table: "t", opt: ddbprovider.WithEventRetention(provider.MaxTTL + 1)},
		{name: "negative marker retention", client: client, table: "t", opt: ddbprovider.WithMarkerLogRetention(-time.Second)},
		{name: "negative run retention", client: client, table: "t", opt: ddbprovider.WithRetention(provider.Retention{Runs: -time.Second})},
		{name: "late arrival retention over max", client: client, table: "t", opt: ddbprovider.WithRetention(provider.Retention{LateArrivals: provider.MaxTTL + 1})},
		{name: "marker retention over max", client: client, table: "t", opt: ddbprovider.WithMarkerLogRetention(provider.MaxTTL + 1)},
		{name: "zero poll interval", client: client, table: "t", opt: ddbprovider.WithPollInterval(0, time.Second)},
		{name: "poll bounds reversed", client: client, table: "t", opt: ddbprovider.WithPollInterval(time.Second, time.Millisecond)},
		{name: "poll interval over an hour", client: client, table: "t", opt: ddbprovider.WithPollInterval(time.Second, 2*time.Hour)},
		{name: "nil meter provider", client: client, table: "t", opt: ddbprovider.WithMeterProvider(nil)},
		{name: "typed nil meter provider", client: client, table: "t", opt: ddbprovider.WithMeterProvider((*sdkmetric.MeterProvider)(nil))},
		{name: "nil logger", client: client, table: "t", opt: ddbprovider.WithLogger(nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if p, err := ddbprovider.New(tc.client, tc.table, tc.opt); !errors.Is(err, provider.ErrInvalidArgument) {
				t.Fatalf("New = %v, %v; want ErrInvalidArgument", p, err)
			}
		})
	}
	for _, opts := range [][]ddbprovider.Option{
		{ddbprovider.WithOwner("me"), ddbprovider.WithReadinessTTL(time.Second), ddbprovider.WithEventRetention(0)},
		{ddbprovider.WithOwner("me"), ddbprovider.WithReadinessTTL(provider.MaxTTL), ddbprovider.WithEventRetention(provider.MaxTTL)},
		{ddbprovider.WithOwner("me"), ddbprovider.WithMarkerLogRetention(0), ddbprovider.WithPollInterval(time.Millisecond, time.Millisecond),
			ddbprovider.WithMeterProvider(sdkmetric.NewMeterProvider()), ddbprovider.WithLogger(slog.New(slog.DiscardHandler))},
		{ddbprovider.WithOwner("me"), ddbprovider.WithMarkerLogRetention(provider.MaxTTL), ddbprovider.WithPollInterval(time.Hour, time.Hour)},
	} {
		p, err := ddbprovider.New(client, "t", opts...)
		if err != nil || p.Owner() != "me" || p.Table() != "t" {
			t.Fatalf("New with valid options: %v, %v", p, err)
		}
	}
}

// TestEventRetention checks that expired events are invisible and that reads page
// past them until they have what was asked for.
func TestEventRetention(t *testing.T) {
	e := testEnv(t)
	p := open(t, ddbprovider.WithEventRetention(time.Minute))
	ctx := context.Background()
	appendN := func(from, n int) {
		t.Helper()
		for i := from; i < from+n; i++ {
			if err := p.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p", Message: string(rune('a' + i))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	appendN(0, 6)
	e.clock.Advance(30 * time.Second)
	appendN(6, 3)
	e.clock.Advance(45 * time.Second) // the first six are 75s old, the rest 45s
	recs, err := p.ReadEventsSince(ctx, "p", "", 2)
	if err != nil || len(recs) != 2 || recs[0].StreamID != "7" || recs[1].Event.Message != "h" {
		t.Fatalf("ReadEventsSince past expired events = %+v, %v; want events 7 and 8", recs, err)
	}
	list, err := p.ListEvents(ctx, "p", 10)
	if err != nil || len(list) != 3 || list[0].Message != "g" {
		t.Fatalf("ListEvents = %+v, %v; want the 3 live events", list, err)
	}
	// Events 1 to 6 expired: a cursor before 6 is expired, 6 and later are not.
	for cursor, want := range map[string]error{"0": provider.ErrCursorExpired, "5": provider.ErrCursorExpired, "6": nil, "9": nil, "99": nil} {
		if _, err := p.ReadEventsSince(ctx, "p", cursor, 2); !errors.Is(err, want) || (want == nil && err != nil) {
			t.Errorf("ReadEventsSince(%s) with events 1-6 expired: %v, want %v", cursor, err, want)
		}
	}
	e.clock.Advance(time.Minute)
	if recs, err := p.ReadEventsSince(ctx, "p", "3", 10); !errors.Is(err, provider.ErrCursorExpired) || len(recs) != 0 {
		t.Fatalf("after every event expired, from cursor 3: %+v, %v; want ErrCursorExpired", recs, err)
	}
	if recs, err := p.ReadEventsSince(ctx, "p", "9", 10); err != nil || len(recs) != 0 {
		t.Fatalf("after every event expired, from the newest cursor: %+v, %v; want nothing", recs, err)
	}
	appendN(9, 1) // numbering goes on after expiry
	if recs, err := p.ReadEventsSince(ctx, "p", "", 10); err != nil || len(recs) != 1 || recs[0].StreamID != "10" {
		t.Fatalf("new event after expiry: %+v, %v; want number 10", recs, err)
	}
	if recs, err := p.ReadEventsSince(ctx, "p", "9", 10); err != nil || len(recs) != 1 || recs[0].StreamID != "10" {
		t.Fatalf("from the newest expired event's cursor: %+v, %v; want number 10", recs, err)
	}
}

// TestEventsExpireOutOfOrder appends through two providers with different
// retentions: a read stops before the first expired event, and the read from
// there fails with ErrCursorExpired, never skipping it.
func TestEventsExpireOutOfOrder(t *testing.T) {
	e := testEnv(t)
	short, long := open(t, ddbprovider.WithEventRetention(time.Minute)), open(t, ddbprovider.WithEventRetention(time.Hour))
	ctx := context.Background()
	for i, p := range []*ddbprovider.Provider{long, long, short, long} {
		if err := p.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p", Message: string(rune('a' + i))}); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.Advance(2 * time.Minute) // event 3 expired
	for _, c := range []struct {
		cursor  string
		want    []string
		expired bool
	}{{"", []string{"1", "2"}, false}, {"0", []string{"1", "2"}, false}, {"1", []string{"2"}, false}, {"2", nil, true}, {"3", []string{"4"}, false}} {
		recs, err := long.ReadEventsSince(ctx, "p", c.cursor, 10)
		var got []string
		for _, r := range recs {
			got = append(got, r.StreamID)
		}
		if errors.Is(err, provider.ErrCursorExpired) != c.expired || (!c.expired && err != nil) || !slices.Equal(got, c.want) {
			t.Errorf("ReadEventsSince(%q) = %v, %v; want %v (expired: %v)", c.cursor, got, err, c.want, c.expired)
		}
	}
	if recs, err := long.ReadEventsSince(ctx, "p", "3", math.MaxInt64); err != nil || len(recs) != 1 {
		t.Errorf("ReadEventsSince(3, count MaxInt64) = %+v, %v; want event 4", recs, err)
	}
}

func TestMalformedCursor(t *testing.T) {
	p := open(t)
	for _, c := range []string{"x", "-1", "+1", "01", "1.0", " 1", "99999999999999999999999"} {
		if _, err := p.ReadEventsSince(context.Background(), "p", c, 1); !errors.Is(err, provider.ErrInvalidArgument) {
			t.Errorf("cursor %q: err %v, want ErrInvalidArgument", c, err)
		}
	}
}

// TestTooLargeWritesNothing checks that an oversized run, CAS or event leaves no
// partial state: no truth without list copy, no claimed event number.
func TestTooLargeWritesNothing(t *testing.T) {
	p := open(t)
	ctx := context.Background()
	huge := map[string]any{"x": incompressible(600 * 1024)} // over 400 KB even compressed
	run := types.RunState{RunID: "r", PipelineID: "p", Status: types.RunPending, Metadata: huge}
	if err := p.PutRunState(ctx, run); !errors.Is(err, provider.ErrTooLarge) {
		t.Fatalf("PutRunState: err %v, want ErrTooLarge", err)
	}
	if got, _ := p.GetRunState(ctx, "r"); got != nil {
		t.Fatal("oversized run stored")
	}
	if list, _ := p.ListRuns(ctx, "p", 10); len(list) != 0 {
		t.Fatal("oversized run listed")
	}
	run.Metadata = map[string]any{"x": strings.Repeat("y", 398*1024)}
	if err := p.PutRunState(ctx, run); err != nil {
		t.Fatalf("398 KB run: %v", err)
	}
	run.Metadata = huge
	if ok, err := p.CompareAndSwapRunState(ctx, "r", 0, run); ok || !errors.Is(err, provider.ErrTooLarge) {
		t.Fatalf("CAS: %v, %v; want ErrTooLarge", ok, err)
	}
	if got, _ := p.GetRunState(ctx, "r"); got == nil || got.Version != 0 {
		t.Fatalf("CAS changed the run: %+v", got)
	}
	ev := types.Event{Kind: "k", PipelineID: "p", Details: huge}
	if err := p.AppendEvent(ctx, ev); !errors.Is(err, provider.ErrTooLarge) {
		t.Fatalf("AppendEvent: err %v, want ErrTooLarge", err)
	}
	ev.Details = nil
	if err := p.AppendEvent(ctx, ev); err != nil {
		t.Fatal(err)
	}
	if recs, err := p.ReadEventsSince(ctx, "p", "", 10); err != nil || len(recs) != 1 || recs[0].StreamID != "1" {
		t.Fatalf("events after a rejected one: %+v, %v; want one, numbered 1", recs, err)
	}
}

// incompressible returns n random printable bytes.
func incompressible(n int) string {
	rng := rand.New(rand.NewPCG(3, 4))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('!' + rng.IntN(94))
	}
	return string(b)
}

func TestCASWithOtherCreatedAtKeepsOneListCopy(t *testing.T) {
	p := open(t)
	ctx := context.Background()
	created := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	run := types.RunState{RunID: "r", PipelineID: "p", Status: types.RunPending, CreatedAt: created}
	if err := p.PutRunState(ctx, run); err != nil {
		t.Fatal(err)
	}
	for i, c := range []time.Time{{}, created.Add(time.Hour), created.Add(-time.Hour)} {
		run.CreatedAt = c
		if ok, err := p.CompareAndSwapRunState(ctx, "r", i, run); !ok || err != nil {
			t.Fatalf("CAS %d: %v, %v", i, ok, err)
		}
	}
	list, err := p.ListRuns(ctx, "p", 10)
	if err != nil || len(list) != 1 || !list[0].CreatedAt.Equal(created) || list[0].Version != 3 {
		t.Fatalf("ListRuns = %+v, %v; want one copy, version 3, the first CreatedAt", list, err)
	}
}

func TestAppendEventCancelled(t *testing.T) {
	p := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	// A deadline that passes while the append is in flight or queued.
	ctx, cancel = context.WithTimeout(context.Background(), time.Microsecond)
	defer cancel()
	if err := p.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p"}); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want nil or context.DeadlineExceeded", err)
	}
	if err := p.AppendEvent(context.Background(), types.Event{Kind: "k", PipelineID: "p"}); err != nil {
		t.Fatalf("append after a cancelled one: %v", err)
	}
	recs, err := p.ReadEventsSince(context.Background(), "p", "", 10)
	if err != nil || len(recs) < 1 || len(recs) > 2 || recs[len(recs)-1].StreamID != strconv.Itoa(len(recs)) {
		t.Fatalf("events %+v, %v; want gapless numbers", recs, err)
	}
}

func TestCreateTable(t *testing.T) {
	e := testEnv(t) // made by CreateTable
	ctx := context.Background()
	if err := ddbprovider.CreateTable(ctx, e.client, e.table); err != nil {
		t.Fatalf("CreateTable on an existing table: %v", err)
	}
	desc, err := e.client.DescribeTable(ctx, &ddb.DescribeTableInput{TableName: &e.table})
	if err != nil {
		t.Fatal(err)
	}
	d := desc.Table
	if d.BillingModeSummary == nil || d.BillingModeSummary.BillingMode != ddbtypes.BillingModePayPerRequest ||
		d.StreamSpecification == nil || d.StreamSpecification.StreamViewType != ddbtypes.StreamViewTypeNewAndOldImages ||
		len(d.GlobalSecondaryIndexes) != 2 || !slices.ContainsFunc(d.GlobalSecondaryIndexes, func(g ddbtypes.GlobalSecondaryIndexDescription) bool {
		return aws.ToString(g.IndexName) == "ACTIVE" && g.Projection != nil && g.Projection.ProjectionType == ddbtypes.ProjectionTypeKeysOnly
	}) {
		t.Errorf("table description: %+v", d)
	}
	ttl, err := e.client.DescribeTimeToLive(ctx, &ddb.DescribeTimeToLiveInput{TableName: &e.table})
	if err != nil || aws.ToString(ttl.TimeToLiveDescription.AttributeName) != "ttl" {
		t.Errorf("ttl: %+v, %v", ttl, err)
	}

	other := testenv.UniqueName(t) + "-x"
	in := ddbprovider.TableInput(other)
	in.GlobalSecondaryIndexes = nil
	in.KeySchema = in.KeySchema[:1] // PK only
	in.AttributeDefinitions = in.AttributeDefinitions[:1]
	if _, err := e.client.CreateTable(ctx, in); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = e.client.DeleteTable(context.Background(), &ddb.DeleteTableInput{TableName: &other}) })
	if err := ddbprovider.CreateTable(ctx, e.client, other); !errors.Is(err, ddbprovider.ErrSchemaMismatch) {
		t.Fatalf("CreateTable on a table with another schema: err %v, want ErrSchemaMismatch", err)
	}
}

func TestPingMissingTable(t *testing.T) {
	e := testEnv(t)
	p, err := ddbprovider.New(e.client, e.table+"-missing")
	if err != nil {
		t.Fatal(err)
	}
	var rnf *ddbtypes.ResourceNotFoundException
	if err := p.Ping(context.Background()); !errors.As(err, &rnf) {
		t.Fatalf("Ping of a missing table: err %v, want a ResourceNotFoundException", err)
	}
	if err := open(t).Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestGroupCommit checks that concurrent appends through one instance share
// transactions, keep each caller's order and number events without gaps.
func TestGroupCommit(t *testing.T) {
	hc, n := testenv.CountingHTTPClient()
	e := testEnv(t, func(o *ddb.Options) { o.HTTPClient = hc })
	p := openOn(t, e.client, e)
	ctx := context.Background()
	const writers, each = 16, 10
	n.Reset()
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			for i := range each {
				msg := strconv.Itoa(w) + "/" + strconv.Itoa(i)
				if err := p.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p", Message: msg}); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := n.Load(); got >= writers*each {
		t.Errorf("%d appends took %d requests: no group commit", writers*each, got)
	}
	recs, err := p.ReadEventsSince(ctx, "p", "", 1000)
	if err != nil || len(recs) != writers*each {
		t.Fatalf("read %d events, %v; want %d", len(recs), err, writers*each)
	}
	next := map[string]int{}
	for i, r := range recs {
		if r.StreamID != strconv.Itoa(i+1) {
			t.Fatalf("event %d has number %s", i+1, r.StreamID)
		}
		w, idx, _ := strings.Cut(r.Event.Message, "/")
		if idx != strconv.Itoa(next[w]) {
			t.Fatalf("writer %s: event %s after %d events: order lost", w, idx, next[w])
		}
		next[w]++
	}
}
