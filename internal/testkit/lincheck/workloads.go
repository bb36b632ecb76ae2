package lincheck

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/types"
)

// Pipeline is the pipeline ID of every run the workloads write.
const Pipeline = "lincheck"

// HoldTTL is the TTL of every lock and lease the Locks workload takes: long enough
// that nothing expires while it runs, which is what LockModel assumes.
const HoldTTL = time.Hour

// Config sizes a workload; zero fields take the defaults. Each workload says what
// Ops and Keys mean for it.
type Config struct {
	Clients int // concurrent clients (goroutines), spread round-robin over the instances; default 6
	Ops     int // default 30
	Keys    int // default 2
	// Duration bounds the time during which clients start new operations (0: no
	// bound): past it, each client finishes the call in flight and stops, so a slow
	// backend yields a shorter history instead of a longer test.
	Duration time.Duration
}

func (c Config) withDefaults() Config {
	if c.Clients == 0 {
		c.Clients = 6
	}
	if c.Ops == 0 {
		c.Ops = 30
	}
	if c.Keys == 0 {
		c.Keys = 2
	}
	return c
}

// runClients runs f for cfg.Clients clients of rec at once: every goroutine is
// started and waits on a barrier before f runs. Client i gets its own random
// source; more reports whether cfg.Duration still allows new operations.
func runClients(rec *Recorder, cfg Config, f func(i int, c *Client, r *rand.Rand, more func() bool)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	var end time.Time
	more := func() bool { return cfg.Duration == 0 || time.Now().Before(end) }
	for i := range cfg.Clients {
		c := rec.Client()
		r := rand.New(rand.NewPCG(rand.Uint64(), uint64(i)))
		wg.Go(func() {
			<-start
			f(i, c, r, more)
		})
	}
	end = time.Now().Add(cfg.Duration)
	close(start)
	wg.Wait()
}

// withoutIdle returns ops without the operations of unknown outcome that idle
// reports as having no effect whenever they are placed (reads): the model accepts
// them anywhere, and leaving them out spares porcupine the search.
func withoutIdle(ops []porcupine.Operation, idle func(input any) bool) []porcupine.Operation {
	out := ops[:0]
	for _, o := range ops {
		if !isUnknown(o.Output) || !idle(o.Input) {
			out = append(out, o)
		}
	}
	return out
}

// checkInstances fails t unless there is at least one instance and cfg is sane.
func checkInstances(t testing.TB, n int, cfg Config) {
	t.Helper()
	if n == 0 || cfg.Clients < 1 || cfg.Ops < 1 || cfg.Keys < 1 {
		t.Fatalf("lincheck: %d instances, config %+v: want instances and positive sizes", n, cfg)
	}
}

var statuses = []types.RunStatus{types.RunPending, types.RunRunning, types.RunCompleted, types.RunFailed}

