package tiered_test

import (
	"context"
	"slices"
	"testing"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/cache"
	"github.com/pipestate/pipestate/state/ddbstate"
	"github.com/pipestate/pipestate/state/tiered"
)

// BenchmarkHotGet reads one hot key of an Int64SumStore on DynamoDB Local: from
// DynamoDB, through the Redis tier (redis-server), and through the in-process
// cache. It reports the latency percentiles of one Get and the DynamoDB requests
// per 1,000 reads. A write through the tier every 100 reads keeps the key
// changing, so the tier's figures include its fills and write-throughs.
//
//	make servers && source .servers/env
//	go test -run '^$' -bench HotGet -benchtime 5000x ./state/tiered/
func BenchmarkHotGet(b *testing.B) {
	hc, requests := testenv.CountingHTTPClient()
	client := testenv.DynamoDBClient(b, func(o *ddb.Options) { o.HTTPClient = hc })
	table := testenv.UniqueName(b)
	testenv.DynamoDBTable(b, client, table, func(ctx context.Context, name string) error {
		return ddbstate.CreateStoreTable(ctx, client, name)
	})
	rc := goredis.NewClient(&goredis.Options{Addr: testenv.RedisAddr(b)})
	b.Cleanup(func() { _ = rc.Close() })
	prefix := testenv.RedisPrefix(b)
	source := func() *ddbstate.Int64SumStore {
		s, err := ddbstate.NewInt64SumStore(client, table)
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	for _, c := range []struct {
		name string
		open func() state.Store[int64]
	}{
		{"dynamodb", func() state.Store[int64] { return source() }},
		{"tiered", func() state.Store[int64] {
			s, err := tiered.New[int64](source(), rc, prefix)
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
		{"cache", func() state.Store[int64] {
			s, err := cache.New[int64](source())
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			s, k, ctx := c.open(), state.Key{Entity: "hot-" + c.name}, b.Context()
			if err := s.MergeUpdate(ctx, k, 1, 0); err != nil {
				b.Fatal(err)
			}
			lat := make([]time.Duration, 0, b.N)
			requests.Reset()
			b.ResetTimer()
			for i := range b.N {
				if i%100 == 99 {
					if err := s.MergeUpdate(ctx, k, 1, 0); err != nil {
						b.Fatal(err)
					}
				}
				start := time.Now()
				if _, _, err := s.Get(ctx, k); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(lat)
			writes := int64(b.N / 100) // one request each (an uncontended ADD)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
			b.ReportMetric(float64(requests.Load()-writes)*1000/float64(b.N), "ddb-reqs/1000-reads")
		})
	}
}
