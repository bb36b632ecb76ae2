package statetest

import (
	"fmt"
	"math"
	"testing"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
)

// absorbed returns two of the harness's deltas, hi and lo, with hi ⊕ lo == hi and
// lo != hi: merging lo after hi leaves the value unchanged (Max, sketches). ok is
// false when the first deltas have no such pair (sums).
func (h *Harness[V]) absorbed() (hi, lo V, ok bool) {
	const n = 16
	for i := range n {
		for j := range n {
			a, b := h.Delta(i), h.Delta(j)
			if !h.Equal(a, b) && h.Equal(h.Monoid.Combine(a, b), a) {
				return a, b, true
			}
		}
	}
	return hi, lo, false
}

// testMergeIdentity: merging the monoid's Identity creates the value (it is found,
// holding Identity ⊕ Identity) and leaves an existing value as it was.
func testMergeIdentity[V any](t *testing.T, h *Harness[V]) {
	s := h.open(t)
	id := h.Monoid.Identity()
	k, other := state.Key{Entity: "identity"}, state.Key{Entity: "identity", Bucket: 1}
	mustMerge(t, s, k, id, 0)
	wantValue(t, h, s, k, h.Monoid.Combine(id, id))
	mustMerge(t, s, other, h.Delta(0), 0)
	mustMerge(t, s, other, id, 0)
	wantValue(t, h, s, other, h.fold(0, 1))
}

// testBackToZero: a sum merged down to exactly zero is still found, holding 0.
func testBackToZero[V int64 | float64](t *testing.T, h *Harness[V]) {
	s := h.open(t)
	k := state.Key{Entity: "zero"}
	for _, d := range []V{5, -3, -2} {
		mustMerge(t, s, k, d, 0)
	}
	wantValue(t, h, s, k, 0)
	mustMerge(t, s, k, -1, 0)
	wantValue(t, h, s, k, -1)
}

// testUnchangedMergeRefreshes: a merge that leaves the value as it was (a lower
// Max, or the Identity) still sets the expiry to now+ttl.
func testUnchangedMergeRefreshes[V any](t *testing.T, h *Harness[V]) {
	s := h.open(t)
	ttl := h.ttl()
	hi, lo, ok := h.absorbed()
	if !ok {
		hi, lo = h.Delta(0), h.Monoid.Identity()
	}
	observeReset(t, h, s, "unchanged",
		func(k state.Key) { mustMerge(t, s, k, hi, ttl) },
		func(k state.Key) { mustMerge(t, s, k, lo, ttl) },
		h.Monoid.Combine(h.Monoid.Combine(h.Monoid.Identity(), hi), lo))
}

// idempotent returns a delta d of the harness, other than the Identity, that
// merging again leaves as it is (Identity ⊕ d ⊕ d == Identity ⊕ d: a Max, a
// sketch); ok is false when the first deltas have none (sums).
func (h *Harness[V]) idempotent() (d V, ok bool) {
	id := h.Monoid.Identity()
	for i := range 16 {
		d := h.Delta(i)
		once := h.Monoid.Combine(id, d)
		if !h.Equal(d, id) && h.Equal(h.Monoid.Combine(once, d), once) {
			return d, true
		}
	}
	return d, false
}

// testEqualMerge: merging a value equal to the stored one (a Max merged with the
// same maximum, a sketch with the items it holds) leaves the value as it is and,
// like every merge, sets the expiry: to now+ttl part-way through an earlier ttl,
// cleared by ttl 0, and onto an expired equal value it starts from Identity (the
// value is found again).
func testEqualMerge[V any](t *testing.T, h *Harness[V]) {
	d, ok := h.idempotent()
	if !ok {
		t.Skip("no Harness delta that merging twice leaves as merging once")
	}
	s := h.open(t)
	ttl := h.ttl()
	want := h.Monoid.Combine(h.Monoid.Identity(), d)
	observeReset(t, h, s, "equal",
		func(k state.Key) { mustMerge(t, s, k, d, ttl) },
		func(k state.Key) { mustMerge(t, s, k, d, ttl) },
		want)
	h.observe(t, func(tl *timeline, attempt int) string {
		k := state.Key{Entity: "equal pinned", Bucket: int64(attempt)}
		first := tl.do(func() { mustMerge(t, s, k, d, ttl) })
		second := tl.do(func() { mustMerge(t, s, k, d, 0) })
		if why := endsBefore(second, first.from+ttl, "the equal merge with ttl 0"); why != "" {
			return why
		}
		tl.sleepUntil(first.to + 2*ttl)
		wantValue(t, h, s, k, want)
		return ""
	})
	k := state.Key{Entity: "equal after expiry"}
	mustMerge(t, s, k, d, ttl)
	h.sleep(t, ttl*12/10)
	mustMerge(t, s, k, d, 0)
	wantValue(t, h, s, k, want)
}

