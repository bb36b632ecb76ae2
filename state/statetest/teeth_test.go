package statetest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pipestate/pipestate/fence"
	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/statetest"
)

// flaws a toy store or deduper can be built with; the zero value is correct.
type flaws struct {
	lostUpdate     bool // non-atomic read-then-write
	ignoreTTL      bool // never expires
	keepExpired    bool // a merge onto an expired value continues from it
	ttlZeroKeeps   bool // ttl 0 keeps an earlier expiry
	reverseMany    bool // GetMany answers in reverse order
	noDedupe       bool // MergeUpdateOnce applies every delivery
	storeWideClaim bool // MergeUpdateOnce claims event IDs store-wide, not per key
	ignoreCtx      bool // ignores cancelled contexts
	noValidate     bool // accepts any key and ttl
	naiveKeys      bool // encodes keys as entity, or entity + ":" + bucket when windowed
	closedWorks    bool // keeps working after Close
	alwaysFirst    bool // deduper: every MarkSeen is first
	racyDeduper    bool // deduper: check-then-set
	releaseIgnored bool // deduper: Release does nothing
	wrapOverflow   bool // an int64 sum overflows silently
	expiryAfter    bool // a value expires only when now > its expiry
	argsFirst      bool // GetMany checks its keys before Close and the context

	maxNoRefresh     bool // a Max merge that does not raise the value keeps the old expiry
	skipIdentity     bool // merging the Identity writes nothing
	deleteAtZero     bool // a sum that reaches zero is deleted
	claimWithValue   bool // a claim expires with the value's ttl
	claimForever     bool // a claim ignores the dedup TTL
	claimBeforeCheck bool // MergeUpdateOnce claims before the merge can fail
	naiveClaimID     bool // claims are keyed id:entity:bucket
	wholeSeconds     bool // ttls are truncated to whole seconds (0 = no expiry)
	onlyExtends      bool // a merge never moves the expiry earlier
	onceKeepsExpiry  bool // MergeUpdateOnce sets the expiry only when it creates the value
	readCache        bool // each instance caches what it read, ignoring expiry
	int32Millis      bool // ttls are stored as int32 milliseconds
	zeroTTLIsDay     bool // ttl 0 means a day, not no expiry
	first100         bool // GetMany answers only its first 100 keys
	racyOnce         bool // MergeUpdateOnce checks the claim and claims in two steps
	fenceCheckWrite  bool // a fenced merge checks the fence, lets others run, then writes
	entityRunes      bool // a merge limits Key.Entity in runes, not bytes
	onceCtxLate      bool // MergeUpdateOnce claims, then checks the context
	releaseCtxLate   bool // deduper: Release deletes, then checks the context
	batchDropsLast   bool // MergeMany skips the last update of its batch
	batchPartial     bool // MergeMany checks each update only when it comes to it
	batchFirstChunk  bool // MergeMany applies only its first state.MergeBatchSize updates
	batchNoTTL       bool // MergeMany ignores the updates' ttls

	dedupRefresh     bool // deduper: every MarkSeen sets the claim's expiry to now+TTL
	onceRefreshClaim bool // a redelivery to MergeUpdateOnce claims the event anew
	maxEqualNoop     bool // a Max merge of the value stored writes nothing (keeps the expiry)
	batchChunkIndex  bool // MergeMany reports an outcome at its index within its round trip
	batchFirstTTL    bool // MergeMany gives a key the ttl of its first update in the batch
	batchLongestTTL  bool // MergeMany gives a key the longest ttl of its updates (0 longest)
	sketchLost       bool // sketch: a non-atomic read-combine-write
	sketchCapped     bool // sketch: a merged value over sketchCap bytes is dropped silently
	cacheOthers      bool // each instance serves what it read while the value lives, missing others' writes
	cacheOwn         bool // cacheOthers, and the instance's own writes do not drop what it read

	fenceIgnored         bool // fenced merges are merged as unfenced ones
	fenceEqualRefused    bool // a fence equal to the one remembered is refused
	fenceKeysShared      bool // one fence per key, whatever the lease key
	fenceUnfencedForgets bool // an unfenced merge forgets the key's fences
	fenceBeforeClaim     bool // MergeUpdateOnce checks the fence before the event's claim
	fenceRefusedClaims   bool // a refused MergeUpdateOnce claims its event
	batchFenceAborts     bool // MergeMany stops at a refused update
	fenceFirstTTL        bool // a key's fences expire with the first fenced merge's value, whatever merged since
	fenceRemembersRange  bool // a merge the monoid refuses (past the range) still remembers its fence
}

