package ddbstate_test

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/pipestate/pipestate/internal/testkit/benchpair"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/monoid/sketch/hll"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/ddbstate"
	"github.com/pipestate/pipestate/state/internal/storekey"
	"github.com/pipestate/pipestate/state/internal/storetest"
)

// Benchmarks run against DynamoDB Local when DYNAMODB_ENDPOINT is set (or Docker
// answers). Each library call runs beside the raw client sending the same requests
// (the same conditions on the expiry and the bounds, the same tokens), interleaved
// in rounds (internal/testkit/benchpair), sequentially ("seq") and on 64 goroutines
// ("parallel64", one key per worker, so that they never conflict):
//
//	DYNAMODB_ENDPOINT=http://127.0.0.1:8000 go test -run '^$' -bench . -benchtime 2000x ./state/ddbstate

// benchUnits counts the capacity units the benchmarks' requests consume
// (ReturnConsumedCapacity); pair reports them per call of each side as
// capacity-units/op and raw-capacity-units/op. Benchmarks run one at a time.
var benchUnits testenv.Capacity

// pair runs lib against raw sequentially and on each of parallel goroutine counts.
func pair(b *testing.B, parallel []int, lib, raw func(w, i int) error) {
	b.Helper()
	benchpair.Modes(b, append([]int{1}, parallel...), func(*testing.B, int) (func(w, i int) error, func(w, i int) error) {
		return lib, raw
	}, testenv.CapacityMeter(&benchUnits))
}

var (
	s   = func(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
	n   = func(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberN{Value: v} }
	now = func() string { return strconv.FormatInt(time.Now().Unix(), 10) }
)

// rawKey is the key of (kind, entity) at bucket 0, as the stores lay it out.
func rawKey(kind, entity string) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{"pk": s(kind + "#" + entity), "sk": n("0")}
}

// rawAdd is the request of an Int64SumStore merge of delta > 0 with no expiry: an
// ADD conditioned on the item being live and the sum staying within int64.
func rawAdd(table, entity string, delta int64) *ddbtypes.Update {
	return &ddbtypes.Update{
		TableName: &table, Key: rawKey(storekey.Int64Sum, entity),
		UpdateExpression:         ptr("ADD #v :d REMOVE #ttl"),
		ConditionExpression:      ptr("(attribute_not_exists(#ttl) OR #ttl > :now) AND (attribute_not_exists(#v) OR #v <= :b)"),
		ExpressionAttributeNames: map[string]string{"#v": "v", "#ttl": "ttl"},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
			":d": n(strconv.FormatInt(delta, 10)), ":now": n(now()), ":b": n(strconv.FormatInt(int64(1<<63-1)-delta, 10))},
		ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
	}
}

