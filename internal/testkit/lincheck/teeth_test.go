package lincheck_test

import (
	"context"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/pipestate/pipestate/internal/fencectx"
	"github.com/pipestate/pipestate/internal/testkit/lincheck"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/types"
)

// casIgnoresVersion is a run store whose CAS swaps whatever the stored version.
type casIgnoresVersion struct{ provider.RunStore }

func (s casIgnoresVersion) CompareAndSwapRunState(ctx context.Context, runID string, _ int, newState types.RunState) (bool, error) {
	cur, err := s.GetRunState(ctx, runID)
	if err != nil || cur == nil {
		return false, err
	}
	newState.Version = cur.Version + 1
	return true, s.PutRunState(ctx, newState)
}

// fenceIgnored is a provider whose run writes drop the fence they carry.
type fenceIgnored struct{ provider.Provider }

func (p fenceIgnored) PutRunState(ctx context.Context, run types.RunState) error {
	return p.Provider.PutRunState(fencectx.With(ctx, nil), run)
}

func (p fenceIgnored) CompareAndSwapRunState(ctx context.Context, id string, v int, s types.RunState) (bool, error) {
	return p.Provider.CompareAndSwapRunState(fencectx.With(ctx, nil), id, v, s)
}

// lockLetsTwoIn is a locker whose AcquireLock always reports success.
type lockLetsTwoIn struct{ lincheck.LockStore }

func (s lockLetsTwoIn) AcquireLock(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	_, err := s.LockStore.AcquireLock(ctx, key, ttl)
	return true, err
}

// fenceRepeats is a leaser that hands every lease the fence 1.
type fenceRepeats struct{ lincheck.LockStore }

func (s fenceRepeats) AcquireLease(ctx context.Context, key string, ttl time.Duration) (*types.Lease, error) {
	l, err := s.LockStore.AcquireLease(ctx, key, ttl)
	if l != nil {
		l.Fence = 1
	}
	return l, err
}

// onceTwice is a store whose MergeUpdateOnce applies every delivery.
type onceTwice struct{ state.OnceStore[int64] }

func (s onceTwice) MergeUpdateOnce(ctx context.Context, _ string, k state.Key, delta int64, ttl time.Duration) (bool, error) {
	return true, s.MergeUpdate(ctx, k, delta, ttl)
}

// listDropsOldest is a run store whose ListRuns leaves out the oldest run.
type listDropsOldest struct{ provider.RunStore }

func (s listDropsOldest) ListRuns(ctx context.Context, pipelineID string, limit int) ([]types.RunState, error) {
	runs, err := s.RunStore.ListRuns(ctx, pipelineID, limit)
	if len(runs) > 1 {
		runs = runs[:len(runs)-1]
	}
	return runs, err
}

// appendDrops is an event store that drops every fourth append it is given (n
// counts them, over every wrapper that shares it) while reporting success.
type appendDrops struct {
	provider.EventStore
	n *atomic.Int64
}

func (s appendDrops) AppendEvent(ctx context.Context, ev types.Event) error {
	if s.n.Add(1)%4 == 0 {
		return nil
	}
	return s.EventStore.AppendEvent(ctx, ev)
}

// readSwaps is an event store whose ReadEventsSince returns the newest two
// records swapped.
type readSwaps struct{ provider.EventStore }

func (s readSwaps) ReadEventsSince(ctx context.Context, pipelineID, sinceID string, count int64) ([]types.EventRecord, error) {
	recs, err := s.EventStore.ReadEventsSince(ctx, pipelineID, sinceID, count)
	if n := len(recs); n > 1 {
		recs[n-2], recs[n-1] = recs[n-1], recs[n-2]
	}
	return recs, err
}

// listRepeats is an event store whose ListEvents returns the newest event in
// place of the one before it.
type listRepeats struct{ provider.EventStore }

func (s listRepeats) ListEvents(ctx context.Context, pipelineID string, limit int) ([]types.Event, error) {
	evs, err := s.EventStore.ListEvents(ctx, pipelineID, limit)
	if n := len(evs); n > 1 {
		evs[n-2] = evs[n-1]
	}
	return evs, err
}

