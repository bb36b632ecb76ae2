package ddbstate_test

import (
	"sync"
	"testing"
	"time"

	"github.com/pipestate/pipestate/internal/testkit/ddbtables"
	"github.com/pipestate/pipestate/internal/testkit/fakeclock"
)

// env is the storage of one (sub)test: its tables and clock, shared by every store
// the test opens.
type env struct {
	values, bytes, dedup string
	clock                *fakeclock.Clock
}

var envs sync.Map // t.Name() -> *env

// envFor returns the tables and clock of t, taking them on first use from the
// pool of emptied tables (ddbtables), t's own until it ends. The clock
// starts at the current whole second, so that TTLs of whole seconds are exact.
func envFor(t testing.TB) *env {
	t.Helper()
	if e, ok := envs.Load(t.Name()); ok {
		return e.(*env)
	}
	e := &env{values: ddbtables.Store(t), bytes: ddbtables.Store(t), dedup: ddbtables.Dedup(t),
		clock: fakeclock.New(time.Now().Truncate(time.Second))}
	envs.Store(t.Name(), e)
	t.Cleanup(func() { envs.Delete(t.Name()) })
	return e
}
