// Package memory is the in-memory reference backend of provider.Provider: a
// mutex-guarded set of maps that behaves exactly like the networked backends, for
// tests, examples and single-process use.
//
// New creates the data, like a server, and returns its first client; NewHandle
// opens another client on the same data, with its own options and lock owner
// identity (state/memory's stores and dedupers share data the same way):
//
//	p1, _ := memory.New(memory.WithClock(clock)) // clock: func() time.Time
//	p2, _ := p1.NewHandle()                      // another instance, another owner
//
// Guarantees and decisions:
//   - Every call is atomic: one lock over the store.
//   - Values are deep-copied through JSON on the way in and out, so they come back as
//     a networked backend returns them (numbers in map[string]any as float64) and are
//     never aliased. A value JSON cannot encode is ErrInvalidArgument.
//   - There is no size limit (ErrTooLarge is never returned). Events are kept
//     forever unless WithEventRetention says otherwise, and the marker log that
//     WatchCascadeMarkers reads unless WithMarkerRetention does (a watch from a
//     cursor older than the log fails with ErrCursorExpired); nothing else is
//     deleted, so the store grows until it is dropped.
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
//
// Round trips: none; every method takes the store lock once.
package memory

// Layout, the same in every provider backend: provider.go (type, New, options,
// lifecycle), pipelines.go (+ traits, readiness), runs.go (+ CAS), events.go,
// records.go (run logs, reruns, replays, late arrivals, cascade markers), locks.go
// (+ leases). Support: data.go (the shared maps, generic get, list and copies).
