// Package dynamodb implements pipestate's monoid-aware state stores over DynamoDB
// (aws-sdk-go-v2, imported as ddb / ddbtypes): Int64SumStore, Float64SumStore,
// Int64MaxStore, BytesStore (any monoid over bytes, such as the sketches of
// monoid/sketch) and Deduper, plus CreateStoreTable and CreateDedupTable. Every store implements state.OnceStore once it is given a dedup
// table (WithDedupTable).
//
// # Tables
//
//	value table (CreateStoreTable): key pk (S, hash) + sk (N, range)
//	  pk   S  the store kind, '#' and the entity (state.Key.Entity, as is); kinds:
//	          isum, fsum, imax, and bytes.K for a BytesStore, K its monoid's escaped Kind
//	  sk   N  the bucket (state.Key.Bucket)
//	  v    N  the value of Int64SumStore, Float64SumStore, Int64MaxStore
//	       B  the value of BytesStore
//	  ver  S  BytesStore only: the random tokens of the latest 16 writes, newest first
//	  ttl  N  expiry in Unix seconds (rounded up); absent = never expires
//	  rev  N  the revision: every write adds 1 (also one restarting an expired
//	          item), so GetRevisions tells which of two reads is newer; an item
//	          written before rev existed starts at 1 with its next write
//
//	dedup table (CreateDedupTable): key pk (S, hash)
//	  pk   S  "seen#" + eventID (Deduper) or
//	          "once#" + value table + "#" + store kind + "#" + state.OnceClaimID(key, eventID)
//	          (MergeUpdateOnce)
//	  tok  S  the random token of the claiming call
//	  ttl  N  expiry in Unix seconds (rounded up); absent = never expires
//
// The Create functions use on-demand billing, enable DynamoDB TTL on ttl, wait until
// the table is ACTIVE, and accept an existing table with the same key schema. Stores
// of different kinds (and
// BytesStores of different monoid kinds) may share a table; two stores of the same
// kind on one table share values. One dedup table can serve every store and deduper.
//
// # Reads and credentials
//
// Get and GetMany send only GetItem and BatchGetItem: reads never write, and
// credentials whose IAM policy allows those two actions on the value tables read
// every store (a reader needs no dedup table: MergeUpdateOnce and the Deduper
// only write). The writes need PutItem, UpdateItem and DeleteItem besides
// (TransactWriteItems is authorized by the per-item actions of its items); there
// is no read-only option, as no read writes. With REGION, ACCOUNT, the value
// tables VALUES (one per store table) and the dedup table DEDUP filled in
// (TestStoreReadsWithReadCredentials holds the actions to the calls the stores
// make), a reader:
//
//	{
//	  "Version": "2012-10-17",
//	  "Statement": [{
//	    "Effect": "Allow",
//	    "Action": ["dynamodb:BatchGetItem", "dynamodb:GetItem"],
//	    "Resource": ["arn:aws:dynamodb:REGION:ACCOUNT:table/VALUES"]
//	  }]
//	}
//
// and a writer:
//
//	{
//	  "Version": "2012-10-17",
//	  "Statement": [{
//	    "Effect": "Allow",
//	    "Action": ["dynamodb:BatchGetItem", "dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"],
//	    "Resource": ["arn:aws:dynamodb:REGION:ACCOUNT:table/VALUES", "arn:aws:dynamodb:REGION:ACCOUNT:table/DEDUP"]
//	  }]
//	}
//
// CreateStoreTable and CreateDedupTable also need, on their table's ARN,
// dynamodb:CreateTable, DescribeTable, DescribeTimeToLive and UpdateTimeToLive.
//
// # Guarantees
//
//   - Every merge is atomic. Sums are UpdateItem ADD, conditioned on the sum staying
//     within int64 or the float range (else state.ErrInvalidArgument, nothing
//     written); a float delta whose exact decimal sum DynamoDB refuses (over 38
//     significant digits, like 0.5 + 1e-50) falls back to reading the value and
//     writing the float64 sum conditioned on the value read. Maxima an UpdateItem SET
//     conditioned on v < :delta (exact: DynamoDB numbers are decimals of 38 digits);
//     BytesStore reads value and version, combines in Go (TryCombine when the monoid is
//     monoid.Fallible) and writes with an UpdateItem conditioned on the version, retrying
//     lost races with capped exponential backoff and full jitter (WithBackoff) up to
//     WithMaxRetries times, then failing with an error wrapping
//     state.ErrContention (nothing written).
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
//   - Lost replies: claims hold a random token of the claiming call and a BytesStore
//     version the tokens of its latest 16 writes, so a write the SDK retried after a
//     lost response recognises its own first attempt: MarkSeen, MergeUpdateOnce and
//     Bytes merges are exactly once, Max merges idempotent; a plain sum ADD is
//     at-least-once.
//   - Bad input returns an error wrapping state.ErrInvalidArgument before any I/O (for
//     Float64SumStore also deltas outside state.CheckFloat64's range, and for
//     BytesStore a merged item over 400 KB). SDK errors are wrapped with %w, so errors.As to the
//     SDK's types works.
//   - Batches: every store implements state.BatchStore. DynamoDB has no batch
//     update, so MergeMany runs each update's MergeUpdate (the same requests,
//     retries and signals), WithBatchConcurrency (default
//     state.DefaultMergeConcurrency) at once, one key's updates in order.
//   - Reads are strongly consistent. The stores do not own the client: Close only
//     marks the store closed (later calls return an error wrapping state.ErrClosed).
//
// # Fencing
//
// Merges through state.Fenced (package fence) carry a lease's key and fence, and
// a key's item remembers, for each lease key, the highest fence that merged into
// it, as the number attribute "f:{lease key}" on the item itself, so it lives
// and expires with the value (its ttl). A fenced merge adds to its update's
// condition "attribute_not_exists(f) OR f <= :fence" and to the update "SET f =
// :fence", in the requests it sends anyway: no extra round trip. Merges are
// updates, so an unfenced merge (whose requests carry no fence) neither checks
// nor resets what the item remembers. A refusal is read from the failed
// condition's old item (ALL_OLD) and wraps fence.ErrFenced; a BytesStore's
// MergeUpdate reads the fence with the value and is refused before writing.
// MergeUpdateOnce checks the event's claim first (the transaction's claim item
// comes first, and a repeated event is a duplicate); in MergeMany a refused
// update is that update's error in the *state.MergeError. A lost reply keeps
// the first attempt's outcome as unfenced: an equal fence passes a retried
// update, and the tokens of BytesStore writes and claims are unchanged. Only
// when a newer fence merges into the key between a lost reply and the SDK's
// retry does a numeric store's MergeUpdate report ErrFenced although its first
// attempt landed (a BytesStore finds its token in the item's version, and a
// MergeUpdateOnce's transaction its idempotency token and claim: both report
// success).
//
// Costs: the attribute adds 2 + len(lease key) bytes of name and a number to
// the item, which changes write units only across a 1 KB boundary; on DynamoDB
// Local every fenced merge consumes what the unfenced one does (TestRoundTrips).
// One exception: an Int64MaxStore merge whose value stays, with ttl 0 and no
// expiry to clear, is one refused conditional update unfenced (which AWS
// charges 1 write unit) but needs a second UpdateItem (1 more) the first time
// a fence merges into the key, to remember it.
//
// # Across regions
//
// DynamoDB Global Tables replicate each item to the other regions
// asynchronously, last writer wins, and evaluate a condition or a transaction
// only in the region that receives it. The guarantees above are guarantees
// within one region. With one writing region the other regions' replicas are
// readers that see each value within the replication delay (usually under a
// second, with no bound). With writers in two regions merges are lost, not
// combined: two sum ADDs to one item in two regions each apply to their own
// region's copy and replication keeps one of the two results; a smaller
// maximum can replace a larger one; a MergeUpdateOnce or MarkSeen can claim
// the same event ID in each region, so a delta is applied twice or lost.
// ReplicaRegions tells at start-up whether a value or dedup table is
// replicated; the stores do not check it themselves.
//
// # Signals
//
// What only the stores know goes to WithMeterProvider (default: the global meter
// provider) and WithLogger (default: none), with db.system.name aws.dynamodb and
// db.operation.name the method (Get, GetMany, MergeUpdate, MergeUpdateOnce,
// MarkSeen, Release): each retry (pipestate.retries; a Debug record and an event on
// the caller's span) and each give-up (pipestate.giveups; a Warn record), by
// pipestate.retry.reason:
//
//	cas_conflict          a merge's conditional write lost a race (a BytesStore
//	                      compare-and-swap, a sum onto an item expiring meanwhile)
//	transaction_conflict  a MergeUpdateOnce transaction cancelled by a concurrent one
//	throttled             a request the SDK's retryer retried after
//	                      ProvisionedThroughputExceeded, ThrottlingException or
//	                      RequestLimitExceeded (a give-up: throttled on its last
//	                      attempt), or a transaction cancelled for throttling
//	unprocessed           a retry round of GetMany keys BatchGetItem left unprocessed
//
// Merge retries and give-ups count the lost races: retries + give-ups = lost races,
// and a give-up is the call's state.ErrContention. Throttles are seen by a
// middleware each request carries (internal/ddbx.ThrottleSignals), so an API
// wrapper must pass optFns on to keep them. Package observe adds spans and call
// metrics around any store; its doc lists every instrument.
//
// # Decisions where the design is silent
//
//   - Float64SumStore adds in decimal where DynamoDB can (0.1+0.2 reads 0.3, an ulp
//     from the float64 sum), else in float64.
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
//	                                   an expiry must be set or cleared (or, fenced, the
//	                                   fence is new to the item)
//	MergeUpdateOnce (sum, max)         1 TransactWriteItems; 2 in the cases above
//	BytesStore MergeUpdate(Once)       GetItem + UpdateItem (TransactWriteItems for Once),
//	                                   +1 write per lost race
//	MergeMany(n updates)               n merges as above, WithBatchConcurrency (default
//	                                   16) at once; 0 for n == 0
//	Deduper MarkSeen / Release         1 PutItem / 1 DeleteItem
//
// Example:
//
//	client := ddb.NewFromConfig(cfg)
//	if err := ddbstate.CreateStoreTable(ctx, client, "views"); err != nil { ... }
//	if err := ddbstate.CreateDedupTable(ctx, client, "events"); err != nil { ... }
//	views, err := ddbstate.NewInt64SumStore(client, "views", ddbstate.WithDedupTable("events"))
//	k := state.Key{Entity: "page:/home", Bucket: hour}
//	applied, err := views.MergeUpdateOnce(ctx, msg.ID, k, 1, 48*time.Hour)
//	n, found, err := views.Get(ctx, k)
package ddbstate
