package dynamodb_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/internal/signal/signaltest"
	"github.com/pipestate/pipestate/internal/testkit/faults"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/dynamodb"
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

// hasTTL reports whether event seq of pipeline is stored with its ttl
// attribute (the newest event of a log without the counter waits for the next
// append to get it).
func hasTTL(t *testing.T, e *env, pipeline string, seq int64) bool {
	t.Helper()
	out, err := e.client.GetItem(context.Background(), &ddb.GetItemInput{TableName: &e.table, ConsistentRead: aws.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{"PK": sAV("PIPELINE#" + pipeline), "SK": sAV(fmt.Sprintf("EVENT#%020d", seq))}})
	if err != nil || out.Item == nil {
		t.Fatalf("event %d of %s: %v, %v", seq, pipeline, out, err)
	}
	_, ok := out.Item["ttl"]
	return ok
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
// DynamoDB's TTL has deleted what it may, a new instance (no hints) numbers the
// next event after the last one handed out, so a follower's cursor of the last
// event reads it, and the cursor before is expired. With the counter, the
// counter item remembers the number; without it, the newest event does, which
// is why it is written without a ttl. Between appends, only the newest event
// stays stored.
func TestNumberingOutlivesTheLog(t *testing.T) {
	for _, counter := range []bool{true, false} {
		t.Run(fmt.Sprintf("counter=%v", counter), func(t *testing.T) {
			e := testEnv(t)
			opts := []dynamodb.Option{dynamodb.WithEventRetention(time.Minute), dynamodb.WithEventCounter(counter)}
			p := openOn(t, e.client, e, opts...)
			ctx := context.Background()
			for i := range 3 {
				if err := p.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p", Message: strconv.Itoa(i + 1)}); err != nil {
					t.Fatal(err)
				}
			}
			// An event's ttl is its expiry plus a day: a sweep just after the
			// expiry deletes nothing.
			e.clock.Advance(2 * time.Minute)
			if n := sweepTTL(t, e); n != 0 {
				t.Fatalf("a sweep a minute after the events expired deleted %d items, want 0", n)
			}
			e.clock.Advance(25 * time.Hour)
			sweepTTL(t, e)
			want := []int64{3} // the newest, without a ttl
			if counter {
				want = nil // the counter item keeps the number
			}
			if got := storedEvents(t, e, "p"); !slices.Equal(got, want) {
				t.Fatalf("events stored after the sweep = %v, want %v", got, want)
			}
			q := openOn(t, e.client, e, opts...)
			if err := q.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p", Message: "after"}); err != nil {
				t.Fatal(err)
			}
			if got, err := messagesSince(t, q, "p", "3"); err != nil || !slices.Equal(got, []string{"4:after"}) {
				t.Fatalf("ReadEventsSince(3) = %v, %v; want [4:after]", got, err)
			}
			if got, err := messagesSince(t, q, "p", "2"); !errors.Is(err, provider.ErrCursorExpired) {
				t.Fatalf("ReadEventsSince(2) = %v, %v; want ErrCursorExpired", got, err)
			}
			// The appends gave the earlier newest its ttl: the next sweep leaves
			// only the newest again.
			e.clock.Advance(time.Minute + 25*time.Hour)
			sweepTTL(t, e)
			want = []int64{4}
			if counter {
				want = nil
			}
			if got := storedEvents(t, e, "p"); !slices.Equal(got, want) {
				t.Fatalf("events stored after the second sweep = %v, want %v", got, want)
			}
		})
	}
}