// RunRegister runs the run-register workload for RunModel and returns its history:
// cfg.Clients clients over stores (which share one storage) each run cfg.Ops
// operations on cfg.Keys run IDs: a few PutRunState (versions 0..2), GetRunState,
// and mostly CompareAndSwapRunState from the version the client last saw (now and
// then a stale or future one). Every error is an unknown outcome.
func RunRegister(t testing.TB, ctx context.Context, stores []provider.RunStore, cfg Config) []porcupine.Operation {
	t.Helper()
	cfg = cfg.withDefaults()
	checkInstances(t, len(stores), cfg)
	rec := NewRecorder()
	runClients(rec, cfg, func(i int, c *Client, r *rand.Rand, more func() bool) {
		s := stores[i%len(stores)]
		seen := map[string]int{} // the version this client last saw, per run
		for n := 0; n < cfg.Ops && more(); n++ {
			id := fmt.Sprintf("run-%d", r.IntN(cfg.Keys))
			st := statuses[r.IntN(len(statuses))]
			switch p := r.IntN(10); {
			case p < 1:
				in := RunInput{Op: PutRun, RunID: id, Version: r.IntN(3), Status: st}
				_, _ = c.Do(in, func() (any, error) {
					return RunOutput{}, s.PutRunState(ctx, types.RunState{RunID: id, PipelineID: Pipeline, Status: st, Version: in.Version})
				})
			case p < 4:
				out, err := c.Do(RunInput{Op: GetRun, RunID: id}, func() (any, error) {
					run, err := s.GetRunState(ctx, id)
					if err != nil || run == nil {
						return RunOutput{}, err
					}
					return RunOutput{Found: true, Version: run.Version, Status: run.Status}, nil
				})
				if o := out.(RunOutput); err == nil && o.Found {
					seen[id] = o.Version
				}
			default:
				v := seen[id]
				if r.IntN(5) == 0 {
					v = r.IntN(v + 2)
				}
				out, err := c.Do(RunInput{Op: CASRun, RunID: id, Version: v, Status: st}, func() (any, error) {
					ok, err := s.CompareAndSwapRunState(ctx, id, v, types.RunState{RunID: id, PipelineID: Pipeline, Status: st})
					return RunOutput{Swapped: ok}, err
				})
				if err == nil && out.(RunOutput).Swapped {
					seen[id] = v + 1
				}
			}
		}
	})
	return withoutIdle(rec.Operations(), func(in any) bool { return in.(RunInput).Op == GetRun })
}

// LockStore is what the Locks workload drives: a provider's locks and leases.
type LockStore interface {
	provider.Locker
	provider.Leaser
}

// Locks runs the lock and lease workload for LockModel and returns its history.
// stores are instances with distinct owner identities over one storage; the model
// names the owner of stores[i] "owner<i>". cfg.Clients clients each run cfg.Ops
// rounds on one of cfg.Keys lock keys or cfg.Keys lease keys, chosen at random,
// holding what they take across rounds so that clients contend: a lock round
// releases the lock if the client took it (or may have: an unknown outcome), and
// now and then when it did not; otherwise it acquires it. A lease round renews or
// releases the lease the client holds, otherwise acquires it; now and then it
// renews or releases a lease the client no longer holds. TTLs are HoldTTL. The
// documented refusals (false, ErrLockHeld, ErrLockNotHeld) are outputs; every
// other error is an unknown outcome.
func Locks(t testing.TB, ctx context.Context, stores []LockStore, cfg Config) []porcupine.Operation {
	t.Helper()
	cfg = cfg.withDefaults()
	checkInstances(t, len(stores), cfg)
	rec := NewRecorder()
	runClients(rec, cfg, func(i int, c *Client, r *rand.Rand, more func() bool) {
		s, owner := stores[i%len(stores)], fmt.Sprintf("owner%d", i%len(stores))
		locks := map[string]bool{}          // lock keys this client may hold
		leases := map[string]*types.Lease{} // leases this client holds
		var stale *types.Lease              // a lease this client gave up
		for round := 0; round < cfg.Ops && more(); round++ {
			n := r.IntN(cfg.Keys)
			if r.IntN(2) == 0 {
				key := fmt.Sprintf("lock-%d", n)
				if locks[key] || r.IntN(8) == 0 {
					delete(locks, key)
					_, _ = c.Do(LockInput{Op: ReleaseLock, Key: key, Owner: owner}, func() (any, error) {
						return refusal(s.ReleaseLock(ctx, key), provider.ErrLockNotHeld)
					})
					continue
				}
				out, err := c.Do(LockInput{Op: AcquireLock, Key: key, Owner: owner}, func() (any, error) {
					ok, err := s.AcquireLock(ctx, key, HoldTTL)
					return LockOutput{OK: ok}, err
				})
				locks[key] = err != nil || out.(LockOutput).OK
				continue
			}
			key := fmt.Sprintf("lease-%d", n)
			l := leases[key]
			if l == nil && stale != nil && r.IntN(8) == 0 {
				l = stale
			}
			if l == nil {
				_, _ = c.Do(LockInput{Op: AcquireLease, Key: key}, func() (any, error) {
					l, err := s.AcquireLease(ctx, key, HoldTTL)
					if err != nil {
						return refusal(err, provider.ErrLockHeld)
					}
					leases[key] = l
					return LockOutput{OK: true, Token: l.Token, Fence: l.Fence}, nil
				})
				continue
			}
			cur := *l
			delete(leases, key)
			stale = &cur
			if r.IntN(2) == 0 {
				_, _ = c.Do(LockInput{Op: RenewLease, Key: cur.Key, Token: cur.Token}, func() (any, error) {
					l, err := s.RenewLease(ctx, cur, HoldTTL)
					if err != nil {
						return refusal(err, provider.ErrLockNotHeld)
					}
					leases[cur.Key] = l
					return LockOutput{OK: true, Token: l.Token, Fence: l.Fence}, nil
				})
				continue
			}
			_, _ = c.Do(LockInput{Op: ReleaseLease, Key: cur.Key, Token: cur.Token}, func() (any, error) {
				return refusal(s.ReleaseLease(ctx, cur), provider.ErrLockNotHeld)
			})
		}
	})
	return withoutIdle(rec.Operations(), func(in any) bool { return in.(LockInput).Op == RenewLease })
}

