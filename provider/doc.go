// Package provider defines the Provider: the state a pipeline orchestrator keeps —
// pipeline configs, TTL'd trait evaluations, run state with compare-and-swap, an
// append-only event log with cursors, run logs, reruns, replays, late arrivals,
// cascade markers, locks and leases, and a readiness cache.
//
// The package holds interfaces, sentinel errors and the argument checks shared by
// every backend; it does no I/O. Built-in backends live in provider/memprovider,
// provider/redisprovider and provider/ddbprovider; a third-party backend proves it behaves the
// same by passing providertest.Run.
//
// # Using it
//
// Open a backend (provider/redisprovider.New over a go-redis client, provider/ddbprovider.New
// over an AWS SDK client, provider/memprovider.New in tests), take a lease on the work,
// keep it alive, and write through the lease's fenced view, so a holder that lost
// the lease cannot overwrite its successor's writes:
//
//	lease, err := p.AcquireLease(ctx, "ingest/orders", time.Minute) // p: a Provider and a Leaser
//	work, stop, err := provider.KeepAlive(ctx, p, *lease, time.Minute) // work ends when the lease is lost
//	defer stop()                                                       // releases the lease
//	fp, err := provider.Fenced(p, *lease)
//	created, err := fp.(provider.RunCreator).CreateRunState(work, run) // once per RunID
//	ok, err := fp.CompareAndSwapRunState(work, run.RunID, 0, next)    // ErrFenced after a takeover
//	err = fp.AppendEvent(work, types.Event{PipelineID: "orders", Kind: "RUN_STATE_CHANGED", RunID: run.RunID})
//	for rec, err := range p.(provider.EventFollower).FollowEvents(ctx, "orders", cursor) { ... rec.Event.Kind, rec.StreamID ... }
//
// The Examples (KeepAlive, Fenced, RunCreator, EventFollower, MarkerWatcher)
// run these steps on provider/memprovider. The rules every backend keeps follow.
//
// # Semantics
//
// Every backend meets these rules; providertest checks each one.
//
//	topic          rule
//	-------------  ---------------------------------------------------------------------
//	missing        every Get* returns (nil, nil) for a missing or expired entity;
//	               DeletePipeline of a missing pipeline returns nil; a List* that
//	               matches nothing returns an empty slice and no error.
//	bad input      an invalid ID (types.ValidateID), an invalid lock key, a negative
//	               ttl, limit < 1, count < 1, an invalid status or a malformed cursor
//	               returns an error wrapping ErrInvalidArgument and writes nothing.
//	too large      a value the backend cannot store returns an error wrapping
//	               ErrTooLarge and writes nothing; every backend stores at least
//	               256 KB of metadata.
//	round trip     a Get returns what was put, after a JSON round trip: numbers in
//	               map[string]any come back as float64; times are Equal to the
//	               nanosecond. Fields a method fills (below) are part of what is stored.
//	no aliasing    mutating a value after Put, or a value returned by Get, never
//	               changes what is stored.
//	TTL            ttl == 0 means no expiry. An entity is expired when now >= its
//	               expiry (ExpiresAt, or put time + ttl): exactly at that instant it
//	               is gone. An expired trait, readiness result, lock or lease is
//	               invisible to every read, even before the backend has deleted it.
//	retention      every record kind that grows with use (runs, run logs, reruns,
//	               replays, late arrivals, cascade markers, events, marker log
//	               writes) is kept for the backend's Retention (WithRetention;
//	               default DefaultRetention(): 30 days, 24 hours for the marker
//	               log; 0 keeps a kind forever), counted from the record's last
//	               write by the backend's clock. Every write of a record (a put, a
//	               CAS, a create, an upsert, a marker write) restarts it, in the
//	               same atomic step as the write; each late arrival and event has
//	               its own. A record is expired when now >= last write + retention
//	               (Expiry, Live): from that instant it is invisible to every
//	               read, lists and iterators included, before the backend has
//	               deleted it, and a List*(limit) still returns limit live ones.
//	               An expired run is missing: GetRunState is (nil, nil), a CAS of
//	               it is (false, nil), PutRunState may store it under another
//	               pipeline, and CreateRunState creates it again with the Version
//	               it is given (0 for a new run), keeping nothing of the expired
//	               one. Indexes do not grow with expired records: writes remove a
//	               bounded number of them; reads only filter (reads never write).
//	               Kept forever: pipeline configs, traits and readiness (their own
//	               ttl), and each lock key's fence counter (see "leases"). A
//	               backend that keeps a log by count instead documents it (Redis's
//	               event streams and marker log).
//	limits         a ttl is at most MaxTTL (100 years); a run Version is at most
//	               types.MaxRunVersion (2^53-1), so a CAS may start from at most
//	               MaxRunVersion-1 and stores MaxRunVersion exactly. Beyond a limit
//	               the call fails with ErrInvalidArgument and writes nothing; no
//	               backend clamps or wraps.
//	lists          a List*(limit) call returns no duplicates, and every item that
//	               existed, unchanged, for the whole call appears in it if it falls
//	               within the limit — also while other items are created or move in
//	               the order, and when the list is longer than the backend's pages.
//	pipelines      RegisterPipeline replaces a config with the same ID; ListPipelines
//	               is sorted by ID; DeletePipeline removes the config only (traits,
//	               runs and logs of the pipeline stay).
//	traits         PutTrait sets ExpiresAt (nil when ttl == 0) and PipelineID (when
//	               empty; a different one is ErrInvalidArgument); GetTraits is sorted
//	               by TraitType.
//	readiness      PutReadiness keeps the result for the backend's ReadinessTTL
//	               option (default 5 minutes).
//	runs           PutRunState stores the run as given (CreatedAt and UpdatedAt filled
//	               from the clock when zero); re-putting a RunID under another
//	               PipelineID is ErrInvalidArgument. CompareAndSwapRunState succeeds
//	               only if the stored Version equals expectedVersion; it stores
//	               newState with Version = expectedVersion+1, UpdatedAt = now and the
//	               stored CreatedAt (CreatedAt never changes through CAS). It returns
//	               (false, nil) on a version mismatch or a missing run; a newState
//	               whose RunID differs from runID, or whose PipelineID differs from the
//	               stored run's, is ErrInvalidArgument. Of N concurrent CAS calls from
//	               one version exactly one wins. ListRuns is newest CreatedAt first
//	               (ties by RunID, descending) and always reflects the latest CAS.
//	events         AppendEvent fills a zero Timestamp from the clock. ListEvents(limit)
//	               returns the most recent limit events, oldest first. ReadEventsSince
//	               returns events strictly after the cursor, oldest first, at most
//	               count; "" reads from the oldest event retained. Cursors are
//	               opaque, per pipeline, and only meaningful to the backend that made
//	               them. A reader paging with cursors while writers append sees every
//	               event exactly once, in the one order all readers agree on (commit
//	               order, not Timestamp order).
//	no gaps        a cursor is expired when an event after it that the log held was
//	               dropped (by retention or trimming): ReadEventsSince from it returns
//	               no events and an error wrapping ErrCursorExpired, FollowEvents
//	               yields that error and ends, as WatchCascadeMarkers does for the
//	               marker log: at once, also when every entry after the cursor
//	               was dropped and nothing newer was written yet. Numbers and
//	               positions are never reused: whatever was dropped or expired,
//	               an entry written later orders after every cursor handed out.
//	               A read never skips a dropped event silently: when
//	               events drop out of commit order (writers with different
//	               retentions), a read returns the events before the first dropped
//	               one, and the read after them fails. A cursor with nothing dropped
//	               after it is not expired: the cursor of the newest event (the read
//	               is empty), and the cursor of a dropped event after which nothing
//	               else was dropped (the read goes on with the events appended
//	               since). "" is never expired: it reads from the oldest event
//	               retained, which is how a reader that accepts the loss goes on
//	               (ReadEventsSince(ctx, id, "", 1) returns that event and its
//	               cursor). A corrupt event (see "Corrupt records") is held, not
//	               dropped: a read that skips corrupt events and then meets a
//	               dropped one ends there as above, failing with ErrCursorExpired
//	               when it returns no events (from "": returns none), and a
//	               follower, whose cursor moved past them, yields that error.
//	run logs       keyed by (pipeline, date, schedule); an empty schedule is
//	               types.DefaultScheduleID on put and get, and is stored as such;
//	               ListRunLogs is newest Date first (string order), entries of one
//	               date by ScheduleID descending.
//	reruns         upsert by RerunID (a zero RequestedAt is filled from the clock);
//	               ListReruns and ListAllReruns are newest
//	               RequestedAt first (ties by RerunID, descending); the lists and the
//	               record never disagree. Re-putting a RerunID under another
//	               PipelineID moves it to that pipeline's list.
//	replays        upsert by (pipeline, date, schedule), empty schedule = default;
//	               ListReplays is newest CreatedAt first, across pipelines. A zero
//	               CreatedAt is filled from the clock. Ties keep no promised order.
//	late arrivals  PutLateArrival appends (a zero DetectedAt is filled from the
//	               clock); ListLateArrivals is oldest DetectedAt first (ties keep no
//	               promised order).
//	cascade        one marker per (pipeline, schedule, date); writing it again updates
//	               Source and WrittenAt (= now); ListCascadeMarkers is newest
//	               WrittenAt first.
//	locks          AcquireLock is (true, nil) only if the key is free or expired; a
//	               held key is (false, nil), also for the holder (not re-entrant).
//	               Each provider instance has its own owner identity (random by
//	               default, settable by option). ReleaseLock releases only a lock this
//	               instance holds; otherwise it changes nothing and returns an error
//	               wrapping ErrLockNotHeld. Of N concurrent acquirers, across
//	               instances, exactly one wins. Owner identities and lease tokens
//	               are compared exactly, never by prefix ("worker-1" is not
//	               "worker-10").
//	leases         AcquireLease needs ttl > 0 and returns ErrLockHeld while another
//	               lease (or lock) of the key is live. Fence strictly increases across
//	               successive leases of the same key, forever, whoever holds them.
//	               RenewLease extends only the current lease (ErrLockNotHeld after
//	               expiry or takeover); ReleaseLease frees only the current lease.
//	               RenewLease returns the lease with the same Key, Token and Fence
//	               and the new ExpiresAt. Locks and leases share the key space: a key
//	               held by one is held for the other, also for the same instance.
//	lifecycle      calls work once New returns; Start is idempotent; Stop is
//	               idempotent; after Stop every call, Start included, returns an error
//	               wrapping ErrClosed; Ping reports whether the backend answers.
//	opening order  every method checks, before any I/O, in this order: stopped
//	               (ErrClosed), a done ctx (ctx.Err()), a write on a read-only
//	               handle (ErrReadOnly), then its arguments (ErrInvalidArgument, the
//	               first failed check), so a caller learns first what no change of
//	               arguments mends. The state stores open the same way.
//	lost replies   when a reply is lost and the client library retries a write the
//	               server had applied, locks, leases, CAS and every upsert neither
//	               lose nor double: the retry reports the first attempt's outcome
//	               (a CAS that swapped reports true, once). Backends document any
//	               write that may be applied twice (see each backend's doc).
//	contention     concurrent writers never see an error for contention alone: a
//	               backend retries its own conflicts (e.g. DynamoDB transaction
//	               conflicts) or, for CAS, reports (false, nil).
//	clock          times a method fills come from the backend's clock (the provider's
//	               clock option where it has one, the server's time in Redis); the
//	               suite allows them 1 s of skew from the test's clock.
//	context        every call honours ctx: a cancelled context returns an error for
//	               which errors.Is(err, context.Canceled) holds.
//	reads          reads never write: every Get*, List*, ReadEventsSince,
//	               FollowEvents, WatchCascadeMarkers, GetLockInfo, ListLocks and Ping works for
//	               credentials that allow reads only. A backend that repairs on read
//	               does so only when it may write; each built-in backend has a
//	               WithReadOnly option whose every write fails with an error
//	               wrapping ErrReadOnly (after the stopped and context checks and
//	               before the arguments: see opening order), sending nothing, and whose reads return what a writer's return.
//	               (Checked by each built-in backend's tests with read-only
//	               credentials, not by providertest, which cannot take them away.)
//	fencing        a write through Fenced(p, lease) (package fence) carries the
//	               lease's key and fence; the backend refuses it, atomically with
//	               the write and with an error wrapping ErrFenced, once a newer
//	               fence of that key has written the record, and otherwise writes
//	               it and remembers the fence. The writes, what "the record" is
//	               for each, and what a fence does not protect are in the fence
//	               package doc; fencing is not optional.
//	active runs    (optional ActiveRunLister) a run is in the active-runs index
//	               exactly while its status is not terminal and it is live (not
//	               expired by retention): every write of a run's status (put, CAS,
//	               create, fenced or not) enters or leaves it with the write, and a
//	               refused write (lost CAS, fenced refusal, create of an existing
//	               run) leaves it as the truth is. ListActiveRuns shows only what
//	               the truth record says now (a stale entry is skipped, never
//	               shown). Paging: pages are in ascending RunID, each strictly after
//	               the cursor, so no run appears twice in one paging from "" to a
//	               "" next cursor, and every run that is unfinished, live and
//	               matching the filter for the whole paging appears in it exactly
//	               once, while others are created, finish or change. A run that
//	               enters or leaves during the paging may or may not appear (where
//	               the index lags the truth, as a DynamoDB GSI does, a run enters
//	               when the index has caught up; the backend's doc says by how
//	               much). The
//	               cost of a page is the unfinished runs read, never the number of
//	               pipelines or the finished history. (optional
//	               ActiveRunReindexer) ReindexRun makes one run's entry match its
//	               truth (the backfill, a lost entry) without writing the run: its
//	               Version and UpdatedAt stay, so a stuck run still looks stuck.
//	corrupt        a stored record that does not decode: a Get* of it returns an
//	               error wrapping ErrCorrupt (a *CorruptError) that names it; every
//	               List* and iterator skips it, returns the others (a List*(limit)
//	               returns limit good records when there are that many) and reports
//	               it (see "Corrupt records"). ErrInvalidArgument stays for bad
//	               input.
//
// # Corrupt records
//
// A stored value may not decode: a byte flipped on disk or on the wire, a value
// written by a newer version of the library, a key written by hand. One such
// record must be reported, never fatal to its neighbours:
//
//   - A Get* of it (GetPipeline, GetRunState, GetTrait, GetReadiness,
//     GetLockInfo, ...) returns a *CorruptError, which wraps ErrCorrupt and the
//     cause and names the record by kind, ID and key: "provider: corrupt run
//     state r-1 (redis key pst:{run:r-1}): invalid character ...". It never
//     panics, and never reports the record as missing.
//   - A List* or an iterator (ListPipelines, ListRuns, ListEvents,
//     ReadEventsSince, ListRunLogs, ListReruns, ListAllReruns, ListReplays,
//     ListLateArrivals, ListCascadeMarkers, ListLocks, GetTraits, FollowEvents,
//     WatchCascadeMarkers) skips it and goes on: it returns the other records in
//     their order, reads on so that a limit counts good records only, and an
//     iterator's cursor moves past it. This holds whatever part is corrupt, the
//     ones a record's number, order or expiry are read from included: a backend
//     takes a log entry's number from its key, so a corrupt entry never stops a
//     reader or makes a cursor look expired. It reports each record it skipped, once
//     per call: to the handler of OnCorrupt in the call's context (how a caller,
//     cmd/pipestate for one, learns what was left out), and through the
//     backend's signals — the pipestate.corrupt.records counter (by backend and
//     RecordKind, never the key), a Warn log record naming the key (the
//     backend's WithLogger) and a pipestate.corrupt event on the span in the
//     context (see package observe).
//   - Writing the record again (a Put, Register or Write of the same identity)
//     replaces the corrupt value.
//
// Backends decode every stored record through Decode (Get*) and DecodeOrSkip
// (List* and iterators), the one place of this rule; providertest's Corrupt
// group checks it on any backend whose harness can corrupt a record.
//
// # Writing a backend
//
// Implement Provider (and, if you can, the optional Leaser, CascadeReader,
// RunCreator, EventFollower, MarkerWatcher, LockInspector, LockLister and
// ActiveRunLister), start each method
// with the Prepare* and Check* helpers so bad input is rejected and defaults are
// filled the same way everywhere, decode what you read with Decode and
// DecodeOrSkip (see "Corrupt records"), honour fenced writes (read the token
// with fence.FromContext in each write that takes one and apply fence.Set's rule
// in the write's critical section, script or condition), keep records for a
// Retention (an
// option taking one, DefaultRetention() by default; stamp each write with
// Expiry and judge reads with Live), and run providertest.Run from your tests:
// it runs the group of each optional interface your provider implements, the
// Corrupt group when your harness can corrupt a stored record, and the Retention
// group when your harness declares its retention (Harness.Retention).
package provider