func BenchmarkMergeUpdate(b *testing.B) {
	e := envFor(b)
	c := testenv.DynamoDBClient(b, benchUnits.Option())
	sum, _ := ddbstate.NewInt64SumStore(c, e.values)
	max, _ := ddbstate.NewInt64MaxStore(c, e.values)
	bs, err := ddbstate.NewBytesStore(c, e.bytes, storetest.Counter{})
	if err != nil {
		b.Fatal(err)
	}
	one := storetest.Counter{}.Of(1)
	run := strconv.FormatInt(time.Now().UnixNano(), 36) // fresh keys per run (-count)
	entity := func(w int) string { return run + "-w" + strconv.Itoa(w) }
	b.Run("int64sum", func(b *testing.B) {
		pair(b, []int{64}, func(w, _ int) error {
			return sum.MergeUpdate(b.Context(), state.Key{Entity: "lib-" + entity(w)}, 1, 0)
		}, func(w, _ int) error {
			u := rawAdd(e.values, "raw-"+entity(w), 1)
			_, err := c.UpdateItem(b.Context(), &ddb.UpdateItemInput{TableName: u.TableName, Key: u.Key,
				UpdateExpression: u.UpdateExpression, ConditionExpression: u.ConditionExpression,
				ExpressionAttributeNames: u.ExpressionAttributeNames, ExpressionAttributeValues: u.ExpressionAttributeValues,
				ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld})
			return err
		})
	})
	b.Run("int64max", func(b *testing.B) { // a rising value: one conditional SET
		// Each side's own counter: the benchmark function runs more than once
		// (b.N = 1 first), and every call must raise the maximum.
		var libMax, rawMax atomic.Int64
		pair(b, nil, func(int, int) error {
			return max.MergeUpdate(b.Context(), state.Key{Entity: "lib-m" + run}, libMax.Add(1), 0)
		}, func(int, int) error {
			_, err := c.UpdateItem(b.Context(), &ddb.UpdateItemInput{
				TableName: &e.values, Key: rawKey(storekey.Int64Max, "raw-m"+run), UpdateExpression: ptr("SET #v = :d REMOVE #ttl"),
				ConditionExpression:      ptr("attribute_not_exists(#v) OR #v < :d OR #ttl <= :now"),
				ExpressionAttributeNames: map[string]string{"#v": "v", "#ttl": "ttl"},
				ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
					":d": n(strconv.FormatInt(rawMax.Add(1), 10)), ":now": n(now())},
				ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
			})
			return err
		})
	})
	b.Run("bytes", func(b *testing.B) { // GetItem + PutItem conditioned on the version read
		pair(b, nil, func(int, int) error {
			return bs.MergeUpdate(b.Context(), state.Key{Entity: "b" + run}, one, 0)
		}, func(int, int) error {
			key := rawKey(storekey.Bytes(storetest.Counter{}.Kind()), "raw-b"+run)
			out, err := c.GetItem(b.Context(), &ddb.GetItemInput{TableName: &e.bytes, Key: key, ConsistentRead: ptr(true),
				ProjectionExpression: ptr("#v, #ver, #ttl"), ExpressionAttributeNames: map[string]string{"#v": "v", "#ver": "ver", "#ttl": "ttl"}})
			if err != nil {
				return err
			}
			var cur []byte
			cond, values := "attribute_not_exists(#pk)", map[string]ddbtypes.AttributeValue{}
			ver := ""
			if v, ok := out.Item["v"].(*ddbtypes.AttributeValueMemberB); ok {
				cur, ver = v.Value, out.Item["ver"].(*ddbtypes.AttributeValueMemberS).Value
				cond, values[":ver"] = "#ver = :ver", s(ver)
			}
			item := rawKey(storekey.Bytes(storetest.Counter{}.Kind()), "raw-b"+run)
			item["v"] = &ddbtypes.AttributeValueMemberB{Value: storetest.Counter{}.Combine(cur, one)}
			item["ver"] = s(storekey.PushToken(ver, storekey.Token()))
			names := map[string]string{"#ver": "ver"}
			if len(values) == 0 {
				names, values = map[string]string{"#pk": "pk"}, nil
			}
			_, err = c.PutItem(b.Context(), &ddb.PutItemInput{TableName: &e.bytes, Item: item, ConditionExpression: &cond,
				ExpressionAttributeNames: names, ExpressionAttributeValues: values})
			return err
		})
	})
}

func BenchmarkMergeUpdateOnce(b *testing.B) {
	e := envFor(b)
	c := testenv.DynamoDBClient(b, benchUnits.Option())
	sum, err := ddbstate.NewInt64SumStore(c, e.values, ddbstate.WithDedupTable(e.dedup), ddbstate.WithDedupTTL(time.Hour))
	if err != nil {
		b.Fatal(err)
	}
	// Event IDs are fresh per run (-count) and per call: the seq and parallel modes
	// both count i from 0.
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	var events atomic.Int64
	event := func() string { return run + "-" + strconv.FormatInt(events.Add(1), 10) }
	pair(b, []int{64}, func(w, i int) error {
		k := state.Key{Entity: "lib-w" + strconv.Itoa(w)}
		applied, err := sum.MergeUpdateOnce(b.Context(), event(), k, 1, 0)
		if err == nil && !applied {
			err = fmt.Errorf("call %d: event not applied", i)
		}
		return err
	}, func(w, i int) error { // the claim (conditioned on none live) and the ADD in one transaction
		k := state.Key{Entity: "raw-w" + strconv.Itoa(w)}
		claim := "once#" + e.values + "#" + storekey.Int64Sum + "#" + state.OnceClaimID(k, event())
		_, err := c.TransactWriteItems(b.Context(), &ddb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
			{Put: &ddbtypes.Put{TableName: &e.dedup,
				Item: map[string]ddbtypes.AttributeValue{"pk": s(claim), "tok": s(storekey.Token()),
					"ttl": n(strconv.FormatInt(time.Now().Add(time.Hour).Unix()+1, 10))},
				ConditionExpression:                 ptr("attribute_not_exists(#pk) OR #ttl <= :now"),
				ExpressionAttributeNames:            map[string]string{"#pk": "pk", "#ttl": "ttl"},
				ExpressionAttributeValues:           map[string]ddbtypes.AttributeValue{":now": n(now())},
				ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
			}},
			{Update: rawAdd(e.values, k.Entity, 1)},
		}})
		return err
	})
}

