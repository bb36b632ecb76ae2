package statetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipestate/pipestate/state"
)

// RunDeduper runs the Deduper conformance suite.
func RunDeduper(t *testing.T, h DeduperHarness) {
	if h.Open == nil {
		t.Fatal("statetest: DeduperHarness needs Open")
	}
	t.Run("first seen once", func(t *testing.T) { testFirstSeenOnce(t, &h) })
	t.Run("ids are distinct", func(t *testing.T) { testDistinctIDs(t, &h) })
	t.Run("race", func(t *testing.T) { testDedupRace(t, &h) })
	t.Run("release", func(t *testing.T) { testRelease(t, &h) })
	t.Run("expiry", func(t *testing.T) { testDedupExpiry(t, &h) })
	t.Run("repeated claim keeps its expiry", func(t *testing.T) { testDedupRepeatKeepsExpiry(t, &h) })
	t.Run("bad input", func(t *testing.T) { testDedupBadInput(t, &h) })
	t.Run("closed", func(t *testing.T) { testDedupClosed(t, &h) })
	t.Run("cancelled context", func(t *testing.T) { testDedupCancelled(t, &h) })
}

func mustMark(t *testing.T, d state.Deduper, id string) bool {
	t.Helper()
	first, err := d.MarkSeen(t.Context(), id)
	if err != nil {
		t.Fatalf("MarkSeen(%q): %v", id, err)
	}
	return first
}

func testFirstSeenOnce(t *testing.T, h *DeduperHarness) {
	d1, d2 := h.open(t), h.open(t)
	if !mustMark(t, d1, "e1") {
		t.Fatal("first MarkSeen(e1) = false")
	}
	if mustMark(t, d1, "e1") || mustMark(t, d2, "e1") {
		t.Error("repeated MarkSeen(e1) = true")
	}
	if !mustMark(t, d2, "e2") {
		t.Error("first MarkSeen(e2) = false")
	}
}

func testDistinctIDs(t *testing.T, h *DeduperHarness) {
	d := h.open(t)
	ids := []string{"a", "a:", ":a", "a:1", "a#1", "{a}", "a b", "A", "é", "e\u0301", strings.Repeat("x", state.MaxEventIDLen)}
	for _, id := range ids {
		if !mustMark(t, d, id) {
			t.Errorf("MarkSeen(%q) = false: collides with an earlier ID", id)
		}
	}
}

// testDedupRace delivers one event to Racers callers at once, from a barrier, in
// repeated rounds: exactly one caller wins every round.
func testDedupRace(t *testing.T, h *DeduperHarness) {
	ds := []state.Deduper{h.open(t), h.open(t)}
	raceRounds(t, func(round int) {
		id := fmt.Sprintf("race-%d", round)
		var winners atomic.Int32
		errs := make(chan error, Racers)
		together(Racers, func(g int) {
			first, err := ds[g%2].MarkSeen(t.Context(), id)
			if err != nil {
				errs <- err
				return
			}
			if first {
				winners.Add(1)
			}
		})
		close(errs)
		for err := range errs {
			t.Fatalf("MarkSeen: %v", err)
		}
		if n := winners.Load(); n != 1 {
			t.Fatalf("round %d: %d of %d racers saw %q first, want exactly 1", round, n, Racers, id)
		}
	})
}

func testRelease(t *testing.T, h *DeduperHarness) {
	d1, d2 := h.open(t), h.open(t)
	ctx := t.Context()
	mustMark(t, d1, "job")
	if err := d2.Release(ctx, "job"); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if !mustMark(t, d2, "job") {
		t.Error("MarkSeen after Release = false, want the event claimable again")
	}
	if mustMark(t, d1, "job") {
		t.Error("MarkSeen after the re-claim = true")
	}
	if err := d1.Release(ctx, "never-claimed"); err != nil {
		t.Errorf("Release of an unclaimed ID: %v, want nil", err)
	}
}

func testDedupExpiry(t *testing.T, h *DeduperHarness) {
	d := h.open(t)
	if h.TTL == 0 {
		mustMark(t, d, "expiring")
		h.sleep(t, 24*time.Hour)
		if mustMark(t, d, "expiring") {
			t.Error("a claim with no TTL expired")
		}
		return
	}
	h.observe(t, func(tl *timeline, attempt int) string {
		id := fmt.Sprintf("expiring-%d", attempt)
		claim := tl.do(func() { mustClaim(t, d, id) })
		tl.sleepUntil(claim.from + h.TTL/2)
		var again bool
		half := tl.do(func() { again = mustMark(t, d, id) })
		if why := endsBefore(half, claim.from+h.TTL, "the MarkSeen half-way"); why != "" {
			return why
		}
		if again {
			t.Fatal("claim gone before its TTL")
		}
		tl.sleepUntil(half.to + 2*h.TTL)
		if !mustMark(t, d, id) {
			t.Error("claim still held after its TTL")
		}
		return ""
	})
}

