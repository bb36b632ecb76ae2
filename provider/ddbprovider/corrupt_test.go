package ddbprovider_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/internal/ddbx"
	"github.com/pipestate/pipestate/internal/signal/signaltest"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/types"
)

// corruptJSON is the data corruptRecord writes: JSON cut short, as a lost byte
// leaves it.
const corruptJSON = `{"corrupt": tru`

// corruptRecord is the conformance harness's Harness.Corrupt on the table of
// e: with the raw client, as an operator would (UpdateItem, PutItem,
// TransactWriteItems), it corrupts a record's data on every item that keeps it
// (a run's, rerun's or marker's truth item and list copy) or appends a corrupt
// one to a log, taking the log's next sequence number as the provider does. The
// data of pipelines, run logs, events and marker writes becomes a number
// attribute (an item whose attributes do not unmarshal); that of every other
// kind, JSON cut short.
func corruptRecord(t *testing.T, e *env, kind provider.RecordKind, id ...string) {
	t.Helper()
	ctx := context.Background()
	slot := func() string { return id[1] + "#" + types.ScheduleOrDefault(id[2]) }
	text := &ddbtypes.AttributeValueMemberS{Value: corruptJSON}
	number := &ddbtypes.AttributeValueMemberN{Value: "12"}
	var err error
	switch kind {
	case provider.KindPipeline:
		err = setAttr(ctx, e, "PIPELINE#"+id[0], "CONFIG", "data", number)
	case provider.KindTrait:
		err = setAttr(ctx, e, "PIPELINE#"+id[0], "TRAIT#"+id[1], "data", text)
	case provider.KindRunState:
		err = setPair(ctx, e, "RUN#"+id[0], "STATE", text)
	case provider.KindEvent:
		err = appendEntry(ctx, e, "PIPELINE#"+id[0], "EVENTSEQ", "EVENT#", number)
	case provider.KindRunLog:
		err = setAttr(ctx, e, "PIPELINE#"+id[0], "RUNLOG#"+slot(), "data", number)
	case provider.KindRerun:
		err = setPair(ctx, e, "RERUN#"+id[0], "STATE", text)
	case provider.KindReplay:
		err = setAttr(ctx, e, "PIPELINE#"+id[0], "REPLAY#"+slot(), "data", text)
	case provider.KindLateArrival:
		_, err = e.client.PutItem(ctx, &ddb.PutItemInput{TableName: &e.table, Item: map[string]ddbtypes.AttributeValue{
			"PK": &ddbtypes.AttributeValueMemberS{Value: "PIPELINE#" + id[0]},
			"SK": &ddbtypes.AttributeValueMemberS{Value: "LATE#" + slot() + "#~written-by-hand"}, "data": text,
		}})
	case provider.KindCascadeMarker:
		err = setPair(ctx, e, "MARKER#"+id[0], slot(), text)
	case provider.KindMarkerWrite:
		err = appendEntry(ctx, e, "MARKERLOG", "SEQ", "ENTRY#", number)
	case provider.KindReadiness:
		err = setAttr(ctx, e, "PIPELINE#"+id[0], "READINESS", "data", text)
	case provider.KindLock:
		err = setAttr(ctx, e, "LOCK#"+id[0], "LOCK", "holder", text)
	default:
		t.Fatalf("corrupt: unknown kind %q", kind)
	}
	if err != nil {
		t.Fatalf("corrupt %s %v: %v", kind, id, err)
	}
}

// setAttr sets attribute name of the existing item (pk, sk) to v.
func setAttr(ctx context.Context, e *env, pk, sk, name string, v ddbtypes.AttributeValue) error {
	update, cond := "SET #a = :v", "attribute_exists(PK)"
	_, err := e.client.UpdateItem(ctx, &ddb.UpdateItemInput{
		TableName: &e.table, UpdateExpression: &update, ConditionExpression: &cond,
		Key: map[string]ddbtypes.AttributeValue{
			"PK": &ddbtypes.AttributeValueMemberS{Value: pk}, "SK": &ddbtypes.AttributeValueMemberS{Value: sk},
		},
		ExpressionAttributeNames:  map[string]string{"#a": name},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":v": v},
	})
	return err
}

