// Package statetest is the conformance suite for state stores: every backend, built
// in or third-party, runs it to prove it behaves like the reference (state/memstate).
// It imports only the standard library, testing, monoid, state and types.
//
// Wire it up in a backend's tests:
//
//	func TestConformance(t *testing.T) {
//		statetest.RunStore(t, statetest.Harness[int64]{
//			Open:   func(t *testing.T) state.Store[int64] { ... }, // same storage within one test
//			Sleep:  func(t *testing.T, d time.Duration) { clock.Advance(d) },
//			Monoid: monoid.Sum[int64]{},
//			Delta:  func(i int) int64 { return int64(i) + 1 },
//			Equal:  func(a, b int64) bool { return a == b },
//		})
//		statetest.RunDeduper(t, statetest.DeduperHarness{Open: ..., Sleep: ..., TTL: time.Minute})
//	}
//
// Stores (and dedupers) opened within one (sub)test must share storage — they are
// different instances, as two processes would be — and different (sub)tests must
// never see each other's data: key the storage (key prefix, table, fake clock) by
// t.Name(). Test names are stable: one t.Run per rule of package state, so a
// failing subtest names the rule a backend breaks.
//
// # What RunStore checks
//
//   - Reads: missing keys, values shared between instances, read-your-writes
//     and another instance's writes seen within Harness.Staleness (at once
//     without a read cache) after a read, keys that naive
//     encodings collide (delimiters, hash tags, buckets, the longest entity),
//     GetMany in request order with duplicates and missing keys, empty, and past
//     100 keys (LargeGetMany distinct keys plus duplicates).
//   - Expiry (unless SkipTTL): ttl expires, also for a value read while live on
//     two instances (no read cache keeps it); a merge resets the expiry part-way
//     through a ttl (MergeUpdate and MergeUpdateOnce), also to an earlier time
//     (a shorter ttl after a longer one) and also when it leaves the value as it
//     was (a lower Max, the Identity, an equal Max or sketch: still found after
//     the first expiry, cleared by ttl 0); ttl 0 clears an expiry; an expired
//     value is merged from Identity (also where that lowers a Max or equals
//     it); the exact instant (now >= expiry) and sub-second ttls; with
//     FakeTime, spans of hours, days and months.
//   - Monoids: merging Identity creates a found value, a sum merged back to zero
//     is found (the reference harnesses' deltas go down as well as up), the int64
//     and float64 sum limits (unless SkipSumLimits), MaxTTL, bad input and
//     BadDeltas refused without writing.
//   - Concurrency: merges from many goroutines and two instances are all applied.
//   - Sketches (with Harness.Sketch, or RunSketch alone): SketchEvents distinct
//     events with fixed IDs, merged from SketchWriters goroutines by
//     MergeUpdate, MergeUpdateOnce (some redelivered) and MergeMany batches as
//     the store allows, estimate their count within 3 standard errors and leave
//     the exact union of their deltas.
//   - Close and context: after Close every method is ErrClosed; with a cancelled
//     context every method is context.Canceled and nothing stored changes (an
//     existing value keeps its value, a cancelled MergeUpdateOnce claims nothing).
//   - OnceStore (when the store implements it): exactly-once per (event, key),
//     redeliveries from many goroutines, N simultaneous deliveries of one event
//     released from a barrier in repeated rounds (exactly one applies each
//     round), claim IDs injective across (event, key) pairs that share
//     separators, a rejected or failed merge (bad input, BadDeltas, an int64
//     overflow, a ttl over MaxTTL) claims nothing, proven by redelivering it; a
//     claim outlives a shorter value ttl and, with FakeTime, expires after
//     DedupTTL, counted from the first delivery: a redelivery half-way does not
//     extend it (held a second before, free at the instant).
//   - BatchStore (when the store implements it): MergeMany leaves what the same
//     MergeUpdates in sequence leave (adversarial keys, onto existing values);
//     updates of one key combine in batch order; an empty batch; bad input
//     anywhere (first, middle, last: keys, ttls, BadDeltas) refuses the whole
//     batch, writing nothing, without a *state.MergeError; a batch past
//     state.MergeBatchSize applies every update; closed and cancelled; each
//     update's ttl; updates of one key with different ttls, straddling a round
//     trip, leave the last one's expiry (live just before it, gone at it); an
//     int64 overflow fails alone in a *state.MergeError; sum overflows in the
//     second and third round trip of a batch are reported at their index in
//     the whole batch.
//   - Fencing (RunFencing, on every store): a merge through state.Fenced
//     carrying a lower fence of a lease key than one that merged into the key
//     is refused with ErrFenced from any instance, writing nothing (MergeUpdate,
//     MergeUpdateOnce, MergeMany); equal and newer fences pass; lease keys are
//     remembered apart; unfenced merges pass and forget nothing; refusals
//     remember nothing, the monoid's too (an int64 sum past its range); what a
//     key remembers outlives every merge that extended its value (FakeTime: a
//     ttl'd fenced merge, a merge with a longer ttl or ttl 0, then time past
//     the first ttl); a redelivered event is a duplicate whatever its fence
//     and a refused event claims nothing; MergeMany reports a refusal at its
//     index and applies the rest. Under concurrency (RunFencingRace): a stale
//     and a newer holder merging into one key at once from two instances, in
//     repeated rounds; a stale merge that succeeded is already in what the
//     newer holder reads as soon as its merge returned (a store that checks
//     the fence, then writes, fails).
//   - Limits: Key.Entity is limited in bytes: entities of 2-, 3- and 4-byte
//     runes at the limit are stored, ones of 513 to 2,048 bytes (within the
//     limit in runes) are refused with ErrInvalidArgument by every keyed
//     method and write nothing.
//
// RunCache (with a CacheHarness) checks a read cache in front of a store the
// suite controls: freshness counts from the fill, not the last hit; a read
// racing the process's own write leaves nothing old cached; a slow read does
// not extend staleness.
//
// RunDeduper checks first-seen-once across instances, distinct IDs, simultaneous
// MarkSeen from a barrier in repeated rounds, Release, claim expiry (a repeated
// MarkSeen half-way does not extend the claim: held just before the first
// claim's expiry, free at it), bad input, Close and cancelled contexts (a
// cancelled Release keeps the claim).
//
// # Real time
//
// Where Sleep really sleeps (FakeTime false), the expiry tests time every call
// and plan their instants from what they measured: a value is asserted live only
// by a read that ended before its earliest possible expiry, and gone only by one
// that started after its latest. When a loaded machine makes an observation
// inconclusive, the test runs again with fresh keys (RealTimeAttempts in all)
// and skips, saying why, if no attempt was conclusive: it never fails because the
// machine was slow. Exact instants (a second before an expiry) need FakeTime.
//
// The suite has teeth: its own tests plant realistic bugs in toy stores (see
// teeth_test.go) and require each to fail the subtest of the rule it breaks.
package statetest

