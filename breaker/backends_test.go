package breaker_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/breaker"
	"github.com/pipestate/pipestate/internal/testkit/faults"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/provider/redisprovider"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/ddbstate"
	"github.com/pipestate/pipestate/state/redisstate"
	"github.com/pipestate/pipestate/types"
)

// backend is a provider and a store sharing one client guarded by one breaker,
// and the faults of that client's connections.
type backend struct {
	p    provider.Provider
	s    state.Store[int64]
	b    *breaker.Breaker
	down func(bool) // take the server away (true) or bring it back
	lose func()     // arm one lost reply of the next PutRunState
	sent func() int // requests that reached the fault injector
}

// outageBreaker opens after 3 failures in a row and half-opens after 100ms.
func outageBreaker(t *testing.T) *breaker.Breaker {
	t.Helper()
	b, err := breaker.New(t.Name(), breaker.WithFailures(3), breaker.WithOpenFor(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// redisBackend guards the client that dial returns (given the fault injector's
// dialer), a standalone client or a cluster client.
func redisBackend(t *testing.T, dial func(d func(context.Context, string, string) (net.Conn, error)) goredis.UniversalClient) backend {
	n := faults.NewNet()
	c := dial(n.Dial)
	t.Cleanup(func() { _ = c.Close() })
	b := outageBreaker(t)
	c.AddHook(b.RedisHook())
	prefix := testenv.RedisPrefix(t)
	p, err := redisprovider.New(c, redisprovider.WithKeyPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	s, err := redisstate.NewInt64SumStore(c, prefix+":sums")
	if err != nil {
		t.Fatal(err)
	}
	return backend{p: p, s: s, b: b, down: n.Refuse, sent: n.Requests,
		lose: func() { n.DropReply(faults.Contains("evalsha")) }}
}

func standalone(addr string) func(d func(context.Context, string, string) (net.Conn, error)) goredis.UniversalClient {
	return func(d func(context.Context, string, string) (net.Conn, error)) goredis.UniversalClient {
		return goredis.NewClient(&goredis.Options{Addr: addr, Dialer: d, MaxRetries: 2,
			MinRetryBackoff: time.Millisecond, MaxRetryBackoff: 2 * time.Millisecond})
	}
}

func dynamodbBackend(t *testing.T) backend {
	ft := faults.NewTransport()
	b := outageBreaker(t)
	client := testenv.DynamoDBClient(t, ft.DynamoDBOptions(3), b.DynamoDB())
	table, values := testenv.UniqueName(t), testenv.UniqueName(t)+"-v"
	testenv.DynamoDBTable(t, client, table, func(ctx context.Context, name string) error {
		return ddbprovider.CreateTable(ctx, client, name)
	})
	testenv.DynamoDBTable(t, client, values, func(ctx context.Context, name string) error {
		return ddbstate.CreateStoreTable(ctx, client, name)
	})
	p, err := ddbprovider.New(client, table)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ddbstate.NewInt64SumStore(client, values)
	if err != nil {
		t.Fatal(err)
	}
	return backend{p: p, s: s, b: b, sent: ft.Requests,
		// Throttling: every request is refused until the end of the outage.
		down: func(on bool) {
			if on {
				ft.Reject(1000, func(string, []byte) bool { return true }, faults.Throttled)
			} else {
				ft.StopRejecting()
			}
		},
		lose: func() { ft.DropReply(faults.Op("TransactWriteItems")) }}
}

// TestOutage: on every networked backend, a provider and a store sharing one
// guarded client: CAS conflicts, misses and lost replies (the client's retry
// succeeds) never open the breaker; an outage opens it after 3 failed requests
// (Redis: 3 calls, each after go-redis's retries; DynamoDB: 3 attempts, the
// SDK's retries of one call);
// while open, every call of the provider and the store fails at once with
// ErrUnavailable and no request leaves the client; after the open period the
// first call probes and, the backend being back, closes it.
func TestOutage(t *testing.T) {
	backends := map[string]func(*testing.T) backend{
		"miniredis": func(t *testing.T) backend { return redisBackend(t, standalone(miniredis.RunT(t).Addr())) },
		"dynamodb":  dynamodbBackend,
	}
	if testenv.RedisWanted() {
		backends["redis"] = func(t *testing.T) backend { return redisBackend(t, standalone(testenv.RedisAddr(t))) }
	}
	if testenv.RedisClusterWanted() {
		backends["cluster"] = func(t *testing.T) backend {
			addrs := testenv.RedisClusterAddrs(t)
			return redisBackend(t, func(d func(context.Context, string, string) (net.Conn, error)) goredis.UniversalClient {
				return goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs, Dialer: d, MaxRetries: 2,
					MinRetryBackoff: time.Millisecond, MaxRetryBackoff: 2 * time.Millisecond})
			})
		}
	}
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			e := open(t)
			ctx := t.Context()
			k := state.Key{Entity: "e"}
			run := types.RunState{RunID: "r", PipelineID: "p", Status: types.RunPending}
			if err := e.p.PutRunState(ctx, run); err != nil {
				t.Fatal(err)
			}
			for i := range 10 {
				if ok, err := e.p.CompareAndSwapRunState(ctx, "r", 99, run); ok || err != nil {
					t.Fatalf("CAS on a wrong version: %v, %v", ok, err)
				}
				if got, err := e.p.GetRunState(ctx, "missing"); got != nil || err != nil {
					t.Fatalf("missing run: %v, %v", got, err)
				}
				e.lose()
				if err := e.p.PutRunState(ctx, run); err != nil {
					t.Fatalf("write %d after a lost reply: %v", i, err)
				}
			}
			if err := e.s.MergeUpdate(ctx, k, 1, 0); err != nil {
				t.Fatal(err)
			}
			if got := e.b.State(); got != breaker.Closed {
				t.Fatalf("conflicts, misses and lost replies opened it: %v", got)
			}

			e.down(true)
			for i := 0; e.b.State() != breaker.Open; i++ {
				if i == 3 {
					t.Fatalf("3 calls failed in the outage, but the breaker is %v", e.b.State())
				}
				if _, err := e.p.GetRunState(ctx, "r"); err == nil || errors.Is(err, provider.ErrUnavailable) {
					t.Fatalf("call %d in the outage: %v, want the backend's error", i, err)
				}
			}
			e.down(false)
			sent := e.sent()
			if _, err := e.p.GetRunState(ctx, "r"); !errors.Is(err, provider.ErrUnavailable) {
				t.Fatalf("provider read while open: %v, want ErrUnavailable", err)
			}
			if err := e.p.PutRunState(ctx, run); !errors.Is(err, provider.ErrUnavailable) {
				t.Fatalf("provider write while open: %v, want ErrUnavailable", err)
			}
			if _, _, err := e.s.Get(ctx, k); !errors.Is(err, state.ErrUnavailable) {
				t.Fatalf("store read while open: %v, want ErrUnavailable", err)
			}
			if err := e.s.MergeUpdate(ctx, k, 1, 0); !errors.Is(err, state.ErrUnavailable) {
				t.Fatalf("store write while open: %v, want ErrUnavailable", err)
			}
			if n := e.sent() - sent; n != 0 {
				t.Fatalf("%d requests left the client while open, want none", n)
			}

			// Probes until one succeeds: go-redis's pool answers with its last dial
			// error for up to a second after the server is back, which a probe
			// meets as a failure that opens the breaker again.
			for probes := 1; ; probes++ {
				waitState(t, e.b, breaker.HalfOpen)
				got, err := e.p.GetRunState(ctx, "r")
				if err == nil {
					if got.Status != types.RunPending {
						t.Fatalf("probe: %+v", got)
					}
					break
				}
				if st := e.b.State(); st != breaker.Open || probes == 50 {
					t.Fatalf("probe %d failed (%v) and left the breaker %v", probes, err, st)
				}
			}
			if st := e.b.State(); st != breaker.Closed {
				t.Fatalf("after a successful probe: %v, want closed", st)
			}
			if v, ok, err := e.s.Get(ctx, k); err != nil || !ok || v != 1 {
				t.Fatalf("sum after a merge and a refused one: %d, %v, %v; want 1", v, ok, err)
			}
		})
	}
}
