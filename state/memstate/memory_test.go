package memstate_test

import (
	"testing"
	"time"

	"github.com/pipestate/pipestate/internal/testkit/fakeclock"
	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/monoid/sketch/hll"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/internal/storetest"
	"github.com/pipestate/pipestate/state/memstate"
)

func TestOptions(t *testing.T) {
	var nilHLL *hll.Monoid
	storetest.Invalid(t, map[string]func() error{
		"store nil clock": func() error { _, err := memstate.New[int64](monoid.Sum[int64]{}, memstate.WithClock(nil)); return err },
		"store negative dedup ttl": func() error {
			_, err := memstate.New[int64](monoid.Sum[int64]{}, memstate.WithDedupTTL(-time.Second))
			return err
		},
		"store dedup ttl over MaxTTL": func() error {
			_, err := memstate.New[int64](monoid.Sum[int64]{}, memstate.WithDedupTTL(state.MaxTTL+1))
			return err
		},
		"store nil monoid":        func() error { _, err := memstate.New[int64](nil); return err },
		"store typed nil monoid":  func() error { _, err := memstate.New[[]byte](nilHLL); return err },
		"store nil option":        func() error { _, err := memstate.New[int64](monoid.Sum[int64]{}, nil); return err },
		"deduper nil option":      func() error { _, err := memstate.NewDeduper(nil); return err },
		"deduper nil clock":       func() error { _, err := memstate.NewDeduper(memstate.WithClock(nil)); return err },
		"deduper negative ttl":    func() error { _, err := memstate.NewDeduper(memstate.WithDedupTTL(-1)); return err },
		"deduper ttl over MaxTTL": func() error { _, err := memstate.NewDeduper(memstate.WithDedupTTL(state.MaxTTL + 1)); return err },
	})
}

// TestOptionKinds checks which constructor takes which option, as the compiler
// does: WithClock and WithDedupTTL are taken by both constructors.
func TestOptionKinds(t *testing.T) {
	storetest.OptionKinds(t,
		map[string]any{"New": memstate.New[int64], "NewDeduper": memstate.NewDeduper},
		map[string]any{"WithClock": memstate.WithClock, "WithDedupTTL": memstate.WithDedupTTL},
		map[string][]string{"WithClock": {"New", "NewDeduper"}, "WithDedupTTL": {"New", "NewDeduper"}})
}

func TestDedupTTLOfMergeUpdateOnce(t *testing.T) {
	c := fakeclock.New(time.Unix(1000, 0))
	s, err := memstate.New[int64](monoid.Sum[int64]{}, memstate.WithClock(c.Now), memstate.WithDedupTTL(time.Minute))
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
	s, err := memstate.New[[]byte](m)
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
