// Package memory is the in-memory state backend: a Store, OnceStore and BatchStore
// generic over any monoid (sums, maxima, sketches, your own), and a Deduper. It is the reference
// every other backend is checked against (state/statetest), the embedded default for
// tests and single-process use, and it takes a fake clock (WithClock).
//
// Guarantees: every method runs under one lock, so MergeUpdate and MergeUpdateOnce
// are atomic and linearizable, and so is a whole MergeMany batch; the rules of package state apply unchanged (TTL,
// expired-is-invisible, merges onto expired values start from Identity, bad input is
// state.ErrInvalidArgument with nothing written, state.ErrClosed after Close, ctx
// errors). Nothing survives the process.
//
// Decisions:
//   - Missing keys read as the monoid's Identity with found == false.
//   - []byte values are copied in and out, so callers may reuse their buffers; other
//     reference values (maps) are shared and must not be modified by the caller.
//   - Expired values and claims are deleted lazily (on a sweep amortised over writes).
//   - New and NewDeduper create the data, like a server, and return its first
//     handle; NewHandle opens another handle on the same data, closed independently,
//     as a second process opening the same Redis keys would be (provider/memprovider
//     shares data the same way). Options belong to the data: one clock and one claim
//     TTL for all its handles.
//   - Deduper claims and MergeUpdateOnce event claims live for WithDedupTTL
//     (default state.DefaultDedupTTL, 0 = forever). Options are checked by the
//     compiler: WithDedupTTL and WithClock are Options, taken by every
//     constructor.
//
// Round trips: none (every method is one lock acquisition).
//
// Example:
//
//	visitors, _ := hll.New(hll.DefaultPrecision)
//	store, _ := memstate.New[[]byte](visitors)
//	applied, err := store.MergeUpdateOnce(ctx, eventID, state.Key{Entity: "site"}, visitors.Delta(user), 0)
//	dedup, _ := memstate.NewDeduper(memstate.WithDedupTTL(time.Hour))
//	first, err := dedup.MarkSeen(ctx, eventID)
//	worker2 := dedup.NewHandle() // the same claims
package memstate
