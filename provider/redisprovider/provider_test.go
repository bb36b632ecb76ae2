package redisprovider_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/redisprovider"
	"github.com/pipestate/pipestate/types"
)

func TestNewRejectsBadOptions(t *testing.T) {
	c := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	for _, tc := range []struct {
		name string
		opt  redisprovider.Option
	}{
		{"empty_prefix", redisprovider.WithKeyPrefix("")},
		{"brace_prefix", redisprovider.WithKeyPrefix("a{b")},
		{"closing_brace_prefix", redisprovider.WithKeyPrefix("a}")},
		{"control_prefix", redisprovider.WithKeyPrefix("a\nb")},
		{"long_prefix", redisprovider.WithKeyPrefix(strings.Repeat("p", 65))},
		{"invalid_utf8_prefix", redisprovider.WithKeyPrefix("a\xffb")},
		{"empty_owner", redisprovider.WithOwner("")},
		{"control_owner", redisprovider.WithOwner("a\nb")},
		{"short_readiness", redisprovider.WithReadinessTTL(time.Microsecond)},
		{"negative_readiness", redisprovider.WithReadinessTTL(-time.Second)},
		{"readiness_over_max", redisprovider.WithReadinessTTL(provider.MaxTTL + 1)},
		{"readiness_max_duration", redisprovider.WithReadinessTTL(1<<63 - 1)},
		{"negative_max_events", redisprovider.WithMaxEvents(-1)},
		{"negative_max_marker_writes", redisprovider.WithMaxMarkerWrites(-1)},
		{"negative_run_log_retention", redisprovider.WithRetention(provider.Retention{RunLogs: -time.Second})},
		{"marker_retention_over_max", redisprovider.WithRetention(provider.Retention{CascadeMarkers: provider.MaxTTL + 1})},
		{"small_max_value", redisprovider.WithMaxValueSize(1000)},
		{"large_max_value", redisprovider.WithMaxValueSize(512<<20 + 1)},
		{"nil_clock", redisprovider.WithClock(nil)},
		{"nil_meter_provider", redisprovider.WithMeterProvider(nil)},
		{"typed_nil_meter_provider", redisprovider.WithMeterProvider((*sdkmetric.MeterProvider)(nil))},
		{"nil_logger", redisprovider.WithLogger(nil)},
		{"nil_option", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := redisprovider.New(c, tc.opt); !errors.Is(err, provider.ErrInvalidArgument) {
				t.Errorf("New: got %v, want ErrInvalidArgument", err)
			}
		})
	}
	if _, err := redisprovider.New(nil); !errors.Is(err, provider.ErrInvalidArgument) {
		t.Errorf("New(nil): got %v, want ErrInvalidArgument", err)
	}
	p, err := redisprovider.New(c)
	if err != nil {
		t.Fatal(err)
	}
	if p.KeyPrefix() != redisprovider.DefaultKeyPrefix || len(p.Owner()) != 32 {
		t.Errorf("defaults: prefix %q owner %q", p.KeyPrefix(), p.Owner())
	}
	// The bounds themselves are valid.
	if _, err := redisprovider.New(c, redisprovider.WithKeyPrefix(strings.Repeat("p", 64)), redisprovider.WithReadinessTTL(time.Millisecond),
		redisprovider.WithMaxEvents(0), redisprovider.WithMaxMarkerWrites(0), redisprovider.WithMaxValueSize(redisprovider.MinMaxValueSize), redisprovider.WithCloseClient()); err != nil {
		t.Errorf("New with the lower bounds: %v", err)
	}
	if _, err := redisprovider.New(c, redisprovider.WithReadinessTTL(provider.MaxTTL), redisprovider.WithMaxValueSize(512<<20)); err != nil {
		t.Errorf("New with the upper bounds: %v", err)
	}
}

