package sqlite_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pipestate/pipestate/examples/custombackend/sqlite"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// TestReopen: the data is in the file, and opening an existing file keeps it.
func TestReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "pipestate.db")
	p, err := sqlite.New(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.RegisterPipeline(ctx, types.PipelineConfig{ID: "orders"}); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	p, err = sqlite.New(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(ctx)
	got, err := p.GetPipeline(ctx, "orders")
	if err != nil || got == nil || got.ID != "orders" {
		t.Errorf("GetPipeline after reopening = %+v, %v", got, err)
	}
}

// TestNewRejects: a bad path or option fails New with ErrInvalidArgument and
// creates no file.
func TestNewRejects(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		path string
		opts []sqlite.Option
	}{
		{"empty path", "", nil},
		{"memory database", ":memory:", nil},
		{"question mark", filepath.Join(dir, "a?b.db"), nil},
		{"nil option", filepath.Join(dir, "n.db"), []sqlite.Option{nil}},
		{"nil clock", filepath.Join(dir, "c.db"), []sqlite.Option{sqlite.WithClock(nil)}},
		{"empty owner", filepath.Join(dir, "o.db"), []sqlite.Option{sqlite.WithOwner("")}},
		{"zero readiness ttl", filepath.Join(dir, "r.db"), []sqlite.Option{sqlite.WithReadinessTTL(0)}},
		{"huge readiness ttl", filepath.Join(dir, "h.db"), []sqlite.Option{sqlite.WithReadinessTTL(provider.MaxTTL + 1)}},
		{"tiny busy timeout", filepath.Join(dir, "b.db"), []sqlite.Option{sqlite.WithBusyTimeout(time.Microsecond)}},
		{"negative event retention", filepath.Join(dir, "e.db"), []sqlite.Option{sqlite.WithEventRetention(-time.Second)}},
		{"huge event retention", filepath.Join(dir, "f.db"), []sqlite.Option{sqlite.WithEventRetention(provider.MaxTTL + 1)}},
		{"negative marker log retention", filepath.Join(dir, "m.db"), []sqlite.Option{sqlite.WithMarkerLogRetention(-time.Second)}},
		{"huge marker log retention", filepath.Join(dir, "l.db"), []sqlite.Option{sqlite.WithMarkerLogRetention(provider.MaxTTL + 1)}},
		{"negative rerun retention", filepath.Join(dir, "q.db"), []sqlite.Option{sqlite.WithRetention(provider.Retention{Reruns: -time.Second})}},
		{"tiny max poll interval", filepath.Join(dir, "p.db"), []sqlite.Option{sqlite.WithMaxPollInterval(time.Millisecond)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := sqlite.New(context.Background(), tt.path, tt.opts...)
			if err == nil {
				_ = p.Stop(context.Background())
				t.Fatal("New succeeded")
			}
			if !errors.Is(err, provider.ErrInvalidArgument) {
				t.Errorf("New: %v, want an error wrapping ErrInvalidArgument", err)
			}
			if matches, _ := filepath.Glob(filepath.Join(dir, "*")); len(matches) != 0 {
				t.Errorf("New left files behind: %v", matches)
			}
		})
	}
}

// TestReadOnlyOpenWritesNothing: a read-only New opens the file read-only. Of
// a missing file it fails and creates nothing (before, it created the file and
// its schema); of a file it cannot write (0444) it works and reads.
func TestReadOnlyOpenWritesNothing(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	if p, err := sqlite.New(ctx, missing, sqlite.WithReadOnly()); err == nil {
		_ = p.Stop(ctx)
		t.Error("read-only New of a missing file succeeded, want an error")
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Errorf("read-only New of a missing file left %v (%v), want nothing", entries, err)
	}
	path := filepath.Join(dir, "pipestate.db")
	w, err := sqlite.New(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.RegisterPipeline(ctx, types.PipelineConfig{ID: "orders"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	r, err := sqlite.New(ctx, path, sqlite.WithReadOnly())
	if err != nil {
		t.Fatalf("read-only New of a 0444 file: %v", err)
	}
	defer func() { _ = r.Stop(ctx) }()
	if got, err := r.GetPipeline(ctx, "orders"); err != nil || got == nil {
		t.Errorf("GetPipeline through the read-only handle = %v, %v; want the pipeline", got, err)
	}
	if err := r.RegisterPipeline(ctx, types.PipelineConfig{ID: "other"}); !errors.Is(err, provider.ErrReadOnly) {
		t.Errorf("RegisterPipeline through the read-only handle = %v, want ErrReadOnly", err)
	}
}
