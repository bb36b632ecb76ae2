package sim

import (
	"bufio"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/providertest"
)

// Harness is a providertest.Harness and the ingredients only the simulation
// uses. Open, Now and Sleep are required (Sleep must move the clock the backend
// judges expiry by, Now read it); Retention must be what the providers Open
// returns keep (a zero field: kept forever).
type Harness struct {
	providertest.Harness

	// Sweep deletes, in the storage of t, what the backend's server would have
	// deleted by now (DynamoDB's TTL sweeper deletes items whose ttl has
	// passed, up to 48 hours late; a Redis server whose clock moves with Sleep
	// does it itself). The simulation moves the clock by 0 to 48 hours and
	// calls it, at random moments, so deletions come at random delays after
	// expiry. Nil: the server deletes nothing the provider would not.
	Sweep func(t *testing.T)

	// Variants are providers opened with other options on the same storage
	// (another retention, the options a rolling upgrade mixes): the simulation
	// restarts instances as one of them.
	Variants []Variant

	// Corruptions are ways of appending an undecodable record to a log beyond
	// Harness.Corrupt (which the simulation uses for provider.KindEvent and
	// provider.KindMarkerWrite when set): a record whose number, order or
	// expiry attribute is what is corrupt, for one.
	Corruptions []Corruption

	// WatchWait is how long a follower or watcher is given for each entry (or
	// the ErrCursorExpired) it must still yield; zero means 1s. A healthy
	// backend ends the wait by yielding, so a generous one costs only when it
	// fails: make it several poll intervals on a loaded machine.
	WatchWait time.Duration

	// WatchQuiet is how long a follower or watcher that yielded a complete
	// outcome is still given where the model allows it to go on (an
	// ErrCursorExpired when it cannot tell whether a corrupt record was
	// dropped, for one); zero means WatchWait/10. Each such operation
	// costs it whichever branch the backend took, so keep it about one poll
	// interval (a backend that wakes its watchers on a write, as memory does:
	// a millisecond).
	WatchQuiet time.Duration

	// LeaseEarly is how long before the ExpiresAt a call returned a lease may
	// already have expired, for a backend that documents it (Redis: 1ms, its
	// server's whole milliseconds). The model then accepts either answer in
	// that window.
	LeaseEarly time.Duration

	// CorruptExpires says that the log records Harness.Corrupt appends expire
	// as a write at that moment by a provider of Open would (its retention).
	// Otherwise the model does not know when they expire, and accepts a read
	// that treats one as retained or as dropped.
	CorruptExpires bool

	// PhantomMarkers says that a refused fenced WriteCascadeMarker may still
	// have appended its write to the marker log (watchers may see it), as the
	// Redis provider documents: its marker log is another slot.
	PhantomMarkers bool

	// Faults loses replies and times calls out after the server applied them
	// (the kinds "lost" and "timeout"); nil: those kinds do nothing.
	Faults *Faults

	// Corpus is a file of seeds that once failed, one a line ('#' starts a
	// comment), replayed by every Run before fresh seeds. Empty: none.
	Corpus string

	// Budget is how long Run tries fresh seeds when PIPESTATE_SIM_DURATION is
	// not set; zero means 15s.
	Budget time.Duration
}

// Variant opens a provider with other options on the storage of t.
type Variant struct {
	Name string
	Open func(t *testing.T) provider.Provider
	// Retention is what the variant's providers keep, when it is not the
	// Harness's Retention.
	Retention *provider.Retention
}

// Corruption appends one record that the backend's reads cannot decode to a log
// of the storage of t, as a write at the current time by a provider of
// Harness.Open would (with its retention): for provider.KindEvent, id is the
// pipeline; for provider.KindMarkerWrite, the pipeline whose marker it was.
type Corruption struct {
	Name   string
	Kind   provider.RecordKind
	Append func(t *testing.T, id ...string)
}

