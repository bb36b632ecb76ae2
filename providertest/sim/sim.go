package sim

import (
	"fmt"
	"hash/fnv"
	"testing"
	"time"

	"github.com/pipestate/pipestate/internal/simengine"
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

func (f *Failure) String() string { return (*simengine.Failure)(f).String() }

// Stats is what a search did.
type Stats struct {
	Runs     int            // sequences run (shrinking not counted)
	Ops      int            // operations run
	Elapsed  time.Duration  // wall time, shrinking not counted
	Kinds    map[string]int // operations and faults run, by kind
	FirstHit int            // runs until the first failure, 0 when none
	HitOps   int            // operations until the first failure, 0 when none
}

func (s Stats) String() string { return simengine.Stats(s).String() }

// Run replays the seeds of h.Corpus, then runs fresh seeds for the budget (see
// the package doc), and fails t with the seed, the referee's complaint and the
// shrunk sequence of each corpus seed the model refuses and of the first
// fresh one.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if !usable(t, h) {
		return
	}
	simengine.Run(t, engine(h))
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

// Search runs fresh seeds, starting at seed, for budget, and returns the first
// failure, shrunk, and what it ran.
func Search(t *testing.T, h Harness, seed uint64, budget time.Duration) (*Failure, Stats) {
	t.Helper()
	if !usable(t, h) {
		return nil, Stats{Kinds: map[string]int{}}
	}
	f, st := simengine.Search(t, engine(h), seed, budget)
	return (*Failure)(f), Stats(st)
}

// engine is the simulation of h for the engine (internal/simengine: seeds,
// corpus, budget, shrinking).
func engine(h Harness) simengine.Sim[op] {
	return simengine.Sim[op]{
		Generate: func(seed uint64, n int, skip string) []op { return generate(seed, n, h, skip) },
		Hash:     genHash,
		Kind:     func(o op) string { return o.kind.String() },
		World:    func(t *testing.T) simengine.World[op] { return worldRun{newWorld(t, h)} },
		Corpus:   h.Corpus,
		Budget:   h.Budget,
	}
}

// worldRun is a world as the engine runs it.
type worldRun struct{ w *world }

func (r worldRun) Do(o op) (string, error) { return r.w.do(o) }
func (r worldRun) Close()                  { r.w.close() }

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
