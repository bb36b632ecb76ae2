package redisprovider

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/ids"
	"github.com/pipestate/pipestate/internal/testkit/faults"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// dialer is go-redis's Dialer; nil dials directly.
type dialer = func(ctx context.Context, network, addr string) (net.Conn, error)

// server opens clients of one server for a test: a fresh miniredis, the real
// server or the cluster. poolSize 0 is go-redis's default.
type server struct {
	name  string
	start func(t *testing.T) (open func(dial dialer, poolSize int) goredis.UniversalClient, prefix string)
}

// servers returns the servers the tests of this file run on.
func servers() []server {
	out := []server{{"miniredis", func(t *testing.T) (func(dialer, int) goredis.UniversalClient, string) {
		m := miniredis.RunT(t)
		return func(dial dialer, n int) goredis.UniversalClient {
			return goredis.NewClient(&goredis.Options{Addr: m.Addr(), Dialer: dial, PoolSize: n, MinRetryBackoff: time.Millisecond})
		}, "il"
	}}}
	if testenv.RedisWanted() {
		out = append(out, server{"redis", func(t *testing.T) (func(dialer, int) goredis.UniversalClient, string) {
			addr := testenv.RedisAddr(t)
			return func(dial dialer, n int) goredis.UniversalClient {
				return goredis.NewClient(&goredis.Options{Addr: addr, Dialer: dial, PoolSize: n, MinRetryBackoff: time.Millisecond})
			}, "pst:" + testenv.RedisPrefix(t)
		}})
	}
	if testenv.RedisClusterWanted() {
		out = append(out, server{"cluster", func(t *testing.T) (func(dialer, int) goredis.UniversalClient, string) {
			addrs := testenv.RedisClusterAddrs(t)
			return func(dial dialer, n int) goredis.UniversalClient {
				return goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs, Dialer: dial, PoolSize: n, MinRetryBackoff: time.Millisecond})
			}, "pst:" + testenv.RedisPrefix(t)
		}})
	}
	return out
}

// providers starts n providers on one storage of s, each on a client of its
// own (hooks are per client), and deletes the storage when t ends.
func (s server) providers(t *testing.T, n int) []*Provider {
	t.Helper()
	open, prefix := s.start(t)
	ps := make([]*Provider, n)
	for i := range ps {
		c := open(nil, 0)
		t.Cleanup(func() { _ = c.Close() })
		p, err := New(c, WithKeyPrefix(prefix))
		must(t, err)
		must(t, p.Start(t.Context()))
		ps[i] = p
	}
	t.Cleanup(func() { _ = testenv.DeleteRedisPrefix(ps[0].c, prefix) }) // before the clients close
	return ps
}

// retryEnv is one test's storage. Provider a calls through a client whose replies
// can be dropped and which keeps one connection per node, so that go-redis's retry
// after a dropped reply must dial a new one: what the test armed as "between" runs
// then, on other clients, after the server applied the first attempt and before
// the retry is sent.
type retryEnv struct {
	n      *faults.Net
	clean  goredis.UniversalClient
	faulty goredis.UniversalClient
	prefix string

	mu      sync.Mutex
	base    int    // n.Dropped() when between was armed
	between func() // run by the first dial after the armed drop
	ran     bool
}

func newRetryEnv(t *testing.T, s server) *retryEnv {
	open, prefix := s.start(t)
	e := &retryEnv{n: faults.NewNet(), prefix: prefix}
	e.clean = open(nil, 0)
	e.faulty = open(e.dial, 1)
	t.Cleanup(func() {
		_ = testenv.DeleteRedisPrefix(e.clean, prefix)
		_ = e.faulty.Close()
		_ = e.clean.Close()
	})
	return e
}

func (e *retryEnv) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	e.mu.Lock()
	f := e.between
	if f != nil && e.n.Dropped() > e.base {
		e.between, e.ran = nil, true
	} else {
		f = nil
	}
	e.mu.Unlock()
	if f != nil {
		f()
	}
	return e.n.Dial(ctx, network, addr)
}