// world is the shared storage of the toy stores of one test.
type world struct {
	mu     sync.Mutex
	now    time.Time
	values map[string]item
	events map[string]time.Time // Deduper claims and their expiry (zero: none)
	claims map[string]time.Time // MergeUpdateOnce claims and their expiry (zero: none)
	fences toyFences
	// fenceExp is when fenceFirstTTL forgets a key's fences (absent: never).
	fenceExp map[string]time.Time
}

// toyDedupTTL is the claim TTL of the toy OnceStore.
const toyDedupTTL = 3 * time.Hour

type item struct {
	v   int64
	exp time.Time
}

func (w *world) live(it item) bool { return it.exp.IsZero() || w.now.Before(it.exp) }

func (w *world) liveAt(it item, f flaws) bool {
	return w.live(it) || f.expiryAfter && w.now.Equal(it.exp)
}

// toy is a Sum[int64] or Max[int64] store and a deduper over a world, with flaws.
type toy struct {
	w      *world
	f      flaws
	max    bool
	cache  map[string]int64 // with readCache
	ttl    time.Duration    // the deduper's claim TTL (0: forever)
	closed bool
}

func (s *toy) monoid() monoid.Monoid[int64] {
	if s.max {
		return monoid.Max[int64]{}
	}
	return monoid.Sum[int64]{}
}

func (s *toy) enter(ctx context.Context) error {
	if s.closed && !s.f.closedWorks {
		return state.ErrClosed
	}
	if !s.f.ignoreCtx {
		return ctx.Err()
	}
	return nil
}

func (s *toy) key(k state.Key) string {
	if s.f.naiveKeys {
		if k.Bucket == 0 {
			return k.Entity
		}
		return fmt.Sprintf("%s:%d", k.Entity, k.Bucket)
	}
	return fmt.Sprintf("%q/%d", k.Entity, k.Bucket)
}

func (s *toy) Get(ctx context.Context, k state.Key) (int64, bool, error) {
	vs, found, err := s.GetMany(ctx, []state.Key{k})
	if err != nil {
		return 0, false, err
	}
	return vs[0], found[0], nil
}

func (s *toy) GetMany(ctx context.Context, ks []state.Key) ([]int64, []bool, error) {
	if s.f.argsFirst {
		if err := state.CheckKeys(ks); err != nil {
			return nil, nil, err
		}
	}
	if err := s.enter(ctx); err != nil {
		return nil, nil, err
	}
	if !s.f.noValidate {
		if err := state.CheckKeys(ks); err != nil {
			return nil, nil, err
		}
	}
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	vs, found := make([]int64, len(ks)), make([]bool, len(ks))
	for i, k := range ks {
		j := i
		if s.f.reverseMany {
			j = len(ks) - 1 - i
		}
		if s.f.first100 && i >= 100 {
			continue
		}
		it, stored := s.w.values[s.key(k)]
		live := stored && (s.f.ignoreTTL || s.w.liveAt(it, s.f))
		if v, ok := s.cache[s.key(k)]; ok && (s.f.readCache || live && (s.f.cacheOthers || s.f.cacheOwn)) {
			vs[j], found[j] = v, true
			continue
		}
		if live {
			vs[j], found[j] = it.v, true
			if s.f.readCache || s.f.cacheOthers || s.f.cacheOwn {
				s.cache[s.key(k)] = it.v
			}
		}
	}
	return vs, found, nil
}

func (s *toy) MergeUpdate(ctx context.Context, k state.Key, delta int64, ttl time.Duration) error {
	_, err := s.merge(ctx, "", k, delta, ttl)
	return err
}

