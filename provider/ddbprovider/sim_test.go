package ddbprovider_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/internal/testkit/faults"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/providertest/sim"
	"github.com/pipestate/pipestate/types"
)

// TestSim simulates the provider on DynamoDB Local (package providertest/sim):
// the providers' fake clock jumps, and a sweeper deletes the items whose ttl
// passed, as DynamoDB's TTL does up to 48 hours late (DynamoDB Local never
// does). Instances restart with other options: a one-hour retention of every
// kind.
func TestSim(t *testing.T) {
	testEnv(t)
	h := conformanceHarness()
	short := provider.Retention{Runs: time.Hour, RunLogs: time.Hour, Reruns: time.Hour, Replays: time.Hour,
		LateArrivals: time.Hour, CascadeMarkers: time.Hour, Events: time.Hour, MarkerLog: time.Hour}
	// Each run's table is reached through a faults.Transport (the SDK making
	// up to 3 attempts), created with its env by the run's first Open.
	var mu sync.Mutex
	fts := map[string]*simFaults{}
	ft := func(t *testing.T) *simFaults {
		mu.Lock()
		defer mu.Unlock()
		f, ok := fts[t.Name()]
		if !ok {
			f = &simFaults{ft: faults.NewTransport()}
			faultEnv(t, f.ft, 3)
			fts[t.Name()] = f
			name := t.Name()
			t.Cleanup(func() { mu.Lock(); delete(fts, name); mu.Unlock() })
		}
		return f
	}
	open := h.Open
	h.Open = func(t *testing.T) provider.Provider { ft(t); return open(t) }
	write := func(op string, _ []byte) bool {
		return op == "PutItem" || op == "UpdateItem" || op == "TransactWriteItems" || op == "DeleteItem"
	}
	base := func(t *testing.T, opts ...ddbprovider.Option) provider.Provider {
		ft(t)
		e := testEnv(t)
		return openOn(t, pageCap{e.client, conformancePage}, e, append([]ddbprovider.Option{ddbprovider.WithEventRetention(conformanceRetention)}, opts...)...)
	}
	sh := sim.Harness{
		Harness: h,
		Faults: &sim.Faults{
			LoseReply: func(t *testing.T) {
				f := ft(t)
				f.lost = f.ft.Dropped()
				f.ft.DropReply(write)
			},
			Disarm: func(t *testing.T) bool {
				f := ft(t)
				f.ft.DropReply(nil)
				return f.ft.Dropped() > f.lost
			},
			OpenNoRetry: func(t *testing.T) provider.Provider {
				f, e := ft(t), testEnv(t)
				c := testenv.DynamoDBClient(t, func(o *ddb.Options) {
					o.HTTPClient = &http.Client{Transport: f.ft}
					o.RetryMaxAttempts = 1
				})
				return openOn(t, pageCap{c, conformancePage}, e, ddbprovider.WithEventRetention(conformanceRetention))
			},
		},
		Sweep: func(t *testing.T) { sweepTTL(t, testEnv(t)) },
		Variants: []sim.Variant{
			{Name: "1h retention", Retention: &short, Open: func(t *testing.T) provider.Provider {
				return base(t, ddbprovider.WithRetention(short), ddbprovider.WithEventRetention(time.Hour), ddbprovider.WithMarkerLogRetention(time.Hour))
			}},
		},
		Corruptions: []sim.Corruption{{Name: "an event's seq attribute a string", Kind: provider.KindEvent, Append: func(t *testing.T, id ...string) {
			corruptEventSeq(t, base(t), id[0])
		}}},
		// The watchers poll (20 ms doubling to 1 s), and DynamoDB Local takes
		// up to seconds a request on a loaded machine; a healthy watch stops
		// waiting as soon as it yielded what the model expects.
		WatchWait: 10 * time.Second,
		Corpus:    "testdata/sim/dynamodb.seeds",
		Budget:    30 * time.Second,
	}
	sim.Run(t, sh)
}

// simFaults is a simulation run's fault injector and its count of dropped
// replies when it was last armed.
type simFaults struct {
	ft   *faults.Transport
	lost int
}

// corruptEventSeq appends an event to pipeline through p, then writes the seq
// attribute of its item as a string.
func corruptEventSeq(t *testing.T, p provider.Provider, pipeline string) {
	t.Helper()
	ctx := context.Background()
	if err := p.AppendEvent(ctx, types.Event{Kind: "SIM", PipelineID: pipeline, Message: "corrupt"}); err != nil {
		t.Fatalf("corrupt: AppendEvent: %v", err)
	}
	_ = p.Stop(ctx)
	e := testEnv(t)
	out, err := e.client.Query(ctx, &ddb.QueryInput{TableName: &e.table, ConsistentRead: aws.Bool(true),
		ScanIndexForward: aws.Bool(false), Limit: aws.Int32(1),
		KeyConditionExpression:    aws.String("PK = :pk AND begins_with(SK, :ev)"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":pk": sAV("PIPELINE#" + pipeline), ":ev": sAV("EVENT#")}})
	if err != nil || len(out.Items) != 1 {
		t.Fatalf("corrupt: find the event: %v, %d items", err, len(out.Items))
	}
	it := out.Items[0]
	if _, err := e.client.UpdateItem(ctx, &ddb.UpdateItemInput{TableName: &e.table,
		Key:                       map[string]ddbtypes.AttributeValue{"PK": it["PK"], "SK": it["SK"]},
		UpdateExpression:          aws.String("SET #s = :s"),
		ExpressionAttributeNames:  map[string]string{"#s": "seq"},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":s": sAV("not a number")}}); err != nil {
		t.Fatalf("corrupt: set seq: %v", err)
	}
}
