package lincheck_test

import (
	"context"
	"math/rand/v2"
	"net"
	"testing"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/testkit/faults"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider/redisprovider"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/redisstate"
)

// redisTarget returns storage under a fresh key prefix on the server that client
// dials (every client of the test through one faults.Net), with faults: now and
// then every connection is cut, otherwise the reply to the next script call
// (EVALSHA: every write and most reads) is dropped after the server ran it, so
// go-redis retries it.
// dialer is go-redis's Dialer; nil dials directly.
type dialer = func(ctx context.Context, network, addr string) (net.Conn, error)

func redisTarget(client func(dial dialer) goredis.UniversalClient) func(t *testing.T) target {
	return func(t *testing.T) target {
		n := faults.NewNet()
		prefix := "pst:" + testenv.RedisPrefix(t)
		open := func(t *testing.T) goredis.UniversalClient {
			c := client(n.Dial)
			t.Cleanup(func() { _ = c.Close() })
			return c
		}
		t.Cleanup(func() { deletePrefix(t, client(nil), prefix) })
		return target{
			providers: func(t *testing.T, k int) []fullProvider {
				var out []fullProvider
				for i := range k {
					p, err := redisprovider.New(open(t), redisprovider.WithKeyPrefix(prefix), redisprovider.WithOwner(owner(i)))
					if err != nil {
						t.Fatal(err)
					}
					if err := p.Start(t.Context()); err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { _ = p.Stop(context.Background()) })
					out = append(out, p)
				}
				return out
			},
			counters: func(t *testing.T, k int) []state.OnceStore[int64] {
				var out []state.OnceStore[int64]
				for range k {
					s, err := redisstate.NewInt64SumStore(open(t), prefix)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { _ = s.Close() })
					out = append(out, s)
				}
				return out
			},
			fault: func(r *rand.Rand) {
				if r.IntN(10) == 0 {
					n.KillAll()
					return
				}
				n.DropReply(faults.Contains("evalsha"))
			},
			stopFaults: n.Disarm,
		}
	}
}

// deletePrefix deletes the keys under prefix, on every master of a cluster, and
// closes c.
func deletePrefix(t *testing.T, c goredis.UniversalClient, prefix string) {
	defer c.Close()
	if err := testenv.DeleteRedisPrefix(c, prefix); err != nil {
		t.Logf("delete keys under %s: %v", prefix, err)
	}
}

func TestMiniredis(t *testing.T) {
	t.Parallel()
	checkBackend(t, func(t *testing.T) target {
		m := miniredis.RunT(t)
		return redisTarget(func(dial dialer) goredis.UniversalClient {
			return goredis.NewClient(&goredis.Options{Addr: m.Addr(), Dialer: dial})
		})(t)
	})
}

func TestRedis(t *testing.T) {
	t.Parallel()
	addr := testenv.RedisAddr(t)
	checkBackend(t, redisTarget(func(dial dialer) goredis.UniversalClient {
		return goredis.NewClient(&goredis.Options{Addr: addr, Dialer: dial})
	}))
}

func TestRedisCluster(t *testing.T) {
	t.Parallel()
	addrs := testenv.RedisClusterAddrs(t)
	checkBackend(t, redisTarget(func(dial dialer) goredis.UniversalClient {
		return goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs, Dialer: dial})
	}))
}
