package dynamodb_test

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/pipestate/pipestate/internal/testenv"
	"github.com/pipestate/pipestate/monoid/sketch/hll"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/dynamodb"
	"github.com/pipestate/pipestate/state/internal/storetest"
)

// Benchmarks run against DynamoDB Local when DYNAMODB_ENDPOINT is set (or Docker
// answers). Each library call sits beside the raw client doing the same requests:
//
//	DYNAMODB_ENDPOINT=http://127.0.0.1:8000 go test -run '^$' -bench . ./state/dynamodb

func rawKey(entity string) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{
		"pk": &ddbtypes.AttributeValueMemberS{Value: entity},
		"sk": &ddbtypes.AttributeValueMemberN{Value: "0"},
	}
}

func BenchmarkMergeUpdate(b *testing.B) {
	e := envFor(b)
	c := testenv.DynamoDBClient(b)
	sum, _ := dynamodb.NewInt64SumStore(c, e.values)
	fsum, _ := dynamodb.NewFloat64SumStore(c, e.values)
	max, _ := dynamodb.NewInt64MaxStore(c, e.values)
	bs, err := dynamodb.NewBytesStore(c, e.bytes, storetest.Counter{})
	if err != nil {
		b.Fatal(err)
	}
	one := storetest.Counter{}.Of(1)
	add := func(entity, n string) error { // UpdateItem ADD without the expiry condition
		_, err := c.UpdateItem(b.Context(), &ddb.UpdateItemInput{
			TableName: &e.values, Key: rawKey(entity), UpdateExpression: ptr("ADD v :d"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":d": &ddbtypes.AttributeValueMemberN{Value: n}},
		})
		return err
	}
	cases := []struct {
		name string
		op   func(i int) error
	}{
		{"int64sum", func(int) error { return sum.MergeUpdate(b.Context(), state.Key{Entity: "i"}, 1, 0) }},
		{"int64sum-raw", func(int) error { return add("raw-i", "1") }},
		{"float64sum", func(int) error { return fsum.MergeUpdate(b.Context(), state.Key{Entity: "f"}, 0.5, 0) }},
		{"float64sum-raw", func(int) error { return add("raw-f", "0.5") }},
		{"int64max", func(i int) error { return max.MergeUpdate(b.Context(), state.Key{Entity: "m"}, int64(i), 0) }},
		{"int64max-raw", func(i int) error { // conditional SET, a failed condition ignored
			_, err := c.UpdateItem(b.Context(), &ddb.UpdateItemInput{
				TableName: &e.values, Key: rawKey("raw-m"), UpdateExpression: ptr("SET v = :d"),
				ConditionExpression:       ptr("attribute_not_exists(v) OR v < :d"),
				ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":d": &ddbtypes.AttributeValueMemberN{Value: strconv.Itoa(i)}},
			})
			return err
		}},
		{"bytes", func(int) error { return bs.MergeUpdate(b.Context(), state.Key{Entity: "b"}, one, 0) }},
		{"bytes-raw", func(int) error { // GetItem + PutItem: the same round trips, no CAS
			out, err := c.GetItem(b.Context(), &ddb.GetItemInput{TableName: &e.bytes, Key: rawKey("raw-b"), ConsistentRead: ptr(true)})
			if err != nil {
				return err
			}
			var cur []byte
			if v, ok := out.Item["v"].(*ddbtypes.AttributeValueMemberB); ok {
				cur = v.Value
			}
			item := rawKey("raw-b")
			item["v"] = &ddbtypes.AttributeValueMemberB{Value: storetest.Counter{}.Combine(cur, one)}
			_, err = c.PutItem(b.Context(), &ddb.PutItemInput{TableName: &e.bytes, Item: item})
			return err
		}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				i++
				if err := tc.op(i); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkGetMany1000(b *testing.B) {
	e := envFor(b)
	c := testenv.DynamoDBClient(b)
	s, err := dynamodb.NewInt64SumStore(c, e.values)
	if err != nil {
		b.Fatal(err)
	}
	ks := make([]state.Key, 1000)
	for i := range ks {
		ks[i] = state.Key{Entity: strconv.Itoa(i)}
		if err := s.MergeUpdate(b.Context(), ks[i], 1, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("lib", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := s.GetMany(b.Context(), ks); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("raw", func(b *testing.B) { // 10 concurrent BatchGetItem of 100 keys
		for b.Loop() {
			var g errgroup.Group
			for lo := 0; lo < len(ks); lo += 100 {
				g.Go(func() error {
					keys := make([]map[string]ddbtypes.AttributeValue, 0, 100)
					for _, k := range ks[lo : lo+100] {
						keys = append(keys, rawKey(k.Entity))
					}
					_, err := c.BatchGetItem(b.Context(), &ddb.BatchGetItemInput{
						RequestItems: map[string]ddbtypes.KeysAndAttributes{e.values: {Keys: keys, ConsistentRead: ptr(true)}},
					})
					return err
				})
			}
			if err := g.Wait(); err != nil {
				b.Fatal(err)
			}
		}
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
			stores := make([]*dynamodb.BytesStore, 2)
			for i := range stores {
				s, err := dynamodb.NewBytesStore(testenv.DynamoDBClient(b), e.bytes, m, dynamodb.WithMaxRetries(1000))
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
			lost := dynamodb.LostRaces(stores[0]) + dynamodb.LostRaces(stores[1])
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
			b.ReportMetric(float64(lost)/float64(b.N), "retries/op")
		})
	}
}

func ptr[T any](v T) *T { return &v }
