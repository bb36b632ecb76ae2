package tiered_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"

	"github.com/pipestate/pipestate/internal/signal/signaltest"
	"github.com/pipestate/pipestate/internal/testkit/ddbtables"
	"github.com/pipestate/pipestate/internal/testkit/fakeclock"
	"github.com/pipestate/pipestate/internal/testkit/faults"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/observe"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/cache"
	"github.com/pipestate/pipestate/state/ddbstate"
	"github.com/pipestate/pipestate/state/internal/storetest"
	"github.com/pipestate/pipestate/state/statetest"
	"github.com/pipestate/pipestate/state/tiered"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// env is the storage of one (sub)test: DynamoDB tables, a Redis client and
// prefix, and the clock every store of the test shares.
type env struct {
	values, bytes, dedup string
	redis                goredis.UniversalClient
	prefix               string
	clock                *fakeclock.Clock
}

var envs sync.Map // t.Name() -> *env

// redisKinds opens the Redis a test runs on: miniredis always, redis-server and
// the cluster when the environment has them.
func redisKinds() map[string]func(t *testing.T) goredis.UniversalClient {
	kinds := map[string]func(t *testing.T) goredis.UniversalClient{
		"miniredis": func(t *testing.T) goredis.UniversalClient {
			return goredis.NewClient(&goredis.Options{Addr: miniredis.RunT(t).Addr()})
		},
	}
	if testenv.RedisWanted() {
		kinds["redis"] = func(t *testing.T) goredis.UniversalClient {
			return goredis.NewClient(&goredis.Options{Addr: testenv.RedisAddr(t)})
		}
	}
	if testenv.RedisClusterWanted() {
		kinds["cluster"] = func(t *testing.T) goredis.UniversalClient {
			return goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: testenv.RedisClusterAddrs(t)})
		}
	}
	return kinds
}

// envFor returns t's env, creating it with the Redis client of open on first use.
func envFor(t *testing.T, open func(t *testing.T) goredis.UniversalClient) *env {
	t.Helper()
	if e, ok := envs.Load(t.Name()); ok {
		return e.(*env)
	}
	rc := open(t)
	t.Cleanup(func() { _ = rc.Close() })
	e := &env{values: ddbtables.Store(t), bytes: ddbtables.Store(t), dedup: ddbtables.Dedup(t),
		redis: rc, prefix: testenv.RedisPrefix(t), clock: fakeclock.New(time.Now().Truncate(time.Second))}
	envs.Store(t.Name(), e)
	t.Cleanup(func() { envs.Delete(t.Name()) })
	return e
}

