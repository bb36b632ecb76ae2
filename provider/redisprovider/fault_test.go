package redisprovider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// The fault tests run a concurrent workload on two providers, cut the server
// connections several times in the middle of it, and then check that every call
// returned an error or succeeded (a panic fails the test binary), that no error
// was a wrong verdict (invalid argument, lock not held), and that the stored state
// is consistent: every run, rerun and pipeline list agrees with the truths after
// one listing, and no lock is left without a TTL.

const (
	faultPipelines = 3
	faultRuns      = 12
	faultReruns    = 6
	faultLocks     = 4
	faultLockTTL   = 3 * time.Second
)

func faultPipeline(i int) string { return fmt.Sprintf("fp%d", i%faultPipelines) }

// faultWorkload runs workers until stop is closed and returns the number of calls
// that succeeded and failed.
func faultWorkload(t *testing.T, ps []*Provider, stop <-chan struct{}) (ok, failed int64) {
	t.Helper()
	var okN, failN atomic.Int64
	var wg sync.WaitGroup
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for w := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			p := ps[w%len(ps)]
			ctx := context.Background()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var err error
				r := rng.IntN(faultRuns)
				switch op := rng.IntN(8); op {
				case 0: // new or re-put run, sometimes with another CreatedAt
					run := types.RunState{RunID: fmt.Sprintf("r%d", r), PipelineID: faultPipeline(r), Status: types.RunPending,
						CreatedAt: base.Add(time.Duration(rng.IntN(5)) * time.Minute)}
					err = p.PutRunState(ctx, run)
				case 1:
					var cur *types.RunState
					if cur, err = p.GetRunState(ctx, fmt.Sprintf("r%d", r)); err == nil && cur != nil {
						next := *cur
						next.Status = types.RunRunning
						_, err = p.CompareAndSwapRunState(ctx, cur.RunID, cur.Version, next)
					}
				case 2: // reruns move between pipelines
					x := rng.IntN(faultReruns)
					err = p.PutRerun(ctx, types.RerunRecord{RerunID: fmt.Sprintf("x%d", x), PipelineID: faultPipeline(rng.IntN(faultPipelines)),
						OriginalDate: "2026-01-01", Status: types.RequestPending, RequestedAt: base.Add(time.Duration(rng.IntN(5)) * time.Second)})
				case 3:
					if rng.IntN(2) == 0 {
						err = p.RegisterPipeline(ctx, types.PipelineConfig{ID: faultPipeline(r), Tier: i % 3})
					} else {
						err = p.DeletePipeline(ctx, faultPipeline(r))
					}
				case 4:
					key := fmt.Sprintf("lock-%d", rng.IntN(faultLocks))
					var held bool
					if held, err = p.AcquireLock(ctx, key, faultLockTTL); err == nil && held {
						if err = p.ReleaseLock(ctx, key); errors.Is(err, provider.ErrLockNotHeld) {
							err = fmt.Errorf("release of a lock just acquired: %w", err) // allowed only after a cut; reported below
						}
					}
				case 5:
					err = p.AppendEvent(ctx, types.Event{Kind: "K", PipelineID: faultPipeline(r)})
				case 6:
					err = p.PutTrait(ctx, faultPipeline(r), types.TraitEvaluation{TraitType: "t", Status: types.TraitPass}, time.Hour)
				case 7:
					_, err = p.ListRuns(ctx, faultPipeline(r), 5)
				}
				if err == nil {
					okN.Add(1)
					continue
				}
				failN.Add(1)
				if errors.Is(err, provider.ErrInvalidArgument) {
					t.Errorf("wrong verdict under faults: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	return okN.Load(), failN.Load()
}

// checkConsistent lists everything once (which repairs what a cut interrupted)
// and then compares every list with the truths, key by key.
func checkConsistent(t *testing.T, p *Provider, c goredis.UniversalClient) {
	t.Helper()
	ctx := context.Background()
	// The listings run past provisionalGrace, so that they drop the provisional
	// entries of writes a cut interrupted before their record step.
	p, err := New(c, WithKeyPrefix(p.k.prefix), WithClock(func() time.Time { return time.Now().Add(provisionalGrace + time.Minute) }))
	if err != nil {
		t.Fatal(err)
	}
	for i := range faultPipelines {
		pid := faultPipeline(i)
		if _, err := p.ListRuns(ctx, pid, 1000); err != nil {
			t.Fatal(err)
		}
		if _, err := p.ListReruns(ctx, pid, 1000); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.ListAllReruns(ctx, 1000); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ListPipelines(ctx); err != nil {
		t.Fatal(err)
	}

	truth := func(key string) (exists bool, member, pipeline string, hasJSON bool) {
		v, err := c.HMGet(ctx, key, "s", "m", "p", "j").Result()
		if err != nil {
			t.Fatal(err)
		}
		_, exists = v[0].(string)
		member, _ = v[1].(string)
		pipeline, _ = v[2].(string)
		_, hasJSON = v[3].(string)
		return
	}
	// checkList compares list ix with want: id -> member it must hold ("" = none).
	checkList := func(name string, ix index, want map[string]string) {
		t.Helper()
		members, err := c.ZRange(ctx, ix.z, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		h, err := c.HGetAll(ctx, ix.h).Result()
		if err != nil {
			t.Fatal(err)
		}
		var wantMembers []string
		for id, m := range want {
			if m != "" {
				wantMembers = append(wantMembers, m)
			}
			_, got, _ := strings.Cut(h[id], "|")
			if got != m {
				t.Errorf("%s: entry of %s is %q, truth wants %q", name, id, got, m)
			}
		}
		slices.Sort(wantMembers)
		if !slices.Equal(members, wantMembers) {
			t.Errorf("%s: members %q, truths want %q", name, members, wantMembers)
		}
	}

	runs := map[string]map[string]string{}
	for i := range faultPipelines {
		runs[faultPipeline(i)] = map[string]string{}
	}
	for r := range faultRuns {
		id := fmt.Sprintf("r%d", r)
		if ok, m, pid, _ := truth(p.k.run(id)); ok {
			runs[pid][id] = m
		}
	}
	for pid, want := range runs {
		checkList("runs of "+pid, p.k.runs(pid), want)
	}

	reruns := map[string]map[string]string{}
	all := map[string]string{}
	for i := range faultPipelines {
		reruns[faultPipeline(i)] = map[string]string{}
	}
	for x := range faultReruns {
		id := fmt.Sprintf("x%d", x)
		if ok, m, pid, _ := truth(p.k.rerun(id)); ok {
			reruns[pid][id] = m
			all[id] = m
		}
	}
	for pid, want := range reruns {
		checkList("reruns of "+pid, p.k.reruns(pid), want)
	}
	checkList("all reruns", p.k.globalReruns(), all)

	pipes := map[string]string{}
	for i := range faultPipelines {
		pid := faultPipeline(i)
		if ok, m, _, hasJSON := truth(p.k.config(pid)); ok && hasJSON {
			pipes[pid] = m
		}
	}
	if n, _ := c.ZCard(ctx, p.k.globalPipelines().z).Result(); n != int64(len(pipes)) {
		t.Errorf("pipeline list has %d members, %d configs exist", n, len(pipes))
	}
	for pid, m := range pipes {
		if s, err := c.ZScore(ctx, p.k.globalPipelines().z, m).Result(); err != nil || s != 0 {
			t.Errorf("pipeline %s is missing from the pipeline list (%v)", pid, err)
		}
	}

	for l := range faultLocks {
		lk, _ := p.k.lock(fmt.Sprintf("lock-%d", l))
		ttl, err := c.PTTL(ctx, lk).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ttl == -1 || ttl > faultLockTTL {
			t.Errorf("lock %d has TTL %v: an orphan", l, ttl)
		}
	}
}

// cutProxy forwards TCP connections to a server and can cut them all at once,
// in the middle of requests, while still accepting new ones.
type cutProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newCutProxy(t *testing.T, upstream string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln}
	t.Cleanup(func() { _ = ln.Close(); p.cut() })
	go func() {
		for {
			down, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", upstream)
			if err != nil {
				_ = down.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, down, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, down); _ = up.Close() }()
			go func() { _, _ = io.Copy(down, up); _ = down.Close() }()
		}
	}()
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

// cut closes every open connection and returns how many pairs it cut.
func (p *cutProxy) cut() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	n := len(p.conns) / 2
	p.conns = nil
	return n
}

func TestFaultMiniredis(t *testing.T) {
	m := miniredis.RunT(t)
	proxy := newCutProxy(t, m.Addr())
	c := goredis.NewClient(&goredis.Options{Addr: proxy.addr(), MinRetryBackoff: time.Millisecond, MaxRetryBackoff: 2 * time.Millisecond})
	defer c.Close()
	var ps []*Provider
	for range 2 {
		p, err := New(c, WithKeyPrefix("fault"))
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	stop := make(chan struct{})
	var cuts atomic.Int64
	go func() {
		defer close(stop)
		for range 20 {
			time.Sleep(25 * time.Millisecond)
			cuts.Add(int64(proxy.cut()))
		}
		time.Sleep(25 * time.Millisecond)
	}()
	ok, failed := faultWorkload(t, ps, stop)
	t.Logf("%d calls succeeded, %d failed, %d connections cut", ok, failed, cuts.Load())
	if cuts.Load() == 0 || ok == 0 {
		t.Fatalf("the cuts did not interrupt the workload (%d ok, %d cut)", ok, cuts.Load())
	}
	waitUp(t, ps[0])
	checkConsistent(t, ps[0], c)
}

// waitUp waits until p answers again: after failed dials go-redis backs off for a
// while before it dials again.
func waitUp(t *testing.T, p *Provider) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for p.Ping(context.Background()) != nil {
		if time.Now().After(deadline) {
			t.Fatal("the server did not come back")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestFaultRedis(t *testing.T) {
	addr := testenv.RedisAddr(t)
	name := "pst-fault-" + testenv.RedisPrefix(t)
	c := goredis.NewClient(&goredis.Options{Addr: addr, ClientName: name, MinRetryBackoff: time.Millisecond, MaxRetryBackoff: 2 * time.Millisecond})
	defer c.Close()
	admin := goredis.NewClient(&goredis.Options{Addr: addr})
	defer admin.Close()
	faultOnServer(t, c, []*goredis.Client{admin}, name)
}

func TestFaultRedisCluster(t *testing.T) {
	addrs := testenv.RedisClusterAddrs(t)
	name := "pst-fault-" + testenv.RedisPrefix(t)
	c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs, ClientName: name,
		MinRetryBackoff: time.Millisecond, MaxRetryBackoff: 2 * time.Millisecond})
	defer c.Close()
	var admins []*goredis.Client
	var mu sync.Mutex
	err := c.ForEachMaster(t.Context(), func(_ context.Context, m *goredis.Client) error {
		admin := goredis.NewClient(&goredis.Options{Addr: m.Options().Addr})
		mu.Lock() // ForEachMaster runs fn concurrently
		defer mu.Unlock()
		admins = append(admins, admin)
		return nil
	})
	for _, a := range admins {
		t.Cleanup(func() { _ = a.Close() })
	}
	if err != nil {
		t.Fatal(err)
	}
	faultOnServer(t, c, admins, name)
}

// faultOnServer runs the workload through c while killing, on the server side,
// every connection named name (other tests' connections are left alone) on each
// admin's server, then checks the state.
func faultOnServer(t *testing.T, c goredis.UniversalClient, admins []*goredis.Client, name string) {
	t.Helper()
	prefix := "pst:" + testenv.RedisPrefix(t)
	t.Cleanup(func() {
		for _, a := range admins {
			keys, _ := a.Keys(context.Background(), prefix+":*").Result()
			for _, k := range keys {
				a.Del(context.Background(), k)
			}
		}
	})
	var ps []*Provider
	for range 2 {
		p, err := New(c, WithKeyPrefix(prefix))
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	killOurs := func() int {
		n := 0
		for _, admin := range admins {
			list, err := admin.ClientList(context.Background()).Result()
			if err != nil {
				t.Error(err)
				return n
			}
			for _, line := range strings.Split(list, "\n") {
				if !strings.Contains(line, " name="+name+" ") {
					continue
				}
				for _, f := range strings.Fields(line) {
					if id, ok := strings.CutPrefix(f, "id="); ok {
						if admin.Do(context.Background(), "CLIENT", "KILL", "ID", id).Err() == nil {
							n++
						}
					}
				}
			}
		}
		return n
	}
	stop := make(chan struct{})
	var killed atomic.Int64
	go func() {
		defer close(stop)
		for range 10 {
			time.Sleep(30 * time.Millisecond)
			killed.Add(int64(killOurs()))
		}
		time.Sleep(30 * time.Millisecond)
	}()
	ok, failed := faultWorkload(t, ps, stop)
	t.Logf("%d calls succeeded, %d failed, %d connections killed", ok, failed, killed.Load())
	if killed.Load() == 0 || ok == 0 {
		t.Fatalf("the cuts did not interrupt the workload (%d ok, %d killed)", ok, killed.Load())
	}
	waitUp(t, ps[0])
	checkConsistent(t, ps[0], c)
}