// Failure is a run the reference model refused: its seed, what the referee
// said, and the trace of the shrunk sequence.
type Failure struct {
	Seed  uint64
	Err   error
	Ops   int    // operations of the shrunk sequence
	Trace string // the shrunk sequence as it ran, one operation a line
}

func (f *Failure) String() string {
	return fmt.Sprintf("seed %d: %v\nshrunk sequence (%d operations):\n%s", f.Seed, f.Err, f.Ops, f.Trace)
}

// Stats is what a search did.
type Stats struct {
	Runs     int            // sequences run (shrinking not counted)
	Ops      int            // operations run
	Elapsed  time.Duration  // wall time, shrinking not counted
	Kinds    map[string]int // operations and faults run, by kind
	FirstHit int            // runs until the first failure, 0 when none
	HitOps   int            // operations until the first failure, 0 when none
}

func (s Stats) String() string {
	var b strings.Builder
	ops := 0.0
	if s.Elapsed > 0 {
		ops = float64(s.Ops) / s.Elapsed.Seconds()
	}
	fmt.Fprintf(&b, "%d runs, %d operations in %v (%.0f ops/s); by kind:", s.Runs, s.Ops, s.Elapsed.Round(time.Millisecond), ops)
	for _, k := range slices.Sorted(maps.Keys(s.Kinds)) {
		fmt.Fprintf(&b, " %s=%d", k, s.Kinds[k])
	}
	return b.String()
}

// Run replays the seeds of h.Corpus, then runs fresh seeds for the budget (see
// the package doc), and fails t with the seed, the referee's complaint and the
// shrunk sequence of each corpus seed the model refuses and of the first
// fresh one.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if !usable(t, h) {
		return
	}
	if s := os.Getenv("PIPESTATE_SIM_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("sim: PIPESTATE_SIM_SEED=%q: %v", s, err)
		}
		report(t, h, seedLine{seed: seed, ops: ops(), skip: os.Getenv("PIPESTATE_SIM_SKIP")}, "PIPESTATE_SIM_SEED", true)
		return
	}
	path := h.Corpus
	if os.Getenv("PIPESTATE_SIM_CORPUS") == "off" {
		path = ""
	}
	for _, c := range corpus(t, path) {
		if got := genHash(generate(c.seed, c.ops, h, c.skip)); c.gen != "" && got != c.gen {
			t.Errorf("sim: corpus %s: seed %d no longer generates the sequence it recorded (gen=%s, now gen=%s): the generator or the harness's retentions changed, so it may no longer replay its failure; re-record it (see the package doc; the line now: %v)",
				h.Corpus, c.seed, c.gen, got, c.withGen(got))
		} else if c.gen == "" {
			t.Logf("sim: corpus %s: seed %d records no gen= hash: a generator change would silently stop it replaying its failure (its line now: %v)", h.Corpus, c.seed, c.withGen(got))
		}
		report(t, h, c, "corpus "+h.Corpus, false) // and go on: fresh seeds may find more
	}
	budget := h.Budget
	if budget == 0 {
		budget = 15 * time.Second
	}
	if s := os.Getenv("PIPESTATE_SIM_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("sim: PIPESTATE_SIM_DURATION=%q: %v", s, err)
		}
		budget = d
	}
	f, st := Search(t, h, uint64(time.Now().UnixNano()), budget)
	t.Logf("sim: %v", st)
	if f != nil {
		env := ""
		if skip := os.Getenv("PIPESTATE_SIM_SKIP"); skip != "" {
			env = "PIPESTATE_SIM_SKIP=" + skip + " "
		}
		c := seedLine{seed: f.Seed, ops: ops(), skip: os.Getenv("PIPESTATE_SIM_SKIP")}
		t.Errorf("sim: the reference model refused a run after %d runs and %d operations (replay: %sPIPESTATE_SIM_SEED=%d go test -run '^%s$'; corpus line: %v):\n%v",
			st.FirstHit, st.HitOps, env, f.Seed, t.Name(), c.withGen(genHash(generate(c.seed, c.ops, h, c.skip))), f)
	}
}

