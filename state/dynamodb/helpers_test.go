package dynamodb_test

import (
	"sync"
	"testing"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/pipestate/pipestate/internal/fakeclock"
	"github.com/pipestate/pipestate/internal/testenv"
	"github.com/pipestate/pipestate/state/dynamodb"
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
	for _, create := range []struct {
		table string
		f     func() error
	}{
		{e.values, func() error { return dynamodb.CreateStoreTable(t.Context(), c, e.values) }},
		{e.bytes, func() error { return dynamodb.CreateStoreTable(t.Context(), c, e.bytes) }},
		{e.dedup, func() error { return dynamodb.CreateDedupTable(t.Context(), c, e.dedup) }},
	} {
		if err := create.f(); err != nil {
			t.Fatalf("create %s: %v", create.table, err)
		}
		table := create.table
		t.Cleanup(func() {
			_, _ = c.DeleteTable(t.Context(), &ddb.DeleteTableInput{TableName: &table})
		})
	}
	envs.Store(t.Name(), e)
	t.Cleanup(func() { envs.Delete(t.Name()) })
	return e
}
