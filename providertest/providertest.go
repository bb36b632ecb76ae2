package providertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// Harness tells the suite how to open the provider under test and how to move time.
type Harness struct {
	// Open returns a started provider. Providers opened within one test share storage
	// (they are different instances, with different lock owners); different tests
	// never see each other's data. Open registers any cleanup (Stop, dropping the
	// storage) with t.Cleanup; the suite may already have stopped the provider, so
	// Stop must be idempotent, as the contract says. Open fails the test (t.Fatal)
	// when it cannot open a provider.
	Open func(t *testing.T) provider.Provider

	// OpenOwner is Open for an instance whose lock and lease owner identity is owner
	// (the backend's owner option), sharing storage with the other providers of t.
	// The identity tests use it to check that owners which are prefixes of each
	// other never release each other's locks. Nil skips those tests with a reason.
	OpenOwner func(t *testing.T, owner string) provider.Provider

	// Sleep moves time forward by d as the providers of the test t see it, for
	// example by advancing a fake clock shared by the providers Open returned for
	// t. Nil means time.Sleep.
	Sleep func(t *testing.T, d time.Duration)

	// ReadinessTTL is the readiness TTL of the providers Open returns (the
	// backend's ReadinessTTL option). Zero means the contract's default, 5 minutes.
	// A harness on a real server with real sleeps sets a short one (a few seconds)
	// so that the expiry test does not sleep for 5 minutes.
	ReadinessTTL time.Duration

	// Now returns the time as the providers of the test t see it: their clock
	// option (a fake clock's Now), or time.Now for a backend on real time. The
	// tests of fields a method fills from the clock (CreatedAt, Timestamp,
	// WrittenAt, ExpiresAt...) compare them with it, allowing 1 s of skew. Nil
	// makes each group read the clock through a write of its own store (a run's
	// filled CreatedAt in RunStore, a lease's ExpiresAt in Leaser...), so no group
	// depends on another; a fill that is wrong in the same way in the probe and in
	// the call under test then goes unnoticed. Set it whenever the harness has a
	// clock.
	Now func(t *testing.T) time.Time

	// ListPage is the most items the backend reads in one internal page of a list,
	// as the providers Open returns are configured (for example a client wrapper
	// that caps a DynamoDB Query's Limit). The long-list tests then use lists of
	// 2*ListPage+10 items, so every listing spans at least three pages. Zero means
	// lists of 300 items, longer than the default page of every built-in backend.
	// A small page makes the paging tests both stronger and faster.
	ListPage int

	// ExpireEvents applies the backend's event retention to pipelineID in the
	// storage of t: when it returns, every event appended to pipelineID before
	// the call is dropped, as retention drops old events, while events appended
	// after it are kept. A backend with time-based retention advances the test's
	// clock past it; one that trims the log by count trims it (e.g. an exact
	// XTRIM MAXLEN 0 of the pipeline's stream). It enables
	// EventStore/retention_drops_old_events, EventStore/retention_old_cursor_expired
	// and EventFollower/expired_cursor_fails; nil skips them with a reason.
	ExpireEvents func(t *testing.T, pipelineID string)

	// OpenMaxEvents is Open for an instance, sharing storage with the other
	// providers of t, whose event log keeps about the n most recent events of each
	// pipeline (a backend that retains events by count: Redis's WithMaxEvents;
	// approximately is enough, and n is about a hundred). The suite appends a few
	// hundred events past n. It enables EventStore/retention_by_count_expires_old_cursor
	// and EventFollower/count_retention_expires_old_cursor; nil skips them.
	OpenMaxEvents func(t *testing.T, n int) provider.Provider

	// ExpireMarkers applies the retention of the marker log (what
	// provider.MarkerWatcher reads) in the storage of t: when it returns, every
	// marker write made before the call is dropped, as retention drops old
	// writes (a watch behind them hears it at once, before any later write),
	// while writes made after it are kept. A backend with time-based retention advances the test's clock past it;
	// one that trims the log by count trims it (e.g. an exact XTRIM MAXLEN 0 of the
	// marker stream). It enables MarkerWatcher/expired_cursor_fails and
	// MarkerWatcher/expired_cursor_fails_before_next_write; nil skips them with
	// a reason.
	ExpireMarkers func(t *testing.T)

	// Corrupt makes one stored record of kind undecodable in the storage of t,
	// as a flipped byte, a value written by a newer version or a key written by
	// hand would: it writes, through the backend's own client (a raw HSET, XADD
	// or PutItem, an SQL UPDATE), a stored form that the backend's reads cannot
	// decode, leaving whatever orders or indexes the record as it is. For the
	// kind of a record kept in place, id names a record the suite wrote, and the
	// hook corrupts it wherever the backend keeps a copy of it (a DynamoDB list
	// copy too); for a log's record (events, late arrivals, marker writes) it
	// appends a corrupt record to the log, after the records written so far. id
	// is, by kind:
	//
	//	provider.KindPipeline       pipelineID
	//	provider.KindTrait          pipelineID, traitType
	//	provider.KindRunState       runID
	//	provider.KindEvent          pipelineID               (appends)
	//	provider.KindRunLog         pipelineID, date, scheduleID
	//	provider.KindRerun          rerunID
	//	provider.KindReplay         pipelineID, date, scheduleID
	//	provider.KindLateArrival    pipelineID, date, scheduleID (appends)
	//	provider.KindCascadeMarker  pipelineID, date, scheduleID
	//	provider.KindMarkerWrite    (none: appends to the marker log)
	//	provider.KindReadiness      pipelineID
	//	provider.KindLock           lock key (its holder becomes neither a lock's nor a lease's)
	//
	// A kind the backend cannot corrupt may t.Skip. Corrupt enables the Corrupt
	// group; nil skips it with a reason.
	Corrupt func(t *testing.T, kind provider.RecordKind, id ...string)

	// MaxMarkerWrites is the number of marker writes that the marker log of the
	// providers Open returns keeps, for a backend that retains the log by count
	// (Redis's WithMaxMarkerWrites; approximately is enough: the test writes
	// 3*MaxMarkerWrites+100 and more than 300 writes). It enables
	// MarkerWatcher/count_retention_expires_old_cursor, which needs a small count
	// (a few hundred at most) to stay fast; zero skips it.
	MaxMarkerWrites int

	// Retention is the retention (provider.Retention) the providers Open returns
	// were built with (the backend's WithRetention option). It enables the
	// Retention group for each record kind whose field is positive (at least 4
	// seconds; the group moves time by it, so days are as fast as seconds): the
	// group writes records and moves time with Sleep to just before and exactly
	// to their expiry, so it needs Sleep to move the clock the backend judges
	// retention by (its clock option, set from the same fake clock as Now). A
	// backend that retains a log by count rather than by age (Redis's event
	// streams) leaves that field zero. Zero skips the group.
	Retention provider.Retention

	// OpenReadOnly is Open for a read-only handle (the backend's read-only
	// option, WithReadOnly in the built-in backends) on the storage of t: every
	// write returns an error wrapping provider.ErrReadOnly and writes nothing,
	// every read works. It enables the ReadOnly group; nil skips it, for a
	// backend without a read-only mode.
	OpenReadOnly func(t *testing.T) provider.Provider

	// DropActiveEntry removes run runID's entry from the backend's active-runs
	// index and nothing else (not the run's record, nor any mark a write relies
	// on), as an operator deleting it by hand or a failover losing it would,
	// through the backend's raw client; a run without an entry, or without a
	// record, is left as it is (the simulation drops entries of any run). It
	// enables
	// ActiveRunLister/reindex_restores_lost_entry, which checks that
	// provider.ActiveRunReindexer.ReindexRun restores it; nil skips that test,
	// for a backend whose index cannot lose an entry (memory's is its run map).
	DropActiveEntry func(t *testing.T, runID string)

	// firstCause is set by Run when a step of the basics failed: the groups
	// skip, naming it.
	firstCause string
}

