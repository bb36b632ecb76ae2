// Package state defines monoid-aware state stores: values that many workers merge
// deltas into at once (counters, maxima, sketches), plus the helpers built on any
// Store — tumbling windows with range reads, a write Coalescer and hot-key Sharding —
// and the argument checks and compare-and-swap loop every backend shares.
//
// Backends live in state/memory (generic over any monoid), state/redis and
// state/dynamodb; state/statetest is the conformance suite every backend passes.
//
// # Rules every backend follows
//
//   - Keys: Key.Entity is 1..MaxEntityLen bytes of valid UTF-8 without control
//     characters; anything else (':', '#', '{', '/', spaces...) is allowed, so a
//     backend must encode entities injectively. Key.Bucket is any int64; 0 means "not
//     windowed". Event IDs follow the same rule (MaxEventIDLen). Backends call
//     CheckKey/CheckKeys/CheckEventID/CheckTTL/CheckDelta (or CheckMerge) before any I/O.
//   - Bad input (empty or over-long entity, negative TTL, a delta a monoid.Fallible
//     cannot combine) returns an error wrapping ErrInvalidArgument and writes nothing.
//   - TTL: ttl == 0 means no expiry, and a merge with ttl 0 clears an earlier expiry;
//     otherwise every MergeUpdate sets the expiry to now+ttl. An expired entry is
//     invisible to Get/GetMany, and a merge onto it starts from the monoid's Identity
//     (also where the backend lets expired items linger, as DynamoDB does).
//   - GetMany returns one slot per requested key in order; duplicates are allowed;
//     missing or expired keys have found == false and the zero value... (the monoid's
//     Identity in the memory backend; callers must look at found).
//   - MergeUpdate is atomic per key: N concurrent merges from any number of processes
//     are all applied (sums and max natively; byte values by compare-and-swap through
//     RetryCAS, which gives up with ErrMaxRetriesExceeded after DefaultMaxRetries lost
//     races unless the backend's MaxRetries option says otherwise).
//   - A value a monoid.Fallible rejects is never stored: errors wrap
//     monoid.ErrIncompatible (and ErrInvalidArgument when the caller's delta is bad).
//   - OnceStore.MergeUpdateOnce claims the event ID and merges in one atomic step; the
//     claim lives for the backend's dedup TTL (option WithDedupTTL, default
//     DefaultDedupTTL), independent of the value's ttl.
//   - Deduper: MarkSeen's claim lives for the deduper's TTL, a constructor option
//     WithTTL(d) on every backend (default DefaultDedupTTL; 0 = never expires; negative
//     is an error). Release deletes the claim, so the next MarkSeen wins again.
//   - After Close every method returns an error wrapping ErrClosed; a cancelled ctx
//     returns ctx.Err() (context.Canceled) and writes nothing that was not already sent.
//
// Note for backend authors: keep the constructor shapes of state/memory —
// New...(client, opts...), NewDeduper(client, WithTTL(d)), WithDedupTTL for
// OnceStore claims, WithMaxRetries(n) (n >= 0, default DefaultMaxRetries) for
// BytesStore — so users can switch backends by changing one line.
package state

import "time"

// DefaultDedupTTL is how long a Deduper claim or an OnceStore event claim lives unless
// the backend's WithTTL / WithDedupTTL option says otherwise: long enough to cover any
// redelivery window of common queues, short enough that claims do not pile up forever.
const DefaultDedupTTL = 24 * time.Hour