// testExpiredThenMergedLower: after expiry a merge starts from Identity, also when
// the old value would have absorbed the new delta (a Max that must go down).
func testExpiredThenMergedLower[V any](t *testing.T, h *Harness[V]) {
	hi, lo, ok := h.absorbed()
	if !ok {
		t.Skip("no pair of Harness deltas where one absorbs the other")
	}
	s := h.open(t)
	ttl := h.ttl()
	k := state.Key{Entity: "lower after expiry"}
	mustMerge(t, s, k, hi, ttl)
	h.sleep(t, ttl*12/10)
	mustMerge(t, s, k, lo, 0)
	wantValue(t, h, s, k, h.Monoid.Combine(h.Monoid.Identity(), lo))
}

// runMonoids runs the monoid tests that apply to h.
func runMonoids[V any](t *testing.T, h *Harness[V]) {
	t.Run("merge identity", func(t *testing.T) { testMergeIdentity(t, h) })
	if h.Monoid.Kind() == monoid.KindSum {
		switch h := any(h).(type) {
		case *Harness[int64]:
			t.Run("merge back to zero", func(t *testing.T) { testBackToZero(t, h) })
		case *Harness[float64]:
			t.Run("merge back to zero", func(t *testing.T) { testBackToZero(t, h) })
		}
	}
	if !h.SkipTTL {
		t.Run("unchanged merge refreshes expiry", func(t *testing.T) { testUnchangedMergeRefreshes(t, h) })
		t.Run("equal value merge sets expiry", func(t *testing.T) { testEqualMerge(t, h) })
		t.Run("expired then merged lower", func(t *testing.T) { testExpiredThenMergedLower(t, h) })
	}
}

// testClaimOutlivesValue: a claim lives for the dedup TTL, not the value's ttl: a
// redelivery after the value expired is still a redelivery.
func testClaimOutlivesValue[V any](t *testing.T, h *Harness[V]) {
	ttl, dedup := h.ttl(), h.dedupTTL()
	if dedup <= 2*ttl {
		t.Skip("Harness.DedupTTL is not longer than 2 TTL")
	}
	s := h.openOnce(t)
	h.observe(t, func(tl *timeline, attempt int) string {
		k := state.Key{Entity: "short-lived", Bucket: int64(attempt)}
		var (
			applied bool
			err     error
		)
		first := tl.do(func() { applied, err = s.MergeUpdateOnce(t.Context(), "evt", k, h.Delta(0), ttl) })
		if err != nil || !applied {
			t.Fatalf("first delivery: applied = %v, %v", applied, err)
		}
		tl.sleepUntil(first.to + ttl*12/10)
		wantMissing(t, s, k)
		again := tl.do(func() { applied, err = s.MergeUpdateOnce(t.Context(), "evt", k, h.Delta(0), ttl) })
		if why := endsBefore(again, first.from+dedup, "the redelivery after the value expired"); why != "" {
			return why
		}
		if err != nil || applied {
			t.Fatalf("redelivery after the value expired: applied = %v, %v; want false: the claim died with the value", applied, err)
		}
		wantMissing(t, s, k)
		return ""
	})
}