// Durations the TTL tests use. They are chosen to be robust on a real server with
// real sleeps under load: a short TTL is only ever asserted to have expired after
// expireWait, and "still live" is only asserted for long TTLs.
const (
	shortTTL            = 2 * time.Second
	expireWait          = shortTTL + time.Second
	longTTL             = time.Hour
	defaultReadinessTTL = 5 * time.Minute
	// listAll is a limit larger than any list a test builds.
	listAll = 1000
)

// Run runs the whole conformance suite: every Run* function of this package, in
// the order below. Optional interfaces (provider.Leaser, provider.CascadeReader,
// provider.RunCreator, provider.EventFollower, provider.MarkerWatcher,
// provider.LockInspector, provider.LockLister, provider.ActiveRunLister) are detected by type assertion; their groups skip when
// the provider lacks them.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.Open == nil {
		t.Fatal("providertest: Harness.Open is nil")
	}
	// A harness whose providers do not share storage fails almost every test,
	// each for a reason of its own: say what is wrong once, and stop.
	(&suite{h: h}).checkHarness(t)
	// A base method that breaks its simplest rule fails most tests, each for
	// a reason of its own: say which once, and skip the groups.
	h.firstCause = runBasics(t, h)
	RunPipelineStore(t, h)
	RunTraitStore(t, h)
	RunRunStore(t, h)
	RunEventStore(t, h)
	RunRunLogStore(t, h)
	RunRerunStore(t, h)
	RunCascadeStore(t, h)
	RunLateArrivalStore(t, h)
	RunReplayStore(t, h)
	RunLocker(t, h)
	RunLeaser(t, h)
	RunKeepAlive(t, h)
	RunCascadeReader(t, h)
	RunRunCreator(t, h)
	RunEventFollower(t, h)
	RunMarkerWatcher(t, h)
	RunLockInspector(t, h)
	RunLockLister(t, h)
	RunActiveRunLister(t, h)
	RunReadiness(t, h)
	RunExpiry(t, h)
	RunRetention(t, h)
	RunFidelity(t, h)
	RunLists(t, h)
	RunLimits(t, h)
	RunCorrupt(t, h)
	RunFencing(t, h)
	RunFencingRace(t, h)
	RunReadOnly(t, h)
	RunLifecycle(t, h)
}

