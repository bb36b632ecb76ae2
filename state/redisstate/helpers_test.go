package redisstate_test

import (
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/monoid"
)

// backend is one Redis deployment the tests run against.
type backend struct {
	name string
	// client returns a new client on the server of t (the same server for every call
	// within one test); the client is closed when t ends.
	client func(t testing.TB) goredis.UniversalClient
	// sleep lets d pass for TTLs on the server of t.
	sleep func(t testing.TB, d time.Duration)
	// mini is the miniredis of t, nil for real servers.
	mini func(t testing.TB) *miniredis.Miniredis
}

// minis holds one miniredis per test name, so that every client of one (sub)test
// shares data and different (sub)tests never do.
var minis sync.Map // t.Name() -> *miniredis.Miniredis

func miniFor(t testing.TB) *miniredis.Miniredis {
	t.Helper()
	if m, ok := minis.Load(t.Name()); ok {
		return m.(*miniredis.Miniredis)
	}
	m := miniredis.RunT(t)
	minis.Store(t.Name(), m)
	t.Cleanup(func() { minis.Delete(t.Name()) })
	return m
}

func closeWith(t testing.TB, c goredis.UniversalClient) goredis.UniversalClient {
	t.Helper()
	t.Cleanup(func() { _ = c.Close() })
	return c
}

var (
	miniBackend = backend{
		name: "miniredis",
		client: func(t testing.TB) goredis.UniversalClient {
			return closeWith(t, goredis.NewClient(&goredis.Options{Addr: miniFor(t).Addr()}))
		},
		sleep: func(t testing.TB, d time.Duration) { miniFor(t).FastForward(d) },
		mini:  miniFor,
	}
	realBackend = backend{
		name: "redis",
		client: func(t testing.TB) goredis.UniversalClient {
			return closeWith(t, goredis.NewClient(&goredis.Options{Addr: testenv.RedisAddr(t)}))
		},
		sleep: func(_ testing.TB, d time.Duration) { time.Sleep(d) },
	}
	clusterBackend = backend{
		name: "cluster",
		client: func(t testing.TB) goredis.UniversalClient {
			return closeWith(t, goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: testenv.RedisClusterAddrs(t)}))
		},
		sleep: func(_ testing.TB, d time.Duration) { time.Sleep(d) },
	}
	allBackends = []backend{miniBackend, realBackend, clusterBackend}
)

// prefixes holds one key prefix per running test: every store opened within one
// test shares it; different tests, and runs of one test (-count), never do.
var prefixes sync.Map // testing.TB -> string

func prefixFor(t testing.TB) string {
	t.Helper()
	if p, ok := prefixes.Load(t); ok {
		return p.(string)
	}
	p := "pst:" + testenv.RedisPrefix(t)
	prefixes.Store(t, p)
	t.Cleanup(func() { prefixes.Delete(t) })
	return p
}

// forEachBackend runs f as a subtest per backend; real servers skip when not
// configured.
func forEachBackend(t *testing.T, f func(t *testing.T, b backend)) {
	t.Helper()
	for _, b := range allBackends {
		t.Run(b.name, func(t *testing.T) { f(t, b) })
	}
}

// concat is a Monoid[[]byte] that appends: order-sensitive, so a lost or doubled
// update shows in the bytes.
type concat struct{}

func (concat) Identity() []byte { return nil }
func (concat) Combine(a, b []byte) []byte {
	return append(append(make([]byte, 0, len(a)+len(b)), a...), b...)
}
func (concat) Kind() monoid.Kind { return monoid.KindCustom }
