package statetest_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/statetest"
)

// flaws a toy store or deduper can be built with; the zero value is correct.
type flaws struct {
	lostUpdate     bool // non-atomic read-then-write
	ignoreTTL      bool // never expires
	keepExpired    bool // a merge onto an expired value continues from it
	ttlZeroKeeps   bool // ttl 0 keeps an earlier expiry
	reverseMany    bool // GetMany answers in reverse order
	noDedupe       bool // MergeUpdateOnce applies every delivery
	storeWideClaim bool // MergeUpdateOnce claims event IDs store-wide, not per key
	ignoreCtx      bool // ignores cancelled contexts
	noValidate     bool // accepts any key and ttl
	naiveKeys      bool // encodes keys as entity, or entity + ":" + bucket when windowed
	closedWorks    bool // keeps working after Close
	alwaysFirst    bool // deduper: every MarkSeen is first
	racyDeduper    bool // deduper: check-then-set
	releaseIgnored bool // deduper: Release does nothing
	wrapOverflow   bool // an int64 sum overflows silently
	expiryAfter    bool // a value expires only when now > its expiry
}

// world is the shared storage of the toy stores of one test.
type world struct {
	mu     sync.Mutex
	now    time.Time
	values map[string]item
	events map[string]bool // Deduper claims
	claims map[string]bool // MergeUpdateOnce claims
}

type item struct {
	v   int64
	exp time.Time
}

func (w *world) live(it item) bool { return it.exp.IsZero() || w.now.Before(it.exp) }

func (w *world) liveAt(it item, f flaws) bool {
	return w.live(it) || f.expiryAfter && w.now.Equal(it.exp)
}

// toy is a Sum[int64] store and a deduper over a world, with flaws.
type toy struct {
	w      *world
	f      flaws
	closed bool
}

func (s *toy) enter(ctx context.Context) error {
	if s.closed && !s.f.closedWorks {
		return state.ErrClosed
	}
	if !s.f.ignoreCtx {
		return ctx.Err()
	}
	return nil
}

func (s *toy) key(k state.Key) string {
	if s.f.naiveKeys {
		if k.Bucket == 0 {
			return k.Entity
		}
		return fmt.Sprintf("%s:%d", k.Entity, k.Bucket)
	}
	return fmt.Sprintf("%q/%d", k.Entity, k.Bucket)
}

func (s *toy) Get(ctx context.Context, k state.Key) (int64, bool, error) {
	vs, found, err := s.GetMany(ctx, []state.Key{k})
	if err != nil {
		return 0, false, err
	}
	return vs[0], found[0], nil
}

func (s *toy) GetMany(ctx context.Context, ks []state.Key) ([]int64, []bool, error) {
	if err := s.enter(ctx); err != nil {
		return nil, nil, err
	}
	if !s.f.noValidate {
		if err := state.CheckKeys(ks); err != nil {
			return nil, nil, err
		}
	}
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	vs, found := make([]int64, len(ks)), make([]bool, len(ks))
	for i, k := range ks {
		j := i
		if s.f.reverseMany {
			j = len(ks) - 1 - i
		}
		if it, ok := s.w.values[s.key(k)]; ok && (s.f.ignoreTTL || s.w.liveAt(it, s.f)) {
			vs[j], found[j] = it.v, true
		}
	}
	return vs, found, nil
}

func (s *toy) MergeUpdate(ctx context.Context, k state.Key, delta int64, ttl time.Duration) error {
	_, err := s.merge(ctx, "", k, delta, ttl)
	return err
}

func (s *toy) MergeUpdateOnce(ctx context.Context, id string, k state.Key, delta int64, ttl time.Duration) (bool, error) {
	if !s.f.noValidate {
		if err := state.CheckEventID(id); err != nil {
			return false, err
		}
	}
	return s.merge(ctx, id, k, delta, ttl)
}

func (s *toy) merge(ctx context.Context, id string, k state.Key, delta int64, ttl time.Duration) (bool, error) {
	if err := s.enter(ctx); err != nil {
		return false, err
	}
	if !s.f.noValidate {
		if err := state.CheckMerge[int64](monoid.Sum[int64]{}, k, delta, ttl); err != nil {
			return false, err
		}
	}
	s.w.mu.Lock()
	claim := state.OnceClaimID(k, id)
	if s.f.storeWideClaim {
		claim = id
	}
	if id != "" && s.w.claims[claim] && !s.f.noDedupe {
		s.w.mu.Unlock()
		return false, nil
	}
	it, ok := s.w.values[s.key(k)]
	if ok && !s.w.liveAt(it, s.f) && !s.f.keepExpired && !s.f.ignoreTTL {
		it = item{}
	}
	if s.f.lostUpdate {
		s.w.mu.Unlock()
		runtime.Gosched()
		s.w.mu.Lock()
	}
	exp := time.Time{}
	if ttl > 0 {
		exp = s.w.now.Add(ttl)
	} else if s.f.ttlZeroKeeps {
		exp = it.exp
	}
	_, err := state.Combine[int64](monoid.Sum[int64]{}, it.v, delta)
	if err != nil && !s.f.wrapOverflow {
		s.w.mu.Unlock()
		return false, err
	}
	s.w.values[s.key(k)] = item{v: it.v + delta, exp: exp}
	if id != "" {
		s.w.claims[claim] = true
	}
	s.w.mu.Unlock()
	return true, nil
}

func (s *toy) MarkSeen(ctx context.Context, id string) (bool, error) {
	if err := s.enter(ctx); err != nil {
		return false, err
	}
	if !s.f.noValidate {
		if err := state.CheckEventID(id); err != nil {
			return false, err
		}
	}
	s.w.mu.Lock()
	seen := s.w.events[id]
	if s.f.racyDeduper {
		s.w.mu.Unlock()
		time.Sleep(time.Millisecond) // widen the check-then-set window
		s.w.mu.Lock()
	}
	s.w.events[id] = true
	s.w.mu.Unlock()
	return !seen || s.f.alwaysFirst, nil
}