// suite is the Harness with defaults applied.
type suite struct {
	h Harness
	// probe reads the providers' clock through the group's own store, when
	// Harness.Now is nil; groups that check filled times set it.
	probe func(t *testing.T, p provider.Provider) time.Time
}

// group runs body as the subtest name. The group itself is not parallel (so Run
// returns only when every test has finished); the tests inside it are.
func group(t *testing.T, name string, h Harness, body func(t *testing.T, s *suite)) {
	t.Helper()
	if h.Open == nil {
		t.Fatal("providertest: Harness.Open is nil")
	}
	s := &suite{h: h}
	t.Run(name, func(t *testing.T) {
		if h.firstCause != "" {
			t.Skipf("skipped: %s failed: fix it first, then run the suite again", h.firstCause)
		}
		s.checkHarness(t)
		body(t, s)
	})
}

// harnessCheckID is the pipeline the harness check registers.
const harnessCheckID = "providertest-harness-check"

// checkHarness opens two providers with t, registers a pipeline with one and
// reads it with the other, and fails t now, naming the mistake, when the second
// does not see it: the harness's providers do not share storage, and every test
// that opens two of them would fail for a reason of its own. When the first
// provider does not read back its own write either, the backend is at fault, not
// the harness: the group's tests say how, so the check passes.
func (s *suite) checkHarness(t *testing.T) {
	t.Helper()
	a, b := s.open(t), s.open(t)
	cfg := types.PipelineConfig{ID: harnessCheckID, Archetype: t.Name()}
	if err := a.RegisterPipeline(t.Context(), cfg); err != nil {
		t.Logf("providertest: the harness check could not register a pipeline (%v); the tests say why", err)
		return
	}
	if got, err := a.GetPipeline(t.Context(), cfg.ID); err != nil || got == nil || got.Archetype != cfg.Archetype {
		return
	}
	got, err := b.GetPipeline(t.Context(), cfg.ID)
	switch {
	case err != nil:
		t.Logf("providertest: the harness check could not read a pipeline (%v); the tests say why", err)
	case got == nil:
		t.Fatalf("%sthe first registered pipeline %q and the second does not find it (GetPipeline = nil, nil); "+
			"the providers Open returns for one t must share storage, keyed by t.Name(), and only different tests get storage of their own",
			harnessMistake, cfg.ID)
	case got.Archetype != cfg.Archetype:
		t.Fatalf("%sthe first registered pipeline %q and the second finds another one (%+v); "+
			"the providers Open returns for one t must share storage, keyed by t.Name(), and only different tests get storage of their own",
			harnessMistake, cfg.ID, *got)
	}
}

// harnessMistake starts the failure of a harness whose providers do not share
// storage.
const harnessMistake = "Harness.Open: two providers opened in one test do not share storage: "

