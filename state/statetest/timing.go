package statetest

import (
	"testing"
	"time"

	"github.com/pipestate/pipestate/state"
)

// SubSecondTTL is the ttl of the sub-second expiry test: the value is found right
// after the merge and gone 1.5 s later (also where whole-second expiry rounds it
// up).
const SubSecondTTL = 500 * time.Millisecond

func testSubSecondTTL[V any](t *testing.T, h *Harness[V]) {
	s := h.open(t)
	h.observe(t, func(tl *timeline, attempt int) string {
		k := state.Key{Entity: "sub-second", Bucket: int64(attempt)}
		merged := tl.do(func() { mustMerge(t, s, k, h.Delta(0), SubSecondTTL) })
		var (
			got   V
			found bool
		)
		read := tl.do(func() { got, found = mustGet(t, s, k) })
		if why := endsBefore(read, merged.from+SubSecondTTL, "the read after the merge"); why != "" {
			return why
		}
		wantGot(t, h, k, got, found, h.fold(0, 1))
		tl.sleepUntil(merged.to + 1500*time.Millisecond)
		wantMissing(t, s, k)
		return ""
	})
}

// testShorterTTL: every merge sets the expiry to now+ttl, also when that is
// earlier than the expiry it replaces.
func testShorterTTL[V any](t *testing.T, h *Harness[V]) {
	s := h.open(t)
	ttl := h.ttl()
	h.observe(t, func(tl *timeline, attempt int) string {
		k := state.Key{Entity: "shortened", Bucket: int64(attempt)}
		mustMerge(t, s, k, h.Delta(0), 10*ttl)
		second := tl.do(func() { mustMerge(t, s, k, h.Delta(1), ttl) })
		var (
			got   V
			found bool
		)
		read := tl.do(func() { got, found = mustGet(t, s, k) })
		if why := endsBefore(read, second.from+ttl, "the read after the shorter merge"); why != "" {
			return why
		}
		wantGot(t, h, k, got, found, h.fold(0, 2))
		tl.sleepUntil(second.to + ttl*12/10)
		wantMissing(t, s, k)
		return ""
	})
}

// testLongSpans: with a fake clock, values without expiry live for months, and
// ttls of a day and a half and of 30 days expire exactly then.
func testLongSpans[V any](t *testing.T, h *Harness[V]) {
	if !h.FakeTime {
		t.Skip("needs Harness.FakeTime")
	}
	s := h.open(t)
	day := 24 * time.Hour
	forever, dayAndHalf, month := state.Key{Entity: "forever"}, state.Key{Entity: "36h"}, state.Key{Entity: "30d"}
	mustMerge(t, s, forever, h.Delta(0), 0)
	mustMerge(t, s, dayAndHalf, h.Delta(1), 36*time.Hour)
	mustMerge(t, s, month, h.Delta(2), 30*day)
	h.sleep(t, time.Hour)
	h.sleep(t, day)
	mustMerge(t, s, forever, h.Delta(3), 0)
	h.sleep(t, 11*time.Hour-time.Second)
	wantValue(t, h, s, dayAndHalf, h.fold(1, 2))
	h.sleep(t, time.Second)
	wantMissing(t, s, dayAndHalf)
	h.sleep(t, 28*day+12*time.Hour-time.Second)
	wantValue(t, h, s, month, h.fold(2, 3))
	h.sleep(t, time.Second)
	wantMissing(t, s, month)
	h.sleep(t, 60*day)
	wantValue(t, h, s, forever, h.Monoid.Combine(h.fold(0, 1), h.Delta(3)))
}

// runTiming runs the expiry tests beyond the basic ones.
func runTiming[V any](t *testing.T, h *Harness[V]) {
	if h.SkipTTL {
		return
	}
	t.Run("sub-second ttl", func(t *testing.T) { testSubSecondTTL(t, h) })
	t.Run("shorter ttl after longer", func(t *testing.T) { testShorterTTL(t, h) })
	t.Run("long spans", func(t *testing.T) { testLongSpans(t, h) })
}