// mustClaim fails the test unless MarkSeen(id) is first.
func mustClaim(t *testing.T, d state.Deduper, id string) {
	t.Helper()
	if !mustMark(t, d, id) {
		t.Fatalf("first MarkSeen(%q) = false", id)
	}
}

// testDedupRepeatKeepsExpiry: a repeated MarkSeen of a held claim (false) does not
// extend it: the claim is held until just before the first MarkSeen's expiry and
// free from it on (now >= expiry), also after a repeat half-way.
func testDedupRepeatKeepsExpiry(t *testing.T, h *DeduperHarness) {
	if h.TTL == 0 {
		t.Skip("claims never expire (DeduperHarness.TTL is 0)")
	}
	d1, d2 := h.open(t), h.open(t)
	h.observe(t, func(tl *timeline, attempt int) string {
		id := fmt.Sprintf("repeated-%d", attempt)
		claim := tl.do(func() { mustClaim(t, d1, id) })
		expiry := claim.from + h.TTL // the earliest it may be
		var (
			again [2]bool
			calls [2]span
		)
		tl.sleepUntil(claim.from + h.TTL/2)
		calls[0] = tl.do(func() { again[0] = mustMark(t, d2, id) })
		tl.sleepUntil(tl.justBefore(expiry, h.TTL))
		calls[1] = tl.do(func() { again[1] = mustMark(t, d1, id) })
		for i, what := range []string{"the MarkSeen half-way", "the MarkSeen just before the expiry"} {
			if why := endsBefore(calls[i], expiry, what); why != "" {
				return why
			}
			if again[i] {
				t.Fatalf("%s (%v after the claim) was first: the claim expired early", what, calls[i].to-claim.from)
			}
		}
		tl.sleepUntil(claim.to + h.TTL)
		if !mustMark(t, d2, id) {
			t.Errorf("MarkSeen at the first claim's expiry (%v after it) = false: a repeated MarkSeen extended the claim", h.TTL)
		}
		return ""
	})
}

func testDedupBadInput(t *testing.T, h *DeduperHarness) {
	d := h.open(t)
	ctx := t.Context()
	for _, id := range []string{"", "a\nb", "a\x00", "a\xffb", strings.Repeat("x", state.MaxEventIDLen+1)} {
		_, err := d.MarkSeen(ctx, id)
		wantInvalid(t, fmt.Sprintf("MarkSeen(%q)", id), err)
		wantInvalid(t, fmt.Sprintf("Release(%q)", id), d.Release(ctx, id))
	}
}

func testDedupClosed(t *testing.T, h *DeduperHarness) {
	d := h.open(t)
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	_, err := d.MarkSeen(t.Context(), "x")
	if !errors.Is(err, state.ErrClosed) {
		t.Errorf("MarkSeen after Close: %v, want state.ErrClosed", err)
	}
	if err := d.Release(t.Context(), "x"); !errors.Is(err, state.ErrClosed) {
		t.Errorf("Release after Close: %v, want state.ErrClosed", err)
	}
	if !mustMark(t, h.open(t), "x") {
		t.Error("a MarkSeen after Close claimed its ID")
	}
}

func testDedupCancelled(t *testing.T, h *DeduperHarness) {
	d := h.open(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := d.MarkSeen(ctx, "x"); !errors.Is(err, context.Canceled) {
		t.Errorf("MarkSeen with a cancelled context: %v, want context.Canceled", err)
	}
	if err := d.Release(ctx, "x"); !errors.Is(err, context.Canceled) {
		t.Errorf("Release with a cancelled context: %v, want context.Canceled", err)
	}
	if !mustMark(t, d, "x") {
		t.Error("a cancelled MarkSeen claimed its ID")
	}
	if err := d.Release(ctx, "x"); !errors.Is(err, context.Canceled) {
		t.Errorf("Release with a cancelled context: %v, want context.Canceled", err)
	}
	if mustMark(t, d, "x") {
		t.Error("a cancelled Release released its claim")
	}
}