func (s *toy) Release(ctx context.Context, id string) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	if !s.f.noValidate {
		if err := state.CheckEventID(id); err != nil {
			return err
		}
	}
	if !s.f.releaseIgnored {
		s.w.mu.Lock()
		delete(s.w.events, id)
		s.w.mu.Unlock()
	}
	return nil
}

func (s *toy) Close() error { s.closed = true; return nil }

// worlds keys storage by test name.
type worlds struct {
	mu sync.Mutex
	m  map[string]*world
}

func (ws *worlds) get(t *testing.T) *world {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.m == nil {
		ws.m = map[string]*world{}
	}
	w, ok := ws.m[t.Name()]
	if !ok {
		w = &world{now: time.Unix(1_000_000, 0), values: map[string]item{}, events: map[string]bool{}, claims: map[string]bool{}}
		ws.m[t.Name()] = w
	}
	return w
}

func (ws *worlds) sleep(t *testing.T, d time.Duration) {
	w := ws.get(t)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.now = w.now.Add(d)
}

func toyHarness(f flaws) statetest.Harness[int64] {
	ws := &worlds{}
	return statetest.Harness[int64]{
		Open:   func(t *testing.T) state.Store[int64] { return &toy{w: ws.get(t), f: f} },
		Sleep:  ws.sleep,
		Monoid: monoid.Sum[int64]{},
		Delta:  func(i int) int64 { return int64(i) + 1 },
		Equal:  func(a, b int64) bool { return a == b },
	}
}

func toyDeduperHarness(f flaws) statetest.DeduperHarness {
	ws := &worlds{}
	return statetest.DeduperHarness{
		Open:  func(t *testing.T) state.Deduper { return &toy{w: ws.get(t), f: f} },
		Sleep: ws.sleep,
	}
}

// TestToyConforms is the control: the toy without flaws passes, so each flaw's
// failure below is the flaw's doing.
func TestToyConforms(t *testing.T) {
	statetest.RunStore(t, toyHarness(flaws{}))
	statetest.RunDeduper(t, toyDeduperHarness(flaws{}))
}

// broken lists each flaw and a subtest that must fail because of it.
var broken = []struct {
	name    string
	flaws   flaws
	deduper bool
	fails   string
}{
	{"lost update", flaws{lostUpdate: true}, false, "concurrent_merges"},
	{"ttl ignored", flaws{ignoreTTL: true}, false, "ttl_expires"},
	{"expired value kept", flaws{keepExpired: true}, false, "expired_then_merged"},
	{"ttl zero keeps expiry", flaws{ttlZeroKeeps: true}, false, "ttl_zero_clears_expiry"},
	{"get many out of order", flaws{reverseMany: true}, false, "get_many"},
	{"once not deduping", flaws{noDedupe: true}, false, "once/redelivery"},
	{"context ignored", flaws{ignoreCtx: true}, false, "cancelled_context"},
	{"no validation", flaws{noValidate: true}, false, "bad_input"},
	{"naive key encoding", flaws{naiveKeys: true}, false, "keys_are_distinct"},
	{"works after close", flaws{closedWorks: true}, false, "closed"},
	{"deduper always first", flaws{alwaysFirst: true}, true, "first_seen_once"},
	{"once claims store-wide", flaws{storeWideClaim: true}, false, "once/claim_per_key"},
	{"deduper check then set", flaws{racyDeduper: true}, true, "race"},
	{"deduper release ignored", flaws{releaseIgnored: true}, true, "release"},
	{"deduper context ignored", flaws{ignoreCtx: true}, true, "cancelled_context"},
	{"int64 sum wraps", flaws{wrapOverflow: true}, false, "int64_sum_limits"},
	{"expired only after the instant", flaws{expiryAfter: true}, false, "expiry_instant"},
}

const brokenEnv = "STATETEST_BROKEN"

// TestBrokenSubprocess runs the suite against one broken toy, named by the
// environment; it only runs as a subprocess of TestSuiteHasTeeth.
func TestBrokenSubprocess(t *testing.T) {
	name := os.Getenv(brokenEnv)
	if name == "" {
		t.Skip("run by TestSuiteHasTeeth")
	}
	for _, b := range broken {
		if b.name == name {
			if b.deduper {
				statetest.RunDeduper(t, toyDeduperHarness(b.flaws))
			} else {
				statetest.RunStore(t, toyHarness(b.flaws))
			}
			return
		}
	}
	t.Fatalf("unknown broken store %q", name)
}

func TestSuiteHasTeeth(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite in subprocesses")
	}
	for _, b := range broken {
		t.Run(b.name, func(t *testing.T) {
			out, err := runBroken(b.name, "^TestBrokenSubprocess$")
			if err == nil {
				t.Fatalf("the suite passed a store with flaw %q:\n%s", b.name, out)
			}
			if want := "--- FAIL: TestBrokenSubprocess/" + b.fails + " "; !strings.Contains(out, want) {
				t.Errorf("flaw %q: no %q in the output:\n%s", b.name, want, tail(out, 40))
			}
		})
	}
}

// runBroken runs the tests matching run in a subprocess with the flaw named in the
// environment, returning its output.
func runBroken(flaw, run string) (string, error) {
	cmd := exec.Command(os.Args[0], "-test.run", run, "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), brokenEnv+"="+flaw)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func tail(s string, lines int) string {
	ls := strings.Split(s, "\n")
	return strings.Join(ls[max(0, len(ls)-lines):], "\n")
}
