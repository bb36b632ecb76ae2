// Package state defines monoid-aware state stores: values that many workers merge
// deltas into at once (counters, maxima, sketches), plus what is built on any Store —
// Tumbling windows with ReadRange, a write Coalescer and hot-key Sharding — and the
// argument checks and compare-and-swap loop every backend shares.
//
// Backends live in state/memstate (generic over any monoid; the reference),
// state/redisstate and state/ddbstate; state/statetest is the conformance suite every
// backend, built in or third-party, passes.
//
// # Rules every backend follows
//
//   - Keys: Key.Entity is 1..MaxEntityLen bytes of valid UTF-8 without control
//     characters; anything else (':', '#', '{', '/', spaces...) is allowed, so a
//     backend must encode entities injectively. Key.Bucket is any int64; 0 means "not
//     windowed". Event IDs follow the same rule (MaxEventIDLen). Backends call
//     CheckKey/CheckKeys/CheckEventID/CheckTTL/CheckDelta (or CheckMerge, or
//     CheckWrite for both kinds of merge) before any I/O.
//   - Bad input (empty or over-long entity, negative TTL, a delta a monoid.Fallible
//     cannot combine) returns an error wrapping ErrInvalidArgument and writes nothing.
//   - TTL: ttl == 0 means no expiry, and a merge with ttl 0 clears an earlier expiry;
//     otherwise every MergeUpdate sets the expiry to now+ttl. ttl (and every claim
//     TTL option) is at most MaxTTL; more is ErrInvalidArgument. An entry is expired
//     when now >= its expiry (at the backend's resolution: 1 ms on Redis, 1 s on
//     DynamoDB, rounded up). An expired entry is
//     invisible to Get/GetMany, and a merge onto it starts from the monoid's Identity
//     (also where the backend lets expired items linger, as DynamoDB does).
//   - Get/GetMany: a missing or expired key has found == false; its value slot holds
//     no data (the memory backend puts the monoid's Identity there; callers must look
//     at found). GetMany returns one slot per requested key in order and allows
//     duplicates; an empty request returns empty slices.
//   - MergeUpdate is atomic per key: concurrent merges from any number of processes
//     are all applied (sums and max natively; byte values by compare-and-swap through
//     RetryCAS/RetryCASPolicy, which give up with ErrContention — nothing
//     written — after DefaultMaxRetries lost races unless the backend's MaxRetries
//     option says otherwise).
//   - A value a monoid.Fallible rejects is never stored: errors wrap
//     monoid.ErrIncompatible, and ErrInvalidArgument.
//   - OnceStore.MergeUpdateOnce claims the event ID and merges in one atomic step; a
//     rejected or failed merge claims nothing. A claim is per (event ID, key), see
//     OnceClaimID: one event may update several keys of a store, each exactly once
//     (a store-wide claim could not be atomic on a Redis Cluster, where a key's claim
//     must live in the key's slot). The claim lives for the backend's dedup TTL (option WithDedupTTL, default
//     DefaultDedupTTL), independent of the value's ttl.
//   - BatchStore.MergeMany (optional; the Coalescer uses it) applies many updates
//     in few round trips (MergeBatchSize per round trip): each update as its
//     MergeUpdate would, atomic per key, in order per key; bad input anywhere
//     (CheckUpdates, before any I/O) writes nothing; the batch as a whole is not
//     atomic, and a failure after the first write is a *MergeError telling each
//     update's outcome. Lost replies as for MergeUpdate: retry only the failed
//     updates. Backends without a batch write run MergeEach (bounded concurrency).
//   - RevisionStore.GetRevisions (optional; the DynamoDB stores) reads values
//     with their revision, a number every write of the key raises, so a shared
//     cache (package tiered) can keep the newer of two values it is given.
//   - Deduper: MarkSeen's claim lives for the deduper's TTL, a constructor option
//     WithDedupTTL(d) on every backend (default DefaultDedupTTL; 0 = never expires; negative
//     is an error). Release deletes the claim, so the next MarkSeen wins again.
//   - Numbers: an int64 sum that would overflow, and a float64 delta or merged value
//     outside the float contract (see MinFloat64), are errors wrapping
//     ErrInvalidArgument and store nothing, on every backend. Float precision: each
//     merge's result is the float64 sum of the stored value and the delta (DynamoDB
//     adds exactly in decimal where it can, which may differ from the binary sum by
//     an ulp or two); tiny deltas never vanish.
//   - Lost replies: when a write's reply is lost and the client library retries it,
//     MergeUpdateOnce, MarkSeen, Bytes merges and Max merges are applied exactly once
//     and report the outcome of the first attempt (every write carries a random token
//     of its call, so a retry recognises what its first attempt stored; a BytesStore
//     value remembers its latest 16 writers, enough for the milliseconds between an
//     attempt and its retry). A plain Sum MergeUpdate is at-least-once: a retried
//     INCRBY or ADD may apply the delta twice. Use MergeUpdateOnce with the event's
//     ID where a doubled delta matters; it is the exactly-once path.
//   - Two stores never share data because of default options: the Redis stores take
//     their key prefix as a required argument, and every backend keeps each store
//     kind (the monoid's Kind for a BytesStore) apart within one prefix or table.
//   - Fencing: a merge through Fenced(s, lease) (package fence) is refused with
//     ErrFenced, nothing written, once a newer fence of the same lease key has
//     merged into the key; MergeUpdateOnce checks its event's claim first, and
//     MergeMany reports a refusal at its index. Every store honours it
//     (statetest.RunFencing); wrappers pass the context through (Sharded sends
//     fenced merges to shard 0, where the fences of a key live).
//   - After Close every method returns an error wrapping ErrClosed (Close itself is
//     idempotent); a cancelled ctx returns an error wrapping ctx.Err() and writes
//     nothing.
//   - Every method opens in the one order of the whole library, before any I/O:
//     closed (ErrClosed), then a done ctx (ctx.Err()), then its arguments
//     (ErrInvalidArgument, the first failed check); the provider contract puts a
//     read-only handle's refusal between the context and the arguments. statetest
//     pins it ("lifecycle/opening order").
//
// # Decisions where the design is silent
//
//   - Tumbling windows number buckets from 1 at the Unix epoch upwards (and -1
//     downwards before it), never 0; ReadRange reads at most MaxRangeBuckets buckets
//     with one GetMany and merges them in time order.
//   - Coalescer writes with MergeMany when its store is a BatchStore, else one
//     MergeUpdate per key; it keeps per-key arrival order (so any monoid works), retries failed
//     keys on the next flush, reports every error (Flush, Close or an error handler)
//     and refuses new keys with ErrBufferFull when a full buffer cannot be flushed.
//     It reports pending keys and its flushes to WithMeterProvider and WithLogger.
//   - Sharded refuses non-commutative monoids; its shards expire independently.
//
// # Corrupt values
//
// A stored value that does not decode as the store's type — a Redis key of an
// int64 store holding "12abc", or a key of another Redis type (WRONGTYPE), or a
// DynamoDB item whose v attribute has the wrong type, all written by hand — makes
// Get and GetMany fail with an error wrapping ErrCorrupt that names the key (a
// GetMany fails whole: each of its answers is positional). The stores have no
// listings, so nothing is skipped; the provider's rule for listings (skip and
// report, see package provider) does not arise. A merge into such a value fails
// with ErrCorrupt and changes nothing, on every backend; so does a merge into an
// item whose bookkeeping is corrupt (a DynamoDB ttl, rev or fence attribute of
// another type or out of int64, a Redis fence memory that holds no fence: a
// fenced merge over one fails closed, never accepting a stale fence). A DynamoDB
// item without v, which Get reports corrupt, takes a numeric store's merge as a
// missing value does (the delta is written); a BytesStore's merge, which reads
// the value before it writes, fails with ErrCorrupt. A MergeUpdateOnce of an event already
// applied to the key may instead answer as a duplicate (the claim is checked
// first). What the key remembered of fences (package fence) may be lost with a
// value written by hand. Overwrite or delete the key to repair it. BytesStore values are opaque bytes to the store: a sketch that its
// monoid cannot read fails in the monoid, not here. The memory backend stores
// values, never bytes, so it never meets a corrupt one.
//
// # Operating Redis
//
// Once-claims (MergeUpdateOnce and Deduper) and BytesStore versions are keys: a
// server that evicts them (any maxmemory-policy but noeviction) silently breaks
// exactly-once, so give the stores a server or database with noeviction. A claim key
// exists per (event, key) for the dedup TTL (WithDedupTTL; default
// DefaultDedupTTL), so claims grow with the event rate times the TTL: 1000 events/s
// updating two keys each hold about 170 million claims over a day; size the TTL to
// the redelivery window of the queue. Failover to an asynchronous replica can lose
// acknowledged writes, claims included.
//
// Note for backend authors: keep the constructor shapes of the built-in backends —
// New...(client, where, opts...) with where the required key prefix or table,
// NewDeduper(client, where, WithDedupTTL(d)), one WithDedupTTL for the
// claims of dedupers and OnceStores alike, WithMaxRetries(n) (n >= 0, default DefaultMaxRetries) for
// BytesStore — so users switch backends by changing one line. Give each
// constructor an option type of its own kind (StoreOption, DeduperOption, ...), so
// that an option a constructor does not use does not compile. Call CheckMonoid in
// constructors, the Check functions before any I/O, Combine for every merged value,
// and RetryCASPolicy for the BytesStore loop (CASPolicy.OnRetry tells of each
// retried race as it happens, for the backend's metrics and logs).
//
// # Example
//
//	views, _ := memstate.New[int64](monoid.Sum[int64]{})
//	hour := state.Tumbling(time.Hour)
//	k, _ := hour.Key("page:/home", time.Now())
//	_ = views.MergeUpdate(ctx, k, 1, 48*time.Hour)
//	today, _ := state.ReadRange[int64](ctx, views, monoid.Sum[int64]{}, "page:/home",
//		hour, time.Now().Add(-24*time.Hour), time.Now())
package state

import "time"

// DefaultDedupTTL is how long a Deduper claim or an OnceStore event claim lives unless
// the backend's WithDedupTTL option says otherwise: long enough to cover the
// redelivery window of common queues, short enough that claims do not pile up forever.
const DefaultDedupTTL = 24 * time.Hour
