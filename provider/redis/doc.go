// Package redis is the Redis backend of pipestate: a provider.Provider (with
// provider.Leaser and provider.CascadeReader) over any goredis.UniversalClient — a
// standalone *goredis.Client or a *goredis.ClusterClient. It meets every rule of
// the semantics table in package provider and passes providertest.Run on
// miniredis, on a real server and on a three-master Redis Cluster.
//
//	c := goredis.NewClient(&goredis.Options{Addr: "localhost:6379"})
//	p, err := redis.New(c, redis.WithKeyPrefix("orders"))
//	if err != nil { ... }
//	if err := p.Start(ctx); err != nil { ... } // preloads the Lua scripts
//	defer p.Stop(ctx)                          // leaves c open: it is yours
//	ok, err := p.CompareAndSwapRunState(ctx, runID, 3, next)
//
// # Guarantees
//
// Every change of more than one key that lives in one hash slot is one Lua script
// (scripts in lua/*.lua, embedded, run with EVALSHA and an EVAL fallback on
// NOSCRIPT) or one MULTI/EXEC; nothing reads in Go to decide what to write where a
// script can decide. The changes that span slots are listed under "Cross-slot
// writes": they are ordered so that a crash between their steps never makes
// anything wrong visible, and readers repair what such a crash leaves behind.
//
// Errors: bad input wraps provider.ErrInvalidArgument and writes nothing; a value
// whose JSON is longer than the WithMaxValueSize limit (default 1 MiB) wraps
// provider.ErrTooLarge and writes nothing; client and network errors are returned
// wrapped with %w (errors.As reaches go-redis's types) and never swallowed;
// goredis.Nil never leaks (a missing entity is (nil, nil)); a cancelled context
// returns an error for which errors.Is(err, context.Canceled) holds. After Stop
// every call returns an error wrapping provider.ErrClosed. Stop never closes the
// client handed to New unless WithCloseClient is given.
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
//	P:{pid}:readiness                        string  readiness JSON, PX readiness TTL
//	P:{pid}:events                           stream  field e = event JSON; ID = cursor
//	P:{run:<runID>}                          hash    run: s, m, p, v version, c, j, n
//	P:{pid}:runs + :ids                      zset+h  runs (timeKey(CreatedAt)+runID)
//	P:{pid}:runlogs, P:{pid}:runlogs:order   hash+z  run logs by date NUL schedule
//	P:{rerun:<rerunID>}                      hash    rerun: s, m, p, j
//	P:{pid}:reruns + :ids                    zset+h  reruns (timeKey(RequestedAt)+id)
//	P:{:reruns} + :ids                       zset+h  all reruns, same members
//	P:{pid}:replay:<date>:<schedule>         hash    replay: s, m, p, j
//	P:{:replays} + :ids                      zset+h  all replays (timeKey(CreatedAt)+
//	                                                 pid:date:schedule)
//	P:{pid}:late:<date>:<schedule>           list    late-arrival JSON, appended
//	P:{pid}:markers, P:{pid}:markers:order   hash+z  markers by date NUL schedule,
//	                                                 scored by WrittenAt in µs
//	P:{lock:<escaped key>}                   string  "lock:<owner>\n<nonce>" or
//	                                                 "lease:<token>", PX ttl
//	P:{lock:<escaped key>}:fence             string  INCR fence counter, no TTL
//
// timeKey is a 24-hex-digit encoding whose byte order is time order to the
// nanosecond (Unix seconds with the sign bit flipped, then nanoseconds), so sorted
// sets of score 0 order by time and then by ID, exactly. A lock key is free-form, so
// its tag is the key with '%', '{' and '}' percent-escaped: injective, and the lock
// and its fence counter share a slot.
//
// # Cross-slot writes
//
// A run is read by its ID alone, so its truth is tagged by run ID and its pipeline's
// list lives in another slot; likewise reruns, and the global lists (pipelines,
// reruns, replays) are one slot each. These are the only writes that are not one
// atomic step. Every list is a sorted set plus a hash id -> "<seq>|<member>"; each
// truth carries a sequence bumped by every write. A write:
//
//  1. adds a provisional list entry where the ID has none (one pipelined round trip);
//  2. writes the truth with one script, which returns the new sequence (and, for
//     runs, refuses a RunID stored under another pipeline);
//  3. sets each list entry to (sequence, member), or removes it when the record left
//     that list — only if the list has not seen a later sequence.
//
// A list shows an entry only if its truth exists and wants exactly that member in
// that list, so a crash between steps never shows anything wrong; a run or rerun
// never lacks its entry, because step 1 precedes the truth. A reader that skips an
// entry repairs it with the sequence read from the truth (the sequence guard makes
// repairs and late writers commute), then re-reads when a repair moved an entry.
// CompareAndSwapRunState never changes CreatedAt or the pipeline, so it touches only
// the run's own key, and list reads always return the latest CAS because every run
// they return is read from its truth. Lists read the truths with one pipeline; on a
// cluster that is one round trip per node, sent concurrently.
//
// # Clocks
//
// The provider's clock (WithClock, default time.Now) fills timestamps (CreatedAt,
// UpdatedAt, Timestamp, RequestedAt, DetectedAt, WrittenAt), sets trait and lease
// ExpiresAt, and judges trait expiry: trait expiry is stored in the traits hash,
// filtered on every read and pruned by PutTrait and the trait reads, so instances
// should run NTP-synchronised clocks (skew shifts a trait's expiry by the skew).
// Locks, leases and readiness results are keys with a server-side TTL (PX, rounded
// up to whole milliseconds) and expire by the server's clock. WrittenAt of a cascade
// marker is truncated to the microsecond, the precision of its sort score.
//
// # Retries
//
// go-redis retries a command after a network error (Options.MaxRetries), so a
// command whose reply was lost may run twice. AcquireLock, AcquireLease and
// CompareAndSwapRunState carry a nonce unique to the call, so a retried call
// applies once and reports the success it had (a CAS retried after another CAS
// already followed it reports false); every other write is an idempotent
// upsert, except AppendEvent and PutLateArrival, which may then append twice, and a
// release (ReleaseLock, ReleaseLease) whose first attempt freed the key, which then
// reports ErrLockNotHeld. Set MaxRetries to -1 on the client for at-most-once
// appends. A lock value is "lock:<owner>\n<nonce>" and a lease's "lease:<token>";
// ReleaseLock frees any lock of this owner identity on the key.
//
// # Events
//
// Each pipeline's events are a stream, appended with XADD MAXLEN ~ n (approximate
// trimming to WithMaxEvents, default 100000). The stream ID ("<ms>-<seq>") is
// the cursor: ReadEventsSince reads XRANGE from the exclusive start "(<cursor>", so
// every reader sees every retained event once, in the server's commit order; a
// cursor that is not a canonical stream ID is ErrInvalidArgument, and one older than
// the retained log reads from the oldest retained event.
//
// # Round trips
//
// One round trip is one command, one script or one pipeline/MULTI. On a cluster, a
// pipeline whose keys live on several nodes costs one round trip per node, sent
// concurrently (marked "per node"). Extra pages of a list cost 2 more round trips
// per 256 entries skipped or read; a listing that repairs entries costs 1 more, and
// at most twice re-reads. TestRoundTripBudgets holds every row, counting with a
// go-redis hook, on miniredis, a real server and a cluster.
//
//	method                   round trips
//	-----------------------  -----------------------------------------------
//	CompareAndSwapRunState   1
//	GetRunState              1
//	AcquireLock              1
//	ReleaseLock              1
//	AppendEvent              1
//	PutTrait                 1
//	GetTraits, GetTrait      1
//	PutRunLog                1 (MULTI/EXEC)
//	GetRunLog, ListRunLogs   1
//	ListEvents               1
//	ReadEventsSince          1
//	WriteCascadeMarker       1 (MULTI/EXEC)
//	ListCascadeMarkers       1
//	PutLateArrival           1
//	ListLateArrivals         1
//	PutReadiness             1
//	GetReadiness             1
//	GetPipeline              1
//	GetRerun, GetReplay      1
//	AcquireLease             1
//	RenewLease, ReleaseLease 1
//	Ping                     1
//	PutRunState              3
//	RegisterPipeline         3
//	PutRerun                 3 (steps 1 and 3 per node)
//	PutReplay                3
//	DeletePipeline           2 (1 when missing)
//	ListRuns                 2 (per node)
//	ListReruns               2 (per node)
//	ListAllReruns            2 (per node)
//	ListReplays              2 (per node)
//	ListPipelines            2 (per node) when under 256 pipelines
//	Start                    1 per master (SCRIPT LOAD of every script, pipelined)
//	Stop                     0
package redis