import (
	"testing"
	"time"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
)

// Harness describes a Store backend under test.
type Harness[V any] struct {
	// Open returns an open store. Stores opened within one (sub)test share storage;
	// different (sub)tests never do. The suite closes what it opens.
	Open func(t *testing.T) state.Store[V]
	// Sleep moves time forward by d as the stores of the test see it (a fake
	// clock's Advance, miniredis FastForward). Nil means time.Sleep.
	Sleep func(t *testing.T, d time.Duration)
	// TTL is the ttl the expiry tests use; they sleep multiples of it. Default
	// time.Hour (right for fake clocks); use milliseconds on real servers and a
	// few seconds where the backend stores expiry in whole seconds.
	TTL time.Duration
	// Monoid is the monoid the store merges with; the suite computes expected
	// values with it.
	Monoid monoid.Monoid[V]
	// Delta returns the i-th test delta (i >= 0). Deltas should differ from the
	// identity; the exact-value tests combine many of them.
	Delta func(i int) V
	// Equal reports whether two values are equal (for sketches: same content).
	Equal func(a, b V) bool
	// MaxEntityLen is the longest entity the store accepts: state.MaxEntityLen
	// (the default, for every backend) unless the store under test is a wrapper
	// that reserves room in the entity (state.Sharded).
	MaxEntityLen int
	// SkipTTL skips the expiry tests. Only for wrappers that document different
	// ttl semantics (state.Sharded, whose shards expire independently); a
	// backend must pass them.
	SkipTTL bool
	// SkipSumLimits skips the int64 and float64 sum limit tests. Only for wrappers
	// that spread one key over several stored values (state.Sharded, where no single
	// write sees the total); a backend must pass them.
	SkipSumLimits bool
	// BadDeltas are deltas MergeUpdate must reject with state.ErrInvalidArgument
	// without writing anything (for example undecodable sketch bytes). Optional.
	BadDeltas []V
	// DedupTTL is the claim TTL the OnceStores were opened with (their
	// WithDedupTTL option); 0 means state.DefaultDedupTTL. The claim tests check
	// that a claim outlives a shorter value ttl and, with FakeTime, that it
	// expires after DedupTTL.
	DedupTTL time.Duration
	// FakeTime reports that Sleep only moves a fake clock, so sleeping hours or
	// days costs nothing. It enables the long-span tests (values and claims
	// observed across hours and days) and the observation of exact instants (a
	// value live a second before its expiry and gone at it). Leave it false where
	// Sleep really sleeps: the expiry tests then time every call and plan around
	// what they measured (see RealTimeAttempts).
	FakeTime bool
	// Sketch describes a distinct-count sketch monoid (monoid/sketch/hll) for the
	// sketch accuracy test. Optional; RunSketch needs it.
	Sketch *Sketch[V]
	// Staleness is the staleness bound of a store that caches reads (state/cache):
	// a write through one instance is seen by another instance's reads once
	// Staleness has passed since that instance read the key. 0, for a store
	// without a read cache, means at once. Reads through the instance that wrote
	// see the write at once either way.
	Staleness time.Duration
}