func (s *toy) MergeUpdateOnce(ctx context.Context, id string, k state.Key, delta int64, ttl time.Duration) (bool, error) {
	if !s.f.noValidate {
		if err := state.CheckEventID(id); err != nil {
			return false, err
		}
	}
	return s.merge(ctx, id, k, delta, ttl)
}

// MergeMany is MergeUpdate per update, under the batch flaws.
func (s *toy) MergeMany(ctx context.Context, ups []state.Update[int64]) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	if !s.f.noValidate && !s.f.batchPartial {
		if err := state.CheckUpdates(s.monoid(), ups); err != nil {
			return err
		}
	}
	switch {
	case s.f.batchDropsLast && len(ups) > 0:
		ups = ups[:len(ups)-1]
	case s.f.batchFirstChunk && len(ups) > state.MergeBatchSize:
		ups = ups[:state.MergeBatchSize]
	}
	keyTTL := s.batchTTLs(ups)
	errs := make([]error, len(ups))
	for i, u := range ups {
		if s.f.batchNoTTL {
			u.TTL = 0
		}
		if ttl, ok := keyTTL[u.Key]; ok {
			u.TTL = ttl
		}
		_, err := s.merge(ctx, "", u.Key, u.Delta, u.TTL)
		if err != nil && (s.f.batchPartial || s.f.batchFenceAborts && errors.Is(err, state.ErrFenced)) {
			return err
		}
		if err != nil && s.f.batchChunkIndex {
			i %= state.MergeBatchSize // the index within the round trip
		}
		if err != nil {
			errs[i] = err
		}
	}
	return state.MergeErrors(errs)
}

// batchTTLs returns the ttl the batch ttl flaws give each key of ups (nil when
// the toy has none): the first of the key's updates, or the longest (0 longest).
func (s *toy) batchTTLs(ups []state.Update[int64]) map[state.Key]time.Duration {
	if !s.f.batchFirstTTL && !s.f.batchLongestTTL {
		return nil
	}
	ttls := map[state.Key]time.Duration{}
	for _, u := range ups {
		cur, seen := ttls[u.Key]
		if !seen || s.f.batchLongestTTL && cur != 0 && (u.TTL == 0 || u.TTL > cur) {
			ttls[u.Key] = u.TTL
		}
	}
	return ttls
}

