package lincheck_test

import (
	"context"
	"math/rand/v2"
	"testing"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/pipestate/pipestate/internal/testkit/faults"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/ddbstate"
)

// faultRate is the share of DynamoDB requests that meet a random fault.
const faultRate = 0.1

// dynamodbTarget returns storage in fresh tables of DynamoDB Local, reached through
// one faults.Transport: a share of requests is throttled, meets a transaction
// conflict or an internal error, has its connection reset, or has its response lost
// after DynamoDB applied it; now and then the response to the next write is lost.
// The SDK retries (3 attempts, backoff capped at 5ms, no retry quota), so most
// faults are hidden and some reach the caller as unknown outcomes. Its event
// stores are providers of one table.
func dynamodbTarget(t *testing.T) target {
	admin := testenv.DynamoDBClient(t)
	tr := faults.NewTransport()
	client := func(t *testing.T) *ddb.Client {
		return testenv.DynamoDBClient(t, tr.DynamoDBOptions(3)) // the SDK's default attempts
	}
	table := func(t *testing.T, suffix string, create func(ctx context.Context, name string) error) string {
		name := testenv.UniqueName(t) + suffix
		testenv.DynamoDBTable(t, admin, name, create)
		return name
	}
	providers := func(t *testing.T, n int, opts func(i int) []ddbprovider.Option) []*ddbprovider.Provider {
		name := table(t, "", func(ctx context.Context, name string) error { return ddbprovider.CreateTable(ctx, admin, name) })
		var out []*ddbprovider.Provider
		for i := range n {
			p, err := ddbprovider.New(client(t), name, append(opts(i), ddbprovider.WithOwner(owner(i)))...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = p.Stop(context.Background()) })
			out = append(out, p)
		}
		return out
	}
	return target{
		providers: func(t *testing.T, n int) []fullProvider {
			var out []fullProvider
			for _, p := range providers(t, n, func(int) []ddbprovider.Option { return nil }) {
				out = append(out, p)
			}
			return out
		},
		events: func(t *testing.T, n int) []provider.EventStore {
			var out []provider.EventStore
			for _, p := range providers(t, n, func(int) []ddbprovider.Option { return nil }) {
				out = append(out, p)
			}
			return out
		},
		counters: func(t *testing.T, n int) []state.OnceStore[int64] {
			values := table(t, "-v", func(ctx context.Context, name string) error { return ddbstate.CreateStoreTable(ctx, admin, name) })
			claims := table(t, "-d", func(ctx context.Context, name string) error { return ddbstate.CreateDedupTable(ctx, admin, name) })
			var out []state.OnceStore[int64]
			for range n {
				s, err := ddbstate.NewInt64SumStore(client(t), values, ddbstate.WithDedupTable(claims))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = s.Close() })
				out = append(out, s)
			}
			return out
		},
		fault: func(r *rand.Rand) {
			tr.SetRandom(faultRate)
			if r.IntN(30) == 0 {
				tr.DropReply(func(op string, _ []byte) bool {
					return op == "PutItem" || op == "UpdateItem" || op == "DeleteItem" || op == "TransactWriteItems"
				})
			}
		},
		stopFaults: func() {
			tr.SetRandom(0)
			tr.DropReply(nil)
		},
		slow: 2,
	}
}

func TestDynamoDB(t *testing.T) {
	t.Parallel()
	testenv.DynamoDBEndpoint(t)
	checkBackend(t, dynamodbTarget)
}
