// Package simengine is the model-independent engine of the seeded simulations
// (providertest/sim for providers, state/statetest/statesim for state stores):
// seeds, the run loop (each run a subtest on fresh storage), shrinking, the
// corpus of seeds that once failed (lines "n ops=60 skip=a,b gen=<hash>"), the
// wall-time budget, the PIPESTATE_SIM_* environment variables and Stats. A
// simulation supplies its generator, the hash of a generated sequence, the
// kind of an operation and a World that runs operations against the backend
// and its reference model; see providertest/sim's package doc for the
// environment variables and the corpus format, which every simulation shares.
package simengine

import (
	"bufio"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// World is one run of a simulation: fresh storage, instances, a model.
type World[O any] interface {
	// Do runs o against the backend and the model, and returns its
	// description and the referee's complaint (nil: allowed).
	Do(o O) (string, error)
	// Close releases the run's instances.
	Close()
}

// Sim is a simulation: what the engine needs of it.
type Sim[O any] struct {
	// Generate returns the n operations of seed, with the kinds skip names
	// (comma-separated) left out.
	Generate func(seed uint64, n int, skip string) []O
	// Hash is a hash of a generated sequence, recorded by corpus lines (gen=).
	Hash func(ops []O) string
	// Kind names the kind of o (Stats.Kinds; shrinking keeps a failure's kind).
	Kind func(o O) string
	// World opens a run on the fresh storage of t.
	World func(t *testing.T) World[O]
	// Corpus is the file of seeds that once failed ("" none).
	Corpus string
	// Budget is the default wall time for fresh seeds (zero: 15s).
	Budget time.Duration
	// Ops is the default operations per run, where PIPESTATE_SIM_OPS is not
	// set (zero: 60).
	Ops int
}

// Failure is a run the reference model refused.
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

// Run replays the seeds of s.Corpus, then runs fresh seeds for the budget, and
// fails t with the seed, the referee's complaint and the shrunk sequence of
// each corpus seed the model refuses and of the first fresh one.
// PIPESTATE_SIM_SEED=n runs that seed alone and logs its trace.
func Run[O any](t *testing.T, s Sim[O]) {
	t.Helper()
	if v := os.Getenv("PIPESTATE_SIM_SEED"); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("sim: PIPESTATE_SIM_SEED=%q: %v", v, err)
		}
		report(t, s, seedLine{seed: seed, ops: s.ops(), skip: os.Getenv("PIPESTATE_SIM_SKIP")}, "PIPESTATE_SIM_SEED", true)
		return
	}
	path := s.Corpus
	if os.Getenv("PIPESTATE_SIM_CORPUS") == "off" {
		path = ""
	}
	for _, c := range corpus(t, s, path) {
		if got := s.Hash(s.Generate(c.seed, c.ops, c.skip)); c.gen != "" && got != c.gen {
			t.Errorf("sim: corpus %s: seed %d no longer generates the sequence it recorded (gen=%s, now gen=%s): the generator or the harness's retentions changed, so it may no longer replay its failure; re-record it (see the package doc; the line now: %v)",
				s.Corpus, c.seed, c.gen, got, c.withGen(got))
		} else if c.gen == "" {
			t.Logf("sim: corpus %s: seed %d records no gen= hash: a generator change would silently stop it replaying its failure (its line now: %v)", s.Corpus, c.seed, c.withGen(got))
		}
		report(t, s, c, "corpus "+s.Corpus, false) // and go on: fresh seeds may find more
	}
	budget := s.Budget
	if budget == 0 {
		budget = 15 * time.Second
	}
	if v := os.Getenv("PIPESTATE_SIM_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("sim: PIPESTATE_SIM_DURATION=%q: %v", v, err)
		}
		budget = d
	}
	f, st := Search(t, s, uint64(time.Now().UnixNano()), budget)
	t.Logf("sim: %v", st)
	if f != nil {
		env := ""
		if skip := os.Getenv("PIPESTATE_SIM_SKIP"); skip != "" {
			env = "PIPESTATE_SIM_SKIP=" + skip + " "
		}
		c := seedLine{seed: f.Seed, ops: s.ops(), skip: os.Getenv("PIPESTATE_SIM_SKIP")}
		t.Errorf("sim: the reference model refused a run after %d runs and %d operations (replay: %sPIPESTATE_SIM_SEED=%d go test -run '^%s$'; corpus line: %v):\n%v",
			st.FirstHit, st.HitOps, env, f.Seed, t.Name(), c.withGen(s.Hash(s.Generate(c.seed, c.ops, c.skip))), f)
	}
}

