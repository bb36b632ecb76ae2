package redisprovider_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/testkit/fakeclock"
	"github.com/pipestate/pipestate/internal/testkit/faults"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/redisprovider"
	"github.com/pipestate/pipestate/providertest"
	"github.com/pipestate/pipestate/providertest/sim"
)

// simEnv is one simulation run's storage: its client (through net, whose
// faults the simulation arms), key prefix, the providers' fake clock, and how
// the server's TTLs are moved with it.
type simEnv struct {
	c       goredis.UniversalClient
	prefix  string
	clock   *fakeclock.Clock
	net     *faults.Net
	lost    int                            // net.Dropped() when the fault was armed
	advance func(d time.Duration)          // moves the server's TTLs by d
	noRetry func() goredis.UniversalClient // a client through net that does not retry
}

// simServer is what a simulation's storage is made of: a new env for each run.
type simServer func(t *testing.T, n *faults.Net) *simEnv

// simHarness is the simulation's harness on the envs newEnv makes: Sleep
// moves the providers' clock and the server's TTLs together, so the server
// deletes what expired as a Redis server would.
func simHarness(newEnv simServer, corpus string, budget time.Duration) sim.Harness {
	var mu sync.Mutex
	envs := map[string]*simEnv{}
	env := func(t *testing.T) *simEnv {
		mu.Lock()
		defer mu.Unlock()
		if e, ok := envs[t.Name()]; ok {
			return e
		}
		e := newEnv(t, faults.NewNet())
		e.clock = fakeclock.New(time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC))
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
	open := func(t *testing.T, c goredis.UniversalClient, opts ...redisprovider.Option) provider.Provider {
		e := env(t)
		return openProvider(t, c, append([]redisprovider.Option{redisprovider.WithClock(e.clock.Now), redisprovider.WithKeyPrefix(e.prefix)}, opts...)...)
	}
	short := retention
	short.Runs, short.RunLogs, short.Reruns, short.Replays, short.LateArrivals, short.CascadeMarkers =
		time.Hour, time.Hour, time.Hour, time.Hour, time.Hour, time.Hour
	return sim.Harness{
		Harness: providertest.Harness{
			Open: func(t *testing.T) provider.Provider { return open(t, env(t).c) },
			Now:  func(t *testing.T) time.Time { return env(t).clock.Now() },
			Sleep: func(t *testing.T, d time.Duration) {
				e := env(t)
				e.clock.Advance(d)
				e.advance(d)
			},
			Corrupt: func(t *testing.T, kind provider.RecordKind, id ...string) {
				e := env(t)
				corruptRecord(t, e.c, e.prefix, kind, id...)
			},
			Retention: retention,
		},
		Variants: []sim.Variant{{Name: "1h retention", Retention: &short, Open: func(t *testing.T) provider.Provider {
			return open(t, env(t).c, redisprovider.WithRetention(short))
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
				c := env(t).noRetry()
				t.Cleanup(func() { _ = c.Close() })
				return open(t, c)
			},
		},
		LeaseEarly:     time.Millisecond,
		PhantomMarkers: true,
		CorruptExpires: true, // events and the marker log are kept by count
		Corpus:         corpus,
		Budget:         budget,
	}
}

// TestSim simulates the provider on miniredis (package providertest/sim):
// Sleep moves the providers' clock, miniredis's TIME and its TTLs together.
func TestSim(t *testing.T) {
	sim.Run(t, simHarness(func(t *testing.T, n *faults.Net) *simEnv {
		m := miniredis.RunT(t)
		c := goredis.NewClient(&goredis.Options{Addr: m.Addr(), Dialer: n.Dial})
		e := &simEnv{c: c, prefix: redisprovider.DefaultKeyPrefix, net: n,
			noRetry: func() goredis.UniversalClient {
				return goredis.NewClient(&goredis.Options{Addr: m.Addr(), Dialer: n.Dial, MaxRetries: -1})
			}}
		e.advance = func(d time.Duration) {
			m.SetTime(e.clock.Now())
			m.FastForward(d)
		}
		return e
	}, "testdata/sim/miniredis.seeds", 10*time.Second))
}

// TestSimServer simulates the provider on a real redis-server and on a Redis
// Cluster (REDIS_ADDR, REDIS_CLUSTER_ADDRS; skipped without them), each run
// under a key prefix of its own. The providers' clock is fake; Sleep shortens
// the TTL of every key of the run by the jump (deleting those it reaches), as
// the server's own clock would have, so the server deletes what expired. Real
// time passes too, a few milliseconds an operation, which only expires keys
// earlier: LeaseEarly allows a lease's key to be gone up to 5s before its
// ExpiresAt. On the cluster a run's records spread over the slots: the
// active-runs index, the marker log and the runs are on different nodes, as
// miniredis cannot show.
func TestSimServer(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		addr := testenv.RedisAddr(t)
		h := simHarness(func(t *testing.T, n *faults.Net) *simEnv {
			c := goredis.NewClient(&goredis.Options{Addr: addr, Dialer: n.Dial})
			return serverEnv(t, c, n, func() goredis.UniversalClient {
				return goredis.NewClient(&goredis.Options{Addr: addr, Dialer: n.Dial, MaxRetries: -1})
			})
		}, "testdata/sim/redis.seeds", 3*time.Second)
		h.LeaseEarly = 5 * time.Second
		sim.Run(t, h)
	})
	t.Run("cluster", func(t *testing.T) {
		addrs := testenv.RedisClusterAddrs(t)
		h := simHarness(func(t *testing.T, n *faults.Net) *simEnv {
			c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs, Dialer: n.Dial})
			return serverEnv(t, c, n, func() goredis.UniversalClient {
				return goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs, Dialer: n.Dial, MaxRetries: -1})
			})
		}, "testdata/sim/cluster.seeds", 3*time.Second)
		h.LeaseEarly = 5 * time.Second
		sim.Run(t, h)
	})
}

// serverEnv is a run's env on a real server or cluster through c.
func serverEnv(t *testing.T, c goredis.UniversalClient, n *faults.Net, noRetry func() goredis.UniversalClient) *simEnv {
	prefix := "pst:" + testenv.RedisPrefix(t)
	return &simEnv{c: c, prefix: prefix, net: n, noRetry: noRetry, advance: func(d time.Duration) {
		if err := shortenTTLs(context.Background(), c, prefix, d); err != nil {
			t.Fatalf("sim: move the server's TTLs by %v: %v", d, err)
		}
	}}
}

// shortenTTLs shortens by d the TTL of every key of c under prefix that has
// one, deleting those whose TTL d reaches: time passing for the server.
func shortenTTLs(ctx context.Context, c goredis.UniversalClient, prefix string, d time.Duration) error {
	each := func(ctx context.Context, node *goredis.Client) error {
		iter := node.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			key := iter.Val()
			ttl, err := node.PTTL(ctx, key).Result()
			if err != nil {
				return err
			}
			switch {
			case ttl <= 0: // no TTL (-1), or gone (-2)
			case ttl <= d:
				err = node.Del(ctx, key).Err()
			default:
				err = node.PExpire(ctx, key, ttl-d).Err()
			}
			if err != nil {
				return err
			}
		}
		return iter.Err()
	}
	if cc, ok := c.(*goredis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, each)
	}
	return each(ctx, c.(*goredis.Client))
}
