package lincheck_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/pipestate/pipestate/internal/testkit/lincheck"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/state"
)

// fullProvider is a Provider with leases, as every built-in backend is.
type fullProvider interface {
	provider.Provider
	provider.Leaser
}

// target is one (sub)test's storage on one backend.
type target struct {
	// providers opens n providers over the storage, with owner identities that
	// are prefixes of each other ("worker-1", "worker-10", ...).
	providers func(t *testing.T, n int) []fullProvider
	// events opens n event stores over the storage; nil: n providers.
	events func(t *testing.T, n int) []provider.EventStore
	// counters opens n Int64 sum stores over the storage.
	counters func(t *testing.T, n int) []state.OnceStore[int64]
	// fault injects one fault chosen with r; nil for a backend without faults,
	// whose histories must then have no unknown outcome.
	fault func(r *rand.Rand)
	// stopFaults turns off faults that outlive one call of fault; may be nil.
	stopFaults func()
	// slow divides the operations per client of every workload (0 or 1: none),
	// for a backend whose calls are slow.
	slow int
}

// workloadDuration bounds how long a workload starts new operations, so that a
// backend slowed down by other tests shortens the history, not the test's budget.
const workloadDuration = 8 * time.Second

// size is cfg with Ops divided by tg.slow and Duration workloadDuration.
func (tg target) size(cfg lincheck.Config) lincheck.Config {
	cfg.Ops /= max(1, tg.slow)
	cfg.Duration = workloadDuration
	return cfg
}

// eventStores opens n event stores over tg's storage: tg.events, or providers.
func (tg target) eventStores(t *testing.T, n int) []provider.EventStore {
	if tg.events != nil {
		return tg.events(t, n)
	}
	var out []provider.EventStore
	for _, p := range tg.providers(t, n) {
		out = append(out, p)
	}
	return out
}

// owner is the owner identity of instance i: each is a prefix of the next.
func owner(i int) string { return "worker-1" + strings.Repeat("0", i) }

// faulted runs f while injecting a fault every few milliseconds, then stops.
func (tg target) faulted(f func() []porcupine.Operation) []porcupine.Operation {
	if tg.fault == nil {
		return f()
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		r := rand.New(rand.NewPCG(rand.Uint64(), 0))
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(2+r.IntN(8)) * time.Millisecond):
				tg.fault(r)
			}
		}
	}()
	ops := f()
	close(stop)
	<-done
	if tg.stopFaults != nil {
		tg.stopFaults()
	}
	return ops
}

// workloadTimeout bounds one workload's calls: one still running then fails, an
// unknown outcome.
const workloadTimeout = 30 * time.Second

// workload is one model with a workload that records a history for it.
type workload struct {
	name  string
	model porcupine.Model
	run   func(t *testing.T, ctx context.Context, tg target) []porcupine.Operation
}

var workloads = []workload{
	{"runs", lincheck.RunModel(), func(t *testing.T, ctx context.Context, tg target) []porcupine.Operation {
		ps := tg.providers(t, 2)
		ss := []provider.RunStore{ps[0], ps[1]}
		return tg.faulted(func() []porcupine.Operation {
			return lincheck.RunRegister(t, ctx, ss, tg.size(lincheck.Config{Clients: 6, Ops: 30, Keys: 3}))
		})
	}},
	{"fenced runs", lincheck.FencedModel(), func(t *testing.T, ctx context.Context, tg target) []porcupine.Operation {
		ps := tg.providers(t, 2)
		ss := []provider.Provider{ps[0], ps[1]}
		return tg.faulted(func() []porcupine.Operation {
			return lincheck.FencedRuns(t, ctx, ss, tg.size(lincheck.Config{Clients: 6, Ops: 30, Keys: 2}))
		})
	}},
	{"locks", lincheck.LockModel(), func(t *testing.T, ctx context.Context, tg target) []porcupine.Operation {
		ps := tg.providers(t, 3)
		ss := []lincheck.LockStore{ps[0], ps[1], ps[2]}
		return tg.faulted(func() []porcupine.Operation {
			return lincheck.Locks(t, ctx, ss, tg.size(lincheck.Config{Clients: 6, Ops: 20, Keys: 2}))
		})
	}},
	{"counter", lincheck.CounterModel(), func(t *testing.T, ctx context.Context, tg target) []porcupine.Operation {
		ss := tg.counters(t, 2)
		return tg.faulted(func() []porcupine.Operation {
			return lincheck.Counter(t, ctx, ss, tg.size(lincheck.Config{Clients: 4, Ops: 12, Keys: 2}))
		})
	}},
	eventsWorkload,
	{"list", lincheck.ListModel(), func(t *testing.T, ctx context.Context, tg target) []porcupine.Operation {
		ps := tg.providers(t, 2)
		ss := []provider.RunStore{ps[0], ps[1]}
		return tg.faulted(func() []porcupine.Operation {
			return lincheck.List(t, ctx, ss, tg.size(lincheck.Config{Clients: 6, Ops: 30}))
		})
	}},
}

// eventsWorkload is the event log workload: 6 clients over 3 instances append
// to 2 pipelines at once.
var eventsWorkload = workload{"events", lincheck.EventLogModel(), func(t *testing.T, ctx context.Context, tg target) []porcupine.Operation {
	ss := tg.eventStores(t, 3)
	return tg.faulted(func() []porcupine.Operation {
		return lincheck.EventLog(t, ctx, ss, tg.size(lincheck.Config{Clients: 6, Ops: 20, Keys: 2}))
	})
}}

// checkBackend runs every workload on storage from open and checks its history.
func checkBackend(t *testing.T, open func(t *testing.T) target) {
	checkWorkloads(t, workloads, open)
}

// checkWorkloads runs each of ws, in parallel subtests, on storage from open and
// checks its history.
func checkWorkloads(t *testing.T, ws []workload, open func(t *testing.T) target) {
	for _, w := range ws {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), workloadTimeout)
			defer cancel()
			tg := open(t)
			start := time.Now()
			ops := w.run(t, ctx, tg)
			t.Logf("workload ran in %v", time.Since(start).Round(time.Millisecond))
			if tg.fault == nil {
				requireKnown(t, ops)
			}
			lincheck.Require(t, w.model, ops)
		})
	}
}

// requireKnown fails t if an operation of ops has an unknown outcome: without
// faults every call must answer.
func requireKnown(t *testing.T, ops []porcupine.Operation) {
	t.Helper()
	for _, o := range ops {
		if u, ok := o.Output.(lincheck.Unknown); ok {
			t.Fatalf("%+v failed without faults: %s", o.Input, u.Err)
		}
	}
}