// dropActiveEntry removes run runID's key in the index ACTIVE (attributes
// activePK and activeSK of its truth item) and nothing else, as an operator's
// UpdateItem would (Harness.DropActiveEntry).
func dropActiveEntry(t *testing.T, e *env, runID string) {
	t.Helper()
	update, cond := "REMOVE activePK, activeSK", "attribute_exists(PK)"
	_, err := e.client.UpdateItem(t.Context(), &ddb.UpdateItemInput{
		TableName: &e.table, UpdateExpression: &update, ConditionExpression: &cond,
		Key: map[string]ddbtypes.AttributeValue{
			"PK": &ddbtypes.AttributeValueMemberS{Value: "RUN#" + runID}, "SK": &ddbtypes.AttributeValueMemberS{Value: "STATE"},
		},
	})
	if err != nil && !ddbx.IsConditionFailed(err) { // no run: nothing to drop
		t.Fatalf("drop the active-runs key of %s: %v", runID, err)
	}
}

// setPair sets the data of a truth item and of the list copy it points at.
func setPair(ctx context.Context, e *env, pk, sk string, v ddbtypes.AttributeValue) error {
	consistent := true
	out, err := e.client.GetItem(ctx, &ddb.GetItemInput{TableName: &e.table, ConsistentRead: &consistent,
		Key: map[string]ddbtypes.AttributeValue{
			"PK": &ddbtypes.AttributeValueMemberS{Value: pk}, "SK": &ddbtypes.AttributeValueMemberS{Value: sk},
		}})
	if err != nil {
		return err
	}
	lpk, ok1 := out.Item["listPK"].(*ddbtypes.AttributeValueMemberS)
	lsk, ok2 := out.Item["listSK"].(*ddbtypes.AttributeValueMemberS)
	if !ok1 || !ok2 {
		return fmt.Errorf("item %s %s has no list copy", pk, sk)
	}
	if err := setAttr(ctx, e, pk, sk, "data", v); err != nil {
		return err
	}
	return setAttr(ctx, e, lpk.Value, lsk.Value, "data", v)
}

// appendEntry appends an entry with data v to the log whose counter is (pk,
// counterSK), under the log's next sequence number, as the provider does with
// the counter (and on condition that the number is free, as it does without).
func appendEntry(ctx context.Context, e *env, pk, counterSK, prefix string, v ddbtypes.AttributeValue) error {
	// The counter and the newest entry (a provider without the event counter
	// leaves the counter behind): the counter sorts after every entry.
	out, err := e.client.Query(ctx, &ddb.QueryInput{TableName: &e.table, ConsistentRead: aws.Bool(true),
		ScanIndexForward: aws.Bool(false), Limit: aws.Int32(2),
		KeyConditionExpression:    aws.String("PK = :pk AND SK BETWEEN :lo AND :hi"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":pk": sAV(pk), ":lo": sAV(prefix), ":hi": sAV(counterSK)}})
	if err != nil {
		return err
	}
	var seq int64
	for _, it := range out.Items {
		if n, ok := it["seq"].(*ddbtypes.AttributeValueMemberN); ok {
			var s int64
			if _, err := fmt.Sscan(n.Value, &s); err != nil {
				return err
			}
			seq = max(seq, s)
		}
	}
	next := fmt.Sprint(seq + 1)
	update := "SET #seq = :n"
	_, err = e.client.TransactWriteItems(ctx, &ddb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
		{Update: &ddbtypes.Update{TableName: &e.table, UpdateExpression: &update,
			Key: map[string]ddbtypes.AttributeValue{
				"PK": &ddbtypes.AttributeValueMemberS{Value: pk}, "SK": &ddbtypes.AttributeValueMemberS{Value: counterSK},
			},
			ExpressionAttributeNames:  map[string]string{"#seq": "seq"},
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":n": &ddbtypes.AttributeValueMemberN{Value: next}}}},
		{Put: &ddbtypes.Put{TableName: &e.table, Item: map[string]ddbtypes.AttributeValue{
			"PK":   &ddbtypes.AttributeValueMemberS{Value: pk},
			"SK":   &ddbtypes.AttributeValueMemberS{Value: fmt.Sprintf("%s%020d", prefix, seq+1)},
			"seq":  &ddbtypes.AttributeValueMemberN{Value: next},
			"data": v,
		}, ConditionExpression: aws.String("attribute_not_exists(PK)")}},
	}})
	return err
}