func TestStopLeavesClientOpen(t *testing.T) {
	ctx := context.Background()
	m := miniredis.RunT(t)
	for _, tc := range []struct {
		name      string
		opts      []redisprovider.Option
		wantClose bool
	}{
		{"default", nil, false},
		{"close_client", []redisprovider.Option{redisprovider.WithCloseClient()}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := goredis.NewClient(&goredis.Options{Addr: m.Addr()})
			defer c.Close()
			p, err := redisprovider.New(c, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			if err := p.Stop(ctx); err != nil {
				t.Fatalf("second Stop: %v", err)
			}
			if err := p.Ping(ctx); !errors.Is(err, provider.ErrClosed) {
				t.Errorf("Ping after Stop: %v, want ErrClosed", err)
			}
			if err := p.Start(ctx); !errors.Is(err, provider.ErrClosed) {
				t.Errorf("Start after Stop: %v, want ErrClosed", err)
			}
			err = c.Ping(ctx).Err()
			if closed := errors.Is(err, goredis.ErrClosed); closed != tc.wantClose {
				t.Errorf("client Ping after Stop: %v; want closed=%v", err, tc.wantClose)
			}
		})
	}
}

func TestBrokenConnection(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		cut  func(m *miniredis.Miniredis, c *goredis.Client)
	}{
		{"dead_server", func(m *miniredis.Miniredis, _ *goredis.Client) { m.Close() }},
		{"closed_client", func(_ *miniredis.Miniredis, c *goredis.Client) { _ = c.Close() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := miniredis.RunT(t)
			c := goredis.NewClient(&goredis.Options{Addr: m.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond,
				DialerRetries: 1, DialerRetryTimeout: time.Millisecond})
			defer c.Close()
			p, err := redisprovider.New(c)
			if err != nil {
				t.Fatal(err)
			}
			tc.cut(m, c)
			calls := map[string]func() error{
				"ping":    func() error { return p.Ping(ctx) },
				"start":   func() error { return p.Start(ctx) },
				"cas":     func() error { _, err := p.CompareAndSwapRunState(ctx, "r", 0, runState("p", "r")); return err },
				"get_run": func() error { _, err := p.GetRunState(ctx, "r"); return err },
				"put_run": func() error { return p.PutRunState(ctx, runState("p", "r")) },
				"list":    func() error { _, err := p.ListRuns(ctx, "p", 5); return err },
				"lock":    func() error { _, err := p.AcquireLock(ctx, "k", 0); return err },
				"release": func() error { return p.ReleaseLock(ctx, "k") },
				"lease":   func() error { _, err := p.AcquireLease(ctx, "k", time.Second); return err },
				"traits":  func() error { _, err := p.GetTraits(ctx, "p"); return err },
				"events":  func() error { _, err := p.ReadEventsSince(ctx, "p", "", 5); return err },
				"run_log": func() error { _, err := p.GetRunLog(ctx, "p", "d", ""); return err },
			}
			for name, f := range calls {
				err := f()
				if err == nil || errors.Is(err, provider.ErrInvalidArgument) || errors.Is(err, provider.ErrLockNotHeld) {
					t.Errorf("%s: got %v, want a connection error", name, err)
				}
			}
			if err := p.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			if err := p.Ping(ctx); !errors.Is(err, provider.ErrClosed) {
				t.Errorf("Ping after Stop: %v, want ErrClosed", err)
			}
		})
	}
}

func runState(pid, id string) types.RunState {
	return types.RunState{RunID: id, PipelineID: pid, Status: types.RunRunning}
}

// lockHarness is what the lock tests need from a harness.
type lockHarness struct {
	open  func(t *testing.T, opts ...redisprovider.Option) *redisprovider.Provider
	sleep func(t *testing.T, d time.Duration)
}

// lockHarnesses returns a harness on miniredis, and on the real standalone server
// and cluster when they are configured.
func lockHarnesses(t *testing.T) map[string]lockHarness {
	mh := newMiniHarness()
	hs := map[string]lockHarness{"miniredis": {mh.open, mh.sleep}}
	realSleep := func(_ *testing.T, d time.Duration) { time.Sleep(d) }
	if testenv.RedisWanted() {
		hs["redis"] = lockHarness{newServerHarness(realClient(t)).open, realSleep}
	}
	if testenv.RedisClusterWanted() {
		hs["cluster"] = lockHarness{newServerHarness(clusterClient(t)).open, realSleep}
	}
	return hs
}

