package ddbprovider_test

import (
	"context"
	"sync"
	"testing"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/pipestate/pipestate/internal/testkit/fakeclock"
	"github.com/pipestate/pipestate/internal/testkit/faults"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider/ddbprovider"
)

// newFakeClock returns a test clock with nanoseconds set, to catch lost precision.
func newFakeClock() *fakeclock.Clock {
	return fakeclock.New(time.Date(2026, 11, 21, 6, 0, 0, 123456789, time.UTC))
}

// env is one test's storage: a table of its own and a fake clock, shared by every
// provider the test opens.
type env struct {
	client *ddb.Client
	table  string
	clock  *fakeclock.Clock
}

var (
	envMu sync.Mutex
	envs  = map[string]*env{}
)

// testEnv returns t's env, creating its table on first use and deleting it when t
// ends. optFns configure the client of the first call only.
func testEnv(t testing.TB, optFns ...func(*ddb.Options)) *env {
	t.Helper()
	envMu.Lock()
	e, ok := envs[t.Name()]
	envMu.Unlock()
	if ok {
		return e
	}
	client := testenv.DynamoDBClient(t, optFns...)
	e = &env{client: client, table: testenv.UniqueName(t), clock: newFakeClock()}
	testenv.DynamoDBTable(t, client, e.table, func(ctx context.Context, name string) error { return ddbprovider.CreateTable(ctx, client, name) })
	envMu.Lock()
	envs[t.Name()] = e
	envMu.Unlock()
	t.Cleanup(func() {
		envMu.Lock()
		delete(envs, t.Name())
		envMu.Unlock()
	})
	return e
}

// open returns a new provider on t's table and clock.
func open(t *testing.T, opts ...ddbprovider.Option) *ddbprovider.Provider {
	t.Helper()
	e := testEnv(t)
	return openOn(t, e.client, e, opts...)
}

// openOn returns a new provider through api on e's table and clock.
func openOn(t testing.TB, api ddbprovider.API, e *env, opts ...ddbprovider.Option) *ddbprovider.Provider {
	t.Helper()
	p, err := ddbprovider.New(api, e.table, append([]ddbprovider.Option{ddbprovider.WithClock(e.clock.Now)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	return p
}

// faultEnv returns t's env on a client whose requests go through ft
// (faults.Transport.DynamoDBOptions: at most attempts tries per request).
func faultEnv(t testing.TB, ft *faults.Transport, attempts int) *env {
	t.Helper()
	return testEnv(t, ft.DynamoDBOptions(attempts))
}