// BenchmarkGetMany1000 reads 1,000 keys: 10 concurrent BatchGetItem calls of 100
// keys each, joined back to the keys' order. The parallel variant runs 16 readers
// (16,000 keys at a time is what DynamoDB Local on a small machine sustains).
func BenchmarkGetMany1000(b *testing.B) {
	e := envFor(b)
	c := testenv.DynamoDBClient(b, benchUnits.Option())
	st, err := ddbstate.NewInt64SumStore(c, e.values)
	if err != nil {
		b.Fatal(err)
	}
	ks := make([]state.Key, 1000)
	for i := range ks {
		ks[i] = state.Key{Entity: strconv.Itoa(i)}
		if err := st.MergeUpdate(b.Context(), ks[i], 1, 0); err != nil {
			b.Fatal(err)
		}
	}
	pair(b, []int{16}, func(int, int) error {
		_, _, err := st.GetMany(b.Context(), ks)
		return err
	}, func(int, int) error {
		vals, found := make([]int64, len(ks)), make([]bool, len(ks))
		pos := make(map[string]int, len(ks))
		for i, k := range ks {
			pos[k.Entity] = i
		}
		var mu sync.Mutex
		var g errgroup.Group
		for lo := 0; lo < len(ks); lo += 100 {
			g.Go(func() error {
				keys := make([]map[string]ddbtypes.AttributeValue, 0, 100)
				for _, k := range ks[lo : lo+100] {
					keys = append(keys, rawKey(storekey.Int64Sum, k.Entity))
				}
				out, err := c.BatchGetItem(b.Context(), &ddb.BatchGetItemInput{RequestItems: map[string]ddbtypes.KeysAndAttributes{
					e.values: {Keys: keys, ConsistentRead: ptr(true), ProjectionExpression: ptr("#pk, #sk, #v, #ttl"),
						ExpressionAttributeNames: map[string]string{"#pk": "pk", "#sk": "sk", "#v": "v", "#ttl": "ttl"}}}})
				if err != nil {
					return err
				}
				if len(out.UnprocessedKeys) > 0 {
					return fmt.Errorf("%d tables with unprocessed keys", len(out.UnprocessedKeys))
				}
				now := time.Now().Unix()
				mu.Lock()
				defer mu.Unlock()
				for _, it := range out.Responses[e.values] {
					if t, ok := it["ttl"].(*ddbtypes.AttributeValueMemberN); ok {
						if exp, _ := strconv.ParseInt(t.Value, 10, 64); exp <= now {
							continue
						}
					}
					i := pos[it["pk"].(*ddbtypes.AttributeValueMemberS).Value[len(storekey.Int64Sum)+1:]]
					v, err := strconv.ParseInt(it["v"].(*ddbtypes.AttributeValueMemberN).Value, 10, 64)
					if err != nil {
						return err
					}
					vals[i], found[i] = v, true
				}
				return nil
			})
		}
		return g.Wait()
	})
}

// BenchmarkHLLHotKey merges one-item HLL deltas into one hot key from 1, 4 and 16
// concurrent writers (two store instances), reporting ops/s and lost
// compare-and-swap races per op.
func BenchmarkHLLHotKey(b *testing.B) {
	m, err := hll.New(hll.DefaultPrecision)
	if err != nil {
		b.Fatal(err)
	}
	for _, writers := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			e := envFor(b)
			stores := make([]*ddbstate.BytesStore, 2)
			for i := range stores {
				s, err := ddbstate.NewBytesStore(testenv.DynamoDBClient(b), e.bytes, m, ddbstate.WithMaxRetries(1000))
				if err != nil {
					b.Fatal(err)
				}
				stores[i] = s
			}
			k := state.Key{Entity: "visitors"}
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for w := range writers {
				wg.Go(func() {
					s := stores[w%2]
					for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
						if err := s.MergeUpdate(b.Context(), k, m.Delta(strconv.FormatInt(i, 10)), 0); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			lost := ddbstate.LostRaces(stores[0]) + ddbstate.LostRaces(stores[1])
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
			b.ReportMetric(float64(lost)/float64(b.N), "retries/op")
		})
	}
}

func ptr[T any](v T) *T { return &v }