func usable(t *testing.T, h Harness) bool {
	t.Helper()
	if h.Open == nil {
		t.Fatal("sim: Harness.Open is nil")
	}
	if h.Now == nil || h.Sleep == nil {
		t.Skip("sim: the simulation needs Harness.Now and Harness.Sleep (a clock it can move)")
		return false
	}
	return true
}

// report runs seed alone, with the kinds skip names left out, and fails t
// when the model refuses it.
func report(t *testing.T, h Harness, c seedLine, from string, trace bool) bool {
	t.Helper()
	seed, skip := c.seed, c.skip
	r := runSeed(t, h, seed, c.ops, skip)
	if trace {
		t.Logf("sim: seed %d (%d operations):\n%s", seed, len(r.trace), strings.Join(r.trace, "\n"))
	}
	if r.err == nil {
		return false
	}
	f := shrink(t, h, seed, r)
	env := ""
	if skip != "" {
		env = "PIPESTATE_SIM_SKIP=" + skip + " "
	}
	if c.ops != 60 {
		env += fmt.Sprintf("PIPESTATE_SIM_OPS=%d ", c.ops)
	}
	t.Errorf("sim: seed %d from %s fails (replay: %sPIPESTATE_SIM_SEED=%d go test -run '^%s$'):\n%v", seed, from, env, seed, t.Name(), f)
	return true
}

// Search runs fresh seeds, starting at seed, for budget, and returns the first
// failure, shrunk, and what it ran.
func Search(t *testing.T, h Harness, seed uint64, budget time.Duration) (*Failure, Stats) {
	t.Helper()
	st := Stats{Kinds: map[string]int{}}
	if !usable(t, h) {
		return nil, st
	}
	start := time.Now()
	n := ops()
	for time.Since(start) < budget {
		r := runSeed(t, h, seed, n, os.Getenv("PIPESTATE_SIM_SKIP"))
		st.Runs++
		st.Ops += len(r.trace)
		for k, c := range r.kinds {
			st.Kinds[k] += c
		}
		if r.err != nil {
			st.Elapsed = time.Since(start)
			st.FirstHit, st.HitOps = st.Runs, st.Ops
			t.Logf("sim: seed %d failed after %d runs, %d operations, %v: %v", seed, st.Runs, st.Ops, st.Elapsed.Round(time.Millisecond), r.err)
			return shrink(t, h, seed, r), st
		}
		seed++
	}
	st.Elapsed = time.Since(start)
	return nil, st
}

func ops() int {
	if s := os.Getenv("PIPESTATE_SIM_OPS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return n
		}
	}
	return 60
}

// seedLine is one corpus line: a seed, its operation count, the kinds it
// leaves out, and the hash of the sequence they generated when it was
// recorded ("" when the line records none).
type seedLine struct {
	seed uint64
	ops  int
	skip string
	gen  string
}

// withGen is the line c, recording gen.
func (c seedLine) withGen(gen string) string {
	line := fmt.Sprintf("%d ops=%d", c.seed, c.ops)
	if c.skip != "" {
		line += " skip=" + c.skip
	}
	return line + " gen=" + gen
}

// genHash is a hash of a generated sequence: a corpus line records it, so
// that a change to the generator (its weights, kinds, draw order, or the
// harness's retentions it draws spans from) is caught instead of silently
// replaying another sequence.
func genHash(seq []op) string {
	f := fnv.New64a()
	for _, o := range seq {
		fmt.Fprintf(f, "%d %d %d %d %d %d %d\n", o.kind, o.slot, o.run, o.lease, o.n, o.m, o.d)
	}
	return fmt.Sprintf("%016x", f.Sum64())
}

