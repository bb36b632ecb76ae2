package memory_test

import (
	"testing"
	"time"

	"github.com/pipestate/pipestate/internal/testkit/fakeclock"
	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/monoid/sketch/hll"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/internal/storetest"
	"github.com/pipestate/pipestate/state/memory"
)

func TestOptions(t *testing.T) {
	var nilHLL *hll.Monoid
	storetest.Invalid(t, map[string]func() error{
		"store nil clock": func() error { _, err := memory.New[int64](monoid.Sum[int64]{}, memory.WithClock(nil)); return err },
		"store negative dedup ttl": func() error {
			_, err := memory.New[int64](monoid.Sum[int64]{}, memory.WithDedupTTL(-time.Second))
			return err
		},
		"store dedup ttl over MaxTTL": func() error {
			_, err := memory.New[int64](monoid.Sum[int64]{}, memory.WithDedupTTL(state.MaxTTL+1))
			return err
		},
		"store nil monoid":        func() error { _, err := memory.New[int64](nil); return err },
		"store typed nil monoid":  func() error { _, err := memory.New[[]byte](nilHLL); return err },
		"store nil option":        func() error { _, err := memory.New[int64](monoid.Sum[int64]{}, nil); return err },
		"deduper nil option":      func() error { _, err := memory.NewDeduper(nil); return err },
		"deduper nil clock":       func() error { _, err := memory.NewDeduper(memory.WithClock(nil)); return err },
		"deduper negative ttl":    func() error { _, err := memory.NewDeduper(memory.WithDedupTTL(-1)); return err },
		"deduper ttl over MaxTTL": func() error { _, err := memory.NewDeduper(memory.WithDedupTTL(state.MaxTTL + 1)); return err },
	})
}

// TestOptionKinds checks which constructor takes which option, as the compiler
// does: WithClock and WithDedupTTL are taken by both constructors.
func TestOptionKinds(t *testing.T) {
	storetest.OptionKinds(t,
		map[string]any{"New": memory.New[int64], "NewDeduper": memory.NewDeduper},
		map[string]any{"WithClock": memory.WithClock, "WithDedupTTL": memory.WithDedupTTL},
		map[string][]string{"WithClock": {"New", "NewDeduper"}, "WithDedupTTL": {"New", "NewDeduper"}})
}

func TestDedupTTLOfMergeUpdateOnce(t *testing.T) {
	c := fakeclock.New(time.Unix(1000, 0))
	s, err := memory.New[int64](monoid.Sum[int64]{}, memory.WithClock(c.Now), memory.WithDedupTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	ctx, k := t.Context(), state.Key{Entity: "k"}
	for i, want := range []bool{true, false, true} {
		applied, err := s.MergeUpdateOnce(ctx, "evt", k, 1, 0)
		if err != nil || applied != want {
			t.Fatalf("delivery %d: applied = %v, %v; want %v", i, applied, err, want)
		}
		if i == 1 {
			c.Advance(time.Minute) // the claim expires
		}
	}
}

func TestBytesAreCopied(t *testing.T) {
	m, _ := hll.New(8)
	s, err := memory.New[[]byte](m)
	if err != nil {
		t.Fatal(err)
	}
	ctx, k := t.Context(), state.Key{Entity: "k"}
	delta := m.Delta("a")
	if err := s.MergeUpdate(ctx, k, delta, 0); err != nil {
		t.Fatal(err)
	}
	clear(delta)
	got, _, _ := s.Get(ctx, k)
	clear(got)
	again, _, _ := s.Get(ctx, k)
	if n, err := hll.Estimate(again); err != nil || n != 1 {
		t.Errorf("Estimate after callers scribbled = %d, %v; want 1", n, err)
	}
}