// report runs seed alone, with the kinds skip names left out, and fails t
// when the model refuses it.
func report[O any](t *testing.T, s Sim[O], c seedLine, from string, trace bool) bool {
	t.Helper()
	seed, skip := c.seed, c.skip
	r := runOps(t, s, s.Generate(seed, c.ops, skip))
	if trace {
		t.Logf("sim: seed %d (%d operations):\n%s", seed, len(r.trace), strings.Join(r.trace, "\n"))
	}
	if r.err == nil {
		return false
	}
	f := shrink(t, s, seed, r)
	env := ""
	if skip != "" {
		env = "PIPESTATE_SIM_SKIP=" + skip + " "
	}
	if c.ops != s.ops() {
		env += fmt.Sprintf("PIPESTATE_SIM_OPS=%d ", c.ops)
	}
	t.Errorf("sim: seed %d from %s fails (replay: %sPIPESTATE_SIM_SEED=%d go test -run '^%s$'):\n%v", seed, from, env, seed, t.Name(), f)
	return true
}

// Search runs fresh seeds, starting at seed, for budget, and returns the first
// failure, shrunk, and what it ran.
func Search[O any](t *testing.T, s Sim[O], seed uint64, budget time.Duration) (*Failure, Stats) {
	t.Helper()
	st := Stats{Kinds: map[string]int{}}
	start := time.Now()
	n := s.ops()
	for time.Since(start) < budget {
		r := runOps(t, s, s.Generate(seed, n, os.Getenv("PIPESTATE_SIM_SKIP")))
		st.Runs++
		st.Ops += len(r.trace)
		for k, c := range r.kinds {
			st.Kinds[k] += c
		}
		if r.err != nil {
			st.Elapsed = time.Since(start)
			st.FirstHit, st.HitOps = st.Runs, st.Ops
			t.Logf("sim: seed %d failed after %d runs, %d operations, %v: %v", seed, st.Runs, st.Ops, st.Elapsed.Round(time.Millisecond), r.err)
			return shrink(t, s, seed, r), st
		}
		seed++
	}
	st.Elapsed = time.Since(start)
	return nil, st
}

// ops is the operations per run: PIPESTATE_SIM_OPS, else s.Ops, else 60.
func (s Sim[O]) ops() int {
	if v := os.Getenv("PIPESTATE_SIM_OPS"); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			return n
		}
	}
	if s.Ops > 0 {
		return s.Ops
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

// corpus reads the seeds of path: "seed", optionally followed by "ops=60",
// "skip=watch,corrupt" and "gen=<hash>" (a line without ops= runs
// PIPESTATE_SIM_OPS operations).
func corpus[O any](t *testing.T, s Sim[O], path string) []seedLine {
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
		sl := seedLine{seed: seed, ops: s.ops()}
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
type result[O any] struct {
	ops   []O
	trace []string
	kinds map[string]int
	err   error  // the referee's complaint, nil when the run passed
	at    int    // the index of the operation it was about
	class string // what shrinking must keep failing: the kind of that operation
}

// runOps runs ops on fresh storage: a subtest of its own, since harnesses
// key storage by t.Name().
func runOps[O any](t *testing.T, s Sim[O], ops []O) result[O] {
	t.Helper()
	r := result[O]{ops: ops, kinds: map[string]int{}}
	done := false
	t.Run("run", func(t *testing.T) {
		w := s.World(t)
		defer w.Close()
		for i, o := range ops {
			desc, err := w.Do(o)
			r.trace = append(r.trace, fmt.Sprintf("%3d %s", i, desc))
			r.kinds[s.Kind(o)]++
			if err != nil {
				r.err, r.at, r.class = err, i, s.Kind(o)
				break
			}
		}
		done = true
	})
	if !done && r.err == nil {
		r.at = len(r.trace)
		r.err = fmt.Errorf("the run stopped at operation %d (%s): the harness failed or skipped the subtest (see its log)", r.at, s.Kind(ops[r.at]))
		r.trace = append(r.trace, fmt.Sprintf("%3d %s: the harness stopped the run", r.at, s.Kind(ops[r.at])))
		r.class = "harness " + s.Kind(ops[r.at])
	}
	return r
}

// shrink removes operations from r's sequence while the run still fails at an
// operation of the same kind, for at most PIPESTATE_SIM_SHRINK (default 60s).
func shrink[O any](t *testing.T, s Sim[O], seed uint64, r result[O]) *Failure {
	t.Helper()
	bound := 60 * time.Second
	if v := os.Getenv("PIPESTATE_SIM_SHRINK"); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
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
			got := runOps(t, s, try)
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

// Skipped returns the kinds that list names (comma-separated, e.g.
// "watch,corrupt", as PIPESTATE_SIM_SKIP and a corpus line's skip= say), each
// kind K named names[K]; never keep (the clock's kind, which every run needs).
// A long run leaves kinds out to look for what else fails once one failure is
// known; a seed's sequence depends on the kinds left out.
func Skipped[K ~int](list string, names []string, keep K) map[K]bool {
	off := map[K]bool{}
	for _, name := range strings.Split(list, ",") {
		for k, n := range names {
			if n == strings.TrimSpace(name) && K(k) != keep {
				off[K(k)] = true
			}
		}
	}
	return off
}
