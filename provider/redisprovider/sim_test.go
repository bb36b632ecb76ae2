package redisprovider_test

import (
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/testkit/fakeclock"
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
		e := &simEnv{m: m, c: goredis.NewClient(&goredis.Options{Addr: m.Addr()}), clock: fakeclock.New(time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC))}
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
		LeaseEarly:     time.Millisecond,
		PhantomMarkers: true,
		CorruptExpires: true, // events and the marker log are kept by count
		Corpus:         "testdata/sim/miniredis.seeds",
		Budget:         15 * time.Second,
	})
}