// TestCorruptSignals: each corrupt record a listing skips is counted, logged
// with its key and put on the listing's span.
func TestCorruptSignals(t *testing.T) {
	e := testEnv(t)
	sig := signaltest.NewSignals()
	p := openOn(t, e.client, e, ddbprovider.WithMeterProvider(sig.Meter), ddbprovider.WithLogger(sig.Log))
	sig.CheckCorrupt(t, "aws.dynamodb", p, func(kind provider.RecordKind, id ...string) { corruptRecord(t, e, kind, id...) })
}

// TestFollowPastCorruptTail: a follower whose log ends in an item that does not
// unmarshal moves past it: it reports it once, however often it polls, and then
// delivers the next event.
func TestFollowPastCorruptTail(t *testing.T) {
	e := testEnv(t)
	p := openOn(t, e.client, e, ddbprovider.WithPollInterval(5*time.Millisecond, 10*time.Millisecond))
	ctx := t.Context()
	if err := p.AppendEvent(ctx, types.Event{Kind: "K", PipelineID: "p", Message: "first"}); err != nil {
		t.Fatal(err)
	}
	corruptRecord(t, e, provider.KindEvent, "p")
	var mu sync.Mutex
	reports := 0
	fctx, cancel := context.WithTimeout(provider.OnCorrupt(ctx, func(*provider.CorruptError) { mu.Lock(); reports++; mu.Unlock() }), 20*time.Second)
	defer cancel()
	var got []string
	for r, err := range p.FollowEvents(fctx, "p", "") {
		if err != nil {
			t.Fatalf("follow: %v after %v", err, got)
		}
		got = append(got, r.Event.Message)
		if len(got) == 1 { // past the corrupt tail, polled many times, then a new event
			time.Sleep(200 * time.Millisecond)
			if err := p.AppendEvent(ctx, types.Event{Kind: "K", PipelineID: "p", Message: "second"}); err != nil {
				t.Fatal(err)
			}
		}
		if len(got) == 2 {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(got) != "[first second]" || reports != 1 {
		t.Errorf("follow yielded %v and reported %d corrupt records; want [first second] and 1", got, reports)
	}
}

// TestCorruptEventCounter: a pipeline's event counter whose seq is not a
// number fails AppendEvent with ErrCorrupt, from an instance that knows the
// counter and from a fresh one, and writes nothing; the events already
// committed still read (package doc, "Corrupt records").
func TestCorruptEventCounter(t *testing.T) {
	e := testEnv(t)
	ctx := t.Context()
	p := openOn(t, e.client, e)
	for _, m := range []string{"a", "b"} {
		if err := p.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p", Message: m}); err != nil {
			t.Fatal(err)
		}
	}
	if err := setAttr(ctx, e, "PIPELINE#p", "EVENTSEQ", "seq", sAV("x")); err != nil {
		t.Fatal(err)
	}
	for name, q := range map[string]*ddbprovider.Provider{"the writer": p, "a fresh instance": openOn(t, e.client, e)} {
		if err := q.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p", Message: "c"}); !errors.Is(err, provider.ErrCorrupt) {
			t.Errorf("AppendEvent by %s over a corrupt counter = %v, want ErrCorrupt", name, err)
		}
	}
	recs, err := p.ReadEventsSince(ctx, "p", "", 10)
	var got []string
	for _, r := range recs {
		got = append(got, r.Event.Message)
	}
	if err != nil || !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("ReadEventsSince after the refused appends = %q, %v; want [a b] (nothing written, readers unaffected)", got, err)
	}
}