func (s *toy) merge(ctx context.Context, id string, k state.Key, delta int64, ttl time.Duration) (bool, error) {
	if err := s.enter(ctx); err != nil && !(id != "" && s.f.onceCtxLate) {
		return false, err
	}
	if !s.f.noValidate {
		if err := state.CheckMerge[int64](s.monoid(), k, delta, ttl); err != nil && !(id != "" && s.f.claimBeforeCheck) &&
			!(s.f.entityRunes && utf8.ValidString(k.Entity) && utf8.RuneCountInString(k.Entity) <= state.MaxEntityLen) {
			return false, err
		}
	}
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	claim := state.OnceClaimID(k, id)
	switch {
	case s.f.storeWideClaim:
		claim = id
	case s.f.naiveClaimID:
		claim = fmt.Sprintf("%s:%s:%d", id, k.Entity, k.Bucket)
	}
	if exp, ok := s.w.fenceExp[s.key(k)]; ok && !s.w.now.Before(exp) {
		delete(s.w.fences, s.key(k))
		delete(s.w.fenceExp, s.key(k))
	}
	admit := func() (func(), error) {
		remember, err := s.w.fences.admit(ctx, s.key(k), s.f)
		if err != nil && id != "" && s.f.fenceRefusedClaims {
			s.w.claims[claim] = s.claimExpiry(ttl)
		}
		return remember, err
	}
	var remember func()
	if s.f.fenceBeforeClaim {
		var err error
		if remember, err = admit(); err != nil {
			return false, err
		}
	}
	if id != "" && !s.f.noDedupe {
		if exp, ok := s.w.claims[claim]; ok && (exp.IsZero() || s.w.now.Before(exp)) {
			if s.f.onceRefreshClaim {
				s.w.claims[claim] = s.claimExpiry(ttl)
			}
			return false, nil
		}
		if s.f.racyOnce {
			s.w.mu.Unlock() // no I/O between the check and the claim, only a preemption point
			runtime.Gosched()
			s.w.mu.Lock()
		}
	}
	if remember == nil {
		var err error
		if remember, err = admit(); err != nil {
			return false, err
		}
	}
	if _, fenced := fence.FromContext(ctx); fenced && s.f.fenceCheckWrite {
		s.w.mu.Unlock() // a round trip between the check and the write
		time.Sleep(time.Millisecond)
		s.w.mu.Lock()
	}
	it, ok := s.w.values[s.key(k)]
	live := ok && s.w.liveAt(it, s.f)
	if !ok || !live && !s.f.keepExpired && !s.f.ignoreTTL {
		it = item{v: s.monoid().Identity()}
	}
	if id != "" && (s.f.claimBeforeCheck || s.f.onceCtxLate) {
		s.w.claims[claim] = s.claimExpiry(ttl)
		if err := s.enter(ctx); err != nil {
			return false, err
		}
		if err := state.CheckMerge[int64](s.monoid(), k, delta, ttl); err != nil {
			return false, err
		}
	}
	if s.f.lostUpdate {
		s.w.mu.Unlock()
		runtime.Gosched()
		s.w.mu.Lock()
	}
	if s.f.skipIdentity && delta == s.monoid().Identity() {
		if id != "" {
			s.w.claims[claim] = s.claimExpiry(ttl)
		}
		return true, nil
	}
	v, err := state.Combine(s.monoid(), it.v, delta)
	if err != nil {
		if s.f.fenceRemembersRange {
			remember()
		}
		if !s.f.wrapOverflow {
			return false, err
		}
		v = it.v + delta
	}
	exp := s.expiry(ttl, it.exp)
	if s.f.maxEqualNoop && s.max && live && delta == it.v {
		if id != "" {
			s.w.claims[claim] = s.claimExpiry(ttl)
		}
		return true, nil
	}
	switch {
	case s.f.maxNoRefresh && live && v == it.v:
		exp = it.exp
	case s.f.onlyExtends && live && exp.Before(it.exp):
		exp = it.exp
	case s.f.onceKeepsExpiry && id != "" && live:
		exp = it.exp
	}
	if s.f.deleteAtZero && v == 0 {
		delete(s.w.values, s.key(k))
	} else {
		s.w.values[s.key(k)] = item{v: v, exp: exp}
	}
	if !s.f.cacheOwn {
		delete(s.cache, s.key(k))
	}
	if id != "" {
		s.w.claims[claim] = s.claimExpiry(ttl)
	}
	remember()
	if _, set := s.w.fenceExp[s.key(k)]; s.f.fenceFirstTTL && !set && !exp.IsZero() && len(s.w.fences[s.key(k)]) > 0 {
		s.w.fenceExp[s.key(k)] = exp
	}
	return true, nil
}

// expiry is the expiry a merge with ttl sets, old the expiry it replaces.
func (s *toy) expiry(ttl time.Duration, old time.Time) time.Time {
	switch {
	case s.f.wholeSeconds:
		ttl = ttl.Truncate(time.Second)
	case s.f.int32Millis:
		ttl = time.Duration(int32(ttl.Milliseconds())) * time.Millisecond
	case s.f.zeroTTLIsDay && ttl == 0:
		ttl = 24 * time.Hour
	}
	if ttl != 0 {
		return s.w.now.Add(ttl)
	}
	if s.f.ttlZeroKeeps {
		return old
	}
	return time.Time{}
}

// claimExpiry is the expiry of a claim made by a merge with the value ttl ttl.
func (s *toy) claimExpiry(ttl time.Duration) time.Time {
	switch {
	case s.f.claimForever:
		return time.Time{}
	case s.f.claimWithValue:
		return s.expiry(ttl, time.Time{})
	}
	return s.w.now.Add(toyDedupTTL)
}