// refusal maps err to a LockOutput: OK when nil, not OK when it wraps the
// documented refusal, and an unknown outcome otherwise.
func refusal(err, documented error) (any, error) {
	switch {
	case err == nil:
		return LockOutput{OK: true}, nil
	case errors.Is(err, documented):
		return LockOutput{}, nil
	}
	return LockOutput{}, err
}

// CounterEvents is the most events per key that the Counter workload delivers: the
// delta of event n is 1<<n, so a sum names the events applied and never overflows.
const CounterEvents = 40

// Counter runs the redelivery workload for CounterModel and returns its history:
// every one of cfg.Clients clients delivers each of cfg.Ops events (at most
// CounterEvents) to each of cfg.Keys keys once, in its own random order, with
// MergeUpdateOnce(EventID(n), key, 1<<n, no TTL), so that every event is
// delivered cfg.Clients times, concurrently; after about one delivery in four it
// reads a key's sum. Every error is an unknown outcome.
func Counter(t testing.TB, ctx context.Context, stores []state.OnceStore[int64], cfg Config) []porcupine.Operation {
	t.Helper()
	cfg = cfg.withDefaults()
	checkInstances(t, len(stores), cfg)
	if cfg.Ops > CounterEvents {
		t.Fatalf("lincheck: Counter: %d events per key, more than %d", cfg.Ops, CounterEvents)
	}
	type delivery struct{ key, event int }
	rec := NewRecorder()
	runClients(rec, cfg, func(i int, c *Client, r *rand.Rand, more func() bool) {
		s := stores[i%len(stores)]
		var ds []delivery
		for k := range cfg.Keys {
			for e := range cfg.Ops {
				ds = append(ds, delivery{k, e})
			}
		}
		r.Shuffle(len(ds), func(a, b int) { ds[a], ds[b] = ds[b], ds[a] })
		for _, d := range ds {
			if !more() {
				break
			}
			k := state.Key{Entity: fmt.Sprintf("ctr-%d", d.key)}
			in := CounterInput{Op: MergeOnce, Key: k.Entity, Event: d.event, Delta: 1 << d.event}
			_, _ = c.Do(in, func() (any, error) {
				ok, err := s.MergeUpdateOnce(ctx, EventID(d.event), k, in.Delta, 0)
				return CounterOutput{Applied: ok}, err
			})
			if r.IntN(4) == 0 {
				k := state.Key{Entity: fmt.Sprintf("ctr-%d", r.IntN(cfg.Keys))}
				_, _ = c.Do(CounterInput{Op: GetSum, Key: k.Entity}, func() (any, error) {
					v, _, err := s.Get(ctx, k)
					return CounterOutput{Sum: v}, err
				})
			}
		}
	})
	return withoutIdle(rec.Operations(), func(in any) bool { return in.(CounterInput).Op == GetSum })
}