// sums opens another process's tiered Int64SumStore on t's env.
func sums(t *testing.T, e *env, opts ...tiered.Option) state.Store[int64] {
	t.Helper()
	src, err := ddbstate.NewInt64SumStore(testenv.DynamoDBClient(t), e.values, ddbstate.WithClock(e.clock.Now),
		ddbstate.WithDedupTable(e.dedup))
	if err != nil {
		t.Fatal(err)
	}
	s, err := tiered.New[int64](src, e.redis, e.prefix, append([]tiered.Option{tiered.WithClock(e.clock.Now)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestConformance runs statetest on tiered stores over DynamoDB Local, each Open
// another process: a write through one is seen by the others at once
// (Staleness 0), as it is written through. Every kind of value runs on
// miniredis; the sums run on a real cluster too (redis-server's standalone
// variant adds nothing the two do not cover, and DynamoDB Local is slow).
func TestConformance(t *testing.T) {
	for name, open := range redisKinds() {
		if name == "redis" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			advance := func(t *testing.T, d time.Duration) { envFor(t, open).clock.Advance(d) }
			t.Run("int64 sum", func(t *testing.T) {
				statetest.RunStore(t, statetest.Harness[int64]{
					Open:  func(t *testing.T) state.Store[int64] { return sums(t, envFor(t, open)) },
					Sleep: advance, FakeTime: true,
					Monoid: monoid.Sum[int64]{}, Delta: func(i int) int64 { return int64(i%7)*2 - 5 },
					Equal: func(a, b int64) bool { return a == b },
				})
			})
			if name != "miniredis" {
				return // the other kinds differ in their codec only (a max is an int64)
			}
			t.Run("float64 sum", func(t *testing.T) {
				statetest.RunStore(t, statetest.Harness[float64]{
					Open: func(t *testing.T) state.Store[float64] {
						e := envFor(t, open)
						src, err := ddbstate.NewFloat64SumStore(testenv.DynamoDBClient(t), e.values,
							ddbstate.WithClock(e.clock.Now), ddbstate.WithDedupTable(e.dedup))
						if err != nil {
							t.Fatal(err)
						}
						return mustNew(t, e, src)
					},
					Sleep: advance, FakeTime: true,
					Monoid: monoid.Sum[float64]{}, Delta: func(i int) float64 { return float64(i%5) - 2.5 },
					Equal: func(a, b float64) bool { return a == b },
				})
			})
			t.Run("bytes", func(t *testing.T) {
				statetest.RunStore(t, statetest.Harness[[]byte]{
					Open: func(t *testing.T) state.Store[[]byte] {
						e := envFor(t, open)
						src, err := ddbstate.NewBytesStore(testenv.DynamoDBClient(t), e.bytes, storetest.Counter{},
							ddbstate.WithClock(e.clock.Now), ddbstate.WithDedupTable(e.dedup))
						if err != nil {
							t.Fatal(err)
						}
						return mustNew(t, e, src)
					},
					Sleep: advance, FakeTime: true,
					Monoid: storetest.Counter{}, Delta: func(i int) []byte { return storetest.Counter{}.Of(int64(i%3)*2 - 1) },
					Equal:     bytes.Equal,
					BadDeltas: [][]byte{{1, 2, 3}},
				})
			})
		})
	}
}

func mustNew[V int64 | float64 | []byte](t *testing.T, e *env, src state.RevisionStore[V]) state.Store[V] {
	t.Helper()
	s, err := tiered.New[V](src, e.redis, e.prefix, tiered.WithClock(e.clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// gated is a source whose next GetRevisions, once armed, reads the source and
// then waits for release before it answers: a write-through delayed between
// its read of the source and its write to Redis.
type gated struct {
	state.RevisionStore[int64]
	mu      sync.Mutex
	armed   bool
	read    chan struct{} // closed when the armed call has read
	release chan struct{}
}

func (g *gated) arm() {
	g.mu.Lock()
	g.armed, g.read, g.release = true, make(chan struct{}), make(chan struct{})
	g.mu.Unlock()
}

func (g *gated) GetRevisions(ctx context.Context, ks []state.Key) ([]state.Revision[int64], error) {
	g.mu.Lock()
	armed, read, release := g.armed, g.read, g.release
	g.armed = false
	g.mu.Unlock()
	revs, err := g.RevisionStore.GetRevisions(ctx, ks)
	if armed {
		close(read)
		<-release
	}
	return revs, err
}

// TestSlowWriterNeverPutsBackAnOlderValue: a write-through held between its read
// of the source and its write to Redis, while another writer writes and writes
// through, must not replace the newer entry: every process then reads the
// newer value from Redis (a hit), not the slow writer's.
func TestSlowWriterNeverPutsBackAnOlderValue(t *testing.T) {
	for name, open := range redisKinds() {
		t.Run(name, func(t *testing.T) {
			if err := slowWriter(t, envFor(t, open)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestSlowWriterTeeth: a tier whose write-through replaces a newer entry fails
// slowWriter.
func TestSlowWriterTeeth(t *testing.T) {
	defer tiered.WriteThroughUnconditionally()()
	if err := slowWriter(t, envFor(t, redisKinds()["miniredis"])); err == nil {
		t.Fatal("a tier that puts back older values passed")
	}
}

// slowWriter runs rounds of a slow write-through overtaken by a fast one and
// returns the first read that does not see the fast one's value from Redis.
func slowWriter(t *testing.T, e *env) error {
	src, err := ddbstate.NewInt64SumStore(testenv.DynamoDBClient(t), e.values, ddbstate.WithClock(e.clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	g := &gated{RevisionStore: src}
	slow, err := tiered.New[int64](g, e.redis, e.prefix, tiered.WithClock(e.clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	fast := sums(t, e)
	ctx, k := t.Context(), state.Key{Entity: "k"}
	for round := range 5 {
		g.arm()
		done := make(chan error, 1)
		go func() { done <- slow.MergeUpdate(ctx, k, 1, 0) }()
		<-g.read // the slow writer has read its value; it has not written it through
		if err := fast.MergeUpdate(ctx, k, 10, 0); err != nil {
			t.Fatal(err)
		}
		close(g.release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		sig := signaltest.NewSignals()
		reader := sums(t, e, tiered.WithMeterProvider(sig.Meter))
		v, _, err := reader.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if want := int64(11 * (round + 1)); v != want {
			return fmt.Errorf("round %d: Get = %d, want %d", round, v, want)
		}
		if hits := sig.Collect(t, "pipestate.tiered.hits").Value; hits != 1 {
			return fmt.Errorf("round %d: the read was not served by Redis (%d hits)", round, hits)
		}
	}
	return nil
}

// TestRedisOutage: with Redis gone, reads come from the source and writes
// succeed, each failed Redis call counted; a write whose write-through was lost
// leaves Redis an older value, served for at most the TTL and not an instant
// longer.
func TestRedisOutage(t *testing.T) {
	n := faults.NewNet()
	mr := miniredis.RunT(t)
	e := envFor(t, func(t *testing.T) goredis.UniversalClient {
		return goredis.NewClient(&goredis.Options{Addr: mr.Addr(), Dialer: n.Dial, MaxRetries: -1})
	})
	sig := signaltest.NewSignals()
	const ttl = time.Minute
	s := sums(t, e, tiered.WithTTL(ttl), tiered.WithMeterProvider(sig.Meter))
	ctx, k := t.Context(), state.Key{Entity: "k"}
	if err := s.MergeUpdate(ctx, k, 1, 0); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Second) // the entry was known current a second ago

	n.Refuse(true)
	if err := s.MergeUpdate(ctx, k, 1, 0); err != nil {
		t.Fatalf("write with Redis gone: %v", err)
	}
	if v, _, err := s.Get(ctx, k); err != nil || v != 2 {
		t.Fatalf("read with Redis gone: %d, %v; want 2 from the source", v, err)
	}
	failures := func(step string) int64 {
		return sig.Collect(t, "pipestate.tiered.failures", attrStep(step)).Value
	}
	if failures("write") < 1 || failures("read") != 1 {
		t.Fatalf("failures: write %d, read %d; want at least 1 and 1", failures("write"), failures("read"))
	}

	n.Refuse(false)
	if v, _, err := s.Get(ctx, k); err != nil || v != 1 {
		t.Fatalf("after the outage: %d, %v; want the entry written before it (1), within its TTL", v, err)
	}
	e.clock.Advance(ttl - time.Second - time.Millisecond)
	if v, _, _ := s.Get(ctx, k); v != 1 {
		t.Fatalf("a millisecond before the TTL: %d, want the entry's 1", v)
	}
	e.clock.Advance(time.Millisecond)
	if v, _, err := s.Get(ctx, k); err != nil || v != 2 {
		t.Fatalf("at the TTL: %d, %v; want the source's 2", v, err)
	}
}

// TestValueExpiryBeatsTTL: an entry of a value that expires before the TTL is
// fresh until the value's expiry, not an instant longer.
func TestValueExpiryBeatsTTL(t *testing.T) {
	e := envFor(t, redisKinds()["miniredis"])
	s := sums(t, e)
	ctx, k := t.Context(), state.Key{Entity: "k"}
	if err := s.MergeUpdate(ctx, k, 5, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2*time.Second - time.Millisecond)
	if v, ok, err := s.Get(ctx, k); err != nil || !ok || v != 5 {
		t.Fatalf("before the expiry: %d, %v, %v", v, ok, err)
	}
	e.clock.Advance(time.Millisecond)
	if v, ok, err := s.Get(ctx, k); err != nil || ok || v != 0 {
		t.Fatalf("at the expiry: %d, %v, %v; want missing", v, ok, err)
	}
}

func TestNewRefusesBadArguments(t *testing.T) {
	e := envFor(t, redisKinds()["miniredis"])
	src, err := ddbstate.NewInt64SumStore(testenv.DynamoDBClient(t), e.values)
	if err != nil {
		t.Fatal(err)
	}
	var nilClient *goredis.Client
	var nilSource *ddbstate.Int64SumStore
	for name, f := range map[string]func() error{
		"nil source":   func() error { _, err := tiered.New[int64](nilSource, e.redis, "p"); return err },
		"nil client":   func() error { _, err := tiered.New[int64](src, nilClient, "p"); return err },
		"empty prefix": func() error { _, err := tiered.New[int64](src, e.redis, ""); return err },
		"tag prefix":   func() error { _, err := tiered.New[int64](src, e.redis, "{p}"); return err },
		"zero ttl":     func() error { _, err := tiered.New[int64](src, e.redis, "p", tiered.WithTTL(0)); return err },
		"nil clock":    func() error { _, err := tiered.New[int64](src, e.redis, "p", tiered.WithClock(nil)); return err },
		"nil option":   func() error { _, err := tiered.New[int64](src, e.redis, "p", nil); return err },
	} {
		if err := f(); !errors.Is(err, state.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
	// It keeps the source's optional interfaces, and only those.
	s, err := tiered.New[int64](src, e.redis, "p")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(state.OnceStore[int64]); !ok {
		t.Error("over an OnceStore: not an OnceStore")
	}
	if _, ok := s.(state.BatchStore[int64]); !ok {
		t.Error("over a BatchStore: not a BatchStore")
	}
	plain, err := tiered.New[int64](struct{ state.RevisionStore[int64] }{src}, e.redis, "p")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := plain.(state.OnceStore[int64]); ok {
		t.Error("over a plain store: an OnceStore")
	}
}

func attrStep(step string) attribute.KeyValue { return attribute.String("pipestate.tiered.step", step) }

// TestComposes: the tier goes over an observed source and under an observed
// store and an in-process cache, keeping OnceStore and BatchStore throughout.
func TestComposes(t *testing.T) {
	e := envFor(t, redisKinds()["miniredis"])
	src, err := ddbstate.NewInt64SumStore(testenv.DynamoDBClient(t), e.values, ddbstate.WithDedupTable(e.dedup))
	if err != nil {
		t.Fatal(err)
	}
	observed, err := observe.Store[int64](src)
	if err != nil {
		t.Fatal(err)
	}
	rs, ok := observed.(state.RevisionStore[int64])
	if !ok {
		t.Fatal("an observed DynamoDB store is not a RevisionStore")
	}
	tier := mustNew(t, e, rs)
	outer, err := observe.Store[int64](tier)
	if err != nil {
		t.Fatal(err)
	}
	l1, err := cache.New[int64](outer)
	if err != nil {
		t.Fatal(err)
	}
	once, ok := l1.(state.OnceStore[int64])
	if !ok {
		t.Fatal("the stack is not an OnceStore")
	}
	if _, ok := l1.(state.BatchStore[int64]); !ok {
		t.Fatal("the stack is not a BatchStore")
	}
	ctx, k := t.Context(), state.Key{Entity: "k"}
	for range 2 {
		if _, err := once.MergeUpdateOnce(ctx, "ev", k, 3, 0); err != nil {
			t.Fatal(err)
		}
	}
	if v, ok, err := l1.Get(ctx, k); err != nil || !ok || v != 3 {
		t.Fatalf("Get = %d, %v, %v; want 3", v, ok, err)
	}
	if v, _, err := sums(t, e).Get(ctx, k); err != nil || v != 3 {
		t.Fatalf("another process: %d, %v; want 3", v, err)
	}
}

// TestLostReply: a write-through whose reply is lost after Redis applied it is
// sent again by go-redis; the script's newer-only rule makes the second one a
// no-op, and every process reads the written value from Redis.
func TestLostReply(t *testing.T) {
	n := faults.NewNet()
	mr := miniredis.RunT(t)
	e := envFor(t, func(t *testing.T) goredis.UniversalClient {
		return goredis.NewClient(&goredis.Options{Addr: mr.Addr(), Dialer: n.Dial})
	})
	s := sums(t, e)
	ctx, k := t.Context(), state.Key{Entity: "k"}
	for i := range 3 {
		n.DropReply(faults.Contains("evalsha"))
		if err := s.MergeUpdate(ctx, k, 2, 0); err != nil {
			t.Fatalf("write %d after a lost reply: %v", i, err)
		}
	}
	if n.Dropped() != 3 {
		t.Fatalf("%d replies dropped, want 3", n.Dropped())
	}
	sig := signaltest.NewSignals()
	v, _, err := sums(t, e, tiered.WithMeterProvider(sig.Meter)).Get(ctx, k)
	if err != nil || v != 6 {
		t.Fatalf("Get = %d, %v; want 6", v, err)
	}
	if hits := sig.Collect(t, "pipestate.tiered.hits").Value; hits != 1 {
		t.Fatalf("the read was not served by Redis (%d hits)", hits)
	}
}
