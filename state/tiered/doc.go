// Package tiered puts a Redis read cache shared by every process (the L2 of the
// state-store design) in front of a DynamoDB store, the source of truth: hot
// reads cost a Redis round trip instead of a strongly consistent DynamoDB read,
// and the DynamoDB read units they would have used.
//
//	sums, err := dynamodb.NewInt64SumStore(ddbClient, "values")
//	s, err := tiered.New[int64](sums, redisClient, "views-l2") // a state.OnceStore[int64] still
//
// The source is any state.RevisionStore: the state/ddbstate stores are, as
// every write raises an item's revision (the rev attribute) and GetRevisions
// reads it beside the value. Put package state/cache (L1) in front for reads
// that may be served from the process's own memory: cache.New(tiered.New(...)).
//
// # Reads and writes
//
//   - A write goes to the source first. Then the store reads the key back from
//     the source (GetRevisions: one strongly consistent read) and writes the
//     value, its revision and its expiry to Redis with a script that keeps
//     what Redis holds when it is newer (a higher revision): a slow writer
//     never puts back an older value. The write-through happens whatever the
//     source's answer, as an error may hide an applied write, except for errors
//     that send nothing (bad input, closed).
//   - A read tries Redis (one pipeline of HMGET for GetMany), and reads the keys
//     Redis had no fresh entry of from the source (one GetRevisions), filling
//     Redis with them under the same newer-only rule.
//   - An entry is fresh for WithTTL (default DefaultTTL, 5 minutes) from the
//     instant it was known current (the start of the read or write-through
//     that wrote it, on WithClock), and never past the value's own expiry
//     (now >= expiry reads the source). Redis deletes entries at about that
//     instant, on its own clock (PEXPIRE).
//
// # Staleness
//
// Every read returns a value the source held at some instant within the last
// WithTTL. In practice it returns the last write-through: a write through any
// tiered store over the same source and prefix is seen by every reader, in
// every process, as soon as it returns, and a process reads its own writes.
// What makes a reader see an older value, for at most the TTL: a write whose
// write-through was lost (Redis failing at that moment, the writer crashing
// between the source write and the write-through) and writes that reach the
// source another way (a plain state/ddbstate store, an older version of this
// library during a rolling upgrade, a DynamoDB TTL deletion). A key the source
// deleted after its expiry starts again at revision 1; a cached absence of it
// at a higher revision then hides the new value for at most the TTL.
//
// # Outages
//
// A Redis that fails (an error, a timeout of the client) never fails a call:
// reads go to the source, write-throughs and fills are skipped, and each
// failed Redis call adds one to pipestate.tiered.failures. A source that fails
// fails the call, as without the cache. Put a breaker (package breaker) on the
// Redis client so that a Redis outage costs callers no timeouts: its fast
// failures are failures like any other here.
//
// # Credentials
//
// Reads write to Redis: a read that misses fills the entry (put.lua, with
// EVALSHA). A Redis user allowed only to read still reads correctly, from the
// source every time, each failed fill counted in pipestate.tiered.failures;
// give the tier's users read and write on the prefix's keys (~prefix:* with
// +@read +@write +evalsha +eval +script|load). DynamoDB needs what the source
// store needs.
//
// # Costs
//
// A read hit: one Redis round trip, no DynamoDB request. A miss: one Redis
// round trip, one strongly consistent DynamoDB read (GetItem for Get,
// BatchGetItem for GetMany), one Redis pipeline. A write: the source's write,
// one strongly consistent read and one Redis round trip: the read is what
// tells the write-through the value and revision the source holds, which the
// DynamoDB stores' merges (ADD expressions, transactions) do not return.
//
// The result implements state.OnceStore and state.BatchStore exactly when the
// source does, and composes with package observe and package state/cache in
// either order. Values are int64, float64 or []byte, the types of the
// DynamoDB stores. Keys live under the prefix as prefix:bucket:entity (one
// hash each, with fields r, v, o, x and f); two tiered stores over different
// sources must not share a prefix. Redis Cluster works: every Redis command
// touches one key.
package tiered