// test runs body as a parallel subtest.
func test(t *testing.T, name string, body func(t *testing.T)) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		t.Parallel()
		body(t)
	})
}

// run runs the behaviour fn of the group as its parallel subtest name.
func (s *suite) run(t *testing.T, name string, fn func(t *testing.T, s *suite)) {
	t.Helper()
	test(t, name, func(t *testing.T) { fn(t, s) })
}

// open returns a new provider instance on the test's storage.
func (s *suite) open(t *testing.T) provider.Provider {
	t.Helper()
	p := s.h.Open(t)
	if p == nil {
		t.Fatal("providertest: Harness.Open returned nil")
	}
	return p
}

// sleep moves the test's time forward by d.
func (s *suite) sleep(t *testing.T, d time.Duration) {
	t.Helper()
	if s.h.Sleep == nil {
		time.Sleep(d)
		return
	}
	s.h.Sleep(t, d)
}

// realExpirySlack is how long past an expiry the exact-instant tests wait on real
// time (Harness.Sleep nil): a server starts a ttl when the request reaches it, a
// little after the client read its clock, and may count time in milliseconds, so
// on real time the instant can only be checked to within this much.
const realExpirySlack = 50 * time.Millisecond

// sleepToExpiry moves time forward to the instant an entity written with ttl d
// expires: exactly d with a fake clock (Harness.Sleep), d+realExpirySlack on real
// time.
func (s *suite) sleepToExpiry(t *testing.T, d time.Duration) {
	t.Helper()
	if s.h.Sleep == nil {
		d += realExpirySlack
	}
	s.sleep(t, d)
}

// idleDay is the idle gap of the tests of what must outlast any expiry (fences).
const idleDay = 24 * time.Hour

// idleGap is idleDay with Harness.Sleep; on real time it is expireWait, the
// longest the suite sleeps.
func (s *suite) idleGap() time.Duration {
	if s.h.Sleep == nil {
		return expireWait
	}
	return idleDay
}

func (s *suite) readinessTTL() time.Duration {
	if s.h.ReadinessTTL > 0 {
		return s.h.ReadinessTTL
	}
	return defaultReadinessTTL
}

// uid returns an ID valid under types.ValidateID, unique to the test and base.
func uid(t *testing.T, base string) string {
	t.Helper()
	h := fnv.New32a()
	h.Write([]byte(t.Name()))
	return fmt.Sprintf("%s-%08x", base, h.Sum32())
}

// ids are the identifiers one test uses, unique to it.
type ids struct {
	pipeline, other, run, rerun, trait, date, lock string
}

func newIDs(t *testing.T) ids {
	t.Helper()
	return ids{
		pipeline: uid(t, "pipe"),
		other:    uid(t, "other"),
		run:      uid(t, "run"),
		rerun:    uid(t, "rerun"),
		trait:    uid(t, "trait"),
		date:     "2026-03-04",
		lock:     uid(t, "lock"),
	}
}

// t0 is the base of the times the suite writes: nanoseconds set, so a backend that
// truncates is caught.
var t0 = time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.UTC)

// at returns t0 plus i minutes.
func at(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }

// cmpOpts compares values as the round-trip rule says: times by Equal, and empty
// maps and slices equal to nil ones.
var cmpOpts = cmp.Options{
	cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) }),
	cmpopts.EquateEmpty(),
}

// same reports a difference between want and got.
func same(t *testing.T, what string, want, got any) bool {
	t.Helper()
	if d := cmp.Diff(want, got, cmpOpts); d != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", what, d)
		return false
	}
	return true
}

// jsonRoundTrip returns v after a JSON round trip: what a backend gives back.
func jsonRoundTrip[T any](t *testing.T, v T) T {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("providertest: marshal %T: %v", v, err)
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("providertest: unmarshal %T: %v", v, err)
	}
	return out
}

// noErr fails the test now if err is not nil.
func noErr(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: unexpected error: %v", what, err)
	}
}

// wantErr reports an error unless err wraps target.
func wantErr(t *testing.T, err, target error, what string) bool {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: got error %v, want one wrapping %v", what, err, target)
		return false
	}
	return true
}

// mustGet fails the test unless err is nil and v is not nil.
func mustGet[T any](t *testing.T, v *T, err error, what string) T {
	t.Helper()
	noErr(t, err, what)
	if v == nil {
		t.Fatalf("%s: got nil, want a value", what)
	}
	return *v
}