func TestLocks(t *testing.T) {
	for name, h := range lockHarnesses(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			t.Run("exclusive", func(t *testing.T) {
				ctx := t.Context()
				a, b := h.open(t), h.open(t)
				for _, key := range []string{"k", "{k}", "%7Bk%7D", "k}:fence", "ключ {x} %"} {
					if ok, err := a.AcquireLock(ctx, key, 0); !ok || err != nil {
						t.Fatalf("a.AcquireLock(%q) = %v, %v", key, ok, err)
					}
					if ok, err := b.AcquireLock(ctx, key, 0); ok || err != nil {
						t.Fatalf("b.AcquireLock(%q) of a held key = %v, %v", key, ok, err)
					}
					if ok, err := a.AcquireLock(ctx, key, 0); ok || err != nil {
						t.Fatalf("re-entrant AcquireLock(%q) = %v, %v", key, ok, err)
					}
					if err := b.ReleaseLock(ctx, key); !errors.Is(err, provider.ErrLockNotHeld) {
						t.Fatalf("b.ReleaseLock(%q) = %v, want ErrLockNotHeld", key, err)
					}
					if _, err := b.AcquireLease(ctx, key, time.Minute); !errors.Is(err, provider.ErrLockHeld) {
						t.Fatalf("lease of a locked key: %v, want ErrLockHeld", err)
					}
				}
				for _, key := range []string{"k", "{k}", "%7Bk%7D", "k}:fence", "ключ {x} %"} {
					if err := a.ReleaseLock(ctx, key); err != nil {
						t.Fatalf("a.ReleaseLock(%q): %v", key, err)
					}
					if err := a.ReleaseLock(ctx, key); !errors.Is(err, provider.ErrLockNotHeld) {
						t.Fatalf("second ReleaseLock(%q) = %v", key, err)
					}
				}
			})
			t.Run("exact_identity", func(t *testing.T) {
				ctx := t.Context()
				for _, owners := range [][2]string{{"worker-10", "worker-1"}, {"worker-1", "worker-10"}, {"w", "w\u00e9"}} {
					holder, other := h.open(t, redisprovider.WithOwner(owners[0])), h.open(t, redisprovider.WithOwner(owners[1]))
					key := "lock-" + owners[0]
					if ok, err := holder.AcquireLock(ctx, key, time.Minute); !ok || err != nil {
						t.Fatalf("AcquireLock = %v, %v", ok, err)
					}
					if err := other.ReleaseLock(ctx, key); !errors.Is(err, provider.ErrLockNotHeld) {
						t.Fatalf("owner %q released the lock of %q: %v", owners[1], owners[0], err)
					}
					if ok, err := other.AcquireLock(ctx, key, time.Minute); ok || err != nil {
						t.Fatalf("the lock of %q is free after a release by %q: %v, %v", owners[0], owners[1], ok, err)
					}
					if err := holder.ReleaseLock(ctx, key); err != nil {
						t.Fatal(err)
					}
				}
				a := h.open(t)
				l, err := a.AcquireLease(ctx, "lease", time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				for _, tok := range []string{l.Token[:len(l.Token)-1], l.Token[:1], l.Token + "0"} {
					forged := *l
					forged.Token = tok
					if err := a.ReleaseLease(ctx, forged); !errors.Is(err, provider.ErrLockNotHeld) {
						t.Fatalf("ReleaseLease with token %q of %q: %v, want ErrLockNotHeld", tok, l.Token, err)
					}
					if _, err := a.RenewLease(ctx, forged, time.Minute); !errors.Is(err, provider.ErrLockNotHeld) {
						t.Fatalf("RenewLease with token %q of %q: %v, want ErrLockNotHeld", tok, l.Token, err)
					}
				}
				if _, err := a.AcquireLease(ctx, "lease", time.Minute); !errors.Is(err, provider.ErrLockHeld) {
					t.Fatalf("the lease is free after forged releases: %v", err)
				}
				if err := a.ReleaseLease(ctx, *l); err != nil {
					t.Fatal(err)
				}
			})
			t.Run("expiry", func(t *testing.T) {
				ctx := t.Context()
				a, b := h.open(t), h.open(t)
				if ok, err := a.AcquireLock(ctx, "k", 50*time.Millisecond); !ok || err != nil {
					t.Fatalf("AcquireLock = %v, %v", ok, err)
				}
				h.sleep(t, 200*time.Millisecond)
				if ok, err := b.AcquireLock(ctx, "k", 0); !ok || err != nil {
					t.Fatalf("AcquireLock after expiry = %v, %v", ok, err)
				}
				if err := a.ReleaseLock(ctx, "k"); !errors.Is(err, provider.ErrLockNotHeld) {
					t.Fatalf("release by the expired holder = %v", err)
				}
			})
			t.Run("leases", func(t *testing.T) {
				ctx := t.Context()
				a, b := h.open(t), h.open(t)
				// 500ms: the lock attempt must land while the lease holds, on a loaded server too
				l1, err := a.AcquireLease(ctx, "k", 500*time.Millisecond)
				if err != nil {
					t.Fatal(err)
				}
				if ok, err := b.AcquireLock(ctx, "k", 0); ok || err != nil {
					t.Fatalf("lock of a leased key = %v, %v", ok, err)
				}
				h.sleep(t, 700*time.Millisecond)
				if _, err := a.RenewLease(ctx, *l1, time.Second); !errors.Is(err, provider.ErrLockNotHeld) {
					t.Fatalf("renew after expiry = %v", err)
				}
				l2, err := b.AcquireLease(ctx, "k", time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				if l2.Fence <= l1.Fence {
					t.Fatalf("fences %d then %d, want increasing", l1.Fence, l2.Fence)
				}
				if err := a.ReleaseLease(ctx, *l1); !errors.Is(err, provider.ErrLockNotHeld) {
					t.Fatalf("release of a taken-over lease = %v", err)
				}
				r, err := b.RenewLease(ctx, *l2, 2*time.Minute)
				if err != nil || !r.ExpiresAt.After(l2.ExpiresAt) || r.Fence != l2.Fence {
					t.Fatalf("RenewLease = %+v, %v", r, err)
				}
				if err := b.ReleaseLease(ctx, *l2); err != nil {
					t.Fatal(err)
				}
				l3, err := a.AcquireLease(ctx, "k", time.Minute)
				if err != nil || l3.Fence <= l2.Fence {
					t.Fatalf("AcquireLease after release = %+v, %v", l3, err)
				}
			})
			t.Run("contention", func(t *testing.T) {
				ctx := t.Context()
				ps := []*redisprovider.Provider{h.open(t), h.open(t), h.open(t)}
				for round := range 5 {
					key := fmt.Sprintf("race-%d", round)
					var wins atomic.Int32
					var wg sync.WaitGroup
					for i := range 24 {
						wg.Add(1)
						go func() {
							defer wg.Done()
							var ok bool
							var err error
							if i%2 == 0 {
								ok, err = ps[i%3].AcquireLock(ctx, key, time.Minute)
							} else {
								_, err = ps[i%3].AcquireLease(ctx, key, time.Minute)
								ok = err == nil
								if errors.Is(err, provider.ErrLockHeld) {
									err = nil
								}
							}
							if err != nil {
								t.Error(err)
							}
							if ok {
								wins.Add(1)
							}
						}()
					}
					wg.Wait()
					if wins.Load() != 1 {
						t.Fatalf("round %d: %d winners, want 1", round, wins.Load())
					}
				}
			})
		})
	}
}
