package ddbstream_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/google/go-cmp/cmp"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/provider/ddbprovider/ddbstream"
	"github.com/pipestate/pipestate/types"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// table is a test's table with a NEW_AND_OLD_IMAGES stream (CreateTable's), a
// provider on it and a reader of its stream.
type table struct {
	client *ddb.Client
	name   string
	p      *ddbprovider.Provider
	stream *testenv.StreamReader
}

func newTable(t *testing.T, opts ...ddbprovider.Option) *table {
	t.Helper()
	client := testenv.DynamoDBClient(t)
	name := testenv.UniqueName(t)
	testenv.DynamoDBTable(t, client, name, func(ctx context.Context, name string) error { return ddbprovider.CreateTable(ctx, client, name) })
	p, err := ddbprovider.New(client, name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	return &table{client: client, name: name, p: p, stream: testenv.NewStreamReader(t, client, name)}
}

func (tb *table) decoder(t *testing.T, opts ...ddbstream.Option) *ddbstream.Decoder {
	t.Helper()
	d, err := ddbstream.New(tb.name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// putRaw writes an item with the raw client, as another application (or an
// operator) would.
func (tb *table) putRaw(t *testing.T, item map[string]ddbtypes.AttributeValue) {
	t.Helper()
	if _, err := tb.client.PutItem(context.Background(), &ddb.PutItemInput{TableName: &tb.name, Item: item}); err != nil {
		t.Fatal(err)
	}
}

func s(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// decodeAll decodes recs, failing t on an error, through both entries: the
// SDK's record and its Lambda JSON must decode alike.
func decodeAll(t *testing.T, d *ddbstream.Decoder, recs []streamtypes.Record) []ddbstream.Change {
	t.Helper()
	var out []ddbstream.Change
	for _, r := range recs {
		c, err := d.Decode(r)
		if err != nil {
			t.Fatalf("decode %s %v: %v", r.EventName, r.Dynamodb.Keys, err)
		}
		cj, err := d.DecodeJSON(testenv.LambdaRecordJSON(t, r))
		if err != nil {
			t.Fatalf("decode JSON of %s %v: %v", r.EventName, r.Dynamodb.Keys, err)
		}
		if diff := cmp.Diff(c, cj); diff != "" {
			t.Fatalf("Decode and DecodeJSON differ (-sdk +json):\n%s", diff)
		}
		out = append(out, c)
	}
	return out
}

// TestDecodeEveryKind writes every kind of item the backend writes, and a
// foreign application's items, and decodes the stream DynamoDB Local records:
// each reported change is typed, carries what the provider's reads return,
// and the backend's bookkeeping (list copies, counters, the marker log) and
// the foreign items are not ours.
func TestDecodeEveryKind(t *testing.T) {
	tb := newTable(t)
	p, ctx := tb.p, context.Background()
	must(t, p.RegisterPipeline(ctx, types.PipelineConfig{ID: "p1"}))
	must(t, p.PutTrait(ctx, "p1", types.TraitEvaluation{TraitType: "fresh", Status: types.TraitPass}, time.Hour))
	must(t, p.PutReadiness(ctx, types.ReadinessResult{PipelineID: "p1", Status: types.Ready}))
	must(t, p.PutRunState(ctx, types.RunState{RunID: "r1", PipelineID: "p1", Status: types.RunPending}))
	if ok, err := p.CompareAndSwapRunState(ctx, "r1", 0, types.RunState{RunID: "r1", PipelineID: "p1", Status: types.RunRunning}); err != nil || !ok {
		t.Fatalf("CAS: %v %v", ok, err)
	}
	must(t, p.AppendEvent(ctx, types.Event{PipelineID: "p1", Kind: "A"}))
	must(t, p.AppendEvent(ctx, types.Event{PipelineID: "p1", Kind: "B"}))
	must(t, p.PutRunLog(ctx, types.RunLogEntry{PipelineID: "p1", Date: "2026-11-28", RunID: "r1", Status: types.RunRunning}))
	must(t, p.PutRerun(ctx, types.RerunRecord{RerunID: "x1", PipelineID: "p1", OriginalDate: "2026-11-27", Reason: "fix", Status: types.RequestPending}))
	must(t, p.PutReplay(ctx, types.ReplayRequest{PipelineID: "p1", Date: "2026-11-26", Reason: "backfill", Status: types.RequestPending}))
	must(t, p.PutLateArrival(ctx, types.LateArrival{PipelineID: "p1", Date: "2026-11-28", TraitType: "fresh"}))
	must(t, p.WriteCascadeMarker(ctx, "p2", "", "2026-11-28", "p1"))
	must(t, p.WriteCascadeMarker(ctx, "p2", "", "2026-11-28", "p1-again"))
	if ok, err := p.AcquireLock(ctx, "k1", time.Minute); err != nil || !ok {
		t.Fatalf("AcquireLock: %v %v", ok, err)
	}
	must(t, p.ReleaseLock(ctx, "k1"))
	lease, err := p.AcquireLease(ctx, "k2", time.Minute)
	must(t, err)
	lease, err = p.RenewLease(ctx, *lease, 2*time.Minute)
	must(t, err)
	must(t, p.ReleaseLease(ctx, *lease))
	must(t, p.DeletePipeline(ctx, "p1"))
	tb.putRaw(t, map[string]ddbtypes.AttributeValue{"PK": s("USER#u1"), "SK": s("PROFILE"), "data": s("not ours")})
	tb.putRaw(t, map[string]ddbtypes.AttributeValue{"PK": s("PIPELINE#p1"), "SK": s("INVOICE#7"), "data": &ddbtypes.AttributeValueMemberN{Value: "1"}})
	tb.putRaw(t, map[string]ddbtypes.AttributeValue{"PK": s("RUN#r9"), "SK": s("AUDIT")})
	tb.putRaw(t, map[string]ddbtypes.AttributeValue{"PK": s("PIPELINE#p1"), "SK": s("EVENT#x")}) // not numbered: no event

	changes := decodeAll(t, tb.decoder(t), tb.stream.Read(t))
	var foreign []string
	byKind := map[provider.RecordKind][]ddbstream.Change{}
	for _, c := range changes {
		switch {
		case c.Foreign:
			foreign = append(foreign, c.Item)
		case c.Kind != "":
			byKind[c.Kind] = append(byKind[c.Kind], c)
		}
		if c.Kind != "" && (c.Op != ddbstream.Written || c.Expired || !c.Live()) {
			t.Errorf("%s: op %v expired %v, want a live write", c.Item, c.Op, c.Expired)
		}
		if !strings.HasPrefix(c.Item, "dynamodb table "+tb.name+" item ") {
			t.Errorf("Item = %q", c.Item)
		}
	}
	var wantForeign []string
	for _, key := range []string{"USER#u1 PROFILE", "PIPELINE#p1 INVOICE#7", "RUN#r9 AUDIT", "PIPELINE#p1 EVENT#x"} {
		wantForeign = append(wantForeign, "dynamodb table "+tb.name+" item "+key)
	}
	slices.Sort(wantForeign)
	slices.Sort(foreign)
	if !slices.Equal(foreign, wantForeign) {
		t.Errorf("foreign items %q, want %q", foreign, wantForeign)
	}

	// Runs: the put and the CAS, old and new status and version.
	runs := byKind[provider.KindRunState]
	if len(runs) != 2 {
		t.Fatalf("%d run changes, want 2 (the list copies are not reported)", len(runs))
	}
	if r := runs[0].Run; r.Old != nil || r.New.Status != types.RunPending || r.New.Version != 0 {
		t.Errorf("run put: %+v", r)
	}
	stored, err := p.GetRunState(ctx, "r1")
	must(t, err)
	if r := runs[1].Run; r.Old == nil || r.Old.Status != types.RunPending || r.Old.Version != 0 || r.New.Status != types.RunRunning || r.New.Version != 1 {
		t.Errorf("run CAS: %+v", r)
	} else if diff := cmp.Diff(stored, r.New); diff != "" {
		t.Errorf("the CAS's new run differs from GetRunState (-get +stream):\n%s", diff)
	}

	// Events: two appends, numbered as ReadEventsSince numbers them.
	evs := byKind[provider.KindEvent]
	read, err := p.ReadEventsSince(ctx, "p1", "", 10)
	must(t, err)
	if len(evs) != 2 || len(read) != 2 {
		t.Fatalf("%d event changes and %d events read, want 2 (the counter is not reported)", len(evs), len(read))
	}
	for i, c := range evs {
		if c.Event.Old != nil {
			t.Errorf("event %d: Old %+v, want nil for an append", i, c.Event.Old)
		}
		if diff := cmp.Diff(read[i], *c.Event.New); diff != "" {
			t.Errorf("event %d differs from ReadEventsSince (-read +stream):\n%s", i, diff)
		}
	}

	// Markers: one write and one rewrite, not the by-time copies nor the marker log.
	ms := byKind[provider.KindCascadeMarker]
	if len(ms) != 2 {
		t.Fatalf("%d marker changes, want 2", len(ms))
	}
	if m := ms[0].Marker; m.Old != nil || m.New.PipelineID != "p2" || m.New.Source != "p1" || m.New.ScheduleID != types.DefaultScheduleID {
		t.Errorf("marker write: %+v", m)
	}
	if m := ms[1].Marker; m.Old == nil || m.Old.Source != "p1" || m.New.Source != "p1-again" {
		t.Errorf("marker rewrite: %+v", m)
	}

	if rs := byKind[provider.KindRerun]; len(rs) != 1 || rs[0].Rerun.New.RerunID != "x1" || rs[0].Rerun.New.Reason != "fix" {
		t.Errorf("rerun changes: %+v", rs)
	}
	if rs := byKind[provider.KindReplay]; len(rs) != 1 || rs[0].Replay.New.Date != "2026-11-26" || rs[0].Replay.New.Reason != "backfill" {
		t.Errorf("replay changes: %+v", rs)
	}

	// Locks: taken and freed; a lease taken (fence 1), renewed, freed.
	locks := byKind[provider.KindLock]
	type step struct {
		key          string
		oldHeld, new bool
		lease        bool
		fence        int64
	}
	var got []step
	for _, c := range locks {
		st := step{oldHeld: c.Lock.Old != nil, new: c.Lock.New != nil}
		for _, li := range []*types.LockInfo{c.Lock.New, c.Lock.Old} {
			if li != nil {
				st.key, st.lease, st.fence = li.Key, li.IsLease(), li.Fence
				break
			}
		}
		got = append(got, st)
	}
	want := []step{
		{key: "k1", new: true},                                       // taken
		{key: "k1", oldHeld: true},                                   // freed
		{key: "k2", new: true, lease: true, fence: 1},                // lease taken
		{key: "k2", oldHeld: true, new: true, lease: true, fence: 1}, // renewed
		{key: "k2", oldHeld: true, lease: true, fence: 1},            // freed
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(step{})); diff != "" {
		t.Errorf("lock changes (-want +got):\n%s", diff)
	}
	if c := locks[3].Lock; c.Old.Token != lease.Token || c.New.Token != lease.Token || !c.New.ExpiresAt.After(*c.Old.ExpiresAt) {
		t.Errorf("renewal: old %+v new %+v", c.Old, c.New)
	}
}

// TestDecodeExpiredAndRemoved: a write whose record has expired by the
// decoder's clock is reported Expired, not live; a caller's delete is Deleted,
// and a REMOVE by the TTL service (DynamoDB Local never sends one: built by
// hand from a real record) is TTLDeleted.
func TestDecodeExpiredAndRemoved(t *testing.T) {
	tb := newTable(t, ddbprovider.WithRetention(provider.Retention{
		Runs: time.Hour, Events: time.Hour, RunLogs: time.Hour, Reruns: time.Hour, Replays: time.Hour,
		LateArrivals: time.Hour, CascadeMarkers: time.Hour, MarkerLog: time.Hour,
	}))
	ctx := context.Background()
	must(t, tb.p.WriteCascadeMarker(ctx, "p2", "", "2026-11-28", "p1"))
	if ok, err := tb.p.AcquireLock(ctx, "k", 0); err != nil || !ok {
		t.Fatalf("AcquireLock: %v %v", ok, err)
	}
	_, err := tb.client.DeleteItem(ctx, &ddb.DeleteItemInput{TableName: &tb.name, Key: map[string]ddbtypes.AttributeValue{
		"PK": s("MARKER#p2"), "SK": s("2026-11-28#" + types.DefaultScheduleID)}})
	must(t, err)
	recs := tb.stream.Read(t)

	later := tb.decoder(t, ddbstream.WithClock(func() time.Time { return time.Now().Add(2 * time.Hour) }))
	var marker, removed *streamtypes.Record
	for i, c := range decodeAll(t, later, recs) {
		switch {
		case c.Kind == provider.KindCascadeMarker && c.Op == ddbstream.Written:
			marker = &recs[i]
			if !c.Expired || c.Live() {
				t.Errorf("marker written an hour before its expiry, decoded 2 hours on: expired %v live %v", c.Expired, c.Live())
			}
		case c.Kind == provider.KindCascadeMarker:
			removed = &recs[i]
			if c.Op != ddbstream.Deleted || c.Marker.New != nil || c.Marker.Old.Source != "p1" {
				t.Errorf("DeleteItem of the marker: op %v %+v", c.Op, c.Marker)
			}
		case c.Kind == provider.KindLock && c.Expired:
			t.Errorf("a lock item is never expired: %+v", c)
		}
	}
	if marker == nil || removed == nil {
		t.Fatal("no marker write or removal in the stream")
	}
	now := tb.decoder(t)
	if c, err := now.Decode(*marker); err != nil || c.Expired || !c.Live() {
		t.Errorf("marker decoded now: %+v %v, want live", c, err)
	}

	ttl := *removed
	ttl.UserIdentity = &streamtypes.Identity{Type: aws.String("Service"), PrincipalId: aws.String("dynamodb.amazonaws.com")}
	for _, c := range decodeAll(t, later, []streamtypes.Record{ttl}) {
		if c.Op != ddbstream.TTLDeleted || !c.Expired || c.Live() || c.Marker.Old == nil {
			t.Errorf("TTL removal: op %v expired %v %+v", c.Op, c.Expired, c.Marker)
		}
	}
	other := *removed
	other.UserIdentity = &streamtypes.Identity{Type: aws.String("Service"), PrincipalId: aws.String("other.amazonaws.com")}
	if c, err := later.Decode(other); err != nil || c.Op != ddbstream.Deleted {
		t.Errorf("a REMOVE by another service: %v %v, want Deleted", c.Op, err)
	}
}

// TestDecodeCorrupt: an image of one of the backend's items that does not
// decode is ErrCorrupt naming the item, with the record's sequence number in
// the Change; records that are no stream records are ErrInvalidArgument; none
// panics.
func TestDecodeCorrupt(t *testing.T) {
	tb := newTable(t)
	tb.putRaw(t, map[string]ddbtypes.AttributeValue{"PK": s("RUN#r1"), "SK": s("STATE"), "data": s(`{"runId": tru`)})
	tb.putRaw(t, map[string]ddbtypes.AttributeValue{"PK": s("MARKER#p2"), "SK": s("2026-11-28#daily"), "data": s(`{}`), "exp": s("soon")})
	tb.putRaw(t, map[string]ddbtypes.AttributeValue{"PK": s("LOCK#k"), "SK": s("LOCK"), "holder": s("nobody")})
	tb.putRaw(t, map[string]ddbtypes.AttributeValue{"PK": s("PIPELINE#p1"), "SK": s("EVENT#00000000000000000001"), "data": &ddbtypes.AttributeValueMemberB{Value: []byte("not deflate")}})
	recs := tb.stream.Read(t)
	if len(recs) != 4 {
		t.Fatalf("%d records, want 4", len(recs))
	}
	d := tb.decoder(t)
	for i, r := range recs {
		c, err := d.Decode(r)
		var ce *provider.CorruptError
		if !errors.Is(err, provider.ErrCorrupt) || !errors.As(err, &ce) {
			t.Errorf("record %d (%v): err %v, want ErrCorrupt", i, r.Dynamodb.Keys, err)
			continue
		}
		if !strings.Contains(ce.Key, "dynamodb table "+tb.name+" item ") || c.SequenceNumber == "" || c.SequenceNumber != aws.ToString(r.Dynamodb.SequenceNumber) || c.Item == "" {
			t.Errorf("record %d: error %q, change %+v: want the item named and the sequence number", i, err, c)
		}
		if _, err := d.DecodeJSON(testenv.LambdaRecordJSON(t, r)); !errors.Is(err, provider.ErrCorrupt) {
			t.Errorf("record %d as JSON: %v, want ErrCorrupt", i, err)
		}
	}

	good := recs[0]
	keysOnly := good
	keysOnly.Dynamodb = &streamtypes.StreamRecord{Keys: good.Dynamodb.Keys, SequenceNumber: good.Dynamodb.SequenceNumber}
	foreignKeysOnly := keysOnly
	foreignKeysOnly.Dynamodb = &streamtypes.StreamRecord{Keys: map[string]streamtypes.AttributeValue{
		"PK": &streamtypes.AttributeValueMemberS{Value: "USER#1"}, "SK": &streamtypes.AttributeValueMemberS{Value: "X"}}}
	badName := good
	badName.EventName = "UPSERT"
	noKeys := good
	noKeys.Dynamodb = &streamtypes.StreamRecord{NewImage: good.Dynamodb.NewImage}
	badAttr := good
	badAttr.Dynamodb = &streamtypes.StreamRecord{Keys: good.Dynamodb.Keys, NewImage: map[string]streamtypes.AttributeValue{"PK": nil}}
	for name, r := range map[string]streamtypes.Record{
		"no dynamodb field": {EventName: streamtypes.OperationTypeInsert},
		"unknown event":     badName,
		"no keys":           noKeys,
		"keys only":         keysOnly,
		"nil attribute":     badAttr,
	} {
		if _, err := d.Decode(r); !errors.Is(err, provider.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
	if c, err := d.Decode(foreignKeysOnly); err != nil || !c.Foreign {
		t.Errorf("a foreign item's keys-only record: %+v %v, want foreign and no error", c, err)
	}
	for _, js := range []string{``, `[]`, `{"eventName":"INSERT"}`, `{"eventName":"INSERT","dynamodb":{"Keys":{"PK":{"Q":"x"}}}}`,
		`{"eventName":"INSERT","dynamodb":{"Keys":{"PK":{"S":"RUN#r"},"SK":{"S":"STATE"}},"NewImage":7}}`} {
		if _, err := d.DecodeJSON([]byte(js)); !errors.Is(err, provider.ErrInvalidArgument) {
			t.Errorf("DecodeJSON(%s): %v, want ErrInvalidArgument", js, err)
		}
	}
	for name, opts := range map[string][]ddbstream.Option{"nil option": {nil}, "nil clock": {ddbstream.WithClock(nil)}} {
		if _, err := ddbstream.New("t", opts...); !errors.Is(err, provider.ErrInvalidArgument) {
			t.Errorf("New with a %s: %v, want ErrInvalidArgument", name, err)
		}
	}
	if _, err := ddbstream.New(""); !errors.Is(err, provider.ErrInvalidArgument) {
		t.Errorf("New(\"\"): %v", err)
	}
}