// wantNil reports unless err is nil and v is nil: the (nil, nil) of a missing entity.
func wantNil[T any](t *testing.T, v *T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: got error %v, want (nil, nil)", what, err)
		return
	}
	if v != nil {
		t.Errorf("%s: got %+v, want nil", what, *v)
	}
}

// wantLen fails the test unless err is nil and the list has n items.
func wantLen[T any](t *testing.T, list []T, err error, n int, what string) {
	t.Helper()
	noErr(t, err, what)
	if len(list) != n {
		t.Fatalf("%s: got %d items, want %d: %+v", what, len(list), n, list)
	}
}

// cancelled returns a context that is already cancelled.
func cancelled(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	return ctx
}

// call is one named provider call, for tables of calls (bad input, cancelled
// context, after Stop).
type call struct {
	name string
	do   func(ctx context.Context, p provider.Provider, k ids) error
}

// checkCancelled runs each call with a cancelled context and expects an error
// wrapping context.Canceled. setup, if set, writes valid data first; unchanged,
// if set, then checks with a live context that the cancelled calls changed
// nothing stored (the writes wrote nothing, the deletes and releases freed
// nothing).
func (s *suite) checkCancelled(t *testing.T, calls []call, setup, unchanged func(t *testing.T, p provider.Provider, k ids)) {
	t.Helper()
	test(t, "cancelled_context", func(t *testing.T) {
		p, k := s.open(t), newIDs(t)
		if setup != nil {
			setup(t, p, k)
		}
		ctx := cancelled(t)
		for _, c := range calls {
			wantErr(t, c.do(ctx, p, k), context.Canceled, c.name+" with a cancelled context")
		}
		if unchanged != nil {
			unchanged(t, p, k)
		}
	})
}

// badCase is one invalid call: it must fail with ErrInvalidArgument, and then
// verify proves nothing was written. It also pins the opening order: the same
// call with a cancelled context fails with context.Canceled, and on a stopped
// provider with ErrClosed, whatever its arguments.
type badCase struct {
	name string
	// setup, if set, writes valid data first (e.g. the run a bad CAS targets).
	setup func(t *testing.T, p provider.Provider, k ids)
	call  func(ctx context.Context, p provider.Provider, k ids) error
}

// checkBadInput runs each case as a parallel subtest of "bad_input"; after each
// rejected call, verify checks that the store is as setup left it.
func (s *suite) checkBadInput(t *testing.T, cases []badCase, verify func(t *testing.T, p provider.Provider, k ids)) {
	t.Helper()
	t.Run("bad_input", func(t *testing.T) {
		t.Parallel()
		for _, c := range cases {
			test(t, c.name, func(t *testing.T) {
				p, k := s.open(t), newIDs(t)
				if c.setup != nil {
					c.setup(t, p, k)
				}
				err := c.call(t.Context(), p, k)
				if wantErr(t, err, provider.ErrInvalidArgument, c.name) && verify != nil {
					verify(t, p, k)
				}
				ctx := cancelled(t)
				wantErr(t, c.call(ctx, p, k), context.Canceled,
					c.name+" with a cancelled context (the context comes before the arguments)")
				noErr(t, p.Stop(t.Context()), "Stop")
				wantErr(t, c.call(ctx, p, k), provider.ErrClosed,
					c.name+" after Stop, with a cancelled context (stopped comes first)")
			})
		}
	})
}

// badIDs are identifiers every backend must reject with ErrInvalidArgument.
var badIDs = []struct{ name, id string }{
	{"empty", ""},
	{"colon", "a:b"},
	{"space", "a b"},
	{"too_long", strings.Repeat("x", types.MaxIDLen+1)},
}

// delimiters are the key delimiters of the built-in backends, and more characters
// a third-party backend might use to join or escape key parts.
var delimiters = []string{":", "#", "{", "}", "|", "/", " ", "\t", "\n", ".", "=", "@", "+", "-", "_",
	"\\", "%", "*", "?", "$", ",", ";", "'", "\"", "é", "\u00a0", "\u2028", "\x00"}

