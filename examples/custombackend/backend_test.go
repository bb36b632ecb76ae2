package main

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/providertest"
	"github.com/pipestate/pipestate/types"
)

// TestProvider runs the conformance suite. Each (sub)test gets its own database
// file and fake clock; the providers it opens share both.
func TestProvider(t *testing.T) {
	var mu sync.Mutex
	envs := map[string]*testEnv{}
	env := func(t *testing.T) *testEnv {
		mu.Lock()
		defer mu.Unlock()
		e, ok := envs[t.Name()]
		if !ok {
			e = &testEnv{path: filepath.Join(t.TempDir(), "pipestate.db")}
			envs[t.Name()] = e
		}
		return e
	}
	const retention = 30 * 24 * time.Hour
	open := func(t *testing.T, opts ...Option) provider.Provider {
		e := env(t)
		p, err := Open(context.Background(), e.path, append([]Option{WithClock(e.now), WithEventRetention(retention)}, opts...)...)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { _ = p.Stop(context.Background()) })
		return p
	}
	providertest.Run(t, providertest.Harness{
		Open:      func(t *testing.T) provider.Provider { return open(t) },
		OpenOwner: func(t *testing.T, owner string) provider.Provider { return open(t, WithOwner(owner)) },
		Sleep:     func(t *testing.T, d time.Duration) { env(t).sleep(d) },
		Now:       func(t *testing.T) time.Time { return env(t).now() },
		// Retention is by time: moving the test's clock past it drops every
		// event appended so far.
		ExpireEvents: func(t *testing.T, _ string) { env(t).sleep(retention) },
	})
}

// testEnv is one test's database file and clock. The clock is real time plus an
// offset that Sleep advances, so time moves forward as usual and jumps on Sleep.
type testEnv struct {
	path string

	mu     sync.Mutex
	offset time.Duration
}

func (e *testEnv) now() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return time.Now().Add(e.offset)
}

func (e *testEnv) sleep(d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.offset += d
}

// TestReopen: the data is in the file, and opening an existing file keeps it.
func TestReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "pipestate.db")
	p, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.RegisterPipeline(ctx, types.PipelineConfig{ID: "orders"}); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	p, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(ctx)
	got, err := p.GetPipeline(ctx, "orders")
	if err != nil || got == nil || got.ID != "orders" {
		t.Errorf("GetPipeline after reopening = %+v, %v", got, err)
	}
}

func TestOpenRejects(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		path string
		opts []Option
	}{
		{"empty path", "", nil},
		{"memory database", ":memory:", nil},
		{"question mark", filepath.Join(dir, "a?b.db"), nil},
		{"nil clock", filepath.Join(dir, "c.db"), []Option{WithClock(nil)}},
		{"empty owner", filepath.Join(dir, "o.db"), []Option{WithOwner("")}},
		{"zero readiness ttl", filepath.Join(dir, "r.db"), []Option{WithReadinessTTL(0)}},
		{"tiny busy timeout", filepath.Join(dir, "b.db"), []Option{WithBusyTimeout(time.Microsecond)}},
		{"negative event retention", filepath.Join(dir, "e.db"), []Option{WithEventRetention(-time.Second)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Open(context.Background(), tt.path, tt.opts...)
			if err == nil {
				_ = p.Stop(context.Background())
				t.Fatal("Open succeeded")
			}
		})
	}
}