func (s *toy) MarkSeen(ctx context.Context, id string) (bool, error) {
	if err := s.enter(ctx); err != nil {
		return false, err
	}
	if !s.f.noValidate {
		if err := state.CheckEventID(id); err != nil {
			return false, err
		}
	}
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	exp, seen := s.w.events[id]
	seen = seen && (exp.IsZero() || s.w.now.Before(exp))
	if s.f.racyDeduper {
		s.w.mu.Unlock() // no I/O between the check and the set, only a preemption point
		runtime.Gosched()
		s.w.mu.Lock()
	}
	if !seen || s.f.dedupRefresh {
		exp = time.Time{}
		if s.ttl > 0 {
			exp = s.w.now.Add(s.ttl)
		}
		s.w.events[id] = exp
	}
	return !seen || s.f.alwaysFirst, nil
}

func (s *toy) Release(ctx context.Context, id string) error {
	if err := s.enter(ctx); err != nil && !s.f.releaseCtxLate {
		return err
	}
	if !s.f.noValidate {
		if err := state.CheckEventID(id); err != nil {
			return err
		}
	}
	if !s.f.releaseIgnored {
		s.w.mu.Lock()
		delete(s.w.events, id)
		s.w.mu.Unlock()
	}
	return s.enter(ctx)
}

func (s *toy) Close() error { s.closed = true; return nil }

// worlds keys storage by test name.
type worlds struct {
	mu sync.Mutex
	m  map[string]*world
}

func (ws *worlds) get(t *testing.T) *world {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.m == nil {
		ws.m = map[string]*world{}
	}
	w, ok := ws.m[t.Name()]
	if !ok {
		w = &world{now: time.Unix(1_000_000, 0), values: map[string]item{}, events: map[string]time.Time{}, claims: map[string]time.Time{},
			fences: toyFences{}, fenceExp: map[string]time.Time{}}
		ws.m[t.Name()] = w
	}
	return w
}

func (ws *worlds) sleep(t *testing.T, d time.Duration) {
	w := ws.get(t)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.now = w.now.Add(d)
}

func toyHarness(f flaws) statetest.Harness[int64] {
	ws := &worlds{}
	return statetest.Harness[int64]{
		Open: func(t *testing.T) state.Store[int64] {
			return &toy{w: ws.get(t), f: f, cache: map[string]int64{}}
		},
		Sleep:    ws.sleep,
		Monoid:   monoid.Sum[int64]{},
		Delta:    func(i int) int64 { return (int64(i) + 1) * int64(1-i%3/2*2) }, // 1, 2, -3, 4, 5, -6, ...
		Equal:    func(a, b int64) bool { return a == b },
		DedupTTL: toyDedupTTL,
		FakeTime: true,
	}
}

// toyMaxHarness is toyHarness for a Max[int64] toy.
func toyMaxHarness(f flaws) statetest.Harness[int64] {
	h := toyHarness(f)
	open := h.Open
	h.Open = func(t *testing.T) state.Store[int64] {
		s := open(t).(*toy)
		s.max = true
		return s
	}
	h.Monoid = monoid.Max[int64]{}
	h.Delta = func(i int) int64 { return int64(i*7919%1000) - 500 }
	return h
}

// toyDeduperTTL is the claim TTL of the toy deduper (toyDeduperHarness(f, true)).
const toyDeduperTTL = time.Hour

func toyDeduperHarness(f flaws, withTTL bool) statetest.DeduperHarness {
	ws := &worlds{}
	var ttl time.Duration
	if withTTL {
		ttl = toyDeduperTTL
	}
	return statetest.DeduperHarness{
		Open:     func(t *testing.T) state.Deduper { return &toy{w: ws.get(t), f: f, ttl: ttl} },
		Sleep:    ws.sleep,
		TTL:      ttl,
		FakeTime: true,
	}
}