// corpus reads the seeds of path: "seed", optionally followed by "ops=60",
// "skip=watch,corrupt" and "gen=<hash>" (a line without ops= runs
// PIPESTATE_SIM_OPS operations).
func corpus(t *testing.T, path string) []seedLine {
	t.Helper()
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatalf("sim: corpus: %v", err)
	}
	defer f.Close()
	var seeds []seedLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		fields := strings.Fields(line)
		seed, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			t.Fatalf("sim: corpus %s: %q: %v", path, line, err)
		}
		sl := seedLine{seed: seed, ops: ops()}
		for _, f := range fields[1:] {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "skip":
				sl.skip = v
			case "gen":
				sl.gen = v
			case "ops":
				if sl.ops, err = strconv.Atoi(v); err != nil || sl.ops <= 0 {
					t.Fatalf("sim: corpus %s: %q: ops=%q is not a positive count", path, line, v)
				}
			default:
				t.Fatalf("sim: corpus %s: %q: unknown field %q (want ops=, skip= or gen=)", path, line, f)
			}
		}
		seeds = append(seeds, sl)
	}
	return seeds
}

// result is one run of a sequence.
type result struct {
	ops   []op
	trace []string
	kinds map[string]int
	err   error  // the referee's complaint, nil when the run passed
	at    int    // the index of the operation it was about
	class string // what shrinking must keep failing: the kind of that operation
}

// runSeed runs the sequence of seed, n operations long.
func runSeed(t *testing.T, h Harness, seed uint64, n int, skip string) result {
	return runOps(t, h, generate(seed, n, h, skip))
}

// runOps runs ops on fresh storage: a subtest of its own, since harnesses
// key storage by t.Name().
func runOps(t *testing.T, h Harness, ops []op) result {
	t.Helper()
	r := result{ops: ops, kinds: map[string]int{}}
	done := false
	t.Run("run", func(t *testing.T) {
		w := newWorld(t, h)
		defer w.close()
		for i, o := range ops {
			desc, err := w.do(o)
			r.trace = append(r.trace, fmt.Sprintf("%3d %s", i, desc))
			r.kinds[o.kind.String()]++
			if err != nil {
				r.err, r.at, r.class = err, i, o.kind.String()
				break
			}
		}
		done = true
	})
	if !done && r.err == nil {
		r.at = len(r.trace)
		r.err = fmt.Errorf("the run stopped at operation %d (%s): the harness failed or skipped the subtest (see its log)", r.at, ops[r.at].kind)
		r.trace = append(r.trace, fmt.Sprintf("%3d %s: the harness stopped the run", r.at, ops[r.at].kind))
		r.class = "harness " + ops[r.at].kind.String()
	}
	return r
}

// shrink removes operations from r's sequence while the run still fails at an
// operation of the same kind, for at most PIPESTATE_SIM_SHRINK (default 60s).
func shrink(t *testing.T, h Harness, seed uint64, r result) *Failure {
	t.Helper()
	bound := 60 * time.Second
	if s := os.Getenv("PIPESTATE_SIM_SHRINK"); s != "" {
		if d, err := time.ParseDuration(s); err == nil {
			bound = d
		}
	}
	deadline := time.Now().Add(bound)
	best := r
	best.ops = best.ops[:best.at+1]
	for chunk := len(best.ops) / 2; chunk >= 1 && time.Now().Before(deadline); {
		removed := false
		for i := 0; i+chunk <= len(best.ops)-1 && time.Now().Before(deadline); {
			try := slices.Concat(best.ops[:i], best.ops[i+chunk:])
			got := runOps(t, h, try)
			if got.err != nil && got.class == best.class {
				got.ops = got.ops[:got.at+1]
				best, removed = got, true
				continue
			}
			i += chunk
		}
		if !removed {
			chunk /= 2
		}
	}
	return &Failure{Seed: seed, Err: best.err, Ops: len(best.ops), Trace: strings.Join(best.trace, "\n")}
}
