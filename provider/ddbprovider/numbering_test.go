package ddbprovider_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/types"
)

// sweepTTL deletes the items of e's table whose ttl attribute has passed by e's
// clock, as DynamoDB's TTL does in time (DynamoDB Local never does), and returns
// how many it deleted.
func sweepTTL(t *testing.T, e *env) int {
	t.Helper()
	ctx := context.Background()
	in := &ddb.ScanInput{
		TableName:                 &e.table,
		FilterExpression:          aws.String("#ttl <= :now"),
		ExpressionAttributeNames:  map[string]string{"#ttl": "ttl"},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":now": nAV(e.clock.Now().Unix())},
	}
	n := 0
	for {
		out, err := e.client.Scan(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range out.Items {
			if _, err := e.client.DeleteItem(ctx, &ddb.DeleteItemInput{TableName: &e.table,
				Key: map[string]ddbtypes.AttributeValue{"PK": it["PK"], "SK": it["SK"]}}); err != nil {
				t.Fatal(err)
			}
			n++
		}
		if len(out.LastEvaluatedKey) == 0 {
			return n
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// storedEvents returns the sequence numbers of the event items stored in
// pipeline's partition, expired or not.
func storedEvents(t *testing.T, e *env, pipeline string) []int64 {
	t.Helper()
	out, err := e.client.Query(context.Background(), &ddb.QueryInput{TableName: &e.table, ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("PK = :pk AND begins_with(SK, :ev)"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":pk": sAV("PIPELINE#" + pipeline), ":ev": sAV("EVENT#")}})
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for _, it := range out.Items {
		n, err := strconv.ParseInt(it["seq"].(*ddbtypes.AttributeValueMemberN).Value, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, n)
	}
	return seqs
}

// messagesSince is what ReadEventsSince(cursor) returns, as messages.
func messagesSince(t *testing.T, p provider.EventStore, pipeline, cursor string) ([]string, error) {
	t.Helper()
	recs, err := p.ReadEventsSince(context.Background(), pipeline, cursor, 100)
	var out []string
	for _, r := range recs {
		out = append(out, r.StreamID+":"+r.Event.Message)
	}
	return out, err
}

// TestNumberingOutlivesTheLog: once every event of a log has expired and
// DynamoDB's TTL has deleted it, a new instance (no hints) numbers the next
// event after the last one handed out, so a follower's cursor of the last
// event reads it, and the cursor before is expired: the counter item carries
// no ttl, fenced appends included, and outlives every event and cursor.
func TestNumberingOutlivesTheLog(t *testing.T) {
	e := testEnv(t)
	opts := []ddbprovider.Option{ddbprovider.WithEventRetention(time.Minute)}
	p := openOn(t, e.client, e, opts...)
	ctx := context.Background()
	fenced, err := provider.Fenced(p, types.Lease{Key: "fk", Token: "t", Fence: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range []provider.EventStore{p, fenced, p} {
		if err := w.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p", Message: strconv.Itoa(i + 1)}); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		e.clock.Advance(400 * 24 * time.Hour)
		if n := sweepTTL(t, e); n == 0 {
			t.Fatal("the sweep deleted nothing: the events carry no ttl")
		}
		if got := storedEvents(t, e, "p"); len(got) != 0 {
			t.Fatalf("events stored after the sweep = %v, want none", got)
		}
		if !stored(t, e, "PIPELINE#p", "EVENTSEQ") {
			t.Fatal("the sweep deleted the event counter")
		}
		q := openOn(t, e.client, e, opts...)
		if err := q.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p", Message: "after"}); err != nil {
			t.Fatal(err)
		}
		recs, err := q.ReadEventsSince(ctx, "p", "", 10)
		if err != nil || len(recs) != 1 {
			t.Fatalf(`ReadEventsSince("") = %v, %v; want the one event appended after the sweep`, recs, err)
		}
		n, _ := strconv.Atoi(recs[0].StreamID)
		if got, err := messagesSince(t, q, "p", strconv.Itoa(n-1)); err != nil || !slices.Equal(got, []string{recs[0].StreamID + ":after"}) {
			t.Fatalf("ReadEventsSince(%d) = %v, %v; want [%s:after]", n-1, got, err, recs[0].StreamID)
		}
		if got, err := messagesSince(t, q, "p", strconv.Itoa(n-2)); !errors.Is(err, provider.ErrCursorExpired) {
			t.Fatalf("ReadEventsSince(%d) = %v, %v; want ErrCursorExpired", n-2, got, err)
		}
		if n != 4 && n != 5 {
			t.Fatalf("the event appended after the sweep is number %d, want the next after the last handed out", n)
		}
	}
}

// stored reports whether the item (pk, sk) is stored.
func stored(t *testing.T, e *env, pk, sk string) bool {
	t.Helper()
	out, err := e.client.GetItem(context.Background(), &ddb.GetItemInput{TableName: &e.table, ConsistentRead: aws.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{"PK": sAV(pk), "SK": sAV(sk)}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item != nil
}

// TestMarkerNumberingOutlivesTheLog is TestNumberingOutlivesTheLog for the
// marker log: its counter (MARKERLOG SEQ) carries no ttl, so a write after
// every entry expired and was deleted takes the next number, and a watch from
// the last entry's cursor yields it.
func TestMarkerNumberingOutlivesTheLog(t *testing.T) {
	e := testEnv(t)
	p := openOn(t, e.client, e, ddbprovider.WithMarkerLogRetention(time.Minute), ddbprovider.WithPollInterval(5*time.Millisecond, 10*time.Millisecond))
	ctx := t.Context()
	for i := range 3 {
		if err := p.WriteCascadeMarker(ctx, "p", "", fmt.Sprintf("2026-03-0%d", i+1), "s"); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.Advance(400 * 24 * time.Hour)
	sweepTTL(t, e)
	if !stored(t, e, "MARKERLOG", "SEQ") {
		t.Fatal("the sweep deleted the marker log's counter")
	}
	q := openOn(t, e.client, e, ddbprovider.WithMarkerLogRetention(time.Minute), ddbprovider.WithPollInterval(5*time.Millisecond, 10*time.Millisecond))
	if err := q.WriteCascadeMarker(ctx, "p", "", "2026-03-09", "s"); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for r, err := range q.WatchCascadeMarkers(wctx, "3") {
		if err != nil || r.Cursor != "4" || r.Marker.Date != "2026-03-09" {
			t.Fatalf("watch from 3 after the sweep yielded %+v, %v; want the new write as number 4", r, err)
		}
		break
	}
	for _, err := range q.WatchCascadeMarkers(wctx, "2") {
		if !errors.Is(err, provider.ErrCursorExpired) {
			t.Fatalf("watch from 2 after the sweep: %v, want ErrCursorExpired", err)
		}
		break
	}
}

// TestCounterBehindTheLog: a counter behind the newest event (a log an
// unreleased build appended to without the counter, whose newest event it kept
// without a ttl, the events before it deleted by TTL) never hands out a number
// at or below the newest event: an instance that does not know the counter
// reads it and the newest event, and one that does, and finds its number
// taken, goes past the newest. Before, the counter's claim of number 1 found
// it free and committed there, behind event 5: a follower at 5 never saw it.
func TestCounterBehindTheLog(t *testing.T) {
	e := testEnv(t)
	p := openOn(t, e.client, e)
	ctx := context.Background()
	for i := range 5 {
		if err := p.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p", Message: strconv.Itoa(i + 1)}); err != nil {
			t.Fatal(err)
		}
	}
	// The counter of a log appended to without it, the events before the
	// newest deleted.
	for seq := 1; seq <= 4; seq++ {
		if _, err := e.client.DeleteItem(ctx, &ddb.DeleteItemInput{TableName: &e.table,
			Key: map[string]ddbtypes.AttributeValue{"PK": sAV("PIPELINE#p"), "SK": sAV(fmt.Sprintf("EVENT#%020d", seq))}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.client.DeleteItem(ctx, &ddb.DeleteItemInput{TableName: &e.table,
		Key: map[string]ddbtypes.AttributeValue{"PK": sAV("PIPELINE#p"), "SK": sAV("EVENTSEQ")}}); err != nil {
		t.Fatal(err)
	}
	fresh := openOn(t, e.client, e)
	if err := fresh.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p", Message: "fresh"}); err != nil {
		t.Fatal(err)
	}
	if got, err := messagesSince(t, fresh, "p", "5"); err != nil || !slices.Equal(got, []string{"6:fresh"}) {
		t.Fatalf("ReadEventsSince(5) = %v, %v; want [6:fresh]", got, err)
	}
	// The counter moved back by hand (or restored from a backup) below what
	// an instance knows: its claim is refused with the lower value, and it
	// still goes after the number it knew, never at a number that came free.
	if err := setAttr(ctx, e, "PIPELINE#p", "EVENTSEQ", "seq", nAV(2)); err != nil {
		t.Fatal(err)
	}
	if err := fresh.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p", Message: "behind"}); err != nil {
		t.Fatal(err)
	}
	if got, err := messagesSince(t, fresh, "p", "5"); err != nil || !slices.Equal(got, []string{"6:fresh", "7:behind"}) {
		t.Fatalf("ReadEventsSince(5) = %v, %v; want [6:fresh 7:behind]", got, err)
	}
}

// TestConcurrentNumbering appends to one pipeline from 4 instances at once,
// rounds of callers started from a barrier: every event gets one number, the
// numbers run from 1 without a gap, and each caller's events keep their order.
func TestConcurrentNumbering(t *testing.T) {
	e := testEnv(t)
	var insts []*ddbprovider.Provider
	for range 4 {
		insts = append(insts, openOn(t, e.client, e))
	}
	ctx := context.Background()
	const callers, rounds = 8, 4
	for r := range rounds {
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make(chan error, callers)
		for c := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs <- insts[c%len(insts)].AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p", Message: fmt.Sprintf("c%d-r%d", c, r)})
			}()
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	recs, err := insts[1].ReadEventsSince(ctx, "p", "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != callers*rounds {
		t.Fatalf("read %d events, want %d", len(recs), callers*rounds)
	}
	seen, last := map[string]bool{}, map[string]int{}
	for i, r := range recs {
		if r.StreamID != strconv.Itoa(i+1) {
			t.Fatalf("event %d has number %s, want %d (no gap)", i, r.StreamID, i+1)
		}
		if seen[r.Event.Message] {
			t.Fatalf("event %s numbered twice", r.Event.Message)
		}
		seen[r.Event.Message] = true
		var c, round int
		if _, err := fmt.Sscanf(r.Event.Message, "c%d-r%d", &c, &round); err != nil {
			t.Fatal(err)
		}
		if prev, ok := last[strconv.Itoa(c)]; ok && round <= prev {
			t.Fatalf("caller %d's round %d numbered after its round %d", c, prev, round)
		}
		last[strconv.Itoa(c)] = round
	}
}