// TestToyConforms is the control: the toy without flaws passes, so each flaw's
// failure below is the flaw's doing.
func TestToyConforms(t *testing.T) {
	t.Run("sum", func(t *testing.T) { statetest.RunStore(t, toyHarness(flaws{})) })
	t.Run("max", func(t *testing.T) { statetest.RunStore(t, toyMaxHarness(flaws{})) })
	t.Run("deduper", func(t *testing.T) { statetest.RunDeduper(t, toyDeduperHarness(flaws{}, true)) })
	t.Run("deduper without ttl", func(t *testing.T) { statetest.RunDeduper(t, toyDeduperHarness(flaws{}, false)) })
	t.Run("sketch", func(t *testing.T) { statetest.RunStore(t, sketchToyHarness(flaws{})) })
}

// Kinds of toy a flaw is planted in.
const (
	sumToy     = "sum"
	maxToy     = "max"
	deduperToy = "deduper"
	sketchKind = "sketch"
)

// broken lists each flaw, the toy it is planted in and a subtest that must fail
// because of it.
var broken = []struct {
	name  string
	flaws flaws
	kind  string
	fails string
}{
	{"lost update", flaws{lostUpdate: true}, sumToy, "concurrent_merges"},
	{"ttl ignored", flaws{ignoreTTL: true}, sumToy, "ttl_expires"},
	{"expired value kept", flaws{keepExpired: true}, sumToy, "expired_then_merged"},
	{"ttl zero keeps expiry", flaws{ttlZeroKeeps: true}, sumToy, "ttl_zero_clears_expiry"},
	{"get many out of order", flaws{reverseMany: true}, sumToy, "get_many"},
	{"once not deduping", flaws{noDedupe: true}, sumToy, "once/redelivery"},
	{"context ignored", flaws{ignoreCtx: true}, sumToy, "cancelled_context"},
	{"no validation", flaws{noValidate: true}, sumToy, "bad_input"},
	{"naive key encoding", flaws{naiveKeys: true}, sumToy, "keys_are_distinct"},
	{"works after close", flaws{closedWorks: true}, sumToy, "closed"},
	{"arguments before context", flaws{argsFirst: true}, sumToy, "bad_input"},
	{"arguments before close", flaws{argsFirst: true}, sumToy, "closed"},
	{"deduper always first", flaws{alwaysFirst: true}, deduperToy, "first_seen_once"},
	{"once claims store-wide", flaws{storeWideClaim: true}, sumToy, "once/claim_per_key"},
	{"deduper check then set", flaws{racyDeduper: true}, deduperToy, "race"},
	{"deduper release ignored", flaws{releaseIgnored: true}, deduperToy, "release"},
	{"deduper context ignored", flaws{ignoreCtx: true}, deduperToy, "cancelled_context"},
	{"int64 sum wraps", flaws{wrapOverflow: true}, sumToy, "int64_sum_limits"},
	{"expired only after the instant", flaws{expiryAfter: true}, sumToy, "expiry_instant"},
	// Rule: a merge that leaves a Max as it was still sets the expiry to now+ttl.
	{"max no refresh when not raised", flaws{maxNoRefresh: true}, maxToy, "unchanged_merge_refreshes_expiry"},
	// Rule: after expiry a merge starts from Identity, also when that lowers a Max.
	{"max continues from expired", flaws{keepExpired: true}, maxToy, "expired_then_merged_lower"},
	// Rule: merging Identity creates the value (it is found).
	{"identity merge skipped", flaws{skipIdentity: true}, sumToy, "merge_identity"},
	// Rule: a sum at exactly zero is a value like any other (found).
	{"zero sum deleted", flaws{deleteAtZero: true}, sumToy, "merge_back_to_zero"},
	// Rule: a claim lives for the dedup TTL, independent of the value's ttl.
	{"claim dies with the value", flaws{claimWithValue: true}, sumToy, "once/claim_outlives_value_ttl"},
	// Rule: a claim expires after the dedup TTL.
	{"claim never expires", flaws{claimForever: true}, sumToy, "once/claim_expires_after_dedup_ttl"},
	// Rule: a failed merge claims nothing.
	{"claim before the merge can fail", flaws{claimBeforeCheck: true}, sumToy, "once/failed_merge_does_not_claim"},
	// Rule: claim IDs are injective across (event, key) pairs.
	{"claim id joined with colons", flaws{naiveClaimID: true}, sumToy, "once/claim_ids_are_injective"},
	// Rule: sub-second ttls expire (not truncated to 0 = never).
	{"ttl truncated to seconds", flaws{wholeSeconds: true}, sumToy, "sub-second_ttl"},
	// Rule: every merge sets the expiry to now+ttl, also an earlier one.
	{"expiry only extended", flaws{onlyExtends: true}, sumToy, "shorter_ttl_after_longer"},
	// Rule: MergeUpdateOnce sets the expiry like MergeUpdate, part-way through a ttl too.
	{"once keeps the expiry", flaws{onceKeepsExpiry: true}, sumToy, "once/merge_resets_expiry"},
	// Rule: a value read while live is invisible once expired.
	{"read cache ignores expiry", flaws{readCache: true}, sumToy, "ttl_expires"},
	// Rule: ttls of days (30) expire exactly then; int32 milliseconds overflow.
	{"ttl as int32 milliseconds", flaws{int32Millis: true}, sumToy, "long_spans"},
	// Rule: ttl 0 never expires, observed over months.
	{"ttl zero means a day", flaws{zeroTTLIsDay: true}, sumToy, "long_spans"},
	// Rule: GetMany answers every key, past any internal batch (100).
	{"get many answers 100 keys", flaws{first100: true}, sumToy, "get_many_past_100_keys"},
	// Rule: simultaneous deliveries of one event: exactly one applies.
	{"once check then claim", flaws{racyOnce: true}, sumToy, "once/same_event_at_once"},
	// Rule: a cancelled MergeUpdateOnce claims nothing.
	{"once claims before the context check", flaws{onceCtxLate: true}, sumToy, "cancelled_context"},
	// Rule: a cancelled Release keeps the claim.
	{"release before the context check", flaws{releaseCtxLate: true}, deduperToy, "cancelled_context"},
	// Rule: MergeMany applies every update of its batch.
	{"batch drops its last update", flaws{batchDropsLast: true}, sumToy, "batch/equals_merge_updates"},
	// Rule: bad input anywhere in a batch writes nothing.
	{"batch writes before its bad input", flaws{batchPartial: true}, sumToy, "batch/bad_input_writes_nothing"},
	// Rule: a batch past the round-trip size is applied whole.
	{"batch of one round trip only", flaws{batchFirstChunk: true}, sumToy, "batch/past_the_round-trip_size"},
	// Rule: each update of a batch sets its key's expiry.
	{"batch ignores ttls", flaws{batchNoTTL: true}, sumToy, "batch/ttl"},
	// Rule: a repeated MarkSeen does not extend the claim.
	{"deduper refreshes on every mark", flaws{dedupRefresh: true}, deduperToy, "repeated_claim_keeps_its_expiry"},
	// Rule: a redelivery does not extend the claim of MergeUpdateOnce.
	{"once redelivery re-claims", flaws{onceRefreshClaim: true}, sumToy, "once/redelivery_keeps_the_claim's_expiry"},
	// Rule: a merge of an equal value leaves it and sets the expiry like any merge.
	{"max equal merge writes nothing", flaws{maxEqualNoop: true}, maxToy, "equal_value_merge_sets_expiry"},
	// Rule: a MergeError tells each update's outcome at its index in the whole batch.
	{"batch outcomes at round-trip indexes", flaws{batchChunkIndex: true}, sumToy, "batch/refusals_reported_at_their_batch_index"},
	// Rule: a key's updates in a batch set its expiry in order: the last one's holds.
	{"batch keeps a key's first ttl", flaws{batchFirstTTL: true}, sumToy, "batch/ttls_of_one_key_apply_in_order"},
	{"batch keeps a key's longest ttl", flaws{batchLongestTTL: true}, sumToy, "batch/ttls_of_one_key_apply_in_order"},
	// Rule: every merge of a sketch is applied, so the estimate holds.
	{"sketch merges lost", flaws{sketchLost: true}, sketchKind, "sketch_accuracy"},
	{"sketch capped silently", flaws{sketchCapped: true}, sketchKind, "sketch_accuracy"},
	// Rule: a write through an instance is seen by its next read, and another
	// instance's within Harness.Staleness (the toys declare none: at once).
	{"read cache misses own writes", flaws{cacheOwn: true}, sumToy, "read_your_writes"},
	{"read cache misses others' writes", flaws{cacheOthers: true}, sumToy, "others'_writes_within_staleness"},
	// Rule: a merge carrying a fence below the one the key remembers is refused.
	{"fence ignored", flaws{fenceIgnored: true}, sumToy, "fencing/MergeUpdate/older_refused"},
	// Rule: equal fences pass.
	{"fence equal refused", flaws{fenceEqualRefused: true}, maxToy, "fencing/MergeUpdate/equal_and_newer_pass"},
	// Rule: lease keys are remembered apart.
	{"fence keys shared", flaws{fenceKeysShared: true}, sumToy, "fencing/MergeMany/keys_apart"},
	// Rule: an unfenced merge leaves the key's fences as they were.
	{"fence forgot by unfenced", flaws{fenceUnfencedForgets: true}, sumToy, "fencing/MergeUpdateOnce/unfenced_passes_and_forgets_nothing"},
	// Rule: a redelivered event is a duplicate whatever its fence.
	{"fence before the claim", flaws{fenceBeforeClaim: true}, sumToy, "fencing/MergeUpdateOnce/claim_before_fence"},
	// Rule: a refused event claims nothing.
	{"fence refusal claims", flaws{fenceRefusedClaims: true}, sumToy, "fencing/MergeUpdateOnce/claim_before_fence"},
	// Rule: a refused update of a batch fails alone.
	{"batch stops at a fence", flaws{batchFenceAborts: true}, sumToy, "fencing/MergeMany/refusal_at_its_index"},
	// Rule: what a key remembers outlives every merge that extended its value.
	{"fence memory from the first ttl", flaws{fenceFirstTTL: true}, sumToy, "fencing/MergeUpdate/unfenced_ttl_cleared_keeps_fence"},
	// Rule: a merge the monoid refuses remembers nothing.
	{"fence remembered by a refused merge", flaws{fenceRemembersRange: true}, sumToy, "fencing/MergeMany/refused_merge_remembers_nothing"},
}

