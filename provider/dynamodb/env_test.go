package dynamodb_test

import (
	"context"
	"sync"
	"testing"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/pipestate/pipestate/internal/testenv"
	"github.com/pipestate/pipestate/provider/dynamodb"
)

// fakeClock is a clock that moves only when told to.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 21, 6, 0, 0, 123456789, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// env is one test's storage: a table of its own and a fake clock, shared by every
// provider the test opens.
type env struct {
	client *ddb.Client
	table  string
	clock  *fakeClock
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
	ctx := context.Background()
	if err := dynamodb.CreateTable(ctx, client, e.table); err != nil {
		t.Fatalf("create table %s: %v", e.table, err)
	}
	envMu.Lock()
	envs[t.Name()] = e
	envMu.Unlock()
	t.Cleanup(func() {
		envMu.Lock()
		delete(envs, t.Name())
		envMu.Unlock()
		if _, err := client.DeleteTable(context.Background(), &ddb.DeleteTableInput{TableName: &e.table}); err != nil {
			t.Logf("delete table %s: %v", e.table, err)
		}
	})
	return e
}

// open returns a new provider on t's table and clock.
func open(t *testing.T, opts ...dynamodb.Option) *dynamodb.Provider {
	t.Helper()
	e := testEnv(t)
	return openOn(t, e.client, e, opts...)
}

// openOn returns a new provider through api on e's table and clock.
func openOn(t testing.TB, api dynamodb.API, e *env, opts ...dynamodb.Option) *dynamodb.Provider {
	t.Helper()
	p, err := dynamodb.New(api, e.table, append([]dynamodb.Option{dynamodb.WithClock(e.clock.Now)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	return p
}
