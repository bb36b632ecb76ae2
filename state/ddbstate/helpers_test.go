package ddbstate_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/pipestate/pipestate/internal/testkit/fakeclock"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/state/ddbstate"
)

// env is the storage of one (sub)test: its tables and clock, shared by every store
// the test opens.
type env struct {
	values, bytes, dedup string
	clock                *fakeclock.Clock
}

var envs sync.Map // t.Name() -> *env

// envFor returns the tables and clock of t, creating them on first use. The clock
// starts at the current whole second, so that TTLs of whole seconds are exact.
func envFor(t testing.TB) *env {
	t.Helper()
	if e, ok := envs.Load(t.Name()); ok {
		return e.(*env)
	}
	c := testenv.DynamoDBClient(t)
	name := testenv.UniqueName(t)
	e := &env{values: name + "-v", bytes: name + "-b", dedup: name + "-d", clock: fakeclock.New(time.Now().Truncate(time.Second))}
	storeTable := func(ctx context.Context, name string) error { return ddbstate.CreateStoreTable(ctx, c, name) }
	testenv.DynamoDBTable(t, c, e.values, storeTable)
	testenv.DynamoDBTable(t, c, e.bytes, storeTable)
	testenv.DynamoDBTable(t, c, e.dedup, func(ctx context.Context, name string) error { return ddbstate.CreateDedupTable(ctx, c, name) })
	envs.Store(t.Name(), e)
	t.Cleanup(func() { envs.Delete(t.Name()) })
	return e
}