const brokenEnv = "STATETEST_BROKEN"

// TestBrokenSubprocess runs the suite against one broken toy, named by the
// environment; it only runs as a subprocess of TestSuiteHasTeeth.
func TestBrokenSubprocess(t *testing.T) {
	name := os.Getenv(brokenEnv)
	if name == "" {
		t.Skip("run by TestSuiteHasTeeth")
	}
	for _, b := range broken {
		if b.name == name {
			switch b.kind {
			case deduperToy:
				statetest.RunDeduper(t, toyDeduperHarness(b.flaws, true))
			case sketchKind:
				statetest.RunStore(t, sketchToyHarness(b.flaws))
			case maxToy:
				statetest.RunStore(t, toyMaxHarness(b.flaws))
			default:
				statetest.RunStore(t, toyHarness(b.flaws))
			}
			return
		}
	}
	t.Fatalf("unknown broken store %q", name)
}

func TestSuiteHasTeeth(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite in subprocesses")
	}
	for _, b := range broken {
		t.Run(b.name, func(t *testing.T) {
			out, err := runBroken(b.name, "^TestBrokenSubprocess$")
			if err == nil {
				t.Fatalf("the suite passed a store with flaw %q:\n%s", b.name, out)
			}
			if want := "--- FAIL: TestBrokenSubprocess/" + b.fails + " "; !strings.Contains(out, want) {
				t.Errorf("flaw %q: no %q in the output:\n%s", b.name, want, tail(out, 40))
			}
		})
	}
}

// runBroken runs the tests matching run in a subprocess with the flaw named in the
// environment, returning its output.
func runBroken(flaw, run string) (string, error) {
	cmd := exec.Command(os.Args[0], "-test.run", run, "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), brokenEnv+"="+flaw)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func tail(s string, lines int) string {
	ls := strings.Split(s, "\n")
	return strings.Join(ls[max(0, len(ls)-lines):], "\n")
}
