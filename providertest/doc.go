// Package providertest is the conformance suite of provider.Provider. A backend —
// built in or third-party — proves that it behaves exactly like the built-in ones
// by passing it from its own tests. It imports only the standard library,
// provider, types and go-cmp, so it pulls in no backend and no SDK.
//
// # Where to start
//
// Implement the 34 methods of provider.Provider in the order below, running
// the suite after each step. Run first checks the simplest rule of each step (a
// missing entity is (nil, nil), one write reads back) as the subtest
// Basics/<step>; when one fails, it is the only failure: the later steps and
// every group skip, naming it, so one bug shows as one failure, not hundreds.
// Each step turns on the groups after it (its interface's, and the optional
// interfaces built on it); the groups in the last row need every step. A rule
// that fails in many rounds of a race, or in many goroutines, is reported
// once, with the count of its repeats. Harness.Features lists the optional
// Harness fields and the subtests each turns on.
//
//	STEP                METHODS                                                        TURNS ON
//	1 lifecycle         Start, Stop, Ping                                              Lifecycle
//	2 pipelines         RegisterPipeline, GetPipeline, ListPipelines, DeletePipeline   PipelineStore
//	3 traits            PutTrait, GetTrait, GetTraits                                  TraitStore
//	4 runs              PutRunState, GetRunState, ListRuns, CompareAndSwapRunState     RunStore, RunCreator
//	5 events            AppendEvent, ListEvents, ReadEventsSince                       EventStore, EventFollower
//	6 run_logs          PutRunLog, GetRunLog, ListRunLogs                              RunLogStore
//	7 reruns            PutRerun, GetRerun, ListReruns, ListAllReruns                  RerunStore
//	8 cascade_markers   WriteCascadeMarker                                             CascadeStore, CascadeReader, MarkerWatcher
//	9 late_arrivals     PutLateArrival, ListLateArrivals                               LateArrivalStore
//	10 replays          PutReplay, GetReplay, ListReplays                              ReplayStore
//	11 locks            AcquireLock, ReleaseLock                                       Locker, Leaser, KeepAlive, LockInspector, LockLister
//	12 readiness        PutReadiness, GetReadiness                                     Readiness
//	(all)                                                                              Expiry, Retention, Fidelity, Lists, Limits, Corrupt, Fencing, FencingRace, ReadOnly
//
// # What it checks
//
// Every rule of the semantics table in the provider package doc has at least one
// named subtest, grouped by interface (PipelineStore, TraitStore, RunStore,
// EventStore, RunLogStore, RerunStore, CascadeStore, LateArrivalStore,
// ReplayStore, Locker, Leaser, KeepAlive, CascadeReader, RunCreator,
// EventFollower, MarkerWatcher, LockInspector, LockLister, Readiness) and by class of rule
// (Expiry, Fidelity, Lists, Limits, Corrupt, Lifecycle), e.g.
// "RunStore/cas_concurrent_one_winner"; a failure names the rule it breaks.
// Each group checks, where the rule applies:
//
//   - round trips (after JSON: numbers in maps are float64, times are Equal to the
//     nanosecond), and each field a method fills from the clock, on its own and
//     on a re-put (CreatedAt, UpdatedAt, Timestamp, RequestedAt, DetectedAt,
//     WrittenAt, ExpiresAt of traits and renewed leases);
//   - missing entities ((nil, nil)) and empty lists;
//   - list order, ties and limits;
//   - upserts and appends of identical records: an upsert twice is one entity,
//     listed once; an append twice (events, late arrivals) is two;
//   - DeletePipeline removing the config only: traits, runs, run logs, reruns,
//     events, late arrivals, replays, readiness, markers and locks stay, and so
//     does a pipeline whose ID the deleted one prefixes;
//   - TTLs of traits, readiness, locks and leases, moving time with
//     Harness.Sleep: ttl 0, expiry and the exact instant (gone when now >= the
//     expiry); in the Expiry group, sub-second ttls, a shorter ttl after a longer
//     one, a re-put part-way through a ttl, and an entity read while live (from
//     the writing instance and another) invisible to both once expired;
//   - event retention (Harness.ExpireEvents, Harness.OpenMaxEvents): dropped
//     events are invisible to every read; a cursor whose successors were dropped
//     is expired — ReadEventsSince returns no events and an error wrapping
//     provider.ErrCursorExpired, FollowEvents yields that error before anything
//     else, also while the log is empty and after a few hundred appends past a
//     retention by count — never a silent jump to the oldest event retained; the
//     cursor of the newest event, dropped or not, is not expired, and new events
//     never reuse old positions; "" reads from the oldest event retained; marker
//     log retention
//     (Harness.ExpireMarkers, Harness.MaxMarkerWrites): a watch from a cursor
//     whose successors were dropped fails with provider.ErrCursorExpired before
//     it yields anything, at once also when nothing newer was written yet,
//     never skipping the gap silently, also after a few
//     hundred writes past a retention by count, and a watch from "" starts at the
//     oldest write retained;
//   - record retention (Harness.Retention, on the fake clock of Harness.Sleep):
//     for each kind with a retention (runs, run logs, reruns, replays, cascade
//     markers, late arrivals, events) a record is visible to its Get and every
//     list just before its retention ends and to none from the instant it ends;
//     a write from another instance restarts it (a CAS too); each late arrival
//     and event has its own; an expired run is missing to a CAS, may be put
//     under another pipeline, and is created again by CreateRunState at version
//     0; ListRuns(limit) behind expired runs still returns limit live ones;
//   - compare-and-swap: match, mismatch, missing run, ID mismatches, CreatedAt kept,
//     Version = expected+1, exactly one winner among 16 goroutines on two
//     instances, no lost update among 8 goroutines x 50 retried increments;
//   - create-once (RunCreator): one winner among 32 concurrent creates, stored
//     and listed once, an existing run left alone; following (EventFollower): from
//     the start and from a cursor, live appends by 8 writers each delivered once in
//     log order, resuming after a cancel, two followers agreeing; watching
//     (MarkerWatcher): writes from two instances to several pipelines, a rewrite
//     delivered again, resuming from a cursor; KeepAlive over the Leaser: renewed
//     past its ttl, and the work canceled before a rival can take over, with a
//     ttl scaled to the round trips and timer lateness measured at the test's
//     start (at least 900 ms), so that a loaded machine does not fail them;
//   - races that do not depend on luck: the one-winner tests (CAS, locks, leases)
//     start their callers from a spinning barrier and repeat for at least 3
//     rounds and 500 ms, so a check-then-act backend loses in every run;
//   - events paged with cursors while 8 writers on two instances append: each event
//     is seen exactly once, and every reader sees the same order;
//   - locks and leases from the same instance and from another: exclusivity,
//     owner-safe release, expiry and takeover, strictly increasing fences (also
//     after a day without a lease, when a record kept with the lease is long
//     gone), one
//     shared key space (a lock and a lease of one key, and the calls of one on
//     the other), a release seen by an instance that found the key held, owner
//     IDs and lease tokens that are prefixes of each other (owners need
//     Harness.OpenOwner); inspecting a key (LockInspector): the lock's owner,
//     the lease's token and fence, the expiry, nothing once released or expired
//     at the exact instant; listing the keys held (LockLister): the same, in
//     bytewise key order within the limit, through every form of pattern;
//   - every list of IDs (runs, reruns, all reruns, replays, pipelines) read while
//     writers on two instances create new IDs, and read whole while other items
//     move across it; lists of 300 pipelines, run logs, markers, late arrivals
//     and events, longer than any internal page: no duplicates, nothing that
//     existed throughout missing;
//   - fidelity (the Fidelity group): times near the zero time, before 1970,
//     beyond int64 nanoseconds, in several zones and with monotonic readings, a
//     nanosecond apart, in every time-ordered list and in event Timestamps; the
//     zero time itself in every time the backend does not fill (trait and
//     readiness EvaluatedAt, run log StartedAt, UpdatedAt, CompletedAt and
//     retry times, rerun CompletedAt), back as the zero time; IDs of every valid
//     character and of the maximum length accepted in every ID position of every
//     method; prefix-related IDs ("p", "p-2", "p2", "P", "p_", "p/x"...) never
//     seeing each other's data in any read, lists and iterators included
//     (FollowEvents, WatchCascadeMarkers, ListRunLogs...);
//   - numeric limits: versions up to types.MaxRunVersion, ttls up to
//     provider.MaxTTL, ErrInvalidArgument just beyond; length limits in bytes,
//     not runes (lock and lease keys, event kinds of 2-, 3- and 4-byte runes);
//   - a bad-input table per method: each case fails with an error wrapping
//     provider.ErrInvalidArgument, and a follow-up read proves nothing was written;
//   - adversarial keys built from every key delimiter of the built-in backends
//     (':', '#', '{', '}', '|', '/', whitespace, Unicode) and more: a key of
//     valid IDs must be accepted and stored without colliding with any other, any
//     other key rejected with ErrInvalidArgument; lock keys are free-form, so each
//     must be a lock of its own;
//   - sizes, for every entity kind with a free-form field (pipelines, traits,
//     runs, events, run logs, reruns, replays, readiness): 256 KB round-trips;
//     1 MB either round-trips or fails with provider.ErrTooLarge and writes
//     nothing, also over a smaller value;
//   - no aliasing between the caller's values and what is stored;
//   - corrupt records (Harness.Corrupt), for every provider.RecordKind: a Get*
//     of a record whose stored value does not decode fails with an error
//     wrapping provider.ErrCorrupt that names it, while its neighbours read as
//     ever; every List* and iterator of the kind (ListEvents, ReadEventsSince
//     paged by cursor, FollowEvents, WatchCascadeMarkers...) skips it, returns
//     the others in order, returns limit good records when there are that many,
//     and reports it exactly once per call to the provider.OnCorrupt handler of
//     the call's context; writing the record again replaces the corrupt value;
//   - a cancelled context for every method: errors.Is(err, context.Canceled),
//     and a read afterwards shows that no write, delete or release happened;
//   - lifecycle: Ping, idempotent Start and Stop, ErrClosed from every method after
//     Stop;
//   - fencing under concurrency (FencingRace): a stale and a newer holder
//     writing one record at once from two instances, from a barrier, in
//     repeated rounds: every outcome is one some order of the two writes gives
//     (a backend that checks the fence, then writes, fails); lease keys at the
//     size limit that differ only in their last byte or rune fence apart
//     (Limits/lease_keys_at_limit_fence_apart);
//   - followers of prefix-related pipelines yield nothing of a neighbour's,
//     also in a window after their own last event
//     (EventFollower/no_neighbour_events);
//   - a read-only handle (Harness.OpenReadOnly, the ReadOnly group): every
//     write returns ErrReadOnly, also with bad arguments, and changes nothing;
//     every read returns what a writer's does.
//   - opening order: every bad_input case also runs with a cancelled context
//     (context.Canceled, not ErrInvalidArgument) and then on the stopped provider
//     (ErrClosed), so a backend checks closed, then the context, then the
//     arguments, as the provider contract says.
//
// # Running it
//
// Give Run a Harness that opens your provider:
//
//	func TestConformance(t *testing.T) {
//		providertest.Run(t, providertest.Harness{
//			Open: func(t *testing.T) provider.Provider {
//				p, err := mybackend.New(client, mybackend.WithKeyPrefix(uniqueName(t)))
//				if err != nil {
//					t.Fatal(err)
//				}
//				t.Cleanup(func() { p.Stop(context.Background()) })
//				return p
//			},
//		})
//	}
//
// Run one group with RunRunStore, RunLocker, RunExpiry, RunFidelity and so on, or
// one test with go test -run 'TestConformance/RunStore/cas_match'. The subtest
// names are stable: a group lists one function per behaviour under its name, and
// the suite's own TestSubtestNames compares every name with a golden file.
//
// # The Harness contract
//
// Open is called once or more per subtest with that subtest's t. Providers opened
// with the same t share storage but are different instances with different lock
// owners; providers opened with different t never see each other's data (key your
// storage — key prefix, table, fake clock — by t.Name()). Open returns a started
// provider and registers its own cleanup with t.Cleanup; the suite stops some
// providers itself, so Stop must be idempotent (it is in the contract).
//
// The other fields are optional; each enables or sharpens tests. Harness.Features
// lists them in one table, each with the subtests it enables (they skip without
// it) and whether your harness sets it; t.Log(h.Features()) prints it:
//
//   - OpenOwner opens an instance with a chosen owner identity. It enables
//     Locker/owner_prefix_cannot_release (owners that are prefixes of each
//     other); nil skips it.
//   - Sleep moves time forward for the providers of one test. A backend with a
//     fake clock advances the clock of that test (the one keyed by t.Name()); nil
//     means time.Sleep, for a real server whose TTLs run on real time. The TTL
//     tests use TTLs of at least 2 s and sleep one second past them, and assert
//     that something is still live only right after writing it, so they hold on
//     a loaded machine; with Sleep nil, the tests that need a point part-way
//     through a ttl (Readiness/kept_within_readiness_ttl, Expiry/re_put_mid_ttl)
//     skip, and the sub-second tests only check expiry.
//   - Now returns the providers' clock for the test. The fill checks compare
//     filled times with it (±1 s). Nil makes each group read the clock through a
//     write of its own store, so no group depends on another, but a fill that is
//     wrong the same way in the probe and in the call under test goes unnoticed:
//     set Now whenever the harness has a clock (time.Now for real time).
//   - ReadinessTTL tells the suite the readiness TTL your providers were opened
//     with (zero: the default 5 minutes); with real sleeps, open them with a
//     short one and say so here.
//   - ListPage tells the suite the most items your backend reads in one
//     internal page of a list; the Lists/long tests then span three pages or
//     more (zero: lists of 300 items).
//   - ExpireEvents drops, by the backend's own retention, every event appended
//     so far to a pipeline (advance the clock past a time-based retention, or
//     trim a log kept by count). It enables EventStore/retention_drops_old_events,
//     EventStore/retention_old_cursor_expired and
//     EventFollower/expired_cursor_fails; nil skips them. OpenMaxEvents opens an
//     instance whose log keeps about n events per pipeline, for a backend that
//     retains events by count (the suite asks for 100 and appends 400); it
//     enables EventStore/retention_by_count_expires_old_cursor and
//     EventFollower/count_retention_expires_old_cursor.
//   - ExpireMarkers does the same for the marker log that WatchCascadeMarkers
//     reads (all pipelines' writes so far); it enables
//     MarkerWatcher/expired_cursor_fails and
//     MarkerWatcher/expired_cursor_fails_before_next_write. MaxMarkerWrites tells the suite the
//     count a backend that keeps the log by count was opened with (small: a
//     hundred or so); it enables MarkerWatcher/count_retention_expires_old_cursor.
//   - Corrupt makes one stored record undecodable in the test's storage, through
//     the backend's own client (an SQL UPDATE of a row's JSON, a raw HSET, an
//     appended log entry): the id arguments of each provider.RecordKind are in
//     its field doc. It enables the Corrupt group; nil skips it.
//   - Retention is the record retention your providers were built with; with
//     Sleep it enables the Retention group for each kind with a positive
//     retention; zero skips the group.
//   - OpenReadOnly opens a read-only handle (your backend's WithReadOnly) on
//     the test's storage; it enables the ReadOnly group; nil skips it.
//
// Before anything else, Run and each Run* group check the harness: two
// providers opened with one t must share storage. When they do not, the group
// (or Run) fails at once with "Harness.Open: two providers opened in one test
// do not share storage: ...", instead of with a failure in every test that
// opens two providers.
//
// The subtests call t.Parallel, so a backend on a real server with real sleeps
// does not serialize; the groups themselves run one after another, so Run returns
// only when every test has finished. Raise go test -parallel to overlap more of
// the sleeping tests. On the memory backend the whole suite takes about 15 s
// with -race on two cores.
//
// # Optional interfaces
//
// provider.Leaser, provider.CascadeReader, provider.RunCreator,
// provider.EventFollower, provider.MarkerWatcher, provider.LockInspector and
// provider.LockLister are detected by type assertion on what Open returns. When present, their groups run
// (and the bad-input cases of WriteCascadeMarker also read the markers back); when
// absent, those groups skip with the reason, as do the after-Stop calls of their
// methods and the Expiry, Fidelity and Lists subtests of leases and markers.
//
// # Fencing
//
// RunFencing runs on every harness: fencing is part of the contract, not an
// optional interface. It writes through provider.Fenced with made-up leases (any
// valid key, fences from 1), so it needs no Leaser, except its takeover test,
// which takes real leases and sleeps past the first one's expiry (Sleep). With
// Sleep and Retention it also checks, per write, that what a record remembers
// outlives every write that extended the record: a fenced write, a rewrite
// (unfenced, or fenced again) at half the retention, then Sleep to 1.25
// retentions: the stale fence is still refused. A harness whose Sleep only
// moves a clock while the storage deletes expired data by its own (DynamoDB's
// TTL) should delete what expired in Sleep too, or this test cannot see a
// fence memory deleted before its record.
//
// # Teeth
//
// The suite's own tests (teeth_test.go) wrap the memory backend in 121 broken
// backends, each with one realistic bug — a check-then-act CAS or lock with no
// I/O between check and act, a read-through cache, a ttl kept in whole seconds, a
// prefix scan without its delimiter, a list that stops after one page, a write
// that lands before the cancelled context is reported, a fence counter kept with
// the lease record, a watch, a read or a follow that resumes silently past an
// expired cursor, an event log kept by count that does the same, a listing that
// fails whole on one record that does not decode, counts it toward its limit or
// skips it without a report, a follow that ends at it, a run still shown at its
// exact expiry instant, a retention counted from the first write only, a list
// that keeps expired runs, a create that refuses a run that expired, fences
// ignored, refused but written, kept per instance or for one lease key, forgotten
// by an unfenced write, lowered by a refusal, remembered by a CAS that lost or
// checked after the version, expiring with the first fenced write only, checked
// and then written in two steps, kept under a cut lease key; a follower of a key
// pattern; a read-only handle that writes first or a read that repairs; a missing
// run answered with an error — and
// require each to fail the subtest named for the rule it breaks, in a
// subprocess; and a harness whose providers share nothing must fail in the
// harness check alone.
//
// # Corrupt records in a backend of your own
//
// A stored value that does not decode — a byte flipped, a value a newer
// version wrote, a key written by hand — must be reported, never fatal to its
// neighbours (the provider package doc, "Corrupt records"). The built-in
// backends do it with three functions of package provider, and a third-party
// backend should use them too rather than a rule of its own:
//
//   - decode what a Get* reads with provider.Decode, which returns a
//     *provider.CorruptError (wrapping provider.ErrCorrupt) naming the record
//     by kind, ID and key (where your storage keeps it: "sqlite table runs row
//     r-1");
//   - decode each record a List* or an iterator reads with
//     provider.DecodeOrSkip, and when it returns false skip the record and go
//     on: read past your page or SQL LIMIT until you have limit good records,
//     and move an iterator's cursor past the skipped one. DecodeOrSkip reports
//     the record to the provider.OnCorrupt handler of the call's context (which
//     this suite checks) and to the provider.CorruptReporter you pass;
//   - for anything else wrong with a record (a column that does not parse, a
//     lock holder of no known form), return or report a *provider.CorruptError
//     yourself (provider.SkipCorrupt in a listing).
//
// The reporter is how operators see skipped records: the built-in backends'
// records the pipestate.corrupt.records counter, a Warn log record and a span
// event (package observe's doc); examples/custombackend/sqlite's logs a Warn
// record through its WithLogger option. A reporter may be nil. Give the harness
// a Corrupt hook that writes a bad value through your own client so that the
// Corrupt group runs.
//
// # Decisions where the contract is silent
//
//   - "Ties by schedule" in ListRunLogs means schedule descending (the reference
//     backend's order, and the order of a descending range over
//     RUNLOG#{date}#{schedule}).
//   - ListLateArrivals may order records with equal DetectedAt either way, but
//     must keep every one (PutLateArrival appends).
//   - RenewLease returns the lease with the same Key, Token and Fence.
//   - A lease held by an instance blocks AcquireLock by that same instance too.
//   - A watch cursor is expired when a write after it was dropped. One whose own
//     write was dropped, but no later one, may go on (the built-in backends do):
//     the suite only resumes from cursors whose successors were dropped. An
//     event cursor is the same, except that the suite requires the cursor of the
//     newest event, dropped but with nothing dropped after it, to go on (the
//     contract says so: nothing after it was lost).
//   - Length limits are in bytes. Valid IDs are ASCII (types.ValidateID), so the
//     multi-byte tests are of the free-form strings with a limit: lock and lease
//     keys and event kinds. Owner identities have no length limit.
//   - Without Harness.Now, a group reads the clock through its own store (a
//     run's filled CreatedAt in RunStore, a lease's ExpiresAt in Leaser...), so
//     one broken store never fails another group.
package providertest
