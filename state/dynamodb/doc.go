// Package dynamodb implements pipestate's monoid-aware state stores over DynamoDB
// (aws-sdk-go-v2, imported as ddb / ddbtypes): Int64SumStore, Float64SumStore,
// Int64MaxStore, BytesStore (any monoid over bytes, such as the sketches of
// monoid/sketch) and Deduper, plus CreateInt64Table, CreateBytesTable and
// CreateDedupTable. Every store implements state.OnceStore once it is given a dedup
// table (WithDedupTable).
//
// # Tables
//
//	value table (CreateInt64Table, CreateBytesTable): key pk (S, hash) + sk (N, range)
//	  pk   S  the entity (state.Key.Entity, stored as is)
//	  sk   N  the bucket (state.Key.Bucket)
//	  v    N  the value of Int64SumStore, Float64SumStore, Int64MaxStore
//	       B  the value of BytesStore
//	  ver  S  BytesStore only: a random 128-bit version token, new on every write
//	  ttl  N  expiry in Unix seconds (rounded up); absent = never expires
//
//	dedup table (CreateDedupTable): key pk (S, hash)
//	  pk   S  "seen#" + eventID (Deduper) or
//	          "once#" + value table + "#" + store kind + "#" + state.OnceClaimID(key, eventID)
//	          (MergeUpdateOnce)
//	  ttl  N  expiry in Unix seconds (rounded up); absent = never expires
//
// The Create functions use on-demand billing, enable DynamoDB TTL on ttl, wait until
// the table is ACTIVE, and accept an existing table with the same key schema. The two
// value-table functions make the same schema; use one table per logical store (two
// stores on one table share items with the same key). One dedup table can serve every
// store and deduper.
//
// # Guarantees
//
//   - Every merge is atomic. Sums are UpdateItem ADD; maxima an UpdateItem SET
//     conditioned on v < :delta (exact: DynamoDB numbers are decimals of 38 digits);
//     BytesStore reads value and version, combines in Go (TryCombine when the monoid is
//     monoid.Fallible) and writes with a PutItem conditioned on the version, retrying
//     lost races with capped exponential backoff and full jitter (WithBackoff) up to
//     WithMaxRetries times, then failing with an error wrapping
//     state.ErrMaxRetriesExceeded (nothing written).
//   - MergeUpdateOnce is one TransactWriteItems: a Put of the event's claim in the
//     dedup table, conditioned on no live claim, and the value's conditional write. A
//     crash can neither lose nor double a delta. Claims are per (event ID, key) and
//     live for WithDedupTTL (default state.DefaultDedupTTL).
//     Transactions that conflict with concurrent ones are retried with backoff and
//     count against WithMaxRetries.
//   - TTL: DynamoDB deletes expired items late (up to days), so every read and every
//     conditional write compares ttl with the store's clock (WithClock): an expired
//     item is invisible to Get and GetMany, and a merge onto it starts from the
//     identity. For sums the ADD carries the condition "ttl absent or ttl > now"; when
//     it fails the merge SETs v to the delta on the condition "ttl <= now". The two
//     conditions are complements, so under any concurrency exactly one writer restarts
//     the item and nobody adds onto a stale value; the expired case costs one more
//     round trip. Expiry has whole-second resolution (rounded up) and relies on the
//     writers' clocks being synchronised.
//   - Bad input returns an error wrapping state.ErrInvalidArgument before any I/O (for
//     Float64SumStore also deltas outside DynamoDB's number range, and for BytesStore
//     a merged item over 400 KB). SDK errors are wrapped with %w, so errors.As to the
//     SDK's types works.
//   - Reads are strongly consistent. The stores do not own the client: Close only
//     marks the store closed (later calls return an error wrapping state.ErrClosed).
//
// # Decisions where the design is silent
//
//   - An int64 sum beyond the int64 range is stored (DynamoDB numbers have 38 digits)
//     and reads back as an error; Float64SumStore adds in decimal (0.1+0.2 reads 0.3).
//   - Int64MaxStore refreshes the expiry even when the stored value wins, as every
//     other store does: that costs a second UpdateItem, skipped when ttl is 0 and the
//     item has no expiry to clear.
//   - A missing key reads as the monoid's identity with found == false (0 for sums,
//     math.MinInt64 for Int64MaxStore, the monoid's Identity for BytesStore).
//   - A lost race returns the item with the refusal (ReturnValuesOnConditionCheckFailure),
//     so a BytesStore retry costs one write, not a read and a write.
//
// # Round trips
//
//	call                               round trips
//	Get                                1 GetItem
//	GetMany(n keys, d distinct)        ceil(d/100) concurrent BatchGetItem (+ retries of
//	                                   unprocessed keys); 0 for n == 0
//	Int64Sum/Float64Sum MergeUpdate    1 UpdateItem; 2 onto an expired, undeleted item
//	Int64Max MergeUpdate               1 UpdateItem; 2 when the stored value wins and
//	                                   an expiry must be set or cleared
//	MergeUpdateOnce (sum, max)         1 TransactWriteItems; 2 in the cases above
//	BytesStore MergeUpdate(Once)       GetItem + PutItem (TransactWriteItems for Once),
//	                                   +1 write per lost race
//	Deduper MarkSeen / Release         1 PutItem / 1 DeleteItem
//
// Example:
//
//	client := ddb.NewFromConfig(cfg)
//	if err := dynamodb.CreateInt64Table(ctx, client, "views"); err != nil { ... }
//	if err := dynamodb.CreateDedupTable(ctx, client, "events"); err != nil { ... }
//	views, err := dynamodb.NewInt64SumStore(client, "views", dynamodb.WithDedupTable("events"))
//	k := state.Key{Entity: "page:/home", Bucket: hour}
//	applied, err := views.MergeUpdateOnce(ctx, msg.ID, k, 1, 48*time.Hour)
//	n, found, err := views.Get(ctx, k)
package dynamodb
