package ddbprovider_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

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
	base := func(t *testing.T, opts ...ddbprovider.Option) provider.Provider {
		e := testEnv(t)
		return openOn(t, pageCap{e.client, conformancePage}, e, append([]ddbprovider.Option{ddbprovider.WithEventRetention(conformanceRetention)}, opts...)...)
	}
	sh := sim.Harness{
		Harness: h,
		Sweep:   func(t *testing.T) { sweepTTL(t, testEnv(t)) },
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