// adversarialIDs returns single identifiers that a careless backend might map to
// the same storage: joined with, led or trailed by a delimiter, differing in case,
// path-cleaning to one another, or in Unicode normalization. Each is prefixed with
// prefix so that it is unique to the test.
func adversarialIDs(prefix string) []string {
	d := prefix + "/"
	out := []string{prefix, d + "a", d + "A", d + "ab", d + "b", d + "a/../b", d + "a//b", d + "./a",
		d + "e\u0301", d + "\u00e9",
		prefix + strings.Repeat("z", types.MaxIDLen-len(prefix)),
		prefix + strings.Repeat("z", types.MaxIDLen-len(prefix)-1) + "y"}
	for _, c := range delimiters {
		out = append(out, d+"a"+c+"b", d+"a"+c, d+c+"a")
	}
	return out
}

// adversarialTuples returns n-part keys (n >= 2) such that a naive join of the
// parts with any delimiter would make two of them equal, e.g. ("a#b", "c") and
// ("a", "b#c"). The first part is prefixed with prefix, to be unique to the test.
func adversarialTuples(prefix string, n int) [][]string {
	var out [][]string
	base := func() []string {
		k := make([]string, n)
		for i := range k {
			k[i] = "x"
		}
		return k
	}
	add := func(k []string) {
		k[0] = prefix + k[0]
		out = append(out, k)
	}
	add(base())
	for _, d := range delimiters {
		for i := 0; i+1 < n; i++ {
			left, right := base(), base()
			left[i], left[i+1] = "a"+d+"b", "c"
			right[i], right[i+1] = "a", "b"+d+"c"
			add(left)
			add(right)
		}
		trail := base()
		trail[n-1] = "x" + d
		add(trail)
	}
	return out
}

// checkDistinct stores each key with its index as a tag: a key whose parts are
// all valid IDs (types.ValidateID) must be accepted, any other rejected with
// ErrInvalidArgument. It then reads every accepted key back and expects its own
// tag: no two keys share storage. get returns the tag found, or found == false.
// It returns the indexes of the accepted keys.
func checkDistinct(t *testing.T, keys [][]string, put func(key []string, tag int) error,
	get func(key []string) (tag int, found bool, err error)) []int {
	t.Helper()
	var accepted []int
	for i, k := range keys {
		err := put(k, i)
		switch {
		case validKey(k) && err != nil:
			t.Errorf("put %q, a key of valid IDs: %v, want it accepted", k, err)
		case validKey(k):
			accepted = append(accepted, i)
		case err == nil:
			t.Errorf("put %q, a key with an invalid ID: accepted, want ErrInvalidArgument", k)
		default:
			wantErr(t, err, provider.ErrInvalidArgument, fmt.Sprintf("put %q", k))
		}
	}
	for _, i := range accepted {
		tag, found, err := get(keys[i])
		switch {
		case err != nil:
			t.Errorf("get %q: %v", keys[i], err)
		case !found:
			t.Errorf("get %q: not found after a successful put", keys[i])
		case tag != i:
			t.Errorf("get %q: found the value of %q: the two keys share storage", keys[i], keys[tag])
		}
	}
	return accepted
}

// validKey reports whether every part of key is a valid ID.
func validKey(key []string) bool {
	for _, id := range key {
		if types.ValidateID("id", id) != nil {
			return false
		}
	}
	return true
}

// singles wraps single IDs as one-part keys for checkDistinct.
func singles(list []string) [][]string {
	out := make([][]string, len(list))
	for i, id := range list {
		out[i] = []string{id}
	}
	return out
}

// bigString returns a string of n bytes.
func bigString(n int) string { return strings.Repeat("0123456789abcdef", n/16+1)[:n] }

// runConcurrently runs fn(0) ... fn(n-1) in n goroutines at once and waits for
// them. The start does not depend on luck: every goroutine is running and
// spinning on a flag before the flag is raised, so as many calls as there are
// CPUs start within nanoseconds of each other, not a goroutine wake-up apart.
func runConcurrently(n int, fn func(i int)) {
	var wg sync.WaitGroup
	var ready atomic.Int64
	var start atomic.Bool
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ready.Add(1)
			for !start.Load() {
				runtime.Gosched()
			}
			fn(i)
		}()
	}
	for ready.Load() < int64(n) {
		runtime.Gosched()
	}
	start.Store(true)
	wg.Wait()
}

