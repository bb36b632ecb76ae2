// Package statesim is a seeded, time-travelling simulation of a state store
// backend against a reference model, the state stores' counterpart of
// providertest/sim (and on its engine: seeds, shrinking, the corpus format,
// the budget and the PIPESTATE_SIM_* variables are the same; see that
// package's doc). A generator drives several instances of an int64 store
// (monoid.Sum[int64], or monoid.Max[int64]: Harness.Monoid) over one storage through a random sequence of
// operations: MergeUpdate, MergeUpdateOnce (claims of a few event IDs) and
// MergeMany batches (several updates of one key, each with its own ttl),
// fenced through state.Fenced by stale and newer fences of two lease keys or
// unfenced, on the same keys; Get, GetMany (with duplicates) and reads
// through a read cache (package state/cache); a Deduper's MarkSeen and
// Release (Harness.OpenDeduper); writes whose reply is lost, so the client
// retries them (Harness.Faults: MergeUpdateOnce, MarkSeen, Release and a max
// store's MergeUpdate, which package state says a retry recognises), judged
// as without the fault; interleaved with clock jumps
// (fractions of the ttls and dedup TTLs, to the exact expiry instant of a
// value or claim and a second before it), a sweeper that deletes what the
// server would have deleted by then (Harness.Sweep, 0 to 48 hours after the
// moment it expired), values corrupted raw (Harness.Corrupt), and instances
// restarted, possibly with other options (Harness.Variants: another
// DedupTTL). Every operation is judged by a referee; each seed enables a
// random subset of the kinds, with random weights (swarm testing).
//
// A backend author turns it on from the statetest.Harness they already write:
//
//	func TestSim(t *testing.T) {
//		statesim.Run(t, statesim.Harness{Harness: myInt64SumHarness(), Corpus: "testdata/sim.seeds"})
//	}
//
// The harness needs Open (an int64 sum or max store), Sleep on the clock the store
// judges expiry by, FakeTime and DedupTTL; without FakeTime the simulation
// skips. Durations are whole seconds, so a backend's expiry resolution (1 s
// on DynamoDB) is exact.
//
// # The referee
//
// The model (model.go) is sequential, one int64 per key combined with
// Harness.Monoid, and its rules come from package state's
// doc ("Rules every backend follows", "Corrupt values") and package fence's
// ("The rule", "Lifetime"), not from any backend. Exact where the contract is
// exact: a value and whether it is found (expired when now >= its expiry,
// every merge setting the expiry to now+ttl or clearing it), a merge onto an
// expired value starting from the monoid's Identity, a claim held until DedupTTL after the
// delivery that claimed it (a duplicate is answered not applied, no error,
// whatever its fence), a fenced merge refused with ErrFenced while the live
// value remembers a newer fence of its lease key (every merge that extends
// the value extends what it remembers), a refused merge writing and claiming
// nothing, MergeMany's outcome per update (nil, or a *state.MergeError with
// one entry each), Get and GetMany failing with ErrCorrupt on a corrupt
// value and merges into it failing. An allowed set where it is not: a fenced
// merge below a fence that merged anywhere (any key, also one since expired)
// may be refused, since "a backend may remember longer" and for larger groups
// of records; a cached read may return any state the key had within the
// cache's staleness (Harness.Staleness, default a minute), and every read
// may return a state within Harness.ReadStaleness (a store behind a shared
// cache, package state/tiered: any state the source held within its
// WithTTL). A Deduper's MarkSeen is first exactly when the ID has no live
// claim; a claim lives for DedupTTL from the MarkSeen that made it (a
// duplicate does not extend it) and Release ends it.
//
// Decisions where the docs were silent, written here: a merge into a corrupt
// value fails with some error and changes nothing (package state's doc says
// so for the merges it names; the model requires it of every merge, fenced
// or not, and of MergeUpdateOnce unless its claim is live, when a duplicate
// answer is allowed too); what a corrupt value's key remembered is forgotten
// by the model (a raw write may replace the item that held it). The stores
// have no read-only handle, so restarts change only the DedupTTL.
//
// # What it does not cover
//
// Concurrency (one operation at a time; statetest's races and RunFencingRace
// cover it), a lost reply of a sum's MergeUpdate or of MergeMany (at least
// once: the lost-reply tables), calls that time out after they were applied,
// monoids other than int64 sums and maxima (float sums, BytesStore and
// sketches), Sharded, the Coalescer and windows, overflow and bad input, and
// backends on real time (redis-server, Redis Cluster).
package statesim