// testClaimExpires: with a fake clock, a claim is held for the dedup TTL and gone
// after it (independent of a value without expiry), and the value is kept.
func testClaimExpires[V any](t *testing.T, h *Harness[V]) {
	if !h.FakeTime {
		t.Skip("needs Harness.FakeTime")
	}
	s := h.openOnce(t)
	dedup := h.dedupTTL()
	k := state.Key{Entity: "claimed"}
	if !mustOnce(t, s, "evt", k, h.Delta(0)) {
		t.Fatal("first delivery not applied")
	}
	h.sleep(t, dedup/2)
	if mustOnce(t, s, "evt", k, h.Delta(0)) {
		t.Fatal("redelivery within the dedup TTL applied")
	}
	h.sleep(t, dedup)
	if !mustOnce(t, s, "evt", k, h.Delta(1)) {
		t.Error("redelivery after the dedup TTL not applied: the claim never expires")
	}
	wantValue(t, h, s, k, h.fold(0, 2))
}

// testClaimIDsInjective: first deliveries of (event, key) pairs whose naive
// encodings collide ("e:1" + "1:x" vs "e" + "1:1:x", and so on) are all applied.
func testClaimIDsInjective[V any](t *testing.T, h *Harness[V]) {
	s := h.openOnce(t)
	entities := []string{"e", "e:1", "e#1", "1"}
	ids := []string{"x", "1:x", "x:e", "x#e"}
	want := map[state.Key]V{}
	i := 0
	for _, e := range entities {
		for b := range int64(2) {
			k := state.Key{Entity: e, Bucket: b}
			v := h.Monoid.Identity()
			for _, id := range ids {
				if !mustOnce(t, s, id, k, h.Delta(i)) {
					t.Errorf("first delivery of %q to %q/%d not applied: its claim collides with another pair's", id, e, b)
				}
				v = h.Monoid.Combine(v, h.Delta(i))
				i++
			}
			want[k] = v
		}
	}
	for k, v := range want {
		wantValue(t, h, s, k, v)
	}
}

// testFailedMergeDoesNotClaim: a MergeUpdateOnce that fails (a bad delta, an
// int64 overflow, a ttl over state.MaxTTL) claims nothing: redelivering the event
// applies it.
func testFailedMergeDoesNotClaim[V any](t *testing.T, h *Harness[V]) {
	s := h.openOnce(t)
	ctx := t.Context()
	k := state.Key{Entity: "once-failed"}
	mustMerge(t, s, k, h.Delta(0), 0)
	want := h.fold(0, 1)
	redeliver := func(what, id string) {
		t.Helper()
		d := h.Delta(1)
		if !mustOnce(t, s, id, k, d) {
			t.Errorf("redelivery after %s not applied: the failed merge claimed %q", what, id)
			return
		}
		want = h.Monoid.Combine(want, d)
	}
	_, err := s.MergeUpdateOnce(ctx, "over-max-ttl", k, h.Delta(1), state.MaxTTL+1)
	wantInvalid(t, "MergeUpdateOnce(ttl MaxTTL+1)", err)
	redeliver("a ttl over MaxTTL", "over-max-ttl")
	for i, bad := range h.BadDeltas {
		id := fmt.Sprintf("bad-delta-%d", i)
		_, err := s.MergeUpdateOnce(ctx, id, k, bad, 0)
		wantInvalid(t, "MergeUpdateOnce(bad delta)", err)
		redeliver("a bad delta", id)
	}
	if hi, ok := any(h).(*Harness[int64]); ok && !h.SkipSumLimits && h.Monoid.Kind() == monoid.KindSum {
		os := any(s).(state.OnceStore[int64])
		top := state.Key{Entity: "once-overflow"}
		mustMerge(t, os, top, math.MaxInt64, 0)
		_, err = os.MergeUpdateOnce(ctx, "overflow", top, 1, 0)
		wantInvalid(t, "MergeUpdateOnce(MaxInt64 + 1)", err)
		if applied, err := os.MergeUpdateOnce(ctx, "overflow", top, -1, 0); err != nil || !applied {
			t.Errorf("redelivery after an overflow: applied = %v, %v; want true", applied, err)
		}
		wantValue(t, hi, os, top, math.MaxInt64-1)
	}
	wantValue(t, h, s, k, want)
}