// open returns a started provider with owner, on the faulty client or a clean one.
func (e *retryEnv) open(t *testing.T, faulty bool, owner string) *Provider {
	t.Helper()
	c := e.clean
	if faulty {
		c = e.faulty
	}
	p, err := New(c, WithKeyPrefix(e.prefix), WithOwner(owner))
	must(t, err)
	must(t, p.Start(t.Context()))
	return p
}

// lose runs call with the reply to the first request that match accepts dropped,
// and between run before go-redis retries it; it fails t unless both happened once.
func (e *retryEnv) lose(t *testing.T, match func([]byte) bool, between func(), call func() error) error {
	t.Helper()
	e.mu.Lock()
	e.base, e.between, e.ran = e.n.Dropped(), between, false
	e.mu.Unlock()
	e.n.DropReply(match)
	err := call()
	e.n.Disarm()
	e.mu.Lock()
	ran, dropped := e.ran, e.n.Dropped()-e.base
	e.between = nil
	e.mu.Unlock()
	if dropped != 1 || !ran {
		t.Fatalf("dropped %d replies, between ran: %v; want 1 and true", dropped, ran)
	}
	return err
}

// interleaving is a call whose reply is lost, with another instance's operations
// run between its first attempt and go-redis's retry. a calls (through the faulty
// client, owner worker-1); a2 is another goroutine of the same instance (same
// owner) and b another instance (owner worker-2), on a clean client.
type interleaving struct {
	name    string
	script  script // the request whose reply is lost
	setup   func(ctx context.Context, a *Provider) error
	between func(ctx context.Context, a, a2, b *Provider) error // runs in go-redis's dial goroutine
	call    func(t *testing.T, ctx context.Context, a *Provider) error
	check   func(t *testing.T, ctx context.Context, a, a2, b *Provider)
}

// acquired describes an unexpected AcquireLock outcome.
func acquired(who string, ok bool, err error, want bool) error {
	if err != nil || ok != want {
		return fmt.Errorf("%s AcquireLock = %v, %v; want %v", who, ok, err, want)
	}
	return nil
}

func checkLock(t *testing.T, who string, ok bool, err error, want bool) {
	t.Helper()
	if err := acquired(who, ok, err, want); err != nil {
		t.Fatal(err)
	}
}

