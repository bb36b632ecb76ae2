package testenv

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// StreamReader reads the DynamoDB stream of a table of DynamoDB Local (its
// StreamSpecification enabled) from its oldest record, as a Lambda's event
// source mapping does: shard by shard, a parent shard's records before its
// children's, each shard in sequence-number order.
type StreamReader struct {
	client *dynamodbstreams.Client
	arn    string
	iters  map[string]*string // shard ID -> the iterator to read on from; nil once closed
}

// NewStreamReader returns a reader of table's stream (DescribeTable's
// LatestStreamArn) through a streams client of client's region, endpoint and
// credentials. It fails t when the table has no stream.
func NewStreamReader(t testing.TB, client *dynamodb.Client, table string) *StreamReader {
	t.Helper()
	out, err := client.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatalf("testenv: describe table %s: %v", table, err)
	}
	if out.Table.LatestStreamArn == nil {
		t.Fatalf("testenv: table %s has no stream", table)
	}
	o := client.Options()
	return &StreamReader{
		client: dynamodbstreams.New(dynamodbstreams.Options{Region: o.Region, BaseEndpoint: o.BaseEndpoint, Credentials: o.Credentials}),
		arn:    *out.Table.LatestStreamArn,
		iters:  map[string]*string{},
	}
}

// Read returns every record appended to the stream since the last Read (the
// first: since the stream's oldest record), and fails t on an error.
func (r *StreamReader) Read(t testing.TB) []streamtypes.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var shards []streamtypes.Shard
	for start := (*string)(nil); ; {
		out, err := r.client.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: &r.arn, ExclusiveStartShardId: start})
		if err != nil {
			t.Fatalf("testenv: describe stream: %v", err)
		}
		shards = append(shards, out.StreamDescription.Shards...)
		if start = out.StreamDescription.LastEvaluatedShardId; start == nil {
			break
		}
	}
	var recs []streamtypes.Record
	done := map[string]bool{}
	for progress := true; progress; { // parents first: a shard waits for its parent
		progress = false
		for _, s := range shards {
			id := aws.ToString(s.ShardId)
			if done[id] {
				continue
			}
			if p := aws.ToString(s.ParentShardId); p != "" && !done[p] && r.known(shards, p) {
				continue
			}
			recs = append(recs, r.readShard(ctx, t, id)...)
			done[id], progress = true, true
		}
	}
	return recs
}

// known reports whether shards holds the shard id.
func (r *StreamReader) known(shards []streamtypes.Shard, id string) bool {
	for _, s := range shards {
		if aws.ToString(s.ShardId) == id {
			return true
		}
	}
	return false
}

// readShard reads the shard id on from where the last read stopped until a
// read returns no record.
func (r *StreamReader) readShard(ctx context.Context, t testing.TB, id string) []streamtypes.Record {
	iter, seen := r.iters[id]
	if seen && iter == nil {
		return nil // closed
	}
	if !seen {
		out, err := r.client.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: &r.arn, ShardId: &id,
			ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon})
		if err != nil {
			t.Fatalf("testenv: shard iterator of %s: %v", id, err)
		}
		iter = out.ShardIterator
	}
	var recs []streamtypes.Record
	for iter != nil {
		out, err := r.client.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
		if err != nil {
			t.Fatalf("testenv: get records of %s: %v", id, err)
		}
		recs = append(recs, out.Records...)
		r.iters[id] = out.NextShardIterator
		if len(out.Records) == 0 {
			break
		}
		iter = out.NextShardIterator
	}
	return recs
}

// LambdaRecordJSON is r in the JSON a Lambda function receives for it from the
// table's stream (an element of the event's "Records"), from a table ARN of
// account 123456789012 in us-east-1.
func LambdaRecordJSON(t testing.TB, r streamtypes.Record) []byte {
	t.Helper()
	image := func(m map[string]streamtypes.AttributeValue) json.RawMessage {
		if m == nil {
			return nil
		}
		av, err := attributevalue.FromDynamoDBStreamsMap(m)
		if err == nil {
			var b []byte
			if b, err = attributevalue.MarshalMapJSON(av); err == nil {
				return b
			}
		}
		t.Fatalf("testenv: image as JSON: %v", err)
		return nil
	}
	change := map[string]any{
		"Keys": image(r.Dynamodb.Keys), "SequenceNumber": aws.ToString(r.Dynamodb.SequenceNumber),
		"SizeBytes": aws.ToInt64(r.Dynamodb.SizeBytes), "StreamViewType": "NEW_AND_OLD_IMAGES",
	}
	if at := r.Dynamodb.ApproximateCreationDateTime; at != nil {
		change["ApproximateCreationDateTime"] = at.Unix()
	}
	for name, m := range map[string]map[string]streamtypes.AttributeValue{"NewImage": r.Dynamodb.NewImage, "OldImage": r.Dynamodb.OldImage} {
		if m != nil {
			change[name] = image(m)
		}
	}
	rec := map[string]any{
		"eventID": aws.ToString(r.EventID), "eventName": string(r.EventName), "eventVersion": "1.1",
		"eventSource": "aws:dynamodb", "awsRegion": "us-east-1", "dynamodb": change,
		"eventSourceARN": "arn:aws:dynamodb:us-east-1:123456789012:table/T/stream/2026-11-28T00:00:00.000",
	}
	if u := r.UserIdentity; u != nil {
		rec["userIdentity"] = map[string]any{"type": aws.ToString(u.Type), "principalId": aws.ToString(u.PrincipalId)}
	}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatalf("testenv: record as JSON: %v", err)
	}
	return b
}
