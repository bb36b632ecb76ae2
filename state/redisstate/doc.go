// Package redis implements pipestate's monoid-aware state stores over Redis (go-redis
// v9, imported as goredis): Int64SumStore, Float64SumStore, Int64MaxStore, BytesStore
// (any monoid over bytes, such as the sketches of monoid/sketch) and Deduper. Every
// store implements state.OnceStore. They work on a single server and on Redis
// Cluster (any goredis.UniversalClient).
//
// # Guarantees
//
//   - Every merge is atomic: sums and maxima run one Lua script (INCRBY, a float64
//     addition stored with 17 significant digits, or a compare-and-set that compares int64s exactly as decimal strings, since Lua
//     numbers are doubles); BytesStore reads, combines in Go and writes with a Lua
//     compare-and-swap on a version token, retrying lost races with capped
//     exponential backoff and full jitter (WithBackoff) up to WithMaxRetries times,
//     then failing with an error wrapping state.ErrContention (nothing
//     written).
//   - MergeUpdateOnce checks the event's claim, merges and writes the claim in ONE Lua
//     script, so a crash can neither lose nor double a delta. For BytesStore the
//     combine runs in Go, so the claim is written by the same compare-and-swap script
//     that writes the value: claimed exactly when merged.
//   - Lost replies: MergeUpdateOnce and Deduper claims hold a random token of the
//     claiming call, and a BytesStore version lists the tokens of its latest 16
//     writes, so a script that go-redis retries after a lost reply recognises its own
//     first attempt: exactly once. Max merges are idempotent. A plain sum
//     MergeUpdate (INCRBY, float add) is at-least-once under a retried lost reply.
//   - TTL: expiry is Redis's own (PEXPIRE, or PERSIST for ttl 0 to clear an earlier
//     expiry), set in the merge script, so an expired value is gone for every reader
//     and the next merge starts from the identity. TTLs are rounded up to whole
//     milliseconds and sent one millisecond short (Redis expires a key once its clock
//     is past the expiry), so a value is expired when now >= now_at_merge+ttl on
//     the server's clock (internal/redisx.Millis, shared with provider/redisprovider).
//   - Bad input returns an error wrapping state.ErrInvalidArgument before any I/O: a
//     Float64SumStore delta outside state.CheckFloat64's range is bad input. An int64
//     sum that would overflow, or a float sum that would leave the range, is refused
//     by the script without writing, also an error wrapping state.ErrInvalidArgument. Redis errors are wrapped with %w; goredis.Nil never escapes.
//   - Batches: the numeric stores implement state.BatchStore. MergeMany sends
//     state.MergeBatchSize updates per pipeline; a batch script (lua/batch.lua
//     around the single-key script, so each key merges exactly as MergeUpdate
//     does) takes every key of a chunk on a single server, and the keys of one
//     entity (one slot) on a cluster. A retried pipeline re-applies sums, as a
//     retried MergeUpdate does. BytesStore does not implement it (its
//     compare-and-swap loop reads before it writes): the Coalescer writes its keys
//     one MergeUpdate each.
//   - The stores do not own the client: Close only marks the store closed (later
//     calls return an error wrapping state.ErrClosed).
//
// # Decisions where the design is silent
//
//   - Exactly-once claims are per (event ID, key), as state.OnceStore says: one event
//     may update several keys, each exactly once. The claim key lives beside the value
//     in the entity's hash tag (one cluster slot), since a Lua script may only touch
//     keys of one slot. Claims live for WithDedupTTL (default state.DefaultDedupTTL),
//     independent of the value's ttl.
//   - The key prefix is a required constructor argument (no default, so two stores
//     never share keys by accident; the library's rule for namespaces is under
//     provider/redisprovider.WithKeyPrefix). Key names carry the store kind, and for a
//     BytesStore the monoid's Kind, so an Int64SumStore and an Int64MaxStore, or an
//     HLL and a TopK BytesStore, may share a prefix and entity names. Two stores of
//     the same kind sharing a prefix share values: give each logical store its own
//     prefix.
//   - Operating Redis: claims, versions and fence memories must not be evicted
//     (maxmemory-policy noeviction); see package state.
//   - A missing key reads as the monoid's identity with found == false (0 for sums,
//     math.MinInt64 for Int64MaxStore, the monoid's Identity for BytesStore).
//   - A lost BytesStore race hands the current value and version back with the
//     refusal, so a retry costs one round trip, not two.
//   - Scripts run with EVALSHA; the first run on each server costs one extra round
//     trip (NOSCRIPT, then EVAL), and so does the first after the server lost its
//     script cache (restart, failover, SCRIPT FLUSH).
//
// # Fencing
//
// MergeUpdate, MergeUpdateOnce and MergeMany through state.Fenced check the fence
// in the merge's own script (the common head, lua/common.lua, applies the rule's
// one copy, internal/redisx's fence.lua, shared with provider/redisprovider): no extra round trip, and the fence memory lives in the
// value's hash tag, so no cross-slot key on a cluster. Every merge, fenced or
// not, passes the memory as one more key (MergeMany: one memory per update); a
// fenced call also passes the lease key and fence as two more arguments
// (MergeMany: once per script call; two empty arguments unfenced). An unfenced
// merge never reads a memory nor creates one: it only extends an existing one
// (see Lifetime). The script refuses a fenced merge, writing
// nothing, when the memory holds a higher fence for the lease key, and
// otherwise, once it merged, raises the memory to the merge's fence.
//
//   - The memory is per entity and store kind (prefix:{entity}:<kind>:fences):
//     every bucket of an entity shares it, which refuses more stale merges than a
//     memory per key, never fewer (package fence allows a larger group).
//   - Order: MergeUpdateOnce's claim first (a repeated event is a duplicate,
//     (false, nil), whatever its fence), then the fence, then the merge. A
//     BytesStore checks the fence after its version matched: a lost race is no
//     outcome (the next attempt, or the token of its own lost reply, decides), so
//     a stale holder's merge ends in ErrFenced after at most one re-read.
//   - MergeMany: a refused update is that update's error in the
//     *state.MergeError, as an overflow is; the others merge.
//   - Retries after a lost reply keep the rules above: a once merge and a
//     BytesStore write recognise their first attempt before the fence; a plain
//     sum is at least once, as unfenced (its retry passes an equal fence, and a
//     newer holder's merge in between makes the retry fail with ErrFenced after
//     the first attempt applied); a refused merge writes nothing and its retry is
//     refused again.
//   - Lifetime: every merge that merged, fenced or not, gives an existing
//     memory the value's TTL when that is longer than the memory's own, and
//     removes its TTL (PERSIST) when the value never expires (ttl 0); a fenced
//     merge creates the memory so. Nothing shortens it, so it lives at least
//     as long as every value it guards, whatever merge extended a value last:
//     an unfenced merge by an instance of this version with a longer ttl or
//     ttl 0 (a backfill) keeps a stale holder refused (TestFenceMemoryTTL,
//     TestFenceMemoryOutlivesUnfencedMerge). An older version runs its own
//     scripts, whose unfenced merges leave the memory alone: see the
//     CHANGELOG's note on fence memories for a rolling deploy. A merge refused by the fence or by
//     the value's range leaves it as it is. It holds one field per lease key.
//
// # Signals
//
// What only the stores know goes to WithMeterProvider (default: the global meter
// provider) and WithLogger (default: none), with db.system.name redis: each
// BytesStore compare-and-swap retry (pipestate.retries, reason cas_conflict; a Debug
// record and an event on the caller's span) and each give-up with
// state.ErrContention (pipestate.giveups; a Warn record), and each script sent again
// after NOSCRIPT (pipestate.redis.script.loads; a Debug record). Package observe adds
// spans and call metrics around any store; its doc lists every instrument.
//
// # Reads and credentials
//
// Get and GetMany send only GET, MGET or HGET (one command, or a pipeline of them):
// reads never write, and credentials that allow reads only read every store.
// The writes need EVALSHA and EVAL (the merge scripts) besides; Deduper.Release
// is DEL. The stores load no scripts with SCRIPT LOAD (EVALSHA falls back to
// EVAL). An application whose provider and stores share a server may give one
// user both prefixes: the rules of package provider/redisprovider ("Reads and
// credentials"), which are the tests' for a store's prefix P too, are a
// superset of what the stores need:
//
//	ACL SETUSER pipestate-reader on >PASSWORD resetkeys %R~P:* resetchannels -@all +@read +evalsha_ro +eval_ro +multi +exec +ping
//	ACL SETUSER pipestate-writer on >PASSWORD resetkeys ~P:* resetchannels -@all +@read +@write +evalsha +eval +evalsha_ro +eval_ro +script|load +multi +exec +ping
//
// and on every node of a Redis Cluster:
//
//	ACL SETUSER pipestate-reader on >PASSWORD resetkeys %R~P:* resetchannels -@all +@read +evalsha_ro +eval_ro +multi +exec +ping +cluster|slots +command +asking
//	ACL SETUSER pipestate-writer on >PASSWORD resetkeys ~P:* resetchannels -@all +@read +@write +evalsha +eval +evalsha_ro +eval_ro +script|load +multi +exec +ping +cluster|slots +command +asking
//
// (TestStoreReadsWithReadCredentials: with the reader's rules every Get and
// GetMany reads what the writer reads, and every write fails with NOPERM.) Give
// the users the store's prefix: keys are P:{entity}:... and P:seen:... (see
// below), so ~P:* covers them. There is no read-only option: a store's reads
// never write, and its writes are refused by the server.
//
// # Key schema
//
// Entities are escaped ('%' -> %25, '{' -> %7B, '}' -> %7D) so that the hash tag is
// non-empty and brace-free, and every key name is injective; buckets are base-10 int64s.
// The prefix may not contain braces.
//
//	prefix:{entity}:isum:bucket          Int64SumStore value (string)
//	prefix:{entity}:fsum:bucket          Float64SumStore value (string)
//	prefix:{entity}:imax:bucket          Int64MaxStore value (string)
//	prefix:{entity}:bytes.K:bucket       BytesStore value (hash: v = bytes, ver = latest
//	                                     write tokens), K the escaped monoid Kind
//	prefix:{entity}:<kind>:once:bucket:eventID  MergeUpdateOnce claim (the value's slot),
//	                                     holding the claiming call's token
//	prefix:seen:eventID                  Deduper claim (the claiming call's token)
//	prefix:{entity}:<kind>:fences        fence memory of the kind's values of the
//	                                     entity (hash: lease key -> highest fence),
//	                                     TTL: the longest of its values' (see Fencing)
//
// # Round trips
//
//	call                           round trips
//	Get                            1 (GET / HGET)
//	GetMany(n keys)                1 pipeline (one per cluster node holding the keys,
//	                               sent concurrently); 0 for n == 0. Numeric stores:
//	                               one MGET per 1,000 keys on a single server, one
//	                               per hash slot on a cluster (per hash tag on a
//	                               Ring); BytesStore: one HGET per key (a hash)
//	MergeUpdate, MergeUpdateOnce   1 Lua script (sums, max)
//	MergeMany(n updates)           ceil(n/1000) pipelines, one after another (one per
//	(sums, max)                    node, sent concurrently, on a cluster); +1 each
//	                               after NOSCRIPT; 0 for n == 0
//	BytesStore MergeUpdate(Once)   2 (HMGET + compare-and-swap script), +1 per lost race
//	Deduper MarkSeen / Release     1 (Lua script / DEL)
//
// A fenced merge (state.Fenced) costs the same round trips (TestRoundTrips runs
// every row fenced too).
//
// Example:
//
//	client := goredis.NewClient(&goredis.Options{Addr: "localhost:6379"})
//	views, err := redisstate.NewInt64SumStore(client, "app:views")
//	if err != nil { ... }
//	k := state.Key{Entity: "page:/home", Bucket: hour}
//	err = views.MergeUpdate(ctx, k, 1, 48*time.Hour)
//	applied, err := views.MergeUpdateOnce(ctx, msg.ID, k, 1, 48*time.Hour)
//	n, found, err := views.Get(ctx, k)
package redisstate
