package sqlite_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/pipestate/pipestate/examples/custombackend/sqlite"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/providertest"
)

// TestConformance runs the providertest conformance suite. Each (sub)test gets its
// own database file and clock; the providers it opens share both.
func TestConformance(t *testing.T) {
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
	open := func(t *testing.T, opts ...sqlite.Option) provider.Provider {
		e := env(t)
		opts = append([]sqlite.Option{sqlite.WithClock(e.now), sqlite.WithEventRetention(retention)}, opts...)
		p, err := sqlite.New(context.Background(), e.path, opts...)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		t.Cleanup(func() { _ = p.Stop(context.Background()) })
		return p
	}
	// The marker log keeps writes for markerRetention; the next write deletes
	// older ones.
	const markerRetention = 24 * time.Hour
	keepMarkers := sqlite.WithMarkerLogRetention(markerRetention)
	providertest.Run(t, providertest.Harness{
		Open: func(t *testing.T) provider.Provider { return open(t, keepMarkers) },
		OpenOwner: func(t *testing.T, owner string) provider.Provider {
			return open(t, keepMarkers, sqlite.WithOwner(owner))
		},
		Sleep: func(t *testing.T, d time.Duration) { env(t).sleep(d) },
		Now:   func(t *testing.T) time.Time { return env(t).now() },
		// Retention is by time: moving the test's clock past it drops every
		// event appended so far.
		ExpireEvents:  func(t *testing.T, _ string) { env(t).sleep(retention) },
		ExpireMarkers: func(t *testing.T) { env(t).sleep(markerRetention) },
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
