// Package redisprovider is the Redis backend of pipestate: a provider.Provider (with
// provider.Leaser, provider.CascadeReader, provider.RunCreator,
// provider.EventFollower, provider.MarkerWatcher, provider.LockInspector and
// provider.LockLister) over any
// goredis.UniversalClient — a standalone *goredis.Client or a
// *goredis.ClusterClient. It meets every rule of the semantics table in package
// provider and passes providertest.Run on miniredis, on a real server and on a
// three-master Redis Cluster.
//
// CreateRunState stores a run only if its RunID is new, with PutRunState's steps
// (see "Cross-slot writes" and "Retries"); FollowEvents and WatchCascadeMarkers
// block on a stream with XREAD, the pipeline's events or the marker log of every
// pipeline (see "Following").
//
//	c := goredis.NewClient(&goredis.Options{Addr: "localhost:6379"})
//	p, err := redisprovider.New(c, redisprovider.WithKeyPrefix("orders"))
//	if err != nil { ... }
//	if err := p.Start(ctx); err != nil { ... } // preloads the Lua scripts
//	defer p.Stop(ctx)                          // leaves c open: it is yours
//	ok, err := p.CompareAndSwapRunState(ctx, runID, 3, next)
//
// # Guarantees
//
// Every change of more than one key that lives in one hash slot is one Lua script
// (scripts in lua/*.lua, embedded, run with EVALSHA and an EVAL fallback on
// NOSCRIPT; the scripts that only read run with EVALSHA_RO and EVAL_RO, see
// "Reads and credentials"); nothing reads in Go to decide what to write where a
// script can decide.
// No write uses MULTI/EXEC, which go-redis does not retry after a lost reply. The
// changes that span slots are listed under "Cross-slot writes": they are ordered so
// that a crash between their steps never makes anything wrong visible, and readers
// that may write repair what such a crash leaves behind (WriteCascadeMarker's two steps are
// ordered so that a crash leaves at worst a delivery without its marker, see
// "Following").
//
// Errors: bad input wraps provider.ErrInvalidArgument and writes nothing; a value
// whose JSON is longer than the WithMaxValueSize limit (default 1 MiB) wraps
// provider.ErrTooLarge and writes nothing; client and network errors are returned
// wrapped with %w (errors.As reaches go-redis's types) and never swallowed;
// goredis.Nil never leaks (a missing entity is (nil, nil)); a cancelled context
// returns an error for which errors.Is(err, context.Canceled) holds (ctx.Err()
// itself when the call had sent nothing yet). A provider opened WithReadOnly
// refuses every write with an error wrapping provider.ErrReadOnly. After Stop
// every call returns an error wrapping provider.ErrClosed, and every follower and
// watcher ends with it at once. Stop never closes the client handed to New unless
// WithCloseClient is given. Every method checks, before any I/O, in the order of
// the provider contract ("opening order" in package provider): stopped
// (ErrClosed), a done context (ctx.Err()), a write on a read-only provider
// (ErrReadOnly), then its arguments in order (ErrInvalidArgument), the encoded
// size of a written value (ErrTooLarge) last.
//
// # Key schema
//
// P is the key prefix (WithKeyPrefix, default "pipestate"; it cannot hold '{' or
// '}'). IDs never hold ':', '{', '}' or NUL, so joining them with ':' and NUL is
// injective. Every key of one pipeline carries the hash tag {pipelineID}; the other
// tags all contain ':' and so never equal a pipeline's.
//
//	key                                      type    holds
//	---------------------------------------  ------  ----------------------------------
//	P:{pid}:config                           hash    config: s seq, m member, p, j JSON
//	P:{:pipelines} + :ids                    zset+h  all pipelines (member pid)
//	P:{pid}:traits                           hash    trait type -> "<exp µs>|<JSON>"
//	P:{pid}:traits:exp                       zset    trait type, scored by exp µs
//	                                                 (+inf: never); the live ones
//	                                                 are read through it
//	P:{pid}:readiness                        string  readiness JSON, PX readiness TTL
//	P:{pid}:events                           stream  e event JSON, p ID before it;
//	                                                 ID = cursor
//	P:{run:<runID>}                          hash    run: s, m, p, v version, c, j,
//	                                                 x expiry µs; PX retention+1m
//	P:{pid}:runs + :ids + :exp               zset+h  runs (timeKey(CreatedAt)+runID);
//	                                         +zset   :exp: run ID by expiry µs
//	P:{pid}:runlogs, P:{pid}:runlogs:order   hash+z  run logs by date NUL schedule:
//	  + :order:exp                           +zset   "<exp µs>|<JSON>"; :exp by expiry
//	P:{:active} + :ids + :exp                zset+h  unfinished runs (member runID)
//	P:{rerun:<rerunID>}                      hash    rerun: s, m, p, j, x; PX
//	P:{pid}:reruns + :ids + :exp             zset+h  reruns (timeKey(RequestedAt)+id)
//	P:{:reruns} + :ids + :exp                zset+h  all reruns, same members
//	P:{pid}:replay:<date>:<schedule>         hash    replay: s, m, p, j, x; PX
//	P:{:replays} + :ids + :exp               zset+h  all replays (timeKey(CreatedAt)+
//	                                                 pid:date:schedule)
//	P:{pid}:late:<date>:<schedule>           list    "<exp µs>|<JSON>", appended; PX
//	P:{pid}:markers, P:{pid}:markers:order   hash+z  markers by date NUL schedule,
//	  + :order:exp                           +zset   scored by WrittenAt in µs;
//	                                                 values and :exp as run logs
//	P:{:markers}                             stream  the marker log: every marker
//	                                                 write (m JSON, p ID before it)
//	P:{lock:<escaped key>}                   string  "lock:<owner>\n<nonce>" or
//	                                                 "lease:<token>", PX ttl
//	P:{lock:<escaped key>}:fence             string  INCR fence counter, no TTL
//	P:{pid}:fences                           hash    fence memory of the pipeline's run
//	                                                 logs, markers, replays, late
//	                                                 arrivals and events: lease key ->
//	                                                 highest fence (see "Fencing")
//	P:{run:<runID>}:fences,                  hash    fence memory of one run, one
//	  P:{rerun:<rerunID>}:fences                     rerun; a memory's TTL is the
//	                                                 longest of the records it
//	                                                 guards (see "Fencing")
//	<truth, lock, stream or list key>        string  a write's outcome, kept for a
//	  :call:<nonce>                                  retry of the same call; PX 2m
//
// timeKey is a 24-hex-digit encoding whose byte order is time order to the
// nanosecond (Unix seconds with the sign bit flipped, then nanoseconds), so sorted
// sets of score 0 order by time and then by ID, exactly. A lock key is free-form, so
// its tag is the key with '%', '{' and '}' percent-escaped: injective, and the lock
// and its fence counter and call markers share a slot. A call marker is named by
// the key the call writes (a record's truth, a lock key) and the call's nonce (hex),
// so it shares that key's slot and never equals another key of the schema.
//
// # Retention
//
// WithRetention (default provider.DefaultRetention(): 30 days) sets how long runs,
// run logs, reruns, replays, late arrivals and cascade markers are kept after their
// last write; its Events and MarkerLog fields do not apply here, as event streams
// and the marker log are kept by count (WithMaxEvents, WithMaxMarkerWrites): a
// stream's entry IDs are the server's time, and the "no gaps" rule needs the
// stream's own trimming. Pipeline configs and traits are not retained (traits have
// their ttl); a deleted pipeline's tombstone (its config hash's sequence) expires an
// hour after the delete; fence counters never expire (a fence must never repeat),
// and call markers after 2 minutes.
//
// Each record carries its expiry, in Unix µs by the writer's clock, in the same
// script as the write: the x field of a run, rerun or replay hash (set by
// record_put.lua and run_cas.lua, so a CAS restarts it too), the "<exp µs>|"
// prefix of a run log's or marker's hash value (slot_put.lua) and of each late
// arrival (append_once.lua). Every read and every script judges it by the
// provider's clock, at microsecond granularity: a record is expired when now >=
// its expiry, exactly the instant traits use; the key or list also gets a server
// TTL (PEXPIRE) of the retention plus a minute, so the server deletes it after
// that without any read, and never before the provider's clock says it expired
// (as long as the clocks agree within that minute). An expired run is missing to
// every script: record_put.lua's create mode writes over it (the run starts again
// at the version given, with a new sequence), its strict mode lets it change
// pipeline, and run_cas.lua returns 0.
//
// Indexes: a run log or marker hash has an expiry set beside it (field by expiry);
// each slot_put.lua first removes up to 10 records it lists as expired, so the
// hash holds no more expired records than its writes left behind, and the three
// keys get the server TTL of their longest-lived record. Each cross-slot list (a
// pipeline's runs and reruns, the global reruns and replays) has an expiry index
// (ID by the expiry its last list set saw): the last step of PutRunState,
// CreateRunState, PutRerun and PutReplay also reads (in the same pipeline) up to
// 10 IDs of each of its lists that the index lists as expired, and when there are
// some, reads their truths and drops the entries whose truth is missing or
// expired, or moves an ID whose truth a CAS kept alive to its new expiry (two
// round trips more, only then). A late-arrival append pops up to 100 expired
// elements from the front of its list. Reads never prune: they filter (the list
// readers skip an expired truth as a missing one; zlist.lua skips expired values).
// Records written before this version carry no expiry and are kept until they are
// written again (see the CHANGELOG).
//
// # Cross-slot writes
//
// A run is read by its ID alone, so its truth is tagged by run ID and its pipeline's
// list lives in another slot; likewise reruns, and the global lists (pipelines,
// reruns, replays) are one slot each. These, and WriteCascadeMarker's append to
// the marker log (see "Following"), are the only writes that are not one atomic
// step. Every list is a sorted set plus a hash id -> "<seq>|<member>"; each
// truth carries a sequence bumped by every write. A write:
//
//  1. adds a provisional list entry "<seq>@<ms>|<member>", stamped with the
//     writer's clock, where the ID has none, and stamps the entry it has
//     otherwise ("<seq>#<ms>|<member>" when settled; the later stamp stays):
//     the write relies on it (one pipelined round trip);
//  2. writes the truth with one script, which returns the new sequence (and, for
//     runs, refuses a RunID stored under another pipeline; CreateRunState's
//     refuses any stored RunID);
//  3. sets each list entry to (sequence, member), clearing its own stamp, or
//     removes it when the record left that list — only if the list has not seen a
//     later sequence, and a removal only if no write stamped the entry in the
//     last 5 minutes (provisionalGrace): the removal's sequence may predate the
//     truth of a write that relied on the entry, whose own step 3 may fail, and
//     readers only repair entries they find. A refused write
//     instead removes the provisional entry it added, only when the stored record
//     belongs to another pipeline: under the same pipeline the entry is the stored
//     record's (a concurrent creator of the same run found it and added none), and
//     that writer's step 3 or a reader's repair settles it.
//
// A list shows an entry only if it is settled (set by a step 3 or a repair, not
// provisional) and its truth exists and wants exactly that member in that list, so
// a crash between steps never shows anything wrong; a run or rerun never lacks its
// entry, because step 1 precedes the truth. A reader reads each page of entries
// (member and entry) in one read-only script, then the truths. An entry it skips
// it repairs, unless the provider is read-only (see "Reads and credentials"):
// with the sequence read from the truth when the truth exists (the sequence guard
// makes repairs and late writers commute), which also settles the provisional entry
// of a writer between steps 2 and 3; and, when the truth is missing, by deleting the
// entry only if it is still exactly the one the reader observed before it read the
// truth and, if stamped, stamped more than 5 minutes (provisionalGrace) ago by
// the reader's clock: its writer may still be about to write the truth (go-redis's
// timeouts and retries end far sooner), while a crashed writer's entry goes; a
// repair that removes an entry whose truth left the list waits for the same. A
// listing re-reads, at most twice, when a repair settled or moved an entry.
//
// So a single-page listing is a snapshot of the settled entries when it read the
// index: a record is listed from the moment its entry settles (within its write),
// and from then on by every later listing; a record whose truth is written after a
// listing read the index is not in that listing, even if it exists by the time the
// listing reads the truths.
//
// One List* call returns each record at most once (an ID met again under the member
// it moved to during the call is skipped), and every record that exists with an
// unchanged sort key for the whole call is in it, within limit: pages follow each
// other by an exclusive bound on the member, so entries that move or vanish never
// shift the others. A record whose sort key changes during the call may appear at
// its old or its new place, or not at all.
// CompareAndSwapRunState never changes CreatedAt or the pipeline, so it touches only
// the run's own key in its pipeline's list, and list reads always return the latest
// CAS because every run they return is read from its truth. Lists read the truths
// with one pipeline; on a cluster that is one round trip per node, sent concurrently.
//
// # Active runs
//
// The active-runs index (provider.ActiveRunLister) is one more list of these,
// P:{:active} + :ids, member the RunID. It spans slots on every deployment (a
// standalone server runs the same steps: one code path), so it is not atomic
// with the run write; what is promised instead: ListActiveRuns shows a run only
// when its truth, read after the entry, is live and unfinished and matches the
// filter, and every run whose truth is unfinished has an entry from before its
// truth was written, so a crash between the steps never hides one. A stale entry
// (a finished or expired run, a provisional entry of a refused write) is skipped
// and repaired by a writing reader, dropped by writes' pruning when expired; a
// read-only reader skips it and writes nothing.
//
// The protocol keeps that with an index step only when a write may be the one
// that makes the run unfinished or finished:
//
//   - PutRunState and CreateRunState take the three steps of every list (an
//     unfinished run adds or stamps its entry before the truth and sets it
//     after; a finished one removes it after the truth, guarded by the run's
//     sequence, which every write, CAS included, bumps in its script). An
//     unfinished truth is written with field a = its version v: the mark that
//     its entry was added before it.
//   - CompareAndSwapRunState to an unfinished status swaps in one script that
//     first checks the mark: when the stored run has a = v (its last write, by
//     this version, was unfinished), its entry is there and the swap writes the
//     new mark and takes no index step (1 round trip). Otherwise (the run was
//     finished, or last written by an older version, whose CAS bumps v but not
//     a) the script writes nothing and answers so, and the CAS adds the entry
//     (step 1), swaps and sets the entry (4 round trips, only on a reopen).
//   - CompareAndSwapRunState to a finished status swaps, clearing the mark,
//     then removes the entry (2 round trips).
//
// Invariant: a run whose truth bears a = v has an entry that no removal takes
// while the truth stays unfinished. The entry was added or stamped before the
// first unfinished truth of the run's current unfinished stretch; a removal
// carries the sequence of a finished truth, so it is older than that stretch
// and is refused by the sequence the entry was set to, or, while the entry is
// still provisional or stamped (that write's last step was lost), by the stamp,
// for provisionalGrace, as for every list (a removal is never that late:
// go-redis's timeouts bound it far below). A reader's drop needs a missing
// truth, which a CAS never leaves. Expiry needs no step either: pruning reads
// the truth before it drops an entry and moves the entry's expiry to the one a
// CAS gave the truth (lua/idx_expired.lua). TestActiveCASTrustsOnlyItsOwnMark
// checks that a mark a later write did not renew is not trusted.
//
// ReindexRun (provider.ActiveRunReindexer, the CLI's runs reindex) repairs one
// run's entry without writing the run (v, j, x and UpdatedAt stay): it reads
// the truth, then the mark a, the entry and the entry's member in the order (2
// round trips), and stops when a settled entry in the order and a = v agree
// with an unfinished truth. Otherwise it takes the three steps of a write
// whatever a says (so a lost entry or member of a marked run is restored): the
// entry is added or stamped, lua/run_mark.lua sets a = v only if the run's
// sequence s is still the one read (a run that changed is read again), and the
// entry is settled with that sequence, its member put back in the order (3
// more). For a finished or expired truth it removes the entry, guarded by the
// sequence read. For a missing truth it reads the truth again, after the entry
// (a run created between the first read and the entry's would otherwise lose
// its entry to the drop, and its CASes, trusting a, would never restore it),
// and drops exactly the entry read, as a reader's repair does.
// The mark is set only after the entry exists, so the invariant above holds.
//
// A page of ListActiveRuns costs 2 round trips (the index page, the truths: per
// node on a cluster) per 256 unfinished runs read, whatever the number of
// pipelines or finished runs (TestActiveRunsCostIndependentOfPipelines; figures
// at 100,000 pipelines in docs/benchmarks.md). A run last written by a version
// before this one has no entry until its next write (see the CHANGELOG's
// upgrade order).
//
// # Fencing
//
// The writes that take a fence (see package fence: PutRunState,
// CompareAndSwapRunState, CreateRunState, AppendEvent, PutLateArrival, PutRunLog,
// WriteCascadeMarker, PutRerun, PutReplay) check it in the script that writes,
// with no extra round trip and no cross-slot key: every call of these writes,
// fenced or not, passes its record's fence memory as one more key and the
// lease key and fence as two more arguments ("" and "" unfenced), and the
// script (the rule's one copy, internal/redisx's fence.lua, shared with the
// stores, before its body) refuses a fenced write, writing nothing, when the
// memory holds a higher fence for that lease key, and otherwise, once it wrote,
// raises the memory to the write's fence. An unfenced call never reads a
// memory, creates none and neither checks nor resets what a record remembers;
// it only extends an existing memory's TTL (see Lifetime), in the same script
// call, so it costs the round trips it did before fencing.
//
// The memory is one hash per hash tag, in the tag of the records it guards: a
// run's (P:{run:<runID>}:fences), a rerun's, and one per pipeline
// (P:{pid}:fences) for its run logs, cascade markers, replays, late arrivals and
// events. So a pipeline's records of those kinds share one memory: a fence below
// the newest one its lease key wrote anywhere among them is refused on all of
// them, which refuses more stale writes than a memory per record, never fewer
// (package fence allows it). Fences are compared as decimal strings, exactly.
//
// Order in each script: the call's own marker first (a retry after a lost reply
// reports its first attempt's outcome, see "Retries"), then PutRunState's refusal
// of another pipeline's run and CompareAndSwapRunState's of a missing run or
// another pipeline (as in every backend), then the fence, then what the write
// checks itself (CAS's version, CreateRunState's existence: a stale holder gets
// ErrFenced, not false). A fenced PutRunLog or cascade marker write keeps a call
// marker (2 minutes), which an unfenced one does not need, so that its retry after
// a newer holder wrote reports its first attempt's success and does not overwrite
// the newer write; a refused write keeps no marker, so its retry is refused again.
// A refused PutRunState, CreateRunState, PutRerun or PutReplay undoes the
// provisional list entry its first step added when the record is stored under
// another pipeline (as a strict refusal does) and otherwise leaves it to readers'
// repairs. A refused WriteCascadeMarker has already appended its write to the
// marker log (another slot, the first of its two steps): watchers see it, a
// phantom as after a crash between the steps, with no marker stored.
//
// Lifetime: every write that writes one of the records a memory guards, fenced
// or not, gives the memory the record's server TTL (retention + a minute; for a
// late arrival the list's, which may be longer than the element's) when that
// is longer than the memory's own, and removes the memory's TTL (PERSIST) when
// the record never expires (an event stream, or retention 0); nothing shortens
// it. Any write that extends a record's life extends its memory with it, in
// the same script: an unfenced rewrite by an instance of this version (the
// CLI's run fail, a plain PutRunState) or a write by an instance with a longer
// retention, so a stale holder never meets a live record whose memory expired
// (TestFenceMemoryTTL, TestFenceMemoryOutlivesRewrite,
// TestFenceMemoryLongerRetention). An older version runs its own scripts,
// whose unfenced writes leave the memory alone: see the CHANGELOG's note on
// fence memories for a rolling deploy. An unfenced write creates no memory (a
// record no fence wrote needs none), and an unfenced event append leaves it
// alone (a memory that guards a stream never expires already). A refused write
// leaves it as it is. A memory holds one field per lease key that wrote under
// its tag.
//
// # Clocks
//
// The provider's clock (WithClock, default time.Now) fills timestamps (CreatedAt,
// UpdatedAt, Timestamp, RequestedAt, DetectedAt, WrittenAt), sets trait and lease
// ExpiresAt, and judges trait expiry: trait expiry is stored in the traits hash
// and its expiry index, filtered on every read, and pruned by PutTrait only, at
// most 100 per call: reads never write. GetTrait reads its one field; GetTraits
// reads a hash of up to 256 fields whole, with one HSCAN, and a larger one
// through the index with a read-only script, which reaches only the traits live
// by the index, so expired ones cost it nothing. Instances
// should run NTP-synchronised clocks (skew shifts a trait's expiry by the skew).
// A trait is expired when the clock reads its ExpiresAt or later; so is a
// retained record at its expiry (see "Retention"), judged the same way by the
// scripts and the reads, at microsecond granularity. Locks, leases and
// readiness results are keys with a server-side TTL (PX, internal/redisx.Millis)
// and expire by the server's millisecond clock at its first reading >= the
// write's + ttl, never later; when the clocks agree that is less than 1 ms before
// the ExpiresAt the call returned (now + ttl by the provider's clock, taken before
// the call) at the earliest, as the server keeps time in whole milliseconds. WrittenAt of a cascade
// marker is truncated to the microsecond, the precision of its sort score.
//
// # Retries
//
// go-redis retries a command after a network error (Options.MaxRetries), so a
// command whose reply was lost may run twice, and other clients' writes may land
// between the two. Every write is safe under such a retry: TestLostReplyTable drops
// the reply of each write method's requests, and TestRetryAfterInterleaving also
// runs other instances' writes before the retry (on miniredis, a real server and a
// cluster). Each write carries a nonce unique to the call, and the script that
// applies it checks the call's own marker first:
//
//   - PutRunState, CreateRunState, RegisterPipeline, PutRerun, PutReplay (the
//     truth step) and DeletePipeline keep their outcome (sequence, previous
//     pipeline) in the call's marker for 2 minutes, so a retry returns it and
//     writes nothing more: a CAS, put or delete that followed the first attempt
//     stays, and a retried CreateRunState reports the creation of its first
//     attempt (a refusal keeps no marker: its retry is refused again). Their list
//     steps are idempotent under the sequence guard;
//   - CompareAndSwapRunState keeps a marker after a swap, so a retry reports true
//     even when another write followed it, and swaps nothing more;
//   - AcquireLock and AcquireLease keep a marker after an acquisition (a lease's
//     holds its fence), so a retry reports the first attempt's lock or lease and
//     takes nothing more, even if the lock was released by another call of the
//     same owner, or the lease expired, and the key taken since; a retried
//     AcquireLease draws no second fence;
//   - ReleaseLock and ReleaseLease keep a marker after a release, so a retry
//     reports nil and frees nothing more: not a hold the same owner took since;
//   - AppendEvent and PutLateArrival set their marker (SET NX) before they
//     append, so each call appends exactly once (fenced: only once the fence
//     admitted the append, so a refusal's retry is refused again);
//   - a fenced write checks its marker before the fence, so its retry reports
//     its first attempt's outcome even after a newer holder wrote (see
//     "Fencing");
//   - the other upserts (PutTrait, PutRunLog, PutReadiness, WriteCascadeMarker's
//     marker) are one idempotent script or command: a retry writes the same value
//     again, after any write that came in between (last writer wins, as for two
//     calls);
//   - WriteCascadeMarker's append to the marker log is at least once: a retry
//     appends the write again, and watchers see it twice (MarkerWatcher's
//     delivery is at least once);
//   - RenewLease only extends the key while it holds the call's token; a retry
//     extends it again, never a key that another lease holds.
//
// A retry later than 2 minutes after its first attempt finds no marker; go-redis's
// timeouts and retries end far sooner.
//
// A lock value is "lock:<owner>\n<nonce>" and a lease's "lease:<token>". Owner
// identities and lease tokens are compared exactly, never by prefix: ReleaseLock
// frees a lock only when the owner part of its value equals this instance's owner
// (owners hold no control characters, so the "\n" ends it), and ReleaseLease and
// RenewLease only when the value equals "lease:" + the token.
//
// # Reads and credentials
//
// Reads never write. The trait reads send HGET, HSCAN or a read-only script and
// leave pruning to PutTrait (see "Clocks"). The list reads (ListPipelines,
// ListRuns, ListReruns, ListAllReruns, ListReplays) read each page with a
// read-only script and the truths with HMGET; of themselves they repair the
// index entries a crashed or concurrent writer left (see "Cross-slot writes"),
// which is a write, but only when the provider may write: a provider opened
// WithReadOnly repairs nothing and lists what the repair and its re-read would
// have listed (a record whose entry is provisional, under the member its truth
// wants; one whose truth moved it, at its new place when the listing reads that
// far), so its listings equal a writer's. The entries stay for the next writer,
// or reader that may write, that meets them. Every other read is one read
// command (GET, HGET, HMGET, LRANGE, XRANGE, XREVRANGE, XREAD), a read-only
// script (zlist, idx_page, traits_read, with EVALSHA_RO), or, for GetLockInfo,
// GET and PTTL in MULTI/EXEC (ListLocks: SCAN, then the same per key). A read-only provider's Start loads no scripts (a
// read script's first run on a node costs NOSCRIPT and EVAL_RO, which caches
// it), and its writes fail with provider.ErrReadOnly before anything is sent.
//
// So a reader needs: the ACL category @read, EVALSHA_RO and EVAL_RO (Redis 7.0;
// an older server, which has neither, runs the read scripts with EVALSHA and
// EVAL, which the reader then needs too), MULTI and EXEC, PING, and read access
// to the keys; a writer also @write, EVALSHA, EVAL and SCRIPT LOAD (Start). With
// P the key prefix, glob characters in it escaped (the rules the tests give
// their users, TestReadsWithReadCredentials):
//
//	ACL SETUSER pipestate-reader on >PASSWORD resetkeys %R~P:* resetchannels -@all +@read +evalsha_ro +eval_ro +multi +exec +ping
//	ACL SETUSER pipestate-writer on >PASSWORD resetkeys ~P:* resetchannels -@all +@read +@write +evalsha +eval +evalsha_ro +eval_ro +script|load +multi +exec +ping
//
// and on a Redis Cluster, on every node (ACL SETUSER is per node; or through
// the ACL file every node loads), the same with what go-redis's cluster client
// sends besides: the slot map, the command table it routes by, and ASKING during
// a slot migration (+readonly too for a client that reads from replicas):
//
//	ACL SETUSER pipestate-reader on >PASSWORD resetkeys %R~P:* resetchannels -@all +@read +evalsha_ro +eval_ro +multi +exec +ping +cluster|slots +command +asking
//	ACL SETUSER pipestate-writer on >PASSWORD resetkeys ~P:* resetchannels -@all +@read +@write +evalsha +eval +evalsha_ro +eval_ro +script|load +multi +exec +ping +cluster|slots +command +asking
//
// The reader's %R~ (Redis 7.0) makes its keys readable only, whatever commands
// it may run. A provider that may write, used with a reader's credentials, gets
// NOPERM from every write and from a listing that repairs an entry; open it
// WithReadOnly. The state stores of package state/redisstate need the same rules
// for their prefix (see its doc).
//
// # Events
//
// Each pipeline's events are a stream, appended with XADD MAXLEN ~ n (approximate
// trimming to WithMaxEvents, default 100000). The stream ID ("<ms>-<seq>") is
// the cursor: ReadEventsSince reads XRANGE from the exclusive start "(<cursor>", so
// every reader sees every retained event once, in the server's commit order; a
// cursor that is not a canonical stream ID is ErrInvalidArgument.
//
// No silent gaps: each entry holds, in field p (about 20 bytes), the ID of the entry
// appended before it (the stream's last entry when the append's script ran, or its
// last generated ID, from XINFO STREAM, when it had been trimmed to nothing; "0-0"
// for the first), so a read knows exactly whether retention trimmed an event after
// its cursor, on every server (miniredis included: the check needs no field of Redis
// 7's XINFO). ReadEventsSince from a cursor is one pipeline of the XRANGE and a
// small script (lua/events_check.lua) that returns the stream's last generated ID
// when the stream exists and is empty. The cursor is expired — the call fails with
// provider.ErrCursorExpired and returns no events — exactly when the first entry
// after it has a p above the cursor, or no entry follows it and the stream, trimmed
// to nothing, generated an ID above it. So the cursor of the newest event is never
// expired, nor that of a trimmed event after which nothing was trimmed; "" reads
// from the oldest entry retained and is never expired. Trimming removes the oldest
// entries only. An entry deleted by hand (XDEL) from the middle ends a read before
// it, and the read from the entry before it fails; one deleted from the end, before
// the next append, goes unnoticed. The rule is exact for entries that hold p. An
// entry appended by a version before p (a stream written before the upgrade) tells
// nothing, and a read whose first entry is one costs a round trip more (the script
// again, asking whether it is the oldest entry retained and the stream may have been
// trimmed: Redis 7's XINFO entries-added exceeds its length; always on an older
// server or miniredis, which do not count); if so the cursor is expired, since an
// event after it may be gone. Once retention has trimmed those entries away the rule
// is exact again, and the round trip is gone.
//
// # Following
//
// FollowEvents reads the pipeline's stream with XREAD COUNT 256 BLOCK 5000 from its
// cursor: one key, so one node of a cluster, and one round trip per batch of up to
// 256 events; an idle follower sends one read per 5 seconds, never polls. A follow
// from a cursor reads its first batch as ReadEventsSince does, without blocking,
// so an expired cursor fails at once, also when the stream was trimmed to
// nothing (one round trip more when nothing follows the cursor); after that each
// entry's p is checked against the entry before it, so a follower that falls
// more than WithMaxEvents behind ends with provider.ErrCursorExpired. Each
// blocked read holds one connection of the client's pool (size the pool for the
// followers plus the other calls: go-redis's PoolSize). go-redis does not
// interrupt a blocked read when its context ends, so the read runs on a goroutine
// of its own: a follower returns ctx's error at once when ctx ends (and
// ErrClosed when the provider stops), and the abandoned read ends on the server
// within 5 seconds, when its connection goes back to the pool. A follower
// blocked on redis-server over loopback usually has a new event before
// AppendEvent has returned (BenchmarkFollowLatency, redis-server 7.0 on 2 CPUs:
// after the return p50 0 µs and p99 36-74 µs; from the call p50 75 µs and p99
// 0.25-1.4 ms).
//
// WatchCascadeMarkers follows the marker log the same way: one stream, P:{:markers},
// of the writes of every pipeline, so one node of a cluster takes every marker
// write and every watcher. WriteCascadeMarker appends the write to the log first
// and then writes the marker (two round trips; they are in different slots, so no
// script can do both on a cluster): a crash or an error between them leaves a
// delivered write whose marker is not stored, a phantom that the caller's retry of
// the failed call follows with a stored marker, but never a stored marker that no
// watcher sees. A watcher's cursor is the entry's stream ID, "" the oldest
// retained write. The log keeps about WithMaxMarkerWrites writes (default 100000;
// XADD MAXLEN ~, so somewhat more). Each entry holds the ID the stream generated
// before it (its last-generated-id, exact even after a trim to nothing), so a
// watcher checks that each entry follows its cursor: the first entry read after a
// cursor from which writes were trimmed yields an error wrapping
// provider.ErrCursorExpired, on every server (miniredis included, as the check
// needs no XINFO field of Redis 7) and also for a watcher that falls behind while
// it runs. A cursor whose own write was trimmed, but none after it, is not
// expired. Delivery is at least once: a retried append (see "Retries") delivers a
// write twice.
//
// # Operating Redis
//
// What each guarantee needs from the server:
//
//   - Locks, leases, fences, the nonces and call markers that make retries apply
//     once, the list indexes and run versions are ordinary keys: a server that
//     evicts keys can drop a held lock (two holders), a fence counter (fences
//     repeat), a fence memory (a stale holder's fenced write passes), a CAS
//     version, a call marker (a retry applies twice) or a list
//     entry. Use maxmemory-policy noeviction, or a database or
//     server of its own with enough memory. A list index entry lost while its truth
//     remains comes back with the record's next write; a truth lost and written
//     again restarts its sequence, and its list entry can stay hidden.
//   - Fences strictly increase only as long as the fence counter survives: it has
//     no TTL, so a server restart without persistence (RDB or AOF, appendfsync
//     everysec loses up to a second) restarts fences from 1, and a lease taken
//     after the restart may carry a fence an old holder already used. Persist the
//     data if fencing must survive restarts.
//   - Replication is asynchronous: a failover to a replica that had not received an
//     acknowledged write loses it (a lock acquired or released, a CAS, a fence).
//     WAIT can narrow the window but does not close it; where a lost lock or fence
//     matters more than availability, run without automatic failover.
//   - Expiry (locks, leases, readiness) is by the server's clock; trait expiry and
//     record retention are by the provider's clock (see "Clocks" and
//     "Retention"), so instances need synchronised clocks; the server deletes a
//     retained record's key a minute after the provider's clock expired it.
//   - Retention bounds the memory only if keys are not persisted by hand
//     (PERSIST) and the server expires keys (it does, lazily and by sampling):
//     with noeviction, size maxmemory for one retention of writes, which
//     BenchmarkRetentionPlateau measures for a given workload.
//
// Growth: every key the provider writes is one of the key schema's, and every
// record kind that grows with use expires (see "Retention"): under a steady
// workload the key count and memory stop growing after one retention
// (TestRetentionPlateau, BenchmarkRetentionPlateau). List indexes
// hold one entry per record in the list: a record that leaves a list (a deleted
// pipeline, a rerun moved to another pipeline) leaves no entry behind, except one
// that a concurrent write stamped, which stays, unseen, until a reader meets it 5
// minutes later. What is
// not bounded by retention: a deleted pipeline keeps its config hash with two small
// fields (its sequence, so that a re-registration orders after the delete) for an
// hour; expired traits stay, unread, until PutTrait calls of their pipeline prune
// them (100 per call); every write but the idempotent upserts leaves a call marker
// that expires after 2 minutes (one small key per write of the last 2 minutes); a
// lock key keeps its fence counter forever (one small key per lease key ever
// used); a fence memory holds one field per lease key that wrote under its hash
// tag and lives as long as the longest-lived record written there since a fence
// first wrote there, so a pipeline whose events were fenced keeps its memory
// forever (see "Fencing"); a fenced run-log or marker write leaves a call marker as the
// other writes do; a provisional list entry whose writer died before writing the truth
// stays, unseen, until a reader that may write meets it 5 minutes later; event
// streams are trimmed to about WithMaxEvents entries per pipeline and the marker
// log to about WithMaxMarkerWrites; a list index of a pipeline that is no longer
// written keeps the entries of its expired records (their truths are deleted by
// the server) until a listing that may write drops them, and its empty stream.
//
// # go-redis's own log
//
// go-redis logs through one process-wide logger of its own, apart from
// WithLogger: with the server down, its connection pool prints a line per
// failed dial ("redis: connection pool: failed to dial after N attempts"),
// about 20 in the first seconds of an outage. Route it
// to your logger with goredis.SetLogger (any type with Printf(ctx, format, ...);
// Example_goRedisLog adapts a *slog.Logger), or silence it with
// logging.Disable() (package github.com/redis/go-redis/v9/logging): what a
// failure means for pipestate reaches you anyway, as the error of each call and
// through WithLogger and the signals below.
//
// # Signals
//
// What only the backend knows it records through the meter provider and logger of
// WithMeterProvider and WithLogger (default: the global meter provider, no logs),
// with db.system.name "redis"; package observe's doc lists the instruments:
//
//   - pipestate.redis.script.loads: a script sent again with EVAL after the server
//     answered NOSCRIPT (its first use on a node that Start did not load, a
//     restart, a failover, SCRIPT FLUSH), alone or in a pipeline; a Debug record
//     names the script;
//   - pipestate.redis.index.repairs: list index entries a listing repaired
//     (dropped, settled or moved, see "Cross-slot writes"; a read-only
//     provider's listings repair none and record none); an Info record names
//     the list's key and the count, and the span gets a pipestate.repair event;
//   - pipestate.retries with reason index_repair and the listing as
//     db.operation.name ("list runs", ...): a listing read again because its
//     repairs settled or moved entries, at most twice per call; a Debug record
//     each. A listing still repairing after that returns what it read, so there
//     are no give-ups.
//   - pipestate.corrupt.records: a stored record a listing or a follower skipped
//     because it does not decode (see "Corrupt records" below); a Warn record
//     names its key, and the span gets a pipestate.corrupt event.
//
// The backend has no other retry loop: go-redis's retries after network errors
// are go-redis's own (see its hooks and instrumentation).
//
// # Corrupt records
//
// A value that does not decode — a record's JSON (a hash's j field, a run log's
// or marker's hash field, a late arrival's list element, a stream entry's e or m
// field), a run's created time (c), a truth's sequence (s), a trait value that
// is not "<expiry µs>|<JSON>", a lock's holder or fence — follows the provider
// rule (see package provider): a Get* returns a *provider.CorruptError naming
// the record and its key (redis key pst:{p}:runlogs field "2026-01-02\x00daily",
// the field quoted: it holds a NUL),
// and a listing or follower skips it, reports it and goes on. What that costs:
// a run-log or marker listing that met one reads its set again, with fields, a
// script call more per pass until it has limit good records (so each pass is a
// snapshot); ListEvents and ReadEventsSince read as many entries more as they
// skipped; GetTraits that meets one reads the traits hash once more to name it.
// A listing leaves a corrupt record's list entry in place (it is no repair: the
// record is there, only unreadable), and the traits script treats a value
// written by hand as never expiring, so it stays until it is written again or
// deleted. Writing the record again through the provider replaces it.
//
// Bookkeeping that does not decode is no record, and no read fails on it: a
// list index entry that is not "<seq>|<member>" counts as a provisional entry
// (a reader checks it against the truth; the next write of the record
// overwrites it); a truth's expiry x that is not a number never expires, and a
// write over a truth whose sequence s is not one restarts it at now µs at
// least, as for a record written anew. A fence memory that holds no fence
// refuses every fenced write of the records it guards with an error wrapping
// ErrCorrupt (it fails closed); unfenced writes go on. TestCorruptEveryField
// corrupts every field of every key, one at a time, on miniredis and a real
// server.
//
// # Round trips
//
// One round trip is one command, one script or one pipeline. On a cluster, a
// pipeline whose keys live on several nodes costs one round trip per node, sent
// concurrently (marked "per node"). Extra pages of a list cost 2 more round trips
// per 256 entries skipped or read; a listing that repairs entries costs 1 more, and
// at most twice re-reads. TestRoundTripBudgets holds every row, counting with a
// go-redis hook, on miniredis, a real server and a cluster, unfenced and fenced
// (provider.Fenced): a fenced write costs the same round trips.
//
//	method                   round trips
//	-----------------------  -----------------------------------------------
//	CompareAndSwapRunState   1 between unfinished statuses; 2 to a finished
//	                         one, 4 reopening a finished run (the active-runs
//	                         index, see "Active runs"; per node)
//	ListActiveRuns           2 per page of 256 unfinished runs (per node)
//	ReindexRun               2 when the entry is right; 5 restoring it, 3 removing
//	                         it (4 when the run is missing)
//	GetRunState              1
//	AcquireLock              1
//	ReleaseLock              1
//	AppendEvent              1
//	PutTrait                 1
//	GetTrait                 1 (HGET)
//	GetTraits                1 (HSCAN) when the hash has at most 256 traits,
//	                         expired ones included; 2 when more (HSCAN, then the
//	                         read-only script), 1 once the provider knows the
//	                         pipeline's hash is large (the script at once)
//	PutRunLog                1
//	GetRunLog, ListRunLogs   1
//	ListEvents               1
//	ReadEventsSince          1 (from a cursor: XRANGE and events_check
//	                         pipelined; +1 while the entry after the cursor was
//	                         appended by a version before field p)
//	FollowEvents             1 per batch of up to 256 events, or per 5 s idle;
//	                         +1 from a cursor that nothing follows yet (the
//	                         first read does not block)
//	WriteCascadeMarker       2 (the marker log, then the marker)
//	WatchCascadeMarkers      1 per batch of up to 256 writes, or per 5 s idle
//	ListCascadeMarkers       1
//	PutLateArrival           1
//	ListLateArrivals         1
//	PutReadiness             1
//	GetReadiness             1
//	GetPipeline              1
//	GetRerun, GetReplay      1
//	AcquireLease             1
//	RenewLease, ReleaseLease 1
//	GetLockInfo              1 (MULTI: GET, PTTL, and the fence counter)
//	ListLocks                1 per 1,000 keys of the database per master (SCAN
//	                         COUNT 1000 with a MATCH on the prefix's lock keys:
//	                         the server looks at every key), then 1 (one MULTI;
//	                         on a Cluster one MULTI per key, 16 at once)
//	Ping                     1
//	PutRunState              3; +2 when its list had expired entries to prune
//	CreateRunState           3 (2 when the run exists); +2 as PutRunState
//	RegisterPipeline         3
//	PutRerun                 3 (steps 1 and 3 per node); +2 as PutRunState
//	PutReplay                3; +2 as PutRunState
//	DeletePipeline           2 (1 when missing)
//	ListRuns                 2 (per node)
//	ListReruns               2 (per node)
//	ListAllReruns            2 (per node)
//	ListReplays              2 (per node)
//	ListPipelines            2 (per node) when under 256 pipelines
//	Start                    1 per master (SCRIPT LOAD of every script, pipelined);
//	                         0 when read-only
//	Stop                     0
package redisprovider

// Layout, the same in every provider backend: provider.go (type, New, options,
// lifecycle), pipelines.go (+ traits, readiness), runs.go (+ CAS), events.go,
// records.go (run logs, reruns, replays, late arrivals, cascade markers), locks.go
// (+ leases). Support: keys.go (key schema), scripts.go and lua/ (the scripts),
// index.go (the cross-slot list indexes).
