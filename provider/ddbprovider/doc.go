// Package ddbprovider is the DynamoDB backend of pipestate: a provider.Provider (plus
// provider.Leaser, provider.CascadeReader, provider.RunCreator,
// provider.EventFollower, provider.MarkerWatcher, provider.LockInspector,
// provider.LockLister and provider.ActiveRunLister) on one
// table, with strongly consistent reads, atomic multi-item writes through
// TransactWriteItems, and conditional writes for compare-and-swap, run creation,
// event and marker-log sequencing, locks and leases. It passes providertest.Run against DynamoDB Local.
//
// # Opening
//
//	cfg, err := config.LoadDefaultConfig(ctx)
//	if err != nil { ... }
//	client := ddb.NewFromConfig(cfg) // ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
//	if err := ddbprovider.CreateTable(ctx, client, "pipestate"); err != nil { ... } // idempotent
//	p, err := ddbprovider.New(client, "pipestate") // keeps records 30 days: provider.DefaultRetention()
//	if err != nil { ... }
//	defer p.Stop(ctx)
//
// New does no I/O; Ping is one DescribeTable. Options: WithOwner (lock owner
// identity, default random), WithClock (default time.Now), WithReadinessTTL (default
// 5 minutes), WithRetention (how long each record kind is kept after its last
// write, default provider.DefaultRetention(): 30 days, 24 hours for the marker
// log; see Retention below), WithEventRetention and WithMarkerLogRetention (one field
// of it each),
// WithPollInterval (how FollowEvents and WatchCascadeMarkers poll once caught up,
// default 20 ms doubling to 1 s), WithMeterProvider and WithLogger (see Signals).
// The provider never closes the client; Stop makes every later call return
// provider.ErrClosed. Every method opens, before any request, in the provider
// contract's order: after Stop, an error wrapping provider.ErrClosed; with a done
// ctx, ctx.Err(); for a write on a provider opened WithReadOnly, an error wrapping
// provider.ErrReadOnly; then the first failed check of its arguments
// (provider.ErrInvalidArgument).
//
// # Key schema
//
// One table with string keys PK and SK and two global secondary indexes: GSI1
// (GSI1PK, GSI1SK, all attributes projected) and ACTIVE (activePK, activeSK,
// keys only: the sparse index of unfinished runs, see Active runs). IDs never contain '#' (types.ValidateID)
// and '#' sorts before every ID byte, so joined keys never collide and sort like the
// tuples they join. T(x) is a fixed-width, byte-sortable encoding of a time (16 hex
// digits of the Unix second with the sign bit flipped, 8 of the nanosecond); N(x) is
// a 20-digit zero-padded decimal.
//
//	entity             PK                 SK                                  GSI1PK     GSI1SK
//	-----------------  -----------------  ----------------------------------  ---------  --------------------------------
//	pipeline config    PIPELINE#{id}      CONFIG                              PIPELINES  {id}
//	trait              PIPELINE#{id}      TRAIT#{type}
//	readiness          PIPELINE#{id}      READINESS
//	run (truth)        RUN#{run}          STATE
//	run (list copy)    PIPELINE#{id}      RUN#T(createdAt)#{run}
//	run log            PIPELINE#{id}      RUNLOG#{date}#{schedule}
//	event              PIPELINE#{id}      EVENT#N(seq)
//	event counter      PIPELINE#{id}      EVENTSEQ
//	rerun (truth)      RERUN#{rerun}      STATE                               RERUNS     T(requestedAt)#{rerun}
//	rerun (list copy)  PIPELINE#{id}      RERUN#T(requestedAt)#{rerun}
//	replay             PIPELINE#{id}      REPLAY#{date}#{schedule}            REPLAYS    T(createdAt)#{id}#{date}#{schedule}
//	late arrival       PIPELINE#{id}      LATE#{date}#{schedule}#T(detectedAt)#{stamp}
//	late list fences   PIPELINE#{id}      FENCE#LATE#{date}#{schedule}
//	cascade marker     MARKER#{id}        {date}#{schedule}
//	marker (by time)   MARKER#{id}        #BYTIME#T(writtenAt)#{date}#{schedule}
//	marker log entry   MARKERLOG          ENTRY#N(seq)
//	marker log counter MARKERLOG          SEQ
//	lock / lease       LOCK#{key}         LOCK
//
// A run's truth item also carries, exactly while its status is not terminal,
// activePK ACTIVE#{NN} (NN: two decimal digits, FNV-1a 32 of the RunID mod 16)
// and activeSK {run}: its key in ACTIVE.
//
// Every item carries its entity as JSON in the attribute "data" (a string; or, when
// the item would not fit DynamoDB's 400 KB otherwise, a binary holding the JSON
// DEFLATE-compressed), so a Get returns exactly a JSON round trip of what was put (times Equal to the nanosecond, numbers
// in maps as float64). Other attributes: "exp" (expiry, Unix ns, by the provider
// clock), "ttl" (the same in Unix seconds, for DynamoDB's TTL deletion), "listPK" and
// "listSK" (on a truth item: its list copy), "version" (a run's CAS version), "seq"
// (an event's or marker-log entry's number; a counter's last number), "holder" and
// "fence" (locks), "tok" (the token of the call that last won a conditional
// write of the item, or that appended the event), "f:{lease key}" (what the item remembers of fenced
// writes; see Fencing), and on lock items "rtok" and "rfreed" (the token of the
// last release and the tok of the hold it freed), "activePK" and "activeSK" (a
// run's key in ACTIVE; attributes that are not the run's own key make the item
// corrupt).
//
// # Guarantees and decisions
//
//   - Truth and list copies: a run, a rerun and a cascade marker are a truth item and
//     a list copy sorted by time, always written together in one TransactWriteItems
//     whose condition is on the truth item. When the sort time (or, for a rerun, the
//     pipeline) changes, the transaction also deletes the old copy, conditioned on the
//     truth item still pointing at it. The lists never show a stale or duplicate copy.
//   - Compare-and-swap: the condition is version = expected AND the list copy is the
//     one newState's pipeline and CreatedAt give; ReturnValuesOnConditionCheckFailure
//     tells a missing run or a version mismatch (false, nil) from another pipeline
//     (ErrInvalidArgument) from a newState.CreatedAt that is not the stored one (the
//     swap is redone with the stored CreatedAt, again each time a concurrent put
//     moves it). Of N concurrent swaps from one
//     version exactly one wins.
//   - Events are numbered 1, 2, 3... per pipeline by the pipeline's counter
//     item (EVENTSEQ): each append moves it from n to n+k in the same
//     transaction that puts events n+1..n+k, on condition that it still holds
//     n, and each event on condition that its number is free. The counter
//     carries no ttl, so it outlives every event and every cursor: after the
//     whole log expired and DynamoDB's TTL deleted it, numbering goes on after
//     the last number handed out, and a number once committed is never
//     committed again. An instance that does not know a pipeline's counter
//     reads it in one Query of one item (in a log without a counter, the
//     newest event stored), and never numbers at or below the newest event: a
//     number the counter hands out that an event holds (a counter behind the
//     log, restored from a backup or left behind by an unreleased build; see
//     the CHANGELOG) sends the append past the newest event. Numbers
//     are therefore gapless and in commit order, and a reader that has passed
//     cursor n can never later see a new event below n, whatever the writers'
//     clocks say. The number is the sort key's: an item whose seq attribute
//     says otherwise is corrupt (see Corrupt records). The cursor (EventRecord.StreamID) is
//     the decimal number; anything else is ErrInvalidArgument. Numbers being
//     gapless, a cursor is expired exactly when the event after it was appended
//     and is no longer retained (WithEventRetention; expired by the provider
//     clock, or deleted by DynamoDB's TTL): ReadEventsSince and FollowEvents
//     from it fail with provider.ErrCursorExpired. The Query after a cursor runs
//     on to the pipeline's counter item (EVENTSEQ sorts after every event), so
//     the same request tells a cursor into a log that expired entirely (expired,
//     at once, also before anything newer is appended) from the newest event's
//     cursor (not): no extra request, and no paging
//     past an expired backlog either. "" reads from the oldest event retained.
//     Events of writers with different retentions can expire out of order: a
//     read stops before the first missing number, and the read from there
//     fails. Concurrent appends to
//     one pipeline through one Provider are group-committed (up to 99 events per
//     transaction), so goroutines of one process never race each other for a
//     number; only instances do.
//   - CreateRunState is PutRunState's transaction with the condition that the run's
//     truth item does not exist: of any number of concurrent creates of one RunID
//     exactly one commits, and the others fail the condition (or conflict, are
//     retried, then fail it) and return (false, nil) having written nothing.
//   - FollowEvents polls: it runs ReadEventsSince's Query from its cursor, again at
//     once while pages come back full or partial, and after an empty one waits
//     WithPollInterval's first bound, doubling up to its second (20 ms to 1 s by
//     default). The event log is already ordered, gapless and strongly
//     consistent; see the marker log for why not DynamoDB Streams.
//     Measured on DynamoDB Local with the defaults (BenchmarkFollowDelivery, from
//     AppendEvent's return to the yield, 10 deliveries each): after an idle spell
//     236 ms on average, 555 ms at most (the bound is about 1 s plus a Query);
//     while events flow 8 ms on average, 26 ms at most. An idle follower sends one
//     Query per second bound (BenchmarkIdleRequests: 60 a minute with the
//     defaults, after 7 in its first 1.3 s), each a strongly consistent read of
//     nothing: 1 read capacity unit.
//   - WatchCascadeMarkers reads the marker log: every WriteCascadeMarker also
//     writes an entry (the marker as written) under the next number of one global
//     counter (MARKERLOG SEQ, which carries no ttl either), claimed in the
//     marker's transaction as an event claims its pipeline's (condition: the
//     counter still holds n), so entries are numbered
//     1, 2, 3... without gaps, in commit order, and an entry exists exactly when
//     the marker write committed. A rewrite of a marker is a new entry. The watch
//     polls the log from its cursor (the entry's number) like FollowEvents, with
//     the same idle cost and a like delay (BenchmarkWatchDelivery: 354 ms on
//     average and 765 ms at most after an idle spell, 8 ms and 30 ms while markers
//     flow, from WriteCascadeMarker's return). Entries carry a TTL of
//     the MarkerLog retention (WithMarkerLogRetention, default 24 hours, by the
//     writer's clock; 0 keeps them forever), after which reads skip them and DynamoDB deletes them. Numbers
//     being gapless, an entry missing after the cursor was dropped by retention:
//     the watch yields the entries before the gap, then an error wrapping
//     provider.ErrCursorExpired, never a silent gap; its Query runs on to the
//     log's counter (SEQ sorts after every ENTRY#), so a watch whose cursor's
//     successors all expired hears it at once, also before the next write. Delivery is at least once: a
//     write whose reply was lost is logged once (see Lost responses) unless its
//     retry comes after DynamoDB forgot the idempotency token (10 minutes) and
//     after another write took the next number; a watch from "" (or "0") starts at
//     the oldest entry retained. The counter is one item for every pipeline:
//     marker writes of all instances serialize on it, each lost race costing one
//     more transaction, which suits markers' rate (one per finished run), not
//     thousands a second. DynamoDB Streams were the alternative: they would not
//     deliver sooner (a reader polls each shard, about once a second, and records
//     appear within about a second), and they would bring a second API and IAM
//     actions (dynamodb:DescribeStream, GetShardIterator, GetRecords), shard
//     discovery, splits and parent-before-child ordering, a cursor of one
//     sequence number per shard, a fixed 24-hour retention, a stream the table
//     must have enabled (CreateTable leaves an existing table's as it is), and
//     records of every item of the table to filter. The log is one Query, works
//     the same on DynamoDB Local and AWS, commits atomically with the marker, and
//     has a retention of your choosing.
//   - Lists are read page by page, and a page is not a snapshot: an entity re-put
//     with another sort key (a run's CreatedAt, a rerun's RequestedAt, a replay's
//     CreatedAt, a marker's WrittenAt) while a List* call pages can be met twice.
//     The call keeps the first copy of each entity and does not count the others
//     toward limit, so it returns no duplicates and every entity that existed,
//     unchanged, for the whole call appears if within the limit. The other lists'
//     sort keys never change.
//   - TTLs are judged by the provider clock on every read (items DynamoDB has not yet
//     deleted are filtered out), and List* calls keep paging until they have limit
//     live items.
//   - Retention (WithRetention): every item of a record that grows with use (a
//     run's truth and list copy, a rerun's, a marker's, a run log, a replay, a late
//     arrival, an event, a marker-log entry) carries its expiry: exp, Unix ns by
//     the writer's clock, set by the write that restarts it (the same PutItem,
//     UpdateItem or TransactWriteItems, a CAS included), and ttl, Unix seconds rounded up, for
//     DynamoDB's TTL deletion. Reads drop items whose exp has passed (now >= exp)
//     and List* calls page on past them; conditions treat an expired run as
//     missing: CreateRunState's condition is "no item, or exp <= now" (it writes
//     over the expired run, which starts again at the version given; its old list
//     copy, if it sorts elsewhere, is expired too and left to TTL),
//     CompareAndSwapRunState's includes "exp > now", and PutRunState lets an
//     expired run change pipeline. Nothing is pruned by hand: DynamoDB's TTL
//     deletes expired items, on AWS typically within a few days of their ttl
//     (without consuming write capacity), and until then they cost storage and the
//     reads that page over them. The table must have TTL enabled on the attribute
//     "ttl": CreateTable does it; a table you create yourself needs
//     UpdateTimeToLive (or the Terraform/CloudFormation setting below), or expired
//     items stay stored (invisible, but billed) forever. DynamoDB Local does not
//     delete by TTL. Items written before this version carry no expiry and are
//     kept until they are written again (see the CHANGELOG). Pipeline configs,
//     traits (their own ttl) and lock items (their fence counter must outlive
//     every lease) carry no retention.
//   - Expired traits cost GetTraits a read until DynamoDB's TTL deletes them
//     (AWS: typically within days): its one Query reads them and its filter drops
//     them in DynamoDB, one more request per 1 MB of them. Skipping them would need
//     an index ordered by expiry: a local secondary index (only at table creation,
//     and it caps each pipeline's partition at 10 GB) or a global one (eventually
//     consistent, so GetTraits could miss a trait just put). We keep the strongly
//     consistent Query; a pipeline that puts many short-lived trait types should
//     reuse types rather than mint new ones.
//   - Locks and leases are one item per key, updated in place by one conditional
//     UpdateItem per call (acquire: holder absent or exp <= now; release and renew:
//     holder is us and exp > now), 1 WCU each; AcquireLease's returns the new
//     fence. Acquire and release stamp the call's token on the item (see Lost
//     responses). The item is never deleted, so its fence counter survives
//     release and expiry and fences strictly increase forever; a released key costs
//     about 60 bytes of storage.
//   - ListLocks (provider.LockLister) is a Scan of the whole table, filtered to
//     held lock items: one request per 1 MB of items, whatever they are. Locks
//     have no index on purpose: one would make every acquire and renew write an
//     index partition that every lock shares. It is a maintenance read for an
//     operator (cmd/pipestate locks list), not one for a hot path.
//   - Items are checked against DynamoDB's 400 KB limit before any write
//     (internal/ddbx.ItemSize, which never counts less than DynamoDB does); a larger
//     one is ErrTooLarge and nothing is written. An entity whose JSON does not fit
//     is stored compressed, so 256 KB of any metadata string fits, even one that JSON
//     escaping makes six times longer (control characters become \u00XX).
//   - Consistency: every Get and every List of one pipeline's partition is strongly
//     consistent. ListPipelines, ListAllReruns and ListReplays read GSI1, which
//     DynamoDB keeps eventually consistent: on AWS a write typically shows there within
//     a second (DynamoDB Local is immediate).
//   - Contention: a transaction cancelled by an overlapping one (TransactionConflict)
//     is retried with capped exponential backoff and full jitter, at most 64 times;
//     a condition that fails because another writer got there first (an event or
//     marker-log number taken, a list copy moved) is retried at once with what the
//     failure returned, at most 1,000 times. Past either bound the call fails with
//     provider.ErrContention and nothing is written. Throttling and 5xx errors are
//     left to the SDK's retryer and then returned, wrapped (errors.As to the SDK
//     type works). Each retry and give-up is recorded (see Signals).
//   - Lost responses: TransactWriteItems carries the SDK's idempotency token (one
//     per call, kept across the SDK's retries; DynamoDB answers a retried token with
//     the first attempt's success for 10 minutes), and create, CAS, event, marker-log,
//     lock and lease writes stamp the item (the run, the counter, the lock) with a
//     per-call token, so when the SDK retries a write whose response was lost, the
//     call still reports its own success instead of a lost race — also when other
//     callers changed the item before the retry (a release then reports nil
//     although another instance holds the key now, and an acquire reports true
//     although the key was released and taken): a create reports true, a CAS
//     reports true and the version moved by exactly one, an acquire reports the
//     lock held (a lease with the fence it took), a release reports nil, an event
//     is appended once, a marker write is logged once.
//     On a lock item the token is part of the condition (a retry whose token is
//     there fails it and reads the outcome from the item the failure returns): an
//     acquire's token stays readable as "tok" until the key is taken again and as
//     "rfreed" until it is released again, a release's as "rtok" until the next
//     release. Only a retry that comes after its hold (an acquire's) or its
//     release was followed by another call's hold and that hold's release (the
//     SDK retries within its backoff: milliseconds to seconds) reports the key
//     as it finds it, false or ErrLockNotHeld; none takes or frees twice. The one-action transactions these calls used
//     before (2 WCU) had DynamoDB remember the token for 10 minutes instead.
//     Plain puts and deletes are idempotent. The package's lost-reply test drops the
//     response of every write method once and checks these outcomes.
//   - DeletePipeline removes the config only; the pipeline's other records stay.
//   - Hot keys: all of a pipeline's records share its partition, so one pipeline's
//     writes are bounded by DynamoDB's per-partition throughput (1,000 WCU/s), and its
//     appends are serialized by its counter item (group commit
//     packs many appends into one). Every pipeline config, rerun and replay shares one GSI1
//     partition key each (PIPELINES, RERUNS, REPLAYS), and every marker write one
//     marker-log partition and counter (MARKERLOG); these are low-rate records.
//
// # Active runs
//
// ListActiveRuns (provider.ActiveRunLister) reads ACTIVE, a sparse global
// secondary index: a run's truth item carries the index's key attributes
// exactly while its status is not terminal, set and removed by the very
// PutItem/UpdateItem/TransactWriteItems that writes the run (PutRunState,
// CreateRunState, CompareAndSwapRunState, fenced or not), so a refused or
// retried write (a lost CAS, a fenced refusal, a lost reply) leaves the key as
// the truth is: there is no second step to crash between. The key is spread
// over 16 partitions (activePK, by a hash of the RunID) so that no single index
// partition's write rate (1,000 WCU/s on AWS) caps how fast runs start and
// finish, and sorted by RunID (activeSK) within each. A page is one Query of
// each shard after the cursor (concurrently, 16 requests; again for a shard
// whose page was used up), merged in RunID order, then one strongly consistent
// GetItem of each candidate's truth (16 in flight), which alone decides: a run
// is listed only if its truth is live (expired runs not yet deleted by TTL are
// dropped), unfinished and matches the filter, with the truth's fields. So the
// cost of a page is 16 Queries plus one GetItem per unfinished run read,
// whatever the number of pipelines or finished runs
// (TestActiveRunsCostIndependentOfPipelines: 21 requests for 5 stuck runs
// among 10 or 300 pipelines; the scan it replaces makes 1 + pipelines).
//
// ReindexRun (provider.ActiveRunReindexer, the CLI's runs reindex) repairs a
// truth item whose index key is not what its status wants (removed by hand;
// on a finished run, set by hand): a strongly consistent GetItem and, only
// then, one UpdateItem that sets or removes activePK and activeSK on condition
// that the item's version and data are the ones read. It writes nothing else:
// version, data (UpdatedAt), expiry and fences stay. Its write costs what the
// run write's index update costs (see the capacity lines in docs/benchmarks.md).
//
// What a reader may miss: a GSI is updated asynchronously after the write to
// the table commits, and DynamoDB offers no strongly consistent read of one.
// A run whose truth became unfinished (created, or put back from a finished
// status) less than the index's propagation delay before the Query of its
// shard (on AWS typically well under a second; on DynamoDB Local none) may be
// missing from that page. Nothing else: a run finished, expired or deleted is
// never shown (its truth is read), a status or UpdatedAt is never stale, and a
// run that stays unfinished for the whole paging (and became so before it, by
// more than the delay) appears exactly once, since its index key never changes
// while it is unfinished. That is the promise because the readers it serves
// look back: a stuck run (--older-than) and an orchestrator's in-flight runs
// after a crash were made unfinished long before the read; a caller that must
// see a run it just created has its RunID and reads it with GetRunState.
//
// Tables: CreateTable creates ACTIVE with a new table. A table made before
// this version lacks it: CreateTable accepts such a table as it is,
// EnsureActiveRunIndex adds the index (one UpdateTable; DynamoDB then builds
// it, on AWS minutes to hours for a large table), and until it is ACTIVE
// ListActiveRuns fails with an error wrapping ErrNoActiveRunIndex while run
// writes go on (they write the key attributes whether or not the index
// exists, so the runs written since this version are in the index once it is
// built). A run last written by an earlier version carries no key and is
// missing until it is written again, and one an earlier version finishes
// keeps a stale entry (skipped: its truth says finished): see the CHANGELOG's
// upgrade order (add the index, deploy every writer, then backfill). The stored format: the attributes above,
// the 16 shards and their names; changing them is a stored-format change.
//
// Cost on AWS (KEYS_ONLY: an index item is the table's and the index's keys,
// about 100 bytes plus DynamoDB's 100 of overhead): 1 WCU when a run enters
// the index (its first unfinished write) and 1 when it leaves (the write that
// finishes it); a write that changes neither its status class nor its key (a
// CAS from RUNNING to RUNNING) does not touch the index, since nothing
// projected changes. The truth item is about 20 bytes plus the RunID longer
// while unfinished. A page of ListActiveRuns costs 0.5 RCU per shard Query
// (eventually consistent; 8 for the 16) plus 1 RCU per truth read. A
// provisioned table needs write capacity on ACTIVE for 2 writes per run, or
// DynamoDB throttles the run writes themselves.
//
// # Fencing
//
// Writes through provider.Fenced (package fence) carry a lease's key and fence,
// and the item that stands for the written record remembers, for each lease key,
// the highest fence that wrote it, as the number attribute "f:{lease key}". A
// fenced write adds to the condition of that item, in the request it sends
// anyway, "attribute_not_exists(f) OR f <= :fence", and to its update "SET f =
// :fence": no extra round trip, and no extra item. The items, by write:
//
//	PutRunState, CompareAndSwapRunState,  the run's truth item (RUN#{run} STATE)
//	CreateRunState
//	PutRerun                              the rerun's truth item (RERUN#{rerun} STATE)
//	WriteCascadeMarker                    the marker's truth item (MARKER#{id} {date}#{schedule})
//	PutRunLog, PutReplay                  the entry's, the request's own item
//	AppendEvent                           the pipeline's event counter (EVENTSEQ), which the
//	                                      append's transaction moves anyway: the event log
//	PutLateArrival                        the list's fence item (FENCE#LATE#{date}#{schedule})
//
// A late arrival is a new item each time, which cannot see what its list
// remembers: every PutLateArrival, fenced or not, is one TransactWriteItems of
// its record and the list's fence item, an update that checks and sets the
// fence when fenced and, either way, gives the fence item the record's expiry
// unless it already expires later (or never): the list lives as long as its
// longest-lived record, and the fence item at least as long as the list,
// whichever write extended the list last (an unfenced one, or one by an
// instance with a longer retention). Before, an unfenced PutLateArrival was
// one PutItem that left the fence item to expire, and DynamoDB's TTL to delete
// it, while the list was live: a stale holder's write was then accepted
// (TestLateGuardOutlivesList, TestFencingWithTTLDeletion). When the fence item
// already outlives the record, the transaction's condition fails and a second
// request writes the record alone (fenced: with the fence item's check and
// fence, leaving its expiry); with one retention per table that happens only
// under clock skew between instances. The fence items of the other writes are the
// record's own item, so the fences live and expire with it (its exp and ttl);
// an expired item that DynamoDB has not deleted yet still remembers, which
// refuses more stale writes, never fewer. Events of one pipeline batch only
// with events of the same fence (or unfenced ones), as the counter checks one.
//
// The run, rerun and marker truth items, run logs and replays are written with
// UpdateItem (a transaction's Update), never PutItem, fenced or not: the
// update sets every attribute of the item's schema and removes the ones the
// record does not have, as a put would, but keeps the fence attributes, so an
// unfenced write neither checks nor resets what the item remembers (see package
// fence: unfenced writes pass). DynamoDB charges an update as a put (the larger
// of the item's sizes before and after, per 1 KB), so unfenced writes cost what
// they did; their requests carry no fence name, value or condition.
//
// A refused write fails its condition with the item's old image
// (ReturnValuesOnConditionCheckFailure ALL_OLD), which tells the fence from the
// write's own conditions: an error wrapping fence.ErrFenced names the newest
// fence. It is checked before a CAS's version and a create's existence (after
// the run's pipeline, as memory does); a CAS with a zero CreatedAt is refused
// from the GetItem it makes anyway, without a write. Lost replies keep the
// first attempt's outcome as they do unfenced (the SDK's idempotency token on
// transactions, the call tokens on CAS and create, the call's token on
// the counter and on every event, an equal fence passing on a retried single-item update). One case
// differs: when a newer fence writes the record between a lost reply and the
// SDK's retry, a transaction's retry still reports the first attempt's success
// (its idempotency token), but a PutRunLog's or PutReplay's retry is refused
// with ErrFenced although its first attempt landed, before the newer write
// superseded it (TestLostReplyTakeover).
//
// Capacity: the attribute adds 2 + len(lease key) bytes of name and a number
// to the item (about 25 bytes for a short key), which changes its write units
// only when it crosses a 1 KB boundary; on DynamoDB Local every fenced write
// consumes what its unfenced counterpart does (TestRoundTripBudget).
// PutLateArrival, fenced or not, is a transaction of 2 items at 2 units each
// per 1 KB (4 for a small record) where an unfenced one was a PutItem's 1: the
// price of a fence item that lives as long as the list (late arrivals are
// rare next to runs and events, so it is a small share of a pipeline's
// writes). A refused write is charged as a failed condition of the same write.
//
// # Across regions
//
// DynamoDB Global Tables replicate each item to the other regions
// asynchronously, last writer wins, and evaluate a condition or a transaction
// only in the region that receives it. Every guarantee above is a guarantee
// within one region:
//
//   - Holds with one writing region: all writers (orchestrators, lock and lease
//     holders, the CLI with --yes) use one region; the other regions' replicas
//     are readers that see each item within the replication delay (usually
//     under a second, with no bound), read-after-write only in the writing
//     region, and may see the items of one transaction arrive one by one.
//   - Breaks with writers in two regions: both can swap the same run from the
//     same version, create the same run, hold the same lock or lease at once
//     (with the same fence), take the same event or marker sequence number (one
//     record then overwrites the other: an event is lost), and the expiry and
//     lease checks read the item of their own region only. Nothing detects it.
//
// ReplicaRegions tells at start-up whether a table is replicated, so that a
// service can refuse one it has not been deployed for. The package does not
// refuse such tables itself (DescribeTable would cost every New a request and
// a permission that readers often lack). Multi-region strong consistency
// (MRSC) tables have not been tested; treat them as unsupported.
//
// # Round trips
//
// HTTP requests per call, as counted by the package's tests (without SDK retries).
// "page" means one more request per 1 MB of items read, or per page of expired items
// skipped; each such page asks for twice as many items as the one before, so a
// backlog of n expired items costs about log2(n) requests.
//
//	call                                   requests
//	-------------------------------------  ----------------------------------------------------
//	RegisterPipeline, DeletePipeline       1
//	GetPipeline, GetTrait, GetRunState     1
//	GetRunLog, GetRerun, GetReplay         1
//	GetReadiness, PutReadiness, PutTrait   1
//	PutRunLog, PutReplay, PutLateArrival   1 (fenced too; see Fencing)
//	ListPipelines, GetTraits, ListRuns     1 (+1 per page)
//	ListEvents, ReadEventsSince            1 (+1 per page; from a cursor, +1 per 1 MB of events
//	                                       only: the expiry check is in the same Query)
//	ListRunLogs, ListReruns, ListAllReruns 1 (+1 per page)
//	ListReplays, ListLateArrivals          1 (+1 per page)
//	ListCascadeMarkers                     1 (+1 per page)
//	ListActiveRuns                         16 Queries of ACTIVE (concurrent; +1 per shard page used up)
//	                                       + 1 GetItem per unfinished run read (16 in flight)
//	PutRunState, PutRerun                  1; 2 when CreatedAt/RequestedAt changed and the list copy is not
//	                                       where this instance last put it (see Capacity units), or
//	                                       a rerun's pipeline changed
//	CreateRunState                         1
//	CompareAndSwapRunState                 1; 2 when newState.CreatedAt is zero or not the stored one
//	AppendEvent                            1 when this instance made the pipeline's last append, else 2
//	                                       (a Query of the counter, then the transaction)
//	WriteCascadeMarker                     1 for a new marker or one this instance wrote last, 2 to
//	                                       rewrite one another instance rewrote since; +1 unless
//	                                       this instance made the last marker write (of any pipeline)
//	FollowEvents, WatchCascadeMarkers      1 per page read; caught up, 1 per poll (20 ms doubling
//	                                       to 1 s by default, see WithPollInterval)
//	AcquireLock, ReleaseLock               1
//	AcquireLease, RenewLease, ReleaseLease 1
//	GetLockInfo                            1
//	ListLocks                              1 per 1 MB of the whole table (a Scan: see Locks above)
//	Ping                                   1
//	Start, Stop                            0
//
// Lost races add one request each (a CAS that loses returns (false, nil) without
// one). Bad input and calls after Stop make no request.
//
// # Capacity units
//
// What each call consumes on AWS (on-demand: write and read request units;
// provisioned: WCU and RCU), for items up to 1 KB written and 4 KB read (a lock
// item is while its key and owner identity take at most about 870 bytes), by
// AWS's rules: 1 WCU per item written, 2 per item in a transaction; 1 RCU per
// strongly consistent read, half for GSI1 (eventually consistent). The package's
// TestRoundTripBudget measures every call on DynamoDB Local with
// ReturnConsumedCapacity and fails when one consumes more than its budget
// (capacityBudget). Where Local's figures are not AWS's, the test counts as
// AWS charges: 2 units per transaction action (Local reports 4 for any small
// transaction) and the refused attempts (Local reports none).
//
//	call                                   WCU / RCU  why not less
//	-------------------------------------  ---------  -----------------------------------------------
//	PutTrait, PutReadiness, PutRunLog      1          the floor: one PutItem
//	PutLateArrival                         4          a transaction with the list's guard item, which
//	                                                  must live as long as the list (see Fencing)
//	RegisterPipeline, DeletePipeline,      2          the item and its GSI1 copy (ListPipelines,
//	PutReplay                                         ListReplays across pipelines)
//	AcquireLock, ReleaseLock               1          the floor: one conditional UpdateItem that
//	                                                  stamps the call's token (was 2: a one-action
//	                                                  transaction, for its idempotency token)
//	AcquireLease, RenewLease, ReleaseLease 1          the floor (ReleaseLease was 2, as ReleaseLock)
//	PutRunState, CreateRunState,           4; 5       a transaction of the run and its list copy: the
//	CompareAndSwapRunState                 when the   copy is what keeps ListRuns a strongly consistent
//	                                       run enters Query in creation order (a GSI would be eventual);
//	                                       or leaves  +1 for the index ACTIVE's entry when the run
//	                                       ACTIVE     becomes unfinished or finished (Active runs)
//	AppendEvent                            4          a transaction of the event and the pipeline's
//	                                                  counter item, which hands out gap-free numbers
//	                                                  and outlives the log (see below); +1 RCU when
//	                                                  this instance did not make the last append
//	PutRerun                               5          the run's pattern (4) and the truth's GSI1 copy
//	WriteCascadeMarker                     8; 10 to   a transaction of the marker, its by-time copy, the
//	                                       rewrite    marker-log entry and counter; a rewrite also deletes
//	                                                  the old copy. The copy moves, and only the stored
//	                                                  marker names the old one: an instance remembers
//	                                                  where it put the copies of its last 5,000 records
//	                                                  at least, so a rewrite of a marker another instance
//	                                                  rewrote since costs 18 (a refused 4-action try whose
//	                                                  refusal names the copy, then the 5-action one; a
//	                                                  read first would cost every new marker a round
//	                                                  trip). A run's or rerun's copy moving (a changed
//	                                                  CreatedAt/RequestedAt) works alike: 6, or 10
//	Get*, GetTraits, List*(one page)       1 / 4 KB   strongly consistent; GSI1 lists 0.5
//	ReadEventsSince, GetLockInfo           1 / 4 KB
//	ListActiveRuns (one page)              8 + 1 per  16 shard Queries of ACTIVE (0.5 each) and the truths
//	                                       run read
//
// A fenced write costs what the unfenced one does. A
// refused conditional write is charged too (1 WCU; a transaction, 2 per item),
// and so is a lost race (a CAS or create that loses, an append or marker write
// whose number another instance took first). A retry after a lost reply is a
// second request and is charged again.
//
// A reference workload: 1,000 pipelines, 10 runs a day each (300,000 runs in a
// 30-day month); per run CreateRunState, 3 CompareAndSwapRunState and 3
// GetRunState, 50 AppendEvent, 10 PutTrait and one GetTraits, one PutRunLog,
// one lock (AcquireLock, ReleaseLock) and one lease (AcquireLease, RenewLease,
// ReleaseLease); on-demand in us-east-1 at $0.625 per million write and $0.125
// per million read request units (Standard table class, since November 2024;
// check the AWS pricing page for yours):
//
//	                         WRU per run  RRU per run  per month
//	before (locks as tx)     235          4            70.5 M WRU $44.06 + 1.2 M RRU $0.15 = $44.21
//	after (locks 1 WCU)      232          4            69.6 M WRU $43.50 + 1.2 M RRU $0.15 = $43.65
//	with ACTIVE              234          4            70.2 M WRU $43.88 + 1.2 M RRU $0.15 = $44.03
//
// ACTIVE adds 2 WRU a run (the create enters the index, the CAS that finishes
// it leaves; the CAS between changes nothing projected): +$0.38 a month, and
// its storage (the runs unfinished at one time, about 200 bytes each: 1,000
// of them 0.2 MB) is not worth a cent. A stuck-run check once a minute with
// nothing stuck costs 8 RRU a call, 0.35 M RRU a month: +$0.04. The scan it
// replaces read every pipeline's newest runs: at 1,000 pipelines 1,001
// strongly consistent Queries of up to 1,000 runs each, hundreds of RRU a call.
//
// Events are 200 of the 232 write units a run costs. The counter item is what
// makes a lone event 4 units: a transaction of two items; the counter, which
// never expires, is what makes "a number is never committed twice" a property
// of one item. A pipeline whose events come from many instances at the same
// moment does better to send them through one (group commit: about 2 units an
// event).
//
// # Signals
//
// What only the provider knows goes to WithMeterProvider (default: the global meter
// provider) and WithLogger (default: none), with db.system.name aws.dynamodb and
// db.operation.name the method (AppendEvent, CreateRunState...): each retry
// (pipestate.retries; a Debug record and an event on the caller's span) and each
// give-up (pipestate.giveups; a Warn record; the call fails), by
// pipestate.retry.reason:
//
//	transaction_conflict  a transaction cancelled by an overlapping one, retried after a
//	                      backoff (a give-up after 64 attempts: provider.ErrContention)
//	throttled             a request the SDK's retryer retried after
//	                      ProvisionedThroughputExceeded, ThrottlingException or
//	                      RequestLimitExceeded (a give-up: throttled on its last attempt,
//	                      the SDK's error returned), or a transaction cancelled for throttling
//	sequence_race         an event batch or marker-log entry whose number another
//	                      instance took first, retried at once (a give-up after 1,000)
//	cas_conflict          a CompareAndSwapRunState whose run a concurrent put moved to
//	                      another CreatedAt (its list copy), retried at once with the
//	                      stored one (a give-up after 1,000: provider.ErrContention)
//
// and the size of every group commit of events (pipestate.batch.size, AppendEvent),
// and each stored record a listing, follower or watcher skipped because it does
// not decode (pipestate.corrupt.records by pipestate.record.kind; a Warn record
// naming the item and a pipestate.corrupt span event).
//
// # Corrupt records
//
// An item whose attributes do not unmarshal (a number where a string belongs, a
// data attribute of another type, compressed data that does not inflate, an
// expiry or number that is no int64, an event's or marker-log entry's seq that
// is not its sort key's number) or whose data does not decode as its record
// follows the provider rule (see package provider), whichever attribute it is: a Get* returns a *provider.CorruptError naming the record and the
// item ("dynamodb table T item RUN#r-1 STATE"); a query decodes each item as it
// reads it, so a List*(limit) skips, reports and reads on past a corrupt item
// and returns limit good records, and followers and watchers move their
// sequence number past it: an entry of a numbered log keeps its number, its
// sort key's, so a corrupt one never makes a cursor look expired. A CompareAndSwapRunState with a zero CreatedAt, which
// must read the stored run, fails with the run's *provider.CorruptError. A
// pipeline's event counter (EVENTSEQ) whose seq is not a number fails every
// AppendEvent of that pipeline with a *provider.CorruptError naming it, and
// writes nothing: the next number can no longer be proven unused. Its readers
// are unaffected. Repair it by setting seq to the newest event's number (the
// sort key of the last EVENT# item), never lower.
// Throttles are seen by a middleware each request carries
// (internal/ddbx.ThrottleSignals), so an API wrapper must pass optFns on to keep
// them. Package observe adds spans and call metrics around any provider; its doc
// lists every instrument.
//
// # DynamoDB Streams
//
// The table's stream (NEW_AND_OLD_IMAGES: CreateTable and the snippets below
// set it) serves a router that cannot hold WatchCascadeMarkers open, such as a
// Lambda function: package ddbstream decodes its records into typed changes
// through this package's own item decoding, so the item format stays this
// package's. docs/aws-lambda.md sets it up from table to router.
//
// # Creating the table in production
//
// CreateTable is convenient for development and tests. For production, the same
// table in CloudFormation:
//
//	PipestateTable:
//	  Type: AWS::DynamoDB::Table
//	  Properties:
//	    TableName: pipestate
//	    BillingMode: PAY_PER_REQUEST
//	    AttributeDefinitions:
//	      - {AttributeName: PK, AttributeType: S}
//	      - {AttributeName: SK, AttributeType: S}
//	      - {AttributeName: GSI1PK, AttributeType: S}
//	      - {AttributeName: GSI1SK, AttributeType: S}
//	      - {AttributeName: activePK, AttributeType: S}
//	      - {AttributeName: activeSK, AttributeType: S}
//	    KeySchema:
//	      - {AttributeName: PK, KeyType: HASH}
//	      - {AttributeName: SK, KeyType: RANGE}
//	    GlobalSecondaryIndexes:
//	      - IndexName: GSI1
//	        KeySchema:
//	          - {AttributeName: GSI1PK, KeyType: HASH}
//	          - {AttributeName: GSI1SK, KeyType: RANGE}
//	        Projection: {ProjectionType: ALL}
//	      - IndexName: ACTIVE
//	        KeySchema:
//	          - {AttributeName: activePK, KeyType: HASH}
//	          - {AttributeName: activeSK, KeyType: RANGE}
//	        Projection: {ProjectionType: KEYS_ONLY}
//	    TimeToLiveSpecification: {AttributeName: ttl, Enabled: true}
//	    StreamSpecification: {StreamViewType: NEW_AND_OLD_IMAGES}
//	    PointInTimeRecoverySpecification: {PointInTimeRecoveryEnabled: true}
//
// and in Terraform:
//
//	resource "aws_dynamodb_table" "pipestate" {
//	  name             = "pipestate"
//	  billing_mode     = "PAY_PER_REQUEST"
//	  hash_key         = "PK"
//	  range_key        = "SK"
//	  stream_enabled   = true
//	  stream_view_type = "NEW_AND_OLD_IMAGES"
//
//	  attribute {
//	    name = "PK"
//	    type = "S"
//	  }
//	  attribute {
//	    name = "SK"
//	    type = "S"
//	  }
//	  attribute {
//	    name = "GSI1PK"
//	    type = "S"
//	  }
//	  attribute {
//	    name = "GSI1SK"
//	    type = "S"
//	  }
//	  attribute {
//	    name = "activePK"
//	    type = "S"
//	  }
//	  attribute {
//	    name = "activeSK"
//	    type = "S"
//	  }
//
//	  global_secondary_index {
//	    name            = "GSI1"
//	    hash_key        = "GSI1PK"
//	    range_key       = "GSI1SK"
//	    projection_type = "ALL"
//	  }
//
//	  global_secondary_index {
//	    name            = "ACTIVE"
//	    hash_key        = "activePK"
//	    range_key       = "activeSK"
//	    projection_type = "KEYS_ONLY"
//	  }
//
//	  ttl {
//	    attribute_name = "ttl"
//	    enabled        = true
//	  }
//
//	  point_in_time_recovery {
//	    enabled = true
//	  }
//	}
//
// # Reads and credentials
//
// Reads never write: every read method (the Get* and List* methods,
// ReadEventsSince, FollowEvents, WatchCascadeMarkers, GetLockInfo) sends only
// GetItem and Query, ListLocks only Scan, and Ping only DescribeTable; expired
// items are filtered out, never deleted (DynamoDB's TTL deletes them). So
// credentials whose IAM policy allows those four actions read everything, and WithReadOnly makes the
// writes fail at once with provider.ErrReadOnly instead of AccessDeniedException
// from the service. TransactWriteItems is authorized by the per-item actions of
// its items (PutItem, UpdateItem, DeleteItem). With REGION, ACCOUNT and TABLE
// filled in (TestReadsWithReadCredentials holds the actions to the calls the
// provider makes), a reader:
//
//	{
//	  "Version": "2012-10-17",
//	  "Statement": [{
//	    "Effect": "Allow",
//	    "Action": ["dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:Query", "dynamodb:Scan"],
//	    "Resource": ["arn:aws:dynamodb:REGION:ACCOUNT:table/TABLE", "arn:aws:dynamodb:REGION:ACCOUNT:table/TABLE/index/GSI1", "arn:aws:dynamodb:REGION:ACCOUNT:table/TABLE/index/ACTIVE"]
//	  }]
//	}
//
// and a writer:
//
//	{
//	  "Version": "2012-10-17",
//	  "Statement": [{
//	    "Effect": "Allow",
//	    "Action": ["dynamodb:DeleteItem", "dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:Scan", "dynamodb:UpdateItem"],
//	    "Resource": ["arn:aws:dynamodb:REGION:ACCOUNT:table/TABLE", "arn:aws:dynamodb:REGION:ACCOUNT:table/TABLE/index/GSI1", "arn:aws:dynamodb:REGION:ACCOUNT:table/TABLE/index/ACTIVE"]
//	  }]
//	}
//
// CreateTable (and 'pipestate admin create-tables') also needs, on the table's
// ARN only, dynamodb:CreateTable, DescribeTable, DescribeTimeToLive and
// UpdateTimeToLive; a process that only opens the provider does not.
// EnsureActiveRunIndex needs dynamodb:DescribeTable and UpdateTable on it.
package ddbprovider

// Layout, the same in every provider backend: provider.go (type, New, options,
// lifecycle), pipelines.go (+ traits, readiness), runs.go (+ CAS), events.go,
// records.go (run logs, reruns, replays, late arrivals, cascade markers), locks.go
// (+ leases). Support: item.go (the stored item and its encoding), io.go (keys,
// reads, queries, transactions), table.go (the table), image.go (item images for
// package ddbstream).