func interleavings() []interleaving {
	var lease *types.Lease
	getLease := func(ctx context.Context, a *Provider) (err error) {
		lease, err = a.AcquireLease(ctx, "lease", time.Hour)
		return err
	}
	takeLock := func(ctx context.Context, a *Provider) error {
		_, err := a.AcquireLock(ctx, "lock", time.Hour)
		return err
	}
	register := func(tier int) func(ctx context.Context, a *Provider) error {
		return func(ctx context.Context, a *Provider) error {
			return a.RegisterPipeline(ctx, types.PipelineConfig{ID: lrPipe, Tier: tier})
		}
	}
	return append([]interleaving{
		{"PutRunState/CAS between", scriptRecordPut, nil,
			func(ctx context.Context, _, _, b *Provider) error {
				ok, err := b.CompareAndSwapRunState(ctx, lrRun, 0, lrRunState(0))
				if !ok || err != nil {
					return fmt.Errorf("CAS from version 0 = %v, %v", ok, err)
				}
				return nil
			},
			func(t *testing.T, ctx context.Context, a *Provider) error { return a.PutRunState(ctx, lrRunState(0)) },
			func(t *testing.T, ctx context.Context, _, _, b *Provider) {
				got, err := b.GetRunState(ctx, lrRun)
				if err != nil || got == nil || got.Version != 1 {
					t.Fatalf("GetRunState = %+v, %v; want version 1: the put applied twice", got, err)
				}
				if ok, err := b.CompareAndSwapRunState(ctx, lrRun, 0, lrRunState(0)); ok || err != nil {
					t.Fatalf("a second CAS from version 0 = %v, %v; want false", ok, err)
				}
			}},
		{"CompareAndSwapRunState/put between", scriptRunCAS,
			func(ctx context.Context, a *Provider) error { return a.PutRunState(ctx, lrRunState(0)) },
			func(ctx context.Context, _, _, b *Provider) error { return b.PutRunState(ctx, lrRunState(5)) },
			func(t *testing.T, ctx context.Context, a *Provider) error {
				ok, err := a.CompareAndSwapRunState(ctx, lrRun, 0, lrRunState(0))
				if err == nil && !ok {
					err = errors.New("CAS whose first attempt swapped reported false")
				}
				return err
			},
			func(t *testing.T, ctx context.Context, _, _, b *Provider) {
				got, err := b.GetRunState(ctx, lrRun)
				if err != nil || got == nil || got.Version != 5 {
					t.Fatalf("GetRunState = %+v, %v; want the later put's version 5", got, err)
				}
			}},
		{"RegisterPipeline/delete between", scriptRecordPut, nil,
			func(ctx context.Context, _, _, b *Provider) error { return b.DeletePipeline(ctx, lrPipe) },
			func(t *testing.T, ctx context.Context, a *Provider) error { return register(1)(ctx, a) },
			func(t *testing.T, ctx context.Context, _, _, b *Provider) {
				if got, err := b.GetPipeline(ctx, lrPipe); got != nil || err != nil {
					t.Fatalf("GetPipeline = %+v, %v; want none: the register applied twice", got, err)
				}
			}},
		{"DeletePipeline/register between", scriptRecordDel, register(1),
			func(ctx context.Context, _, _, b *Provider) error { return register(2)(ctx, b) },
			func(t *testing.T, ctx context.Context, a *Provider) error { return a.DeletePipeline(ctx, lrPipe) },
			func(t *testing.T, ctx context.Context, _, _, b *Provider) {
				got, err := b.GetPipeline(ctx, lrPipe)
				if err != nil || got == nil || got.Tier != 2 {
					t.Fatalf("GetPipeline = %+v, %v; want tier 2: the delete applied twice", got, err)
				}
				all, err := b.ListPipelines(ctx)
				one(t, "ListPipelines", len(all), err)
			}},
		{"ReleaseLock/same owner re-acquires between", scriptLockRelease, takeLock,
			func(ctx context.Context, _, a2, _ *Provider) error {
				ok, err := a2.AcquireLock(ctx, "lock", time.Hour)
				return acquired("a2", ok, err, true)
			},
			func(t *testing.T, ctx context.Context, a *Provider) error { return a.ReleaseLock(ctx, "lock") },
			func(t *testing.T, ctx context.Context, _, a2, b *Provider) {
				ok, err := b.AcquireLock(ctx, "lock", time.Hour)
				checkLock(t, "b (a2 holds the lock)", ok, err, false)
				must(t, a2.ReleaseLock(ctx, "lock"))
			}},
		{"ReleaseLock/another release between", scriptLockRelease, takeLock,
			func(ctx context.Context, _, a2, _ *Provider) error {
				ok, err := a2.AcquireLock(ctx, "lock", time.Hour)
				if err := acquired("a2", ok, err, true); err != nil {
					return err
				}
				return a2.ReleaseLock(ctx, "lock")
			},
			func(t *testing.T, ctx context.Context, a *Provider) error { return a.ReleaseLock(ctx, "lock") },
			func(t *testing.T, ctx context.Context, _, _, b *Provider) {
				ok, err := b.AcquireLock(ctx, "lock", time.Hour)
				checkLock(t, "b", ok, err, true)
			}},
		{"ReleaseLease/another lease between", scriptLockRelease, getLease,
			func(ctx context.Context, _, _, b *Provider) error {
				l, err := b.AcquireLease(ctx, "lease", time.Hour)
				if err != nil {
					return err
				}
				return b.ReleaseLease(ctx, *l)
			},
			func(t *testing.T, ctx context.Context, a *Provider) error { return a.ReleaseLease(ctx, *lease) },
			func(t *testing.T, ctx context.Context, _, _, b *Provider) {
				l, err := b.AcquireLease(ctx, "lease", time.Hour)
				if err != nil || l.Fence != lease.Fence+2 {
					t.Fatalf("next lease = %+v, %v; want fence %d", l, err, lease.Fence+2)
				}
			}},
		{"AcquireLock/released and taken between", scriptLockAcquire, nil,
			func(ctx context.Context, _, a2, b *Provider) error {
				if err := a2.ReleaseLock(ctx, "lock"); err != nil {
					return err
				}
				ok, err := b.AcquireLock(ctx, "lock", time.Hour)
				return acquired("b", ok, err, true)
			},
			func(t *testing.T, ctx context.Context, a *Provider) error {
				ok, err := a.AcquireLock(ctx, "lock", time.Hour)
				if err == nil && !ok {
					err = errors.New("AcquireLock whose first attempt acquired reported false")
				}
				return err
			},
			func(t *testing.T, ctx context.Context, _, a2, b *Provider) {
				ok, err := a2.AcquireLock(ctx, "lock", time.Hour)
				checkLock(t, "a2 (b holds the lock)", ok, err, false)
				must(t, b.ReleaseLock(ctx, "lock"))
			}},
		{"AcquireLock/released between", scriptLockAcquire, nil,
			func(ctx context.Context, _, a2, _ *Provider) error { return a2.ReleaseLock(ctx, "lock") },
			func(t *testing.T, ctx context.Context, a *Provider) error {
				ok, err := a.AcquireLock(ctx, "lock", time.Hour)
				if err == nil && !ok {
					err = errors.New("AcquireLock whose first attempt acquired reported false")
				}
				return err
			},
			func(t *testing.T, ctx context.Context, _, _, b *Provider) {
				ok, err := b.AcquireLock(ctx, "lock", time.Hour)
				checkLock(t, "b (the lock was released)", ok, err, true)
			}},
		{"AcquireLease/expired and taken between", scriptLeaseAcquire, nil,
			func(ctx context.Context, a, _, b *Provider) error {
				lk, _ := a.k.lock("lease")
				if err := b.c.Del(ctx, lk).Err(); err != nil { // the lease expires
					return err
				}
				l, err := b.AcquireLease(ctx, "lease", time.Hour)
				if err != nil || l.Fence != 2 {
					return fmt.Errorf("b's lease = %+v, %v; want fence 2", l, err)
				}
				return nil
			},
			func(t *testing.T, ctx context.Context, a *Provider) error {
				l, err := a.AcquireLease(ctx, "lease", time.Hour)
				if err == nil && l.Fence != 1 {
					err = errors.New("the lease of the first attempt has another fence")
				}
				return err
			},
			func(t *testing.T, ctx context.Context, _, a2, _ *Provider) {
				if _, err := a2.AcquireLease(ctx, "lease", time.Hour); !errors.Is(err, provider.ErrLockHeld) {
					t.Fatalf("AcquireLease while b holds the lease = %v", err)
				}
			}},
	}, fencedInterleavings()...)
}

