package redisprovider_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/redisprovider"
	"github.com/pipestate/pipestate/providertest"
)

// fakeClock is a test's clock: real time plus what Sleep added, so that
// timestamps keep moving while TTLs can be jumped over.
type fakeClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

// miniEnv is the storage of one test on miniredis: its own server and clock.
type miniEnv struct {
	m     *miniredis.Miniredis
	c     *goredis.Client
	clock *fakeClock
}

// miniHarness opens providers on one miniredis per test (keyed by t.Name()), whose
// Sleep fast-forwards the server's TTLs and the providers' clock together.
type miniHarness struct {
	mu   sync.Mutex
	envs map[string]*miniEnv
}

func newMiniHarness() *miniHarness { return &miniHarness{envs: map[string]*miniEnv{}} }

func (h *miniHarness) env(t *testing.T) *miniEnv {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if e, ok := h.envs[t.Name()]; ok {
		return e
	}
	m := miniredis.RunT(t)
	c := goredis.NewClient(&goredis.Options{Addr: m.Addr()})
	e := &miniEnv{m: m, c: c, clock: &fakeClock{}}
	h.envs[t.Name()] = e
	name := t.Name()
	t.Cleanup(func() {
		_ = c.Close()
		h.mu.Lock()
		delete(h.envs, name)
		h.mu.Unlock()
	})
	return e
}

func (h *miniHarness) open(t *testing.T, opts ...redisprovider.Option) *redisprovider.Provider {
	t.Helper()
	e := h.env(t)
	return openProvider(t, e.c, append([]redisprovider.Option{redisprovider.WithClock(e.clock.now)}, opts...)...)
}

func (h *miniHarness) sleep(t *testing.T, d time.Duration) {
	t.Helper()
	e := h.env(t)
	e.clock.add(d)
	e.m.FastForward(d)
}

func (h *miniHarness) harness() providertest.Harness {
	return providertest.Harness{
		Open: func(t *testing.T) provider.Provider { return h.open(t, conformanceMarkerWrites) },
		OpenOwner: func(t *testing.T, owner string) provider.Provider {
			return h.open(t, conformanceMarkerWrites, redisprovider.WithOwner(owner))
		},
		Sleep: h.sleep,
		Now:   func(t *testing.T) time.Time { return h.env(t).clock.now() },
		ExpireEvents: func(t *testing.T, pipelineID string) {
			trimEvents(t, h.env(t).c, redisprovider.DefaultKeyPrefix, pipelineID)
		},
		ExpireMarkers:   func(t *testing.T) { trimMarkers(t, h.env(t).c, redisprovider.DefaultKeyPrefix) },
		MaxMarkerWrites: maxMarkerWrites,
		OpenMaxEvents: func(t *testing.T, n int) provider.Provider {
			return h.open(t, conformanceMarkerWrites, redisprovider.WithMaxEvents(int64(n)))
		},
		Corrupt: func(t *testing.T, kind provider.RecordKind, id ...string) {
			corruptRecord(t, h.env(t).c, redisprovider.DefaultKeyPrefix, kind, id...)
		},
		DropActiveEntry: func(t *testing.T, runID string) {
			dropActiveEntry(t, h.env(t).c, redisprovider.DefaultKeyPrefix, runID)
		},
		Retention: retention,
		OpenReadOnly: func(t *testing.T) provider.Provider {
			return h.open(t, conformanceMarkerWrites, redisprovider.WithReadOnly())
		},
	}
}

// retention is the retention of the conformance providers, the default:
// without Events and MarkerLog, which Redis keeps by count.
var retention = func() provider.Retention {
	r := provider.DefaultRetention()
	r.Events, r.MarkerLog = 0, 0
	return r
}()

// maxMarkerWrites is the marker log length of the conformance providers
// (conformanceMarkerWrites), short enough for the suite to write past it.
const maxMarkerWrites = 100

var conformanceMarkerWrites = redisprovider.WithMaxMarkerWrites(maxMarkerWrites)

// dropActiveEntry removes run runID's entry from the active-runs index (its
// member, its entry and its expiry), and nothing of the run, as an operator's
// HDEL and ZREMs or a failover's lost writes would: the run's mark a stays, so
// a CAS still trusts the entry (Harness.DropActiveEntry).
func dropActiveEntry(t *testing.T, c goredis.UniversalClient, prefix, runID string) {
	t.Helper()
	ctx := context.Background()
	active := prefix + ":{:active}"
	err := errors.Join(c.ZRem(ctx, active, runID).Err(), c.HDel(ctx, active+":ids", runID).Err(), c.ZRem(ctx, active+":exp", runID).Err())
	if err != nil {
		t.Fatalf("drop the active-runs entry of %s: %v", runID, err)
	}
}

// trimMarkers drops every write of the marker log, as retention
// (WithMaxMarkerWrites) drops old ones, with an exact XTRIM of its stream.
func trimMarkers(t *testing.T, c goredis.UniversalClient, prefix string) {
	t.Helper()
	if err := c.XTrimMaxLen(context.Background(), prefix+":{:markers}", 0).Err(); err != nil {
		t.Fatalf("trim markers: %v", err)
	}
}

