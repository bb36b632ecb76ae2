// Package memory is the in-memory reference backend of provider.Provider: a
// mutex-guarded set of maps that behaves exactly like the networked backends, for
// tests, examples and single-process use.
//
// New creates the data, like a server, and returns its first client; NewHandle
// opens another client on the same data, with its own options and lock owner
// identity (state/memstate's stores and dedupers share data the same way):
//
//	p1, _ := memprovider.New(memprovider.WithClock(clock)) // clock: func() time.Time
//	p2, _ := p1.NewHandle()                      // another instance, another owner
//
// Guarantees and decisions:
//   - Every call is atomic: one lock over the store.
//   - Every method opens in the contract's opening order (package provider),
//     before it takes the store lock: after Stop an error wrapping ErrClosed;
//     then, with a done context, ctx.Err(); then, for a write on a WithReadOnly
//     handle, an error wrapping ErrReadOnly; then the first failed check of its
//     arguments (ErrInvalidArgument).
//   - Values are deep-copied through JSON on the way in and out, so they come back as
//     a networked backend returns them (numbers in map[string]any as float64) and are
//     never aliased. A value JSON cannot encode is ErrInvalidArgument.
//   - There is no size limit (ErrTooLarge is never returned). Runs, run logs,
//     reruns, replays, late arrivals, cascade markers, events and marker-log
//     writes are kept for the handle's WithRetention (default
//     provider.DefaultRetention(): 30 days, 24 hours for the marker log) after
//     their last write, by the handle's clock: from the instant now >= the
//     expiry every read leaves them out, and writes delete them, at most 100 per
//     write, in the order they were written (a record rewritten since is kept),
//     so a steady workload keeps the store flat. A watch from a cursor older than
//     the marker log, or a read from an event cursor whose next event was dropped,
//     fails with ErrCursorExpired. Pipeline configs and fence counters are kept
//     forever, traits, readiness and locks by their own ttl.
//   - TTLs are judged by the provider's clock at read time; expired entries are
//     invisible, and removed by writes only (a write of the same entity replaces
//     one; WriteCascadeMarker drops the marker log's expired writes): reads never
//     write. WithReadOnly opens a handle whose every write fails with
//     ErrReadOnly, as the networked backends' option of the same name does.
//   - Event cursors are per-pipeline sequence numbers in decimal, without gaps.
//     The cursor n is expired exactly when event n+1 was appended and has been
//     dropped by retention: ReadEventsSince and FollowEvents from it fail with
//     ErrCursorExpired. The cursor of the newest event is never expired, nor is
//     "", which reads from the oldest event retained. Retention is per handle,
//     so events can expire out of order; a read stops before the first dropped
//     one, and the read after it fails.
//   - It keeps values, not bytes, so nothing it stores fails to decode by
//     itself; it follows the rule for corrupt records all the same (see package
//     provider), for records whose stored form a test replaced
//     (memorytest.Backend.Corrupt, providertest's Harness.Corrupt): a Get* returns
//     ErrCorrupt, listings and followers skip and report them, through
//     WithMeterProvider and WithLogger (its only signal).
//   - Fenced writes (package fence) are checked and remembered under the store
//     lock, per record: a run, run log, rerun, replay or marker remembers its
//     fences until retention drops it; a pipeline's event log and a
//     late-arrival list remember theirs for as long as the data lives.
//
// Round trips: none; every method takes the store lock once.
package memprovider

// Layout, the same in every provider backend: provider.go (type, New, options,
// lifecycle), pipelines.go (+ traits, readiness), runs.go (+ CAS), events.go,
// records.go (run logs, reruns, replays, late arrivals, cascade markers), locks.go
// (+ leases). Support: data.go (the shared maps, generic get, list and copies).
