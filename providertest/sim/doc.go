// Package sim is a seeded, time-travelling simulation of a provider backend
// against a reference model: a generator drives several provider instances of
// one storage through a random sequence of operations (runs with put, CAS and
// create, fenced and unfenced on the same records; events appended and read or
// followed from saved cursors; cascade markers written and watched from saved
// cursors; leases acquired, renewed, released and taken over, and the fenced
// views of stale and current leases; pages of the active-runs index, where the
// backend has provider.ActiveRunLister, read fresh or resumed from a saved
// cursor while runs change), interleaved with clock jumps (past
// retentions and lease TTLs, to exact expiry instants and just before them), a
// sweeper that deletes what the server would have deleted by then, corrupt
// records appended to the logs, and instances stopped and reopened, possibly
// with other options. After every operation a referee compares what the
// backend returned with what the model allows. Each seed enables a random
// subset of the operation kinds, with random weights (swarm testing), so the
// few kinds a breach needs meet often.
//
// A backend author turns it on from the providertest.Harness they already
// write:
//
//	func TestSim(t *testing.T) {
//		sim.Run(t, sim.Harness{Harness: myHarness(), Corpus: "testdata/sim/mybackend.seeds"})
//	}
//
// The harness needs Open, Now and Sleep on a clock the backend judges expiry by
// (a fake clock), and Retention as the providers keep records; Corrupt, Sweep,
// Variants and Corruptions add ingredients.
//
// # The referee
//
// The model (model.go) is sequential and small, and its rules come from the
// semantics table of package provider and the fence package doc, not from any
// backend: exact where the contract is exact (a run's version and status, a
// lease's fence, token and refusals, the events a read from a cursor returns,
// ErrCursorExpired exactly when an entry after the cursor was dropped), an
// allowed set where it is not (a fenced write after the record it guarded
// expired may be refused or accepted, since "a backend may remember longer";
// a watch may deliver a write twice; a dropped corrupt record may or may not
// end a read). Where the model learns a choice the backend made, it follows it.
//
// # Engine: why not rapid
//
// pgregory.net/rapid (state machines with shrinking) was the first candidate;
// this package uses its own small engine instead, for three reasons. Each run
// must get fresh storage, and every harness keys storage by t.Name(), so each
// run is a subtest of its own; rapid's *rapid.T draws and fails by panicking,
// which must not happen inside a subtest's goroutine. The CI budget is wall
// time (backends differ a hundredfold in speed: DynamoDB Local takes up to
// 300 ms a write), and rapid counts checks. And a failure should be named by
// one number: here a seed (printed for every failure, and fresh each run
// unless PIPESTATE_SIM_SEED is set) determines the whole operation sequence,
// because operations name what they act on by index ("the 3rd saved cursor")
// and are resolved when they run. Shrinking removes operations (chunks, then
// single ones) while the run still fails the same check, within a time bound;
// the shrunk sequence is printed as the trace of its run, and the seed
// replays the whole run exactly.
//
// # Running it
//
// Run replays the seeds of Harness.Corpus (a file of seeds, one a line, that
// once failed), then runs fresh seeds for the budget: PIPESTATE_SIM_DURATION
// (a Go duration; default Harness.Budget, else 15s). PIPESTATE_SIM_SEED=n
// runs that seed alone and logs its trace; PIPESTATE_SIM_OPS sets the
// operations per run (default 60); PIPESTATE_SIM_SKIP=watch,corrupt leaves
// operation kinds out (to look for another failure once one is known);
// PIPESTATE_SIM_SHRINK bounds shrinking (default 60s); PIPESTATE_SIM_CORPUS=off
// skips the corpus. At the end it logs the
// runs, operations per second and how often each operation and fault kind ran.
//
// A corpus line is "n ops=60 skip=watch,corrupt gen=<hash>", as a failure
// prints it: the seed, its operation count, the kinds left out (skip= only
// when some were) and a hash of the sequence they generated. A seed replays its
// failure only while the generator draws the same sequence from it, so Run
// fails a line whose gen= no longer matches (a change to the generator's
// weights, kinds or draws, or to the harness's retentions): re-record it by
// reverting the fix the line guards and running fresh seeds until one fails
// the same way, then replace the line with the one that failure prints (or, if
// the old seed still fails, with the line its log suggests). A line without
// gen= replays unchecked and its log prints the line to record. An operation
// kind added later (the active-runs reads: "active") draws nothing when it is
// left out, so the lines recorded before it carry skip=<kind> and generate
// the sequence they recorded, gen= unchanged.
//
// The active-runs referee (active.go) allows what the contract row "active
// runs" of package provider allows: a page holds only runs that are live,
// unfinished and matching the filter now, each as its truth is now, in
// ascending RunID after its cursor, none twice in one paging; every run that
// matched surely after every operation since the paging began is on the page
// unless the next cursor stops before it; a run within a second of the
// filter's NotUpdatedSince may match either way.
//
// # What it does not cover
//
// Concurrency (one operation at a time; lincheck checks linearizability),
// lost replies and timeouts (harness-specific transports; the lost-reply
// tables cover them), pipelines, traits, readiness, run logs, reruns, replays
// and late arrivals, list orders, and backends on real time (a harness
// without Now and Sleep is skipped). The state stores have a simulation of
// their own on the same engine (internal/simengine): package
// state/statetest/statesim.
package sim