// The one-winner tests repeat their race, each round on a fresh key, at least
// raceRounds times and until raceTime has passed (at most maxRaceRounds). A
// check-then-act backend with a round trip between check and act (any networked
// one) loses in the first rounds. One with no I/O between the two (an in-process
// store) loses only in a round where the CPUs run two callers truly at once:
// hundreds of rounds make that likely on an idle machine, not certain on a
// loaded one (a teeth run with load 12 on 2 cores missed it in 2 of 3 runs).
const (
	raceRounds    = 3
	raceTime      = 500 * time.Millisecond
	maxRaceRounds = 2000
)

// raceAgain reports whether a race that began at start should run round.
func raceAgain(round int, start time.Time) bool {
	return round < raceRounds || (round < maxRaceRounds && time.Since(start) < raceTime)
}

// errs collects errors from goroutines, which must not call t.Fatal.
type errs struct {
	mu   sync.Mutex
	list []string
}

func (e *errs) add(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, fmt.Sprintf(format, args...))
}

// failed reports whether an error was collected.
func (e *errs) failed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.list) > 0
}

// report fails the test with the collected errors: each once, with the count
// of the others like it (the same but for goroutine and round numbers), at
// most 10 kinds shown.
func (e *errs) report(t *testing.T) {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, line := range repeats(e.list, 10) {
		t.Error(line)
	}
	if len(e.list) > 0 {
		t.FailNow()
	}
}

// numbered matches the numbers that tell apart repeats of one failure.
var numbered = regexp.MustCompile(`\b(goroutine|round|instance|caller) \d+`)

// repeats returns list with each message once, in first-seen order, suffixed
// with the count of the other messages like it (equal once numbered's numbers
// are blanked); past max kinds, one line counts the rest.
func repeats(list []string, max int) []string {
	var kinds []string
	first, count := map[string]string{}, map[string]int{}
	for _, m := range list {
		kind := numbered.ReplaceAllString(m, "$1 N")
		if _, ok := first[kind]; !ok {
			first[kind] = m
			kinds = append(kinds, kind)
		}
		count[kind]++
	}
	var out []string
	for i, kind := range kinds {
		if i == max {
			rest := 0
			for _, k := range kinds[max:] {
				rest += count[k]
			}
			out = append(out, fmt.Sprintf("... and %d more errors of %d other kinds", rest, len(kinds)-max))
			break
		}
		line := first[kind]
		if n := count[kind] - 1; n > 0 {
			line += fmt.Sprintf(" (and %d more like it)", n)
		}
		out = append(out, line)
	}
	return out
}

// now returns the time as the providers of t see it: Harness.Now, or else the
// group's probe through its own store.
func (s *suite) now(t *testing.T, p provider.Provider) time.Time {
	t.Helper()
	if s.h.Now != nil {
		return s.h.Now(t)
	}
	if s.probe == nil {
		t.Fatal("providertest: this group reads no clock (internal error)")
	}
	return s.probe(t, p)
}

// probeSeq makes each clock probe write an entity of its own.
var probeSeq atomic.Int64

// probeID returns an ID for one clock probe of the test, never listed with the
// test's own entities.
func probeID(t *testing.T) string {
	t.Helper()
	return fmt.Sprintf("%s-%d", uid(t, "clock-probe"), probeSeq.Add(1))
}

// clockSlack is how far a time a backend fills may lie outside the clock probes
// around the call, for backends whose calls read clocks on different machines.
const clockSlack = time.Second

// wantWithin reports unless lo-clockSlack <= got <= hi+clockSlack.
func wantWithin(t *testing.T, what string, got, lo, hi time.Time) {
	t.Helper()
	if got.Before(lo.Add(-clockSlack)) || got.After(hi.Add(clockSlack)) {
		t.Errorf("%s = %v, want within [%v, %v] (the provider's clock around the call, ±%v)", what, got, lo, hi, clockSlack)
	}
}

// sortedCopy returns the strings sorted by bytes, as every backend's sort keys are.
func sortedCopy(in []string) []string {
	out := slices.Clone(in)
	slices.Sort(out)
	return out
}

// roundTripJSON sets *out to v after a JSON round trip.
func roundTripJSON(v, out any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("providertest: marshal %T: %w", v, err)
	}
	return json.Unmarshal(b, out)
}

// cmpDiff is cmp.Diff under the round-trip rule (cmpOpts).
func cmpDiff(want, got any) string { return cmp.Diff(want, got, cmpOpts) }
