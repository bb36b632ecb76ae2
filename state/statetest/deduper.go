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
	mustMark(t, d, "expiring")
	if h.TTL == 0 {
		h.sleep(t, 24*time.Hour)
		if mustMark(t, d, "expiring") {
			t.Error("a claim with no TTL expired")
		}
		return
	}
	h.sleep(t, h.TTL/2)
	if mustMark(t, d, "expiring") {
		t.Fatal("claim gone before its TTL")
	}
	h.sleep(t, h.TTL*2)
	if !mustMark(t, d, "expiring") {
		t.Error("claim still held after its TTL")
	}
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
