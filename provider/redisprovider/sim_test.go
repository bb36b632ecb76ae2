package redisprovider_test

import (
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/testkit/fakeclock"
	"github.com/pipestate/pipestate/internal/testkit/faults"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/redisprovider"
	"github.com/pipestate/pipestate/providertest"
	"github.com/pipestate/pipestate/providertest/sim"
)

// simEnv is one simulation run's storage: its own miniredis, whose clock and
// TTLs move with the providers' fake clock.
type simEnv struct {
	m     *miniredis.Miniredis
	c     *goredis.Client
	clock *fakeclock.Clock
	net   *faults.Net // the connections of c and of the clients that do not retry
	lost  int         // net.Dropped() when the fault was armed
}

// TestSim simulates the provider on miniredis (package providertest/sim):
// Sleep moves the providers' clock, miniredis's TIME and its TTLs together,
// so the server deletes what expired as a Redis server would.
func TestSim(t *testing.T) {
	var mu sync.Mutex
	envs := map[string]*simEnv{}
	env := func(t *testing.T) *simEnv {
		mu.Lock()
		defer mu.Unlock()
		if e, ok := envs[t.Name()]; ok {
			return e
		}
		m := miniredis.RunT(t)
		n := faults.NewNet()
		e := &simEnv{m: m, net: n, c: goredis.NewClient(&goredis.Options{Addr: m.Addr(), Dialer: n.Dial}), clock: fakeclock.New(time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC))}
		m.SetTime(e.clock.Now())
		envs[t.Name()] = e
		name := t.Name()
		t.Cleanup(func() {
			_ = e.c.Close()
			mu.Lock()
			delete(envs, name)
			mu.Unlock()
		})
		return e
	}
	open := func(t *testing.T, opts ...redisprovider.Option) provider.Provider {
		e := env(t)
		return openProvider(t, e.c, append([]redisprovider.Option{redisprovider.WithClock(e.clock.Now)}, opts...)...)
	}
	short := retention
	short.Runs, short.RunLogs, short.Reruns, short.Replays, short.LateArrivals, short.CascadeMarkers =
		time.Hour, time.Hour, time.Hour, time.Hour, time.Hour, time.Hour
	sim.Run(t, sim.Harness{
		Harness: providertest.Harness{
			Open: func(t *testing.T) provider.Provider { return open(t) },
			Now:  func(t *testing.T) time.Time { return env(t).clock.Now() },
			Sleep: func(t *testing.T, d time.Duration) {
				e := env(t)
				e.clock.Advance(d)
				e.m.SetTime(e.clock.Now())
				e.m.FastForward(d)
			},
			Corrupt: func(t *testing.T, kind provider.RecordKind, id ...string) {
				corruptRecord(t, env(t).c, redisprovider.DefaultKeyPrefix, kind, id...)
			},
			Retention: retention,
		},
		Variants: []sim.Variant{{Name: "1h retention", Retention: &short, Open: func(t *testing.T) provider.Provider {
			return open(t, redisprovider.WithRetention(short))
		}}},
		Faults: &sim.Faults{
			// Every write is a script (see the package doc).
			LoseReply: func(t *testing.T) {
				e := env(t)
				e.lost = e.net.Dropped()
				e.net.DropReply(faults.Contains("evalsha"))
			},
			Disarm: func(t *testing.T) bool {
				e := env(t)
				e.net.Disarm()
				return e.net.Dropped() > e.lost
			},
			OpenNoRetry: func(t *testing.T) provider.Provider {
				e := env(t)
				c := goredis.NewClient(&goredis.Options{Addr: e.m.Addr(), Dialer: e.net.Dial, MaxRetries: -1})
				t.Cleanup(func() { _ = c.Close() })
				return openProvider(t, c, redisprovider.WithClock(e.clock.Now))
			},
		},
		LeaseEarly:     time.Millisecond,
		PhantomMarkers: true,
		CorruptExpires: true, // events and the marker log are kept by count
		Corpus:         "testdata/sim/miniredis.seeds",
		Budget:         15 * time.Second,
	})
}
