package memory_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/pipestate/pipestate/internal/fakeclock"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/memory"
	"github.com/pipestate/pipestate/providertest"
)

// conformanceRetention is the event retention of the conformance providers; the
// harness's ExpireEvents moves the test's clock past it.
const conformanceRetention = 30 * 24 * time.Hour

// env is the data and clock of one test, shared by the providers it opens.
type env struct {
	data  *memory.Provider // the first handle on the test's data
	clock *fakeclock.Clock
}

// envs holds the env of each test of one harness, by t.Name().
type envs struct{ m sync.Map }

func (e *envs) of(t *testing.T) *env {
	if v, ok := e.m.Load(t.Name()); ok {
		return v.(*env)
	}
	data, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	v, _ := e.m.LoadOrStore(t.Name(), &env{data: data, clock: fakeclock.New(time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC))})
	return v.(*env)
}

// open returns a provider on the test's data and clock, stopped when t ends.
func (e *envs) open(t *testing.T, opts ...memory.Option) provider.Provider {
	t.Helper()
	en := e.of(t)
	base := []memory.Option{memory.WithClock(en.clock.Now), memory.WithEventRetention(conformanceRetention)}
	p, err := en.data.NewHandle(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	return p
}

// plainProvider hides the optional interfaces of the memory backend.
type plainProvider struct{ provider.Provider }

// TestConformance runs the whole provider conformance suite on the memory backend,
// on a fake clock, then the groups that depend on an option or an optional
// interface with another one.
func TestConformance(t *testing.T) {
	e := new(envs)
	h := providertest.Harness{
		Open:         func(t *testing.T) provider.Provider { return e.open(t) },
		OpenOwner:    func(t *testing.T, owner string) provider.Provider { return e.open(t, memory.WithOwner(owner)) },
		Sleep:        func(t *testing.T, d time.Duration) { e.of(t).clock.Advance(d) },
		Now:          func(t *testing.T) time.Time { return e.of(t).clock.Now() },
		ExpireEvents: func(t *testing.T, _ string) { e.of(t).clock.Advance(conformanceRetention) },
	}
	providertest.Run(t, h)

	t.Run("short_readiness_ttl", func(t *testing.T) {
		short := h
		short.Open = func(t *testing.T) provider.Provider { return e.open(t, memory.WithReadinessTTL(3*time.Second)) }
		short.ReadinessTTL = 3 * time.Second
		providertest.RunReadiness(t, short)
	})

	t.Run("without_optional_interfaces", func(t *testing.T) {
		plain := h
		plain.Open = func(t *testing.T) provider.Provider { return plainProvider{e.open(t)} }
		plain.OpenOwner = func(t *testing.T, owner string) provider.Provider {
			return plainProvider{e.open(t, memory.WithOwner(owner))}
		}
		providertest.RunLeaser(t, plain)
		providertest.RunCascadeReader(t, plain)
		providertest.RunCascadeStore(t, plain)
		providertest.RunLifecycle(t, plain)
	})
}