// trimEvents drops every event of pipelineID, as retention (WithMaxEvents) drops
// old ones, with an exact XTRIM of the pipeline's stream.
func trimEvents(t *testing.T, c goredis.UniversalClient, prefix, pipelineID string) {
	t.Helper()
	if err := c.XTrimMaxLen(context.Background(), prefix+":{"+pipelineID+"}:events", 0).Err(); err != nil {
		t.Fatalf("trim events: %v", err)
	}
}

// openProvider opens and starts a provider on c, stopped when t ends.
func openProvider(t *testing.T, c goredis.UniversalClient, opts ...redisprovider.Option) *redisprovider.Provider {
	t.Helper()
	p, err := redisprovider.New(c, opts...)
	if err != nil {
		t.Fatalf("redisprovider.New: %v", err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	return p
}

// serverHarness opens providers on a real server (standalone or cluster) with a key
// prefix per test name and real sleeps.
type serverHarness struct {
	c        goredis.UniversalClient
	mu       sync.Mutex
	prefixes map[string]string
}

func newServerHarness(c goredis.UniversalClient) *serverHarness {
	return &serverHarness{c: c, prefixes: map[string]string{}}
}

func (h *serverHarness) prefix(t *testing.T) string {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	p, ok := h.prefixes[t.Name()]
	if !ok {
		p = "pst:" + testenv.RedisPrefix(t)
		h.prefixes[t.Name()] = p
	}
	return p
}

func (h *serverHarness) open(t *testing.T, opts ...redisprovider.Option) *redisprovider.Provider {
	t.Helper()
	return openProvider(t, h.c, append([]redisprovider.Option{redisprovider.WithKeyPrefix(h.prefix(t)), redisprovider.WithReadinessTTL(3 * time.Second)}, opts...)...)
}

func (h *serverHarness) harness() providertest.Harness {
	return providertest.Harness{
		Open: func(t *testing.T) provider.Provider { return h.open(t, conformanceMarkerWrites) },
		OpenOwner: func(t *testing.T, owner string) provider.Provider {
			return h.open(t, conformanceMarkerWrites, redisprovider.WithOwner(owner))
		},
		ReadinessTTL:    3 * time.Second,
		Now:             func(*testing.T) time.Time { return time.Now() },
		ExpireEvents:    func(t *testing.T, pipelineID string) { trimEvents(t, h.c, h.prefix(t), pipelineID) },
		ExpireMarkers:   func(t *testing.T) { trimMarkers(t, h.c, h.prefix(t)) },
		MaxMarkerWrites: maxMarkerWrites,
		OpenMaxEvents: func(t *testing.T, n int) provider.Provider {
			return h.open(t, conformanceMarkerWrites, redisprovider.WithMaxEvents(int64(n)))
		},
		Corrupt: func(t *testing.T, kind provider.RecordKind, id ...string) {
			corruptRecord(t, h.c, h.prefix(t), kind, id...)
		},
		DropActiveEntry: func(t *testing.T, runID string) { dropActiveEntry(t, h.c, h.prefix(t), runID) },
		OpenReadOnly: func(t *testing.T) provider.Provider {
			return h.open(t, conformanceMarkerWrites, redisprovider.WithReadOnly())
		},
	}
}

// retentionHarness is a harness on the server for the Retention group: its
// providers judge retention by a fake clock per test (real time plus what Sleep
// added), as on miniredis; the server's TTLs (retention + a minute) never
// elapse during the test, so reads are judged by the clock alone.
func (h *serverHarness) retentionHarness() providertest.Harness {
	var mu sync.Mutex
	clocks := map[string]*fakeClock{}
	clock := func(t *testing.T) *fakeClock {
		mu.Lock()
		defer mu.Unlock()
		c, ok := clocks[t.Name()]
		if !ok {
			c = &fakeClock{}
			clocks[t.Name()] = c
		}
		return c
	}
	return providertest.Harness{
		Open:      func(t *testing.T) provider.Provider { return h.open(t, redisprovider.WithClock(clock(t).now)) },
		Sleep:     func(t *testing.T, d time.Duration) { clock(t).add(d) },
		Now:       func(t *testing.T) time.Time { return clock(t).now() },
		Retention: retention,
	}
}

// realClient returns a client of the standalone server in REDIS_ADDR (or skips).
func realClient(t testing.TB) *goredis.Client {
	t.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: testenv.RedisAddr(t)})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// clusterClient returns a client of the cluster in REDIS_CLUSTER_ADDRS (or skips).
func clusterClient(t testing.TB) *goredis.ClusterClient {
	t.Helper()
	c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: testenv.RedisClusterAddrs(t)})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// envAddr is the real standalone server's address, "" when none is configured,
// for benchmarks that add variants rather than skip (tests use
// testenv.RedisWanted, which also adds them when servers are required).
func envAddr() string { return os.Getenv("REDIS_ADDR") }