// TestStaleHintAfterDeletion: an instance's hint of a log's newest event is used
// for less than a day. Instance a appends event 1 and remembers it; b appends 2
// to 4; a day later DynamoDB has deleted 1 to 3 (4 is the newest, kept). Were a
// to trust its hint, its put of number 2 would find the number free and take it,
// behind the log's newest: a follower at 4 would never see it.
func TestStaleHintAfterDeletion(t *testing.T) {
	e := testEnv(t)
	opts := []dynamodb.Option{dynamodb.WithEventRetention(time.Minute), dynamodb.WithEventCounter(false)}
	a, b := openOn(t, e.client, e, opts...), openOn(t, e.client, e, opts...)
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(a.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p", Message: "a1"}))
	for i := range 3 {
		must(b.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p", Message: "b" + strconv.Itoa(i+1)}))
	}
	e.clock.Advance(time.Minute + 25*time.Hour)
	sweepTTL(t, e)
	if got := storedEvents(t, e, "p"); !slices.Equal(got, []int64{4}) {
		t.Fatalf("events stored after the sweep = %v, want [4]", got)
	}
	must(a.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p", Message: "a2"}))
	if got, err := messagesSince(t, b, "p", "4"); err != nil || !slices.Equal(got, []string{"5:a2"}) {
		t.Fatalf("ReadEventsSince(4) = %v, %v; want [5:a2]", got, err)
	}
}

// TestMixedNumbering appends to one pipeline from instances with and without
// the counter at once, rounds of callers started from a barrier: every event
// gets one number, the numbers run from 1 without a gap, and each caller's
// events keep their order.
func TestMixedNumbering(t *testing.T) {
	e := testEnv(t)
	var insts []*dynamodb.Provider
	for i := range 4 {
		insts = append(insts, openOn(t, e.client, e, dynamodb.WithEventCounter(i%2 == 0)))
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

// TestCountedAfterChained: an instance with the counter that appends after one
// without it gives the newest event it follows its ttl, as one without the
// counter does, so switching an instance back leaves nothing stored forever.
func TestCountedAfterChained(t *testing.T) {
	e := testEnv(t)
	chained := openOn(t, e.client, e, dynamodb.WithEventCounter(false))
	counted := openOn(t, e.client, e)
	ctx := context.Background()
	for i, p := range []*dynamodb.Provider{chained, counted, chained, chained, counted} {
		if err := p.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p", Message: strconv.Itoa(i + 1)}); err != nil {
			t.Fatal(err)
		}
	}
	for seq := int64(1); seq <= 5; seq++ {
		if !hasTTL(t, e, "p", seq) {
			t.Errorf("event %d stored without its ttl after event %d", seq, seq+1)
		}
	}
	if got, err := messagesSince(t, counted, "p", ""); err != nil || !slices.Equal(got, []string{"1:1", "2:2", "3:3", "4:4", "5:5"}) {
		t.Fatalf("events %v, %v", got, err)
	}
}

// TestTTLUpdateFailureIsLogged: when the update that gives the previous newest
// event its ttl fails after the append committed (here throttled past the SDK's
// retries), AppendEvent still succeeds, the event stays without its ttl, and a
// Warn record names its item.
func TestTTLUpdateFailureIsLogged(t *testing.T) {
	ft := faults.NewTransport()
	e := faultEnv(t, ft, 2)
	sig := signaltest.NewSignals()
	p := openOn(t, e.client, e, dynamodb.WithEventCounter(false), dynamodb.WithLogger(sig.Log))
	ctx := context.Background()
	if err := p.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p", Message: "a"}); err != nil {
		t.Fatal(err)
	}
	ft.Reject(2, faults.Op("UpdateItem", "EVENT#"), faults.Throttled)
	defer ft.StopRejecting()
	if err := p.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p", Message: "b"}); err != nil {
		t.Fatalf("AppendEvent with its ttl update throttled: %v, want nil (the event committed)", err)
	}
	if got, err := messagesSince(t, p, "p", ""); err != nil || !slices.Equal(got, []string{"1:a", "2:b"}) {
		t.Fatalf("events %v, %v", got, err)
	}
	if hasTTL(t, e, "p", 1) {
		t.Fatal("event 1 has its ttl although its update was throttled")
	}
	if n := sig.Logs(slog.LevelWarn, "pipestate: an item was left without its ttl"); n != 1 {
		t.Fatalf("%d Warn records of the item left behind, want 1; logs:\n%s", n, sig.LogText())
	}
	if !strings.Contains(sig.LogText(), "EVENT#00000000000000000001") {
		t.Fatalf("the Warn record does not name the item:\n%s", sig.LogText())
	}
}
