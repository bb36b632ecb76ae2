// Package providertest is the conformance suite of provider.Provider. A backend —
// built in or third-party — proves that it behaves exactly like the built-in ones
// by passing it from its own tests. It imports only the standard library,
// provider, types and go-cmp, so it pulls in no backend and no SDK.
//
// # What it checks
//
// Every rule of the semantics table in the provider package doc has at least one
// named subtest, grouped by interface (PipelineStore, TraitStore, RunStore,
// EventStore, RunLogStore, RerunStore, CascadeStore, LateArrivalStore,
// ReplayStore, Locker, Leaser, CascadeReader, Readiness, Lists, Limits, Lifecycle), e.g.
// "RunStore/cas_concurrent_one_winner". Each group checks, where the rule applies:
//
//   - round trips (after JSON: numbers in maps are float64, times are Equal to the
//     nanosecond) and the fields a method fills from the clock;
//   - missing entities ((nil, nil)) and empty lists;
//   - list order, ties and limits;
//   - TTLs of traits, readiness, locks and leases, moving time with Harness.Sleep;
//   - compare-and-swap: match, mismatch, missing run, ID mismatches, CreatedAt kept,
//     Version = expected+1, exactly one winner among 32 goroutines on two instances,
//     no lost update among 8 goroutines x 50 retried increments;
//   - events paged with cursors while 8 writers on two instances append: each event
//     is seen exactly once, and every reader sees the same order;
//   - locks and leases across instances: exclusivity, owner-safe release, expiry
//     and takeover, strictly increasing fences, one shared key space; owner IDs
//     and lease tokens that are prefixes of each other never release each other
//     (owners need Harness.OpenOwner);
//   - the expiry instant: a trait, readiness result, lock or lease is gone when
//     now >= its expiry (Harness.Sleep of exactly the ttl);
//   - every list of IDs (runs, reruns, all reruns, replays, pipelines) read while
//     writers on two instances create new IDs, and read whole (longer than any
//     internal page) while other items move in the order: no duplicates, nothing
//     that existed throughout missing;
//   - numeric limits: versions up to types.MaxRunVersion, ttls up to
//     provider.MaxTTL, ErrInvalidArgument just beyond;
//   - a bad-input table per method: each case fails with an error wrapping
//     provider.ErrInvalidArgument, and a follow-up read proves nothing was written;
//   - adversarial keys built from every key delimiter of the built-in backends
//     (':', '#', '{', '}', '|', '/', whitespace, Unicode) and more: each key is
//     either rejected with ErrInvalidArgument or stored without colliding with any
//     other; lock keys are free-form, so each must be a lock of its own;
//   - sizes: 256 KB of metadata round-trips; 1 MB either round-trips or fails with
//     provider.ErrTooLarge and writes nothing;
//   - no aliasing between the caller's values and what is stored;
//   - a cancelled context for every method (errors.Is(err, context.Canceled));
//   - lifecycle: Ping, idempotent Start and Stop, ErrClosed from every method after
//     Stop.
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
// Run one group with RunRunStore, RunLocker and so on, or one test with
// go test -run 'TestConformance/RunStore/cas_match'.
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
// Sleep moves time forward for the providers of one test. A backend with a fake
// clock advances the clock of that test (the one keyed by t.Name()); nil means
// time.Sleep, for a real server whose TTLs run on real time. The TTL tests use
// TTLs of at least 2 s and sleep one second past them, and assert that something
// is still live only right after writing it with an hour's TTL, so they hold on a
// loaded machine. ReadinessTTL tells the suite the readiness TTL your providers
// were opened with (zero: the default 5 minutes); with real sleeps, open them with
// a short one and say so here.
//
// The subtests call t.Parallel, so a backend on a real server with real sleeps
// does not serialize; the groups themselves run one after another, so Run returns
// only when every test has finished. Raise go test -parallel to overlap more of
// the sleeping tests.
//
// # Optional interfaces
//
// provider.Leaser and provider.CascadeReader are detected by type assertion on
// what Open returns. When present, the Leaser and CascadeReader groups run (and
// the bad-input cases of WriteCascadeMarker also read the markers back); when
// absent, those groups skip with the reason, as do the after-Stop calls of their
// methods.
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
package providertest