// List runs the list-membership workload for ListModel and returns its history.
// Of cfg.Clients clients, half (at least one) are writers that each create cfg.Ops
// new runs with PutRunState (zero CreatedAt, filled by the backend); the others
// are readers that call ListRuns(Pipeline, MaxListIDs+1) until the writers are
// done (at most 4*cfg.Ops times) and once more after. Writers times cfg.Ops must
// not exceed MaxListIDs. cfg.Keys is unused. Every error is an unknown outcome.
func List(t testing.TB, ctx context.Context, stores []provider.RunStore, cfg Config) []porcupine.Operation {
	t.Helper()
	cfg = cfg.withDefaults()
	checkInstances(t, len(stores), cfg)
	writers := max(1, cfg.Clients/2)
	if writers*cfg.Ops > MaxListIDs {
		t.Fatalf("lincheck: List: %d writers x %d runs, more than %d", writers, cfg.Ops, MaxListIDs)
	}
	var (
		rec     = NewRecorder()
		running atomic.Int64
		done    = make(chan struct{}) // closed when the last writer is done
	)
	running.Store(int64(writers))
	runClients(rec, cfg, func(i int, c *Client, r *rand.Rand, more func() bool) {
		s := stores[i%len(stores)]
		if i < writers {
			defer func() {
				if running.Add(-1) == 0 {
					close(done)
				}
			}()
			for n := i * cfg.Ops; n < (i+1)*cfg.Ops && more(); n++ {
				_, _ = c.Do(ListInput{Op: CreateRun, ID: n}, func() (any, error) {
					return ListOutput{}, s.PutRunState(ctx, types.RunState{RunID: listRunID(n), PipelineID: Pipeline, Status: types.RunPending})
				})
			}
			return
		}
		list := func() {
			_, _ = c.Do(ListInput{Op: ListRuns}, func() (any, error) {
				runs, err := s.ListRuns(ctx, Pipeline, MaxListIDs+1)
				return listOutput(runs, writers*cfg.Ops), err
			})
		}
		finished := func() bool {
			select {
			case <-done:
				return true
			default:
				return false
			}
		}
		for n := 0; n < 4*cfg.Ops && !finished() && more(); n++ {
			list()
		}
		<-done
		list()
	})
	// A create of unknown outcome only ever adds a constraint (lists must contain
	// its ID) wherever it is placed, and none when placed last: leaving it out
	// decides the same. Called still counts it, so lists may name its ID.
	return withoutIdle(withCalled(rec.Operations()), func(any) bool { return true })
}

func listRunID(n int) string { return fmt.Sprintf("new-%d", n) }

// listOutput describes a ListRuns result over run IDs listRunID(0..n-1).
func listOutput(runs []types.RunState, n int) ListOutput {
	var o ListOutput
	var bad []string
	for j, run := range runs {
		id, err := strconv.Atoi(strings.TrimPrefix(run.RunID, "new-"))
		switch {
		case err != nil || listRunID(id) != run.RunID || id >= n:
			bad = append(bad, "unknown run "+run.RunID)
			continue
		case o.IDs.Has(id):
			bad = append(bad, "duplicate "+run.RunID)
		}
		if j > 0 && run.CreatedAt.After(runs[j-1].CreatedAt) {
			bad = append(bad, run.RunID+" is newer than the run before it")
		}
		o.IDs = o.IDs.Add(id)
	}
	o.Bad = strings.Join(bad, "; ")
	return o
}

// withCalled fills in, for each ListRuns of ops, the IDs whose create had been
// called by the time it returned.
func withCalled(ops []porcupine.Operation) []porcupine.Operation {
	for i := range ops {
		in := ops[i].Input.(ListInput)
		if in.Op != ListRuns {
			continue
		}
		for _, o := range ops {
			if c := o.Input.(ListInput); c.Op == CreateRun && o.Call <= ops[i].Return {
				in.Called = in.Called.Add(c.ID)
			}
		}
		ops[i].Input = in
	}
	return ops
}
