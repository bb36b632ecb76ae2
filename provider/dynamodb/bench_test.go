package dynamodb_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/types"
)

// The benchmarks run each hot call against DynamoDB Local next to the raw SDK calls
// that do the same work (same requests, same JSON encoding and decoding), so the
// library's overhead reads as a ratio: go test -run '^$' -bench . ./provider/dynamodb
// with DYNAMODB_ENDPOINT set.

func benchEnv(b *testing.B) *env {
	b.Helper()
	if os.Getenv("DYNAMODB_ENDPOINT") == "" {
		b.Skip("DYNAMODB_ENDPOINT is not set; benchmarks need DynamoDB Local")
	}
	return testEnv(b)
}

func sAV(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
func nAV(v int64) ddbtypes.AttributeValue {
	return &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

func mustJSON(b *testing.B, v any) string {
	b.Helper()
	s, err := json.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	return string(s)
}

func BenchmarkCAS(b *testing.B) {
	e := benchEnv(b)
	ctx := context.Background()
	p := openOn(b, e.client, e)
	created := e.clock.Now()
	b.Run("pipestate", func(b *testing.B) {
		run := types.RunState{RunID: "bench-" + strconv.Itoa(b.N), PipelineID: "p", Status: types.RunRunning, CreatedAt: created}
		if err := p.PutRunState(ctx, run); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for v := range b.N {
			run.Metadata = map[string]any{"v": v}
			if ok, err := p.CompareAndSwapRunState(ctx, run.RunID, v, run); !ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	})
	b.Run("raw", func(b *testing.B) {
		runID := "raw-" + strconv.Itoa(b.N)
		listPK, listSK := "PIPELINE#p", "RUN#"+created.Format(time.RFC3339Nano)+"#"+runID
		put := func(v int, cond bool) error {
			run := types.RunState{RunID: runID, PipelineID: "p", Status: types.RunRunning, Version: v, CreatedAt: created,
				UpdatedAt: e.clock.Now(), Metadata: map[string]any{"v": v}}
			data := mustJSON(b, run)
			truth := &ddbtypes.Put{TableName: &e.table, Item: map[string]ddbtypes.AttributeValue{
				"PK": sAV("RUN#" + runID), "SK": sAV("STATE"), "data": sAV(data), "version": nAV(int64(v)),
				"listPK": sAV(listPK), "listSK": sAV(listSK)}}
			if cond {
				truth.ConditionExpression = aws.String("#v = :v AND #lpk = :lpk AND #lsk = :lsk")
				truth.ExpressionAttributeNames = map[string]string{"#v": "version", "#lpk": "listPK", "#lsk": "listSK"}
				truth.ExpressionAttributeValues = map[string]ddbtypes.AttributeValue{
					":v": nAV(int64(v - 1)), ":lpk": sAV(listPK), ":lsk": sAV(listSK)}
				truth.ReturnValuesOnConditionCheckFailure = ddbtypes.ReturnValuesOnConditionCheckFailureAllOld
			}
			_, err := e.client.TransactWriteItems(ctx, &ddb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
				{Put: truth},
				{Put: &ddbtypes.Put{TableName: &e.table, Item: map[string]ddbtypes.AttributeValue{
					"PK": sAV(listPK), "SK": sAV(listSK), "data": sAV(data)}}},
			}})
			return err
		}
		if err := put(0, false); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for v := range b.N {
			if err := put(v+1, true); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkLock(b *testing.B) {
	e := benchEnv(b)
	ctx := context.Background()
	p := openOn(b, e.client, e)
	b.Run("pipestate", func(b *testing.B) {
		for range b.N {
			if ok, err := p.AcquireLock(ctx, "bench", time.Minute); !ok || err != nil {
				b.Fatal(ok, err)
			}
			if err := p.ReleaseLock(ctx, "bench"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("raw", func(b *testing.B) {
		k := map[string]ddbtypes.AttributeValue{"PK": sAV("LOCK#raw"), "SK": sAV("LOCK")}
		for range b.N {
			now := e.clock.Now()
			_, err := e.client.UpdateItem(ctx, &ddb.UpdateItemInput{
				TableName: &e.table, Key: k,
				UpdateExpression:         aws.String("SET #h = :h, #e = :e"),
				ConditionExpression:      aws.String("attribute_not_exists(#h) OR #e <= :now"),
				ExpressionAttributeNames: map[string]string{"#h": "holder", "#e": "exp"},
				ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
					":h": sAV("lock:raw"), ":e": nAV(now.Add(time.Minute).UnixNano()), ":now": nAV(now.UnixNano())},
			})
			if err != nil {
				b.Fatal(err)
			}
			_, err = e.client.UpdateItem(ctx, &ddb.UpdateItemInput{
				TableName: &e.table, Key: k,
				UpdateExpression:         aws.String("REMOVE #h, #e"),
				ConditionExpression:      aws.String("#h = :h AND #e > :now"),
				ExpressionAttributeNames: map[string]string{"#h": "holder", "#e": "exp"},
				ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
					":h": sAV("lock:raw"), ":now": nAV(now.UnixNano())},
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// rawAppend appends ev under seq with the same transaction AppendEvent uses.
func rawAppend(ctx context.Context, e *env, pipeline string, seq int64, data string) error {
	cond := "#s = :last"
	values := map[string]ddbtypes.AttributeValue{":last": nAV(seq - 1), ":n": nAV(seq)}
	if seq == 1 {
		cond = "attribute_not_exists(#s)"
		delete(values, ":last")
	}
	_, err := e.client.TransactWriteItems(ctx, &ddb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
		{Update: &ddbtypes.Update{
			TableName: &e.table, Key: map[string]ddbtypes.AttributeValue{"PK": sAV("PIPELINE#" + pipeline), "SK": sAV("EVENTSEQ")},
			UpdateExpression: aws.String("SET #s = :n"), ConditionExpression: aws.String(cond),
			ExpressionAttributeNames: map[string]string{"#s": "seq"}, ExpressionAttributeValues: values,
			ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
		}},
		{Put: &ddbtypes.Put{TableName: &e.table, Item: map[string]ddbtypes.AttributeValue{
			"PK": sAV("PIPELINE#" + pipeline), "SK": sAV(fmt.Sprintf("EVENT#%020d", seq)), "seq": nAV(seq), "data": sAV(data)}}},
	}})
	return err
}

func benchEvent(pipeline string, i int) types.Event {
	return types.Event{Kind: "RUN_STATE_CHANGED", PipelineID: pipeline, RunID: "r1", Status: "RUNNING",
		Message: "event " + strconv.Itoa(i), Details: map[string]any{"i": i}, Timestamp: time.Unix(1_800_000_000, int64(i))}
}

func BenchmarkAppendEvent(b *testing.B) {
	e := benchEnv(b)
	ctx := context.Background()
	p := openOn(b, e.client, e)
	b.Run("pipestate", func(b *testing.B) {
		pipe := "bench-" + strconv.FormatInt(time.Now().UnixNano(), 10)
		for i := range b.N {
			if err := p.AppendEvent(ctx, benchEvent(pipe, i)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("raw", func(b *testing.B) {
		pipe := "raw-" + strconv.FormatInt(time.Now().UnixNano(), 10) // a fresh counter
		for i := range b.N {
			if err := rawAppend(ctx, e, pipe, int64(i+1), mustJSON(b, benchEvent(pipe, i))); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkReadEventsSince100(b *testing.B) {
	e := benchEnv(b)
	ctx := context.Background()
	p := openOn(b, e.client, e)
	for i := range 200 {
		if err := p.AppendEvent(ctx, benchEvent("read", i)); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("pipestate", func(b *testing.B) {
		for range b.N {
			if recs, err := p.ReadEventsSince(ctx, "read", "50", 100); len(recs) != 100 || err != nil {
				b.Fatal(len(recs), err)
			}
		}
	})
	b.Run("raw", func(b *testing.B) {
		for range b.N {
			out, err := e.client.Query(ctx, &ddb.QueryInput{
				TableName: &e.table, ConsistentRead: aws.Bool(true), Limit: aws.Int32(100),
				KeyConditionExpression:   aws.String("#pk = :pk AND #sk BETWEEN :lo AND :hi"),
				ExpressionAttributeNames: map[string]string{"#pk": "PK", "#sk": "SK"},
				ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
					":pk": sAV("PIPELINE#read"), ":lo": sAV(fmt.Sprintf("EVENT#%020d", 51)), ":hi": sAV("EVENT#99999999999999999999")},
			})
			if err != nil || len(out.Items) != 100 {
				b.Fatal(err)
			}
			recs := make([]types.EventRecord, 0, len(out.Items))
			for _, it := range out.Items {
				var ev types.Event
				if err := json.Unmarshal([]byte(it["data"].(*ddbtypes.AttributeValueMemberS).Value), &ev); err != nil {
					b.Fatal(err)
				}
				recs = append(recs, types.EventRecord{StreamID: it["seq"].(*ddbtypes.AttributeValueMemberN).Value, Event: ev})
			}
			sinkRecs = recs
		}
	})
}

func BenchmarkGetTraits(b *testing.B) {
	e := benchEnv(b)
	ctx := context.Background()
	p := openOn(b, e.client, e)
	for i := range 10 {
		tr := types.TraitEvaluation{TraitType: "trait" + strconv.Itoa(i), Status: types.TraitPass,
			Value: map[string]any{"rows": i}, EvaluatedAt: e.clock.Now()}
		if err := p.PutTrait(ctx, "traits", tr, time.Hour); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("pipestate", func(b *testing.B) {
		for range b.N {
			if ts, err := p.GetTraits(ctx, "traits"); len(ts) != 10 || err != nil {
				b.Fatal(len(ts), err)
			}
		}
	})
	b.Run("raw", func(b *testing.B) {
		for range b.N {
			now := e.clock.Now().UnixNano()
			out, err := e.client.Query(ctx, &ddb.QueryInput{
				TableName: &e.table, ConsistentRead: aws.Bool(true),
				KeyConditionExpression:   aws.String("#pk = :pk AND begins_with(#sk, :pre)"),
				ExpressionAttributeNames: map[string]string{"#pk": "PK", "#sk": "SK"},
				ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
					":pk": sAV("PIPELINE#traits"), ":pre": sAV("TRAIT#")},
			})
			if err != nil || len(out.Items) != 10 {
				b.Fatal(err)
			}
			traits := make([]types.TraitEvaluation, 0, len(out.Items))
			for _, it := range out.Items {
				if exp, ok := it["exp"].(*ddbtypes.AttributeValueMemberN); ok {
					if n, _ := strconv.ParseInt(exp.Value, 10, 64); n <= now {
						continue
					}
				}
				var tr types.TraitEvaluation
				if err := json.Unmarshal([]byte(it["data"].(*ddbtypes.AttributeValueMemberS).Value), &tr); err != nil {
					b.Fatal(err)
				}
				traits = append(traits, tr)
			}
			sinkTraits = traits
		}
	})
}

// Sinks keep the raw benchmarks' results alive, as the provider's are.
var (
	sinkRecs   []types.EventRecord
	sinkTraits []types.TraitEvaluation
)