// TestRetryAfterInterleaving drops the reply to a write, runs other instances'
// operations before go-redis retries it, and checks that the retry neither applies
// the write again nor reports another outcome than its first attempt had.
func TestRetryAfterInterleaving(t *testing.T) {
	for _, s := range servers() {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			for _, il := range interleavings() {
				t.Run(il.name, func(t *testing.T) {
					ctx := t.Context()
					e := newRetryEnv(t, s)
					a := e.open(t, true, "worker-1")
					a2 := e.open(t, false, "worker-1")
					b := e.open(t, false, "worker-2")
					if il.setup != nil {
						must(t, il.setup(ctx, a))
					}
					err := e.lose(t, faults.Contains("evalsha", il.script.Hash()),
						func() {
							if err := il.between(ctx, a, a2, b); err != nil {
								t.Errorf("between the attempt and the retry: %v", err)
							}
						},
						func() error { return il.call(t, ctx, a) })
					if err != nil {
						t.Fatalf("after a lost reply: %v", err)
					}
					il.check(t, ctx, a, a2, b)
				})
			}
		})
	}
}

// hookFunc is a go-redis hook that wraps the processing of single commands.
type hookFunc func(next goredis.ProcessHook) goredis.ProcessHook

func (h hookFunc) DialHook(next goredis.DialHook) goredis.DialHook          { return next }
func (h hookFunc) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook { return h(next) }
func (h hookFunc) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return next
}

// isScript reports whether cmd runs s, with arg at position i of its arguments
// when arg is not "".
func isScript(cmd goredis.Cmder, s script, i int, arg string) bool {
	args := cmd.Args()
	if len(args) < 2 || args[0] != "evalsha" || args[1] != s.Hash() {
		return false
	}
	return arg == "" || (len(args) > i && args[i] == arg)
}

