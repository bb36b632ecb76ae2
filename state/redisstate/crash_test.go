package redisstate_test

import (
	"os"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/state/internal/storetest"
	"github.com/pipestate/pipestate/state/redisstate"
)

// The crash-window test (storetest.CrashWindow) on miniredis and a real server: the
// child connects to the parent's server, whose address and key prefix it is given.

const (
	envCrashAddr = "PIPESTATE_CRASH_REDIS_ADDR"
	envCrashPfx  = "PIPESTATE_CRASH_PREFIX"
	crashEvents  = 400
)

// crashStores opens the two once-stores the events go to.
func crashStores(t testing.TB, c goredis.UniversalClient, prefix string) storetest.CrashStores {
	t.Helper()
	sum, err := redisstate.NewInt64SumStore(c, prefix)
	if err != nil {
		t.Fatal(err)
	}
	bs, err := redisstate.NewBytesStore(c, prefix, storetest.Counter{}, redisstate.WithMaxRetries(1000))
	if err != nil {
		t.Fatal(err)
	}
	return storetest.CrashStores{Sum: sum, Bytes: bs}
}

// TestCrashChild is the child process of TestCrashWindow; it does nothing otherwise.
func TestCrashChild(t *testing.T) {
	addr := os.Getenv(envCrashAddr)
	if addr == "" {
		t.Skip("child process of TestCrashWindow")
	}
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	storetest.CrashChild(t, crashStores(t, c, os.Getenv(envCrashPfx)), crashEvents)
}

func TestCrashWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	for _, b := range []backend{miniBackend, realBackend} {
		t.Run(b.name, func(t *testing.T) {
			c := b.client(t)
			addr, prefix := c.(*goredis.Client).Options().Addr, prefixFor(t)
			storetest.CrashWindow(t, crashStores(t, c, prefix), storetest.Crash{
				Events: crashEvents, Rounds: 6, MaxDelay: 40 * time.Millisecond,
				ChildTest: "TestCrashChild", ChildEnv: []string{envCrashAddr + "=" + addr, envCrashPfx + "=" + prefix},
			})
		})
	}
}
