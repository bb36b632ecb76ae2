package providertest_test

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

// memoryBackend is the storage and clock of each test, keyed by t.Name().
type memoryBackend struct {
	mu    sync.Mutex
	tests map[string]*memoryTest
}

type memoryTest struct {
	data  *memory.Provider // the first handle on the test's data; providers are its handles
	clock *fakeclock.Clock
}

func (b *memoryBackend) get(t *testing.T) *memoryTest {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tests == nil {
		b.tests = map[string]*memoryTest{}
	}
	mt, ok := b.tests[t.Name()]
	if !ok {
		data, err := memory.New()
		if err != nil {
			panic(err)
		}
		mt = &memoryTest{data: data, clock: fakeclock.New(time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC))}
		b.tests[t.Name()] = mt
	}
	return mt
}

// eventRetention is the event retention of the memory providers under test; the
// harness's ExpireEvents moves the test's clock past it.
const eventRetention = 30 * 24 * time.Hour

// open returns a memory provider on the test's data and clock.
func (b *memoryBackend) open(t *testing.T, opts ...memory.Option) *memory.Provider {
	t.Helper()
	mt := b.get(t)
	base := []memory.Option{memory.WithClock(mt.clock.Now), memory.WithEventRetention(eventRetention)}
	p, err := mt.data.NewHandle(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	return p
}

// harness returns a Harness over the memory backend whose providers wrap wraps
// (the teeth tests wrap each in a broken one). The memory backend's own
// conformance run is provider/memory's TestConformance.
func (b *memoryBackend) harness(wrap func(t *testing.T, p *memory.Provider) provider.Provider) providertest.Harness {
	return providertest.Harness{
		Open:         func(t *testing.T) provider.Provider { return wrap(t, b.open(t)) },
		OpenOwner:    func(t *testing.T, owner string) provider.Provider { return wrap(t, b.open(t, memory.WithOwner(owner))) },
		Sleep:        func(t *testing.T, d time.Duration) { b.get(t).clock.Advance(d) },
		Now:          func(t *testing.T) time.Time { return b.get(t).clock.Now() },
		ExpireEvents: func(t *testing.T, _ string) { b.get(t).clock.Advance(eventRetention) },
	}
}