// TestTeeth runs the workloads on memory through deliberately broken wrappers: each
// history must be found not linearizable, with its visualisation written to a file.
func TestTeeth(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(lincheck.DirEnv, dir)
	cases := []struct {
		name  string
		model porcupine.Model
		run   func(t *testing.T, ctx context.Context) []porcupine.Operation
	}{
		{"cas ignores version", lincheck.RunModel(), func(t *testing.T, ctx context.Context) []porcupine.Operation {
			ps := memoryProviders(t, 2)
			return lincheck.RunRegister(t, ctx, []provider.RunStore{casIgnoresVersion{ps[0]}, casIgnoresVersion{ps[1]}}, lincheck.Config{})
		}},
		{"fence ignored", lincheck.FencedModel(), func(t *testing.T, ctx context.Context) []porcupine.Operation {
			ps := memoryProviders(t, 2)
			return lincheck.FencedRuns(t, ctx, []provider.Provider{fenceIgnored{ps[0]}, fenceIgnored{ps[1]}}, lincheck.Config{Ops: 150, Keys: 1})
		}},
		{"lock lets two in", lincheck.LockModel(), func(t *testing.T, ctx context.Context) []porcupine.Operation {
			ps := memoryProviders(t, 2)
			return lincheck.Locks(t, ctx, []lincheck.LockStore{lockLetsTwoIn{ps[0]}, lockLetsTwoIn{ps[1]}}, lincheck.Config{})
		}},
		{"fence repeats", lincheck.LockModel(), func(t *testing.T, ctx context.Context) []porcupine.Operation {
			ps := memoryProviders(t, 2)
			return lincheck.Locks(t, ctx, []lincheck.LockStore{fenceRepeats{ps[0]}, fenceRepeats{ps[1]}}, lincheck.Config{})
		}},
		{"redelivery applied twice", lincheck.CounterModel(), func(t *testing.T, ctx context.Context) []porcupine.Operation {
			ss := memoryTarget(t).counters(t, 2)
			return lincheck.Counter(t, ctx, []state.OnceStore[int64]{onceTwice{ss[0]}, onceTwice{ss[1]}}, lincheck.Config{Ops: 5})
		}},
		{"list drops an item", lincheck.ListModel(), func(t *testing.T, ctx context.Context) []porcupine.Operation {
			ps := memoryProviders(t, 2)
			return lincheck.List(t, ctx, []provider.RunStore{listDropsOldest{ps[0]}, listDropsOldest{ps[1]}}, lincheck.Config{Ops: 10})
		}},
		{"append dropped", lincheck.EventLogModel(), func(t *testing.T, ctx context.Context) []porcupine.Operation {
			ps, n := memoryProviders(t, 2), new(atomic.Int64)
			return lincheck.EventLog(t, ctx, []provider.EventStore{appendDrops{ps[0], n}, appendDrops{ps[1], n}}, lincheck.Config{})
		}},
		{"read swaps two events", lincheck.EventLogModel(), func(t *testing.T, ctx context.Context) []porcupine.Operation {
			ps := memoryProviders(t, 2)
			return lincheck.EventLog(t, ctx, []provider.EventStore{readSwaps{ps[0]}, readSwaps{ps[1]}}, lincheck.Config{})
		}},
		{"list repeats an event", lincheck.EventLogModel(), func(t *testing.T, ctx context.Context) []porcupine.Operation {
			ps := memoryProviders(t, 2)
			return lincheck.EventLog(t, ctx, []provider.EventStore{listRepeats{ps[0]}, listRepeats{ps[1]}}, lincheck.Config{})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for round := 1; ; round++ {
				ops := c.run(t, t.Context())
				requireKnown(t, ops)
				res, path, err := lincheck.Check(c.model, ops, lincheck.Timeout, t.Name())
				if err != nil {
					t.Fatal(err)
				}
				if res == porcupine.Illegal {
					if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
						t.Fatalf("visualisation %q: %v", path, err)
					}
					return
				}
				if round == teethRounds {
					t.Fatalf("%s: %d histories checked; the last, of %d operations, %s; want Illegal", c.name, round, len(ops), res)
				}
			}
		})
	}
}

// teethRounds is how many histories a broken wrapper gets to show its bug: a
// workload's clients run from a barrier, but a loaded machine may still run
// them one after another, and a history without overlap can hide a bug that
// needs two callers at once (a lock that lets two in, when each client releases
// what it took before the next starts).
const teethRounds = 5
