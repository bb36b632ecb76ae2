// Package sim is a seeded, time-travelling simulation of a provider backend
// against a reference model: a generator drives several provider instances of
// one storage through a random sequence of operations (runs with put, CAS and
// create, fenced and unfenced on the same records; events appended and read or
// followed from saved cursors; cascade markers written and watched from saved
// cursors; leases acquired, renewed, released and taken over, and the fenced
// views of stale and current leases; pages of the active-runs index, where the
// backend has provider.ActiveRunLister, read fresh or resumed from a saved
// cursor while runs change, their entries dropped (Harness.DropActiveEntry)
// and repaired (provider.ActiveRunReindexer); reads through an instance
// opened read-only (Harness.OpenReadOnly), which repairs nothing it reads, and
// writes through it refused with ErrReadOnly; run logs, reruns, replays and late arrivals, put
// fenced or not and read back with their retentions; the CLI's writes: "run
// fail", an unfenced CAS to FAILED beside fenced writers, and "lock release"
// by token from another instance, each with its audit event; writes whose
// reply is lost, or that time out after the server applied them, where the
// harness has Faults), interleaved with clock jumps (past
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
// Variants, Corruptions and Faults add ingredients.
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
// Faults: a write whose reply was lost and which the client library retried
// (kind "lost": Faults.LoseReply, then any of the writes above) is judged by
// the rules without the fault, since the contract row "lost replies" says the
// retry reports the first attempt's outcome (a CAS that swapped reports true,
// once; a create that created, true; an append is not doubled; an acquire
// returns its lease). Single-threaded, the simulation puts nothing between the
// lost reply and the retry; the lost-reply tables' takeover rows do. A run
// write that timed out after the server applied its request (kind "timeout":
// a client that does not retry) may or may not have been applied: the
// referee reads the run and allows exactly the state before or the state the
// write would have left (a put then writes another version, so that the two
// differ), and follows it.
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
// kind added later (the active-runs reads: "active"; "lost", "timeout",
// "runlog", "rerun", "replay", "late", "cli", "reindex", "readonly") draws nothing when it is left
// out, or when the harness cannot make it ("lost" and "timeout" without
// Faults), so the lines recorded before it carry skip=<kind> and generate the
// sequence they recorded, gen= unchanged.
//
// The active-runs referee (active.go) allows what the contract row "active
// runs" of package provider allows: a page holds only runs that are live,
// unfinished and matching the filter now, each as its truth is now, in
// ascending RunID after its cursor, none twice in one paging; every run that
// matched surely after every operation since the paging began is on the page
// unless the next cursor stops before it; a run within a second of the
// filter's NotUpdatedSince may match either way. A run whose entry was
// dropped need not be on a page until ReindexRun ran for it (a write since
// may restore the entry or not: a backend may trust its record that the entry
// exists); ReindexRun must report a change where it restored the entry of a
// live unfinished run that nothing wrote since the drop, and none where no
// entry was dropped.
//
// # What it does not cover
//
// Concurrency (one operation at a time; lincheck checks linearizability);
// another client's write between a lost reply and its retry (the lost-reply
// tables' takeover rows); timeouts of writes other than the runs';
// pipelines, traits, readiness, locks (AcquireLock), list orders and the
// lists of runs, reruns and replays (ListRuns, ListReruns, ListReplays), the
// state stores (they have a simulation of their own on the same engine,
// internal/simengine: package state/statetest/statesim); and a backend on real time alone (a harness without Now and
// Sleep is skipped). The real servers (the Redis provider's TestSimServer:
// redis-server and Redis Cluster) run with the providers' fake clock and a
// Sleep that shortens every key's TTL by the jump, so they cover the
// server's own deletion (as active expiry, at once) and, on the Cluster, the
// cross-slot steps (the active-runs index, the marker log, the run lists on
// other nodes than the truths); they do not cover lazy expiry or the
// server's clock running apart from the providers'.
package sim