// TestStaleRepairKeepsListedRun lets a reader observe a new run's provisional list
// entry before the run's truth is written and repair it only after: a listing that
// showed the run, and every later one, must keep showing it.
func TestStaleRepairKeepsListedRun(t *testing.T) {
	for _, s := range servers() {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			ps := s.providers(t, 3)
			w, r1, r2 := ps[0], ps[1], ps[2]
			listed := func(when string) {
				t.Helper()
				runs, err := r2.ListRuns(ctx, lrPipe, 10)
				if err != nil || len(runs) != 1 {
					t.Errorf("ListRuns %s = %d runs, %v; want the run", when, len(runs), err)
				}
			}

			reached, resume, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
			var once, reach sync.Once
			r1.c.AddHook(hookFunc(func(next goredis.ProcessHook) goredis.ProcessHook {
				return func(ctx context.Context, cmd goredis.Cmder) error {
					if isScript(cmd, scriptIdxApply, 6, "d") { // the stale repair
						reach.Do(func() { close(reached) })
						<-resume
					}
					return next(ctx, cmd)
				}
			}))
			w.c.AddHook(hookFunc(func(next goredis.ProcessHook) goredis.ProcessHook {
				return func(ctx context.Context, cmd goredis.Cmder) error {
					if !isScript(cmd, scriptRecordPut, 0, "") {
						return next(ctx, cmd)
					}
					first := false
					once.Do(func() { first = true })
					if !first {
						return next(ctx, cmd)
					}
					// r1 reads the provisional entry and the missing truth.
					go func() {
						defer close(done)
						if _, err := r1.ListRuns(ctx, lrPipe, 10); err != nil {
							t.Error(err)
						}
					}()
					select {
					case <-reached:
					case <-done:
					}
					err := next(ctx, cmd) // the truth is written
					listed("after the truth was written")
					close(resume) // r1 repairs what it observed before
					<-done
					listed("after a stale repair")
					return err
				}
			}))
			must(t, w.PutRunState(ctx, lrRunState(0)))
			listed("after the put")
		})
	}
}

// TestListIsSnapshot lets a reader read a run list's index while one run (x) is
// between its provisional entry and its truth, and read the truths only after
// another run (y) was created and listed and x's truth was written: a listing
// that shows x must show y, which was listed before x's truth existed.
func TestListIsSnapshot(t *testing.T) {
	for _, s := range servers() {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			ps := s.providers(t, 2)
			w, r, c := ps[0], ps[1], ps[0].c

			at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			x, y := lrRunState(0), lrRunState(0)
			x.RunID, y.RunID, x.CreatedAt, y.CreatedAt = "x", "y", at, at.Add(time.Second)
			mx := ids.TimeKey(x.CreatedAt) + "x"
			_, err := w.runBatch(ctx, "test", []call{idxCall(w.k.runs(lrPipe), "p", "x", mx, time.Now().UnixMilli())})
			must(t, err) // x's step 1
			ids := func(runs []types.RunState) map[string]bool {
				out := map[string]bool{}
				for _, r := range runs {
					out[r.RunID] = true
				}
				return out
			}

			var once sync.Once
			r.c.AddHook(hookFunc(func(next goredis.ProcessHook) goredis.ProcessHook {
				return func(ctx context.Context, cmd goredis.Cmder) error {
					err := next(ctx, cmd)
					if isScript(cmd, scriptIdxPage, 0, "") {
						once.Do(func() {
							if err := w.PutRunState(ctx, y); err != nil {
								t.Error(err)
							}
							runs, err := w.ListRuns(ctx, lrPipe, 10)
							if got := ids(runs); err != nil || !got["y"] || got["x"] {
								t.Errorf("ListRuns after y's create = %v, %v; want y only", got, err)
							}
							data, _ := w.encode(x) // x's step 2
							key := w.k.run("x")
							if err := lua(scriptRecordPut).Run(ctx, c, []string{key, w.k.call(key, "n")}, mx, data, lrPipe, "strict", 60000, 0, 0, 0,
								"v", 0, "c", x.CreatedAt.Format(time.RFC3339Nano), "", "").Err(); err != nil {
								t.Error(err)
							}
						})
					}
					return err
				}
			}))
			runs, err := r.ListRuns(ctx, lrPipe, 10)
			if got := ids(runs); err != nil || (got["x"] && !got["y"]) {
				t.Errorf("ListRuns = %v, %v: shows x, whose truth was written after a listing that showed y, but not y", got, err)
			}
		})
	}
}

