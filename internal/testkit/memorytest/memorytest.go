// Package memorytest opens memory providers for conformance runs
// (providertest.Run): each test gets fresh data and a fake clock that the providers
// it opens share, so the suite's expiry tests advance time instead of sleeping. A
// decorator of any provider (observe.Provider, a caching or retrying wrapper of
// your own) proves it keeps the contract by running the suite over memory
// providers it wraps:
//
//	b := memorytest.New()
//	providertest.Run(t, b.Harness(func(t *testing.T, p *memprovider.Provider) provider.Provider {
//		return mywrapper.Wrap(p)
//	}))
package memorytest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/pipestate/pipestate/internal/corrupthook"
	"github.com/pipestate/pipestate/internal/testkit/fakeclock"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/memprovider"
	"github.com/pipestate/pipestate/providertest"
)

// Retention is the retention of the providers Open returns, which the harness
// declares (providertest's Harness.Retention): provider.DefaultRetention(), so
// its Events and MarkerLog are EventRetention and MarkerRetention.
var Retention = provider.DefaultRetention()

// EventRetention is the event retention of the providers Open returns; the
// harness's ExpireEvents moves the test's clock past it.
const EventRetention = 30 * 24 * time.Hour

// MarkerRetention is the marker log retention of the providers Open returns; the
// harness's ExpireMarkers moves the test's clock past it.
const MarkerRetention = 24 * time.Hour

// Start is the fake clock's time when a test begins.
var Start = time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)

// Backend holds the data and clock of each test, by t.Name(). The zero value is not
// usable; call New.
type Backend struct {
	tests sync.Map // t.Name() -> *env
}

type env struct {
	data  *memprovider.Provider // the first handle on the test's data
	clock *fakeclock.Clock
}

// New returns an empty Backend.
func New() *Backend { return &Backend{} }

func (b *Backend) env(t *testing.T) *env {
	if v, ok := b.tests.Load(t.Name()); ok {
		return v.(*env)
	}
	// The first handle writes what Corrupt appends: on the test's clock, with
	// the retention of the providers Open returns.
	clock := fakeclock.New(Start)
	data, err := memprovider.New(memprovider.WithClock(clock.Now), memprovider.WithRetention(Retention),
		memprovider.WithEventRetention(EventRetention), memprovider.WithMarkerLogRetention(MarkerRetention))
	if err != nil {
		t.Fatal(err)
	}
	name := t.Name()
	v, loaded := b.tests.LoadOrStore(name, &env{data: data, clock: clock})
	if !loaded {
		// A long run (make sim) opens a test's data per run: it goes with the test.
		t.Cleanup(func() { b.tests.Delete(name) })
	}
	return v.(*env)
}

// Open returns a provider on t's data and clock (with Retention, whose Events and
// MarkerLog are EventRetention and MarkerRetention), stopped when t ends; opts
// come after those and may override them.
func (b *Backend) Open(t *testing.T, opts ...memprovider.Option) *memprovider.Provider {
	t.Helper()
	e := b.env(t)
	base := []memprovider.Option{memprovider.WithClock(e.clock.Now), memprovider.WithRetention(Retention),
		memprovider.WithEventRetention(EventRetention), memprovider.WithMarkerLogRetention(MarkerRetention)}
	p, err := e.data.NewHandle(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	return p
}

// Advance moves t's clock forward by d.
func (b *Backend) Advance(t *testing.T, d time.Duration) { b.env(t).clock.Advance(d) }

// Now returns t's clock reading.
func (b *Backend) Now(t *testing.T) time.Time { return b.env(t).clock.Now() }

// CorruptValue is what Corrupt stores: JSON of the wrong shape for every
// record, as a newer version's layout might be.
const CorruptValue = `[{"corrupt": true}]`

// Corrupt makes one record of t's data undecodable, as providertest's
// Harness.Corrupt describes: its stored form becomes CorruptValue (a log's
// record is appended with it; a lock's holder becomes it).
func (b *Backend) Corrupt(t *testing.T, kind provider.RecordKind, id ...string) {
	t.Helper()
	if err := corrupthook.Corrupt(b.env(t).data, kind, []byte(CorruptValue), id...); err != nil {
		t.Fatal(err)
	}
}

// Harness returns a providertest.Harness whose providers are wrap(t, Open(t));
// a nil wrap returns them as they are.
func (b *Backend) Harness(wrap func(t *testing.T, p *memprovider.Provider) provider.Provider) providertest.Harness {
	if wrap == nil {
		wrap = func(_ *testing.T, p *memprovider.Provider) provider.Provider { return p }
	}
	return providertest.Harness{
		Open: func(t *testing.T) provider.Provider { return wrap(t, b.Open(t)) },
		OpenOwner: func(t *testing.T, owner string) provider.Provider {
			return wrap(t, b.Open(t, memprovider.WithOwner(owner)))
		},
		Sleep:         b.Advance,
		Now:           b.Now,
		ExpireEvents:  func(t *testing.T, _ string) { b.Advance(t, EventRetention) },
		ExpireMarkers: func(t *testing.T) { b.Advance(t, MarkerRetention) },
		Corrupt:       b.Corrupt,
		Retention:     Retention,
		OpenReadOnly:  func(t *testing.T) provider.Provider { return wrap(t, b.Open(t, memprovider.WithReadOnly())) },
	}
}
