package statetest_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/statetest"
)

// The flaws of issue 35's "Rules the suites do not test yet"; init adds them
// to broken.
func init() {
	broken = append(broken, []struct {
		name  string
		flaws flaws
		kind  string
		fails string
	}{
		// Rule: the fence check and the write are one atomic step.
		{"fence check then write", flaws{fenceCheckWrite: true}, sumToy, "fencing_race/MergeUpdate"},
		{"fence check then write (max)", flaws{fenceCheckWrite: true}, maxToy, "fencing_race/MergeUpdateOnce"},
		// Rule: Key.Entity is limited in bytes, not runes.
		{"entity limited in runes", flaws{entityRunes: true}, sumToy, "entity_length_in_bytes"},
	}...)
}

// cacheFlaws a toy read cache can be built with; the zero value is correct.
type cacheFlaws struct {
	sliding   bool // a hit makes the entry fresh again
	noGen     bool // a read that raced a write fills the cache anyway
	stampFill bool // an entry's age counts from the end of the read that fetched it
}

// toyCache is a read cache over a store, with flaws.
type toyCache struct {
	s       state.Store[int64]
	now     func() time.Time
	stale   time.Duration
	f       cacheFlaws
	mu      sync.Mutex
	entries map[state.Key]toyEntry
	gens    map[state.Key]uint64
}

type toyEntry struct {
	v     int64
	found bool
	at    time.Time
}

func (c *toyCache) Get(ctx context.Context, k state.Key) (int64, bool, error) {
	c.mu.Lock()
	if e, ok := c.entries[k]; ok && c.now().Sub(e.at) < c.stale {
		if c.f.sliding {
			e.at = c.now()
			c.entries[k] = e
		}
		c.mu.Unlock()
		return e.v, e.found, nil
	}
	gen, start := c.gens[k], c.now()
	c.mu.Unlock()
	v, found, err := c.s.Get(ctx, k)
	if err != nil {
		return 0, false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f.noGen || c.gens[k] == gen {
		at := start
		if c.f.stampFill {
			at = c.now()
		}
		c.entries[k] = toyEntry{v, found, at}
	}
	return v, found, nil
}

func (c *toyCache) GetMany(ctx context.Context, ks []state.Key) ([]int64, []bool, error) {
	vs, found := make([]int64, len(ks)), make([]bool, len(ks))
	for i, k := range ks {
		var err error
		if vs[i], found[i], err = c.Get(ctx, k); err != nil {
			return nil, nil, err
		}
	}
	return vs, found, nil
}

func (c *toyCache) MergeUpdate(ctx context.Context, k state.Key, delta int64, ttl time.Duration) error {
	err := c.s.MergeUpdate(ctx, k, delta, ttl)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gens[k]++
	delete(c.entries, k)
	return err
}

func (c *toyCache) Close() error { return c.s.Close() }

func toyCacheHarness(f cacheFlaws) statetest.CacheHarness {
	return statetest.CacheHarness{
		Wrap: func(_ *testing.T, s state.Store[int64], now func() time.Time) state.Store[int64] {
			return &toyCache{s: s, now: now, stale: time.Second, f: f, entries: map[state.Key]toyEntry{}, gens: map[state.Key]uint64{}}
		},
		Staleness: time.Second,
	}
}

// brokenCaches lists each toy cache flaw and the RunCache subtest that must
// fail because of it.
var brokenCaches = []struct {
	name  string
	flaws cacheFlaws
	fails string
}{
	{"cache hit refreshes", cacheFlaws{sliding: true}, "hits_do_not_extend_freshness"},
	{"cache fills after a write", cacheFlaws{noGen: true}, "own_write_not_undone_by_racing_read"},
	{"cache ages from the fill's end", cacheFlaws{stampFill: true}, "slow_read_does_not_extend_staleness"},
}

// TestToyCacheConforms is the control: the toy cache without flaws passes.
func TestToyCacheConforms(t *testing.T) { statetest.RunCache(t, toyCacheHarness(cacheFlaws{})) }

// TestBrokenCacheSubprocess runs RunCache on the toy cache whose flaw the
// environment names; it only runs as a subprocess of TestCacheSuiteHasTeeth.
func TestBrokenCacheSubprocess(t *testing.T) {
	name := os.Getenv(brokenEnv)
	if name == "" {
		t.Skip("run by TestCacheSuiteHasTeeth")
	}
	for _, b := range brokenCaches {
		if b.name == name {
			statetest.RunCache(t, toyCacheHarness(b.flaws))
			return
		}
	}
	t.Skipf("%q names no broken cache", name)
}

func TestCacheSuiteHasTeeth(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite in subprocesses")
	}
	for _, b := range brokenCaches {
		t.Run(b.name, func(t *testing.T) {
			out, err := runBroken(b.name, "^TestBrokenCacheSubprocess$")
			if err == nil {
				t.Fatalf("RunCache passed a cache with flaw %q:\n%s", b.name, out)
			}
			if want := "--- FAIL: TestBrokenCacheSubprocess/" + b.fails + " "; !strings.Contains(out, want) {
				t.Errorf("flaw %q: no %q in the output:\n%s", b.name, want, tail(out, 40))
			}
		})
	}
}