// scriptHook is a go-redis hook that runs before every command and pipeline that
// holds a script call for which match holds; an error it returns fails the
// command or pipeline unsent.
type scriptHook struct {
	match  func(cmd goredis.Cmder) bool
	before func(ctx context.Context) error
}

func (h scriptHook) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h scriptHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		return h.process(ctx, []goredis.Cmder{cmd}, func() error { return next(ctx, cmd) })
	}
}

func (h scriptHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		return h.process(ctx, cmds, func() error { return next(ctx, cmds) })
	}
}

func (h scriptHook) process(ctx context.Context, cmds []goredis.Cmder, next func() error) error {
	if slices.ContainsFunc(cmds, h.match) {
		if err := h.before(ctx); err != nil {
			for _, c := range cmds {
				c.SetErr(err)
			}
			return err
		}
	}
	return next()
}

// TestStaleRemovalKeepsRelistedRecord runs a write whose step 1 relies on a
// record's existing list entry (it adds none) between another write's truth, which
// takes the record out of that list, and that write's step 3, then cuts the first
// write's step 3: the stale removal must leave the entry to readers, which list the
// record from then on. A pipeline re-registered during a delete, and a rerun moved
// back during its move away.
func TestStaleRemovalKeepsRelistedRecord(t *testing.T) {
	rerun := func(pipeline string) types.RerunRecord {
		return types.RerunRecord{RerunID: "x", PipelineID: pipeline, OriginalDate: "2026-01-01", Status: types.RequestPending}
	}
	cases := []struct {
		name   string
		setup  func(ctx context.Context, p *Provider) error
		remove func(ctx context.Context, p *Provider) error // step 3 removes the entry
		rely   func(ctx context.Context, p *Provider) error // step 1 relies on it
		listed func(ctx context.Context, p *Provider) (int, error)
	}{
		{"pipeline",
			func(ctx context.Context, p *Provider) error {
				return p.RegisterPipeline(ctx, types.PipelineConfig{ID: lrPipe})
			},
			func(ctx context.Context, p *Provider) error { return p.DeletePipeline(ctx, lrPipe) },
			func(ctx context.Context, p *Provider) error {
				return p.RegisterPipeline(ctx, types.PipelineConfig{ID: lrPipe, Tier: 2})
			},
			func(ctx context.Context, p *Provider) (int, error) {
				all, err := p.ListPipelines(ctx)
				return len(all), err
			}},
		{"rerun",
			func(ctx context.Context, p *Provider) error { return p.PutRerun(ctx, rerun("a")) },
			func(ctx context.Context, p *Provider) error { return p.PutRerun(ctx, rerun("b")) },
			func(ctx context.Context, p *Provider) error { return p.PutRerun(ctx, rerun("a")) },
			func(ctx context.Context, p *Provider) (int, error) {
				all, err := p.ListReruns(ctx, "a", 10)
				return len(all), err
			}},
	}
	for _, s := range servers() {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					ctx := t.Context()
					ps := s.providers(t, 2)
					a, b := ps[0], ps[1]
					must(t, c.setup(ctx, a))

					step3 := func(cmd goredis.Cmder) bool { return isScript(cmd, scriptIdxApply, 6, "s") }
					cut := errors.New("cut")
					var relying atomic.Bool
					b.c.AddHook(scriptHook{step3, func(context.Context) error {
						if relying.Load() {
							return cut
						}
						return nil
					}})
					var once sync.Once
					a.c.AddHook(scriptHook{step3, func(ctx context.Context) error {
						once.Do(func() {
							relying.Store(true)
							defer relying.Store(false)
							if err := c.rely(ctx, b); !errors.Is(err, cut) {
								t.Errorf("the write with its step 3 cut = %v", err)
							}
						})
						return nil
					}})
					must(t, c.remove(ctx, a))
					n, err := c.listed(ctx, b)
					one(t, "listing after a stale removal", n, err)
				})
			}
		})
	}
}
