package statesim

import (
	"fmt"
	"hash/fnv"
	"testing"
	"time"

	"github.com/pipestate/pipestate/internal/simengine"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/statetest"
)

// Harness is a statetest.Harness of an int64 store and the ingredients only
// the simulation uses. Open and Sleep are required, and FakeTime must be true
// (Sleep moves the clock the stores judge expiry by); DedupTTL is the claim
// TTL of the stores Open returns; Monoid is the stores' (monoid.Sum[int64]
// when nil; monoid.Max[int64] for a max store). The other fields of
// statetest.Harness are not used.
type Harness struct {
	statetest.Harness[int64]

	// Sweep deletes, in the storage of t, what the backend's server would have
	// deleted by now (DynamoDB's TTL sweeper: expired items, up to 48 hours
	// late; a Redis server whose clock moves with Sleep does it itself). The
	// simulation moves the clock by 0 to 48 hours and calls it, at random
	// moments. Nil: the server deletes nothing the store would not.
	Sweep func(t *testing.T)

	// Corrupt replaces the value of k, which exists and has no expiry, in the
	// storage of t with one the stores cannot decode (a Redis value "12abc", a
	// DynamoDB v attribute of another type), written raw, with no expiry. Nil:
	// no corruption (the memory backend stores values, not bytes).
	Corrupt func(t *testing.T, k state.Key)

	// Variants are stores opened with other options on the same storage: the
	// simulation restarts instances as one of them.
	Variants []Variant

	// OpenDeduper opens a state.Deduper on the storage of t whose claims live
	// for DedupTTL; each instance opens its own. Nil: no Deduper operations.
	OpenDeduper func(t *testing.T) state.Deduper

	// Faults are the network faults of a harness whose client reaches its
	// server over a network: the simulation loses the reply of a write the
	// contract says a retry recognises (MergeUpdateOnce, MarkSeen, a max
	// store's MergeUpdate: "Lost replies" in package state), and judges it as
	// without the fault. Nil: no lost replies.
	Faults *Faults

	// ReadStaleness is how old a state Get and GetMany of the stores Open and
	// the variants return may be: zero, they read the latest; a store behind a
	// cache shared by every instance (package state/tiered) returns a state
	// the key had within its WithTTL.
	ReadStaleness time.Duration

	// Staleness is the staleness bound of the read caches (package
	// state/cache) the simulation puts in front of instances; zero means a
	// minute.
	Staleness time.Duration

	// Corpus is a file of seeds that once failed (the format of
	// providertest/sim's), replayed by every Run before fresh seeds.
	Corpus string

	// Budget is how long Run tries fresh seeds when PIPESTATE_SIM_DURATION is
	// not set; zero means 15s.
	Budget time.Duration

	// Ops is the operations per run when PIPESTATE_SIM_OPS is not set; zero
	// means 60. A slow backend (DynamoDB Local) runs shorter sequences.
	Ops int
}

// Faults arm and disarm a lost reply on the storage of t (internal/testkit/faults
// has injectors for go-redis and the AWS SDK), as providertest/sim's.
type Faults struct {
	// LoseReply arms a one-shot fault: the next request that writes (the
	// harness says which requests do) is applied by the server and its reply
	// lost, so the client library sends it again.
	LoseReply func(t *testing.T)
	// Disarm cancels a fault LoseReply armed that has not fired, and reports
	// whether one fired since it was armed.
	Disarm func(t *testing.T) bool
}

// Variant opens a store with other options on the storage of t.
type Variant struct {
	Name string
	Open func(t *testing.T) state.Store[int64]
	// DedupTTL is the claim TTL of the variant's stores (their WithDedupTTL);
	// zero means state.DefaultDedupTTL.
	DedupTTL time.Duration
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

func usable(t *testing.T, h Harness) bool {
	t.Helper()
	if h.Open == nil {
		t.Fatal("statesim: Harness.Open is nil")
	}
	if h.Sleep == nil || !h.FakeTime {
		t.Skip("statesim: the simulation needs Harness.Sleep on a fake clock (FakeTime)")
		return false
	}
	return true
}

func engine(h Harness) simengine.Sim[op] {
	return simengine.Sim[op]{
		Generate: func(seed uint64, n int, skip string) []op { return generate(seed, n, h, skip) },
		Hash:     genHash,
		Kind:     func(o op) string { return o.kind.String() },
		World:    func(t *testing.T) simengine.World[op] { return newWorld(t, h) },
		Corpus:   h.Corpus,
		Budget:   h.Budget,
		Ops:      h.Ops,
	}
}

// genHash is a hash of a generated sequence, which corpus lines record.
func genHash(seq []op) string {
	f := fnv.New64a()
	for _, o := range seq {
		fmt.Fprintf(f, "%d %d %d %d %d %d %d %d %d\n", o.kind, o.slot, o.key, o.lease, o.delta, o.ttl, o.n, o.m, o.d)
	}
	return fmt.Sprintf("%016x", f.Sum64())
}
