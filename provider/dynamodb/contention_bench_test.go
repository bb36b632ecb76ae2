package dynamodb_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/pipestate/pipestate/internal/testkit/benchpair"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider/dynamodb"
)

// BenchmarkAppendEventContention appends to one pipeline from several instances
// at once, benchWorkers goroutines spread over 1, 4 or 16 Providers, with the
// counter item (the pair's first side) and without it (WithEventCounter(false),
// the second side): what it measures is the write units and requests per event
// under contention, by AWS's rules (testenv.Capacity, refused attempts
// included), and how many events a second each numbering commits:
//
//	go test -run '^$' -bench AppendEventContention -benchtime 1280x ./provider/dynamodb
func BenchmarkAppendEventContention(b *testing.B) {
	hc, requests := testenv.CountingHTTPClient()
	base := benchEnv(b)
	e := &env{client: testenv.DynamoDBClient(b, benchUnits.Option(), func(o *ddb.Options) { o.HTTPClient = hc }),
		table: base.table, clock: base.clock}
	ctx := context.Background()
	for _, n := range []int{1, 4, 16} {
		b.Run("instances="+strconv.Itoa(n), func(b *testing.B) {
			counted, chained := make([]*dynamodb.Provider, n), make([]*dynamodb.Provider, n)
			for i := range n {
				counted[i] = openOn(b, e.client, e)
				chained[i] = openOn(b, e.client, e, dynamodb.WithEventCounter(false))
			}
			pipe := strconv.FormatInt(time.Now().UnixNano(), 36)
			benchpair.RunParallel(b, benchWorkers, func(w, i int) error {
				return counted[w%n].AppendEvent(ctx, benchEvent("counted-"+pipe, i))
			}, func(w, i int) error {
				return chained[w%n].AppendEvent(ctx, benchEvent("chained-"+pipe, i))
			}, testenv.CapacityMeter(&benchUnits), benchpair.Meter{Unit: "requests", Read: func() (float64, error) {
				return float64(requests.Load()), nil
			}})
		})
	}
}