// Sketch describes a distinct-count sketch, such as monoid/sketch/hll, for the
// sketch accuracy test: SketchEvents distinct events merged through the store
// must be estimated within 3 standard errors, and leave the exact union of their
// deltas. The test is deterministic: its event IDs are fixed.
type Sketch[V any] struct {
	// Item returns the delta of one item (a sketch holding only id).
	Item func(id string) V
	// Estimate returns the number of distinct items a value estimates.
	Estimate func(v V) (float64, error)
	// StdErr is Estimate's relative standard error (for HyperLogLog with 2^p
	// registers, 1.04/sqrt(2^p)).
	StdErr float64
}

// DeduperHarness describes a Deduper backend under test.
type DeduperHarness struct {
	// Open returns an open deduper. Dedupers opened within one (sub)test share
	// storage; different (sub)tests never do. The suite closes what it opens.
	Open func(t *testing.T) state.Deduper
	// Sleep moves time forward by d as the dedupers of the test see it. Nil means
	// time.Sleep.
	Sleep func(t *testing.T, d time.Duration)
	// TTL is the claim TTL the dedupers were opened with (their WithDedupTTL option);
	// 0 means claims never expire and the expiry test checks that they do not
	// after a while (Sleep of a day).
	TTL time.Duration
	// FakeTime reports that Sleep only moves a fake clock: the expiry tests then
	// observe exact instants (a claim held a second before its expiry and free at
	// it). Leave it false where Sleep really sleeps: the tests then time every call
	// and plan around what they measured (see RealTimeAttempts).
	FakeTime bool
}

func (h *Harness[V]) sleep(t *testing.T, d time.Duration) {
	t.Helper()
	if h.Sleep == nil {
		time.Sleep(d)
		return
	}
	h.Sleep(t, d)
}

func (h *Harness[V]) ttl() time.Duration {
	if h.TTL > 0 {
		return h.TTL
	}
	return time.Hour
}

// open opens a store and closes it at the end of the test.
func (h *Harness[V]) open(t *testing.T) state.Store[V] {
	t.Helper()
	s := h.Open(t)
	if s == nil {
		t.Fatal("Harness.Open returned nil")
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// fold combines deltas i in [from, to) onto the identity.
func (h *Harness[V]) fold(from, to int) V {
	v := h.Monoid.Identity()
	for i := from; i < to; i++ {
		v = h.Monoid.Combine(v, h.Delta(i))
	}
	return v
}

func (h *Harness[V]) dedupTTL() time.Duration {
	if h.DedupTTL > 0 {
		return h.DedupTTL
	}
	return state.DefaultDedupTTL
}

func (h *Harness[V]) maxEntityLen() int {
	if h.MaxEntityLen > 0 {
		return h.MaxEntityLen
	}
	return state.MaxEntityLen
}

func (h *Harness[V]) check(t *testing.T) {
	t.Helper()
	if h.Open == nil || h.Monoid == nil || h.Delta == nil || h.Equal == nil {
		t.Fatal("statetest: Harness needs Open, Monoid, Delta and Equal")
	}
}

func (h *DeduperHarness) sleep(t *testing.T, d time.Duration) {
	t.Helper()
	if h.Sleep == nil {
		time.Sleep(d)
		return
	}
	h.Sleep(t, d)
}

func (h *DeduperHarness) open(t *testing.T) state.Deduper {
	t.Helper()
	d := h.Open(t)
	if d == nil {
		t.Fatal("DeduperHarness.Open returned nil")
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}
