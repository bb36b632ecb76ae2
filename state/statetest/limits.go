package statetest

import (
	"errors"
	"math"
	"testing"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
)

// testTTLLimits checks the ttl limit: state.MaxTTL is accepted (no overflow in any
// unit: the value is there and has not expired), one nanosecond more is
// state.ErrInvalidArgument and writes nothing.
func testTTLLimits[V any](t *testing.T, h *Harness[V]) {
	s := h.open(t)
	k, over := state.Key{Entity: "max-ttl"}, state.Key{Entity: "over-max-ttl"}
	mustMerge(t, s, k, h.Delta(0), state.MaxTTL)
	wantValue(t, h, s, k, h.fold(0, 1))
	wantInvalid(t, "MergeUpdate with MaxTTL+1", s.MergeUpdate(t.Context(), over, h.Delta(0), state.MaxTTL+1))
	wantMissing(t, s, over)
	if os, ok := s.(state.OnceStore[V]); ok {
		if _, err := os.MergeUpdateOnce(t.Context(), "max-ttl", k, h.Delta(1), state.MaxTTL); err != nil {
			t.Fatalf("MergeUpdateOnce with MaxTTL: %v", err)
		}
		wantValue(t, h, s, k, h.fold(0, 2))
	}
}

// testExpiryInstant checks that a value is expired when now >= its expiry: after
// sleeping exactly ttl it is gone.
func testExpiryInstant[V any](t *testing.T, h *Harness[V]) {
	s := h.open(t)
	ttl := h.ttl()
	k := state.Key{Entity: "instant"}
	mustMerge(t, s, k, h.Delta(0), ttl)
	h.sleep(t, ttl)
	wantMissing(t, s, k)
}

// wantRefused fails t unless merging delta into k is state.ErrInvalidArgument and
// leaves k as it was (missing when found is false, else want).
func wantRefused[V any](t *testing.T, h *Harness[V], s state.Store[V], what string, k state.Key, delta V, found bool, want V) {
	t.Helper()
	err := s.MergeUpdate(t.Context(), k, delta, 0)
	if !errors.Is(err, state.ErrInvalidArgument) {
		t.Fatalf("%s: err = %v, want state.ErrInvalidArgument", what, err)
	}
	if !found {
		wantMissing(t, s, k)
		return
	}
	wantValue(t, h, s, k, want)
	if _, _, err := s.GetMany(t.Context(), []state.Key{k, {Entity: "other"}}); err != nil {
		t.Fatalf("%s: GetMany after the refused merge: %v", what, err)
	}
}

// testInt64SumLimits: a sum that would overflow int64 is state.ErrInvalidArgument and
// changes nothing, at both ends.
func testInt64SumLimits(t *testing.T, h *Harness[int64]) {
	s := h.open(t)
	hi, lo := state.Key{Entity: "int-max"}, state.Key{Entity: "int-min"}
	mustMerge(t, s, hi, math.MaxInt64, 0)
	wantRefused(t, h, s, "MaxInt64 + 1", hi, 1, true, math.MaxInt64)
	mustMerge(t, s, lo, math.MinInt64, 0)
	wantRefused(t, h, s, "MinInt64 - 1", lo, -1, true, math.MinInt64)
	mustMerge(t, s, hi, -1, 0)
	wantValue(t, h, s, hi, math.MaxInt64-1)
}

// near reports whether a and b are within 4 ulps of the larger magnitude (decimal
// backends may round a sum differently from binary float64 addition).
func near(a, b float64) bool {
	if a == b {
		return true
	}
	m := math.Max(math.Abs(a), math.Abs(b))
	return math.Abs(a-b) <= 4*(math.Nextafter(m, math.Inf(1))-m)
}

// testFloat64SumLimits checks the float contract of package state at its limits.
func testFloat64SumLimits(t *testing.T, h *Harness[float64]) {
	s := h.open(t)
	get := func(k state.Key) float64 {
		t.Helper()
		v, found := mustGet(t, s, k)
		if !found {
			t.Fatalf("Get(%v): missing", k)
		}
		return v
	}
	t.Run("tiny deltas", func(t *testing.T) {
		k := state.Key{Entity: "tiny"}
		for _, d := range []float64{1e-20, 3e-19, 2.5e-18} {
			mustMerge(t, s, k, d, 0)
		}
		if got, want := get(k), 1e-20+3e-19+2.5e-18; !near(got, want) {
			t.Fatalf("1e-20 + 3e-19 + 2.5e-18 = %v, want %v", got, want)
		}
	})
	t.Run("delta below the precision of the sum", func(t *testing.T) {
		k := state.Key{Entity: "half"}
		mustMerge(t, s, k, 0.5, 0)
		mustMerge(t, s, k, 1e-50, 0)
		if got := get(k); !near(got, 0.5) {
			t.Fatalf("0.5 + 1e-50 = %v, want 0.5", got)
		}
	})
	t.Run("range ends", func(t *testing.T) {
		for i, d := range []float64{state.MaxFloat64, -state.MaxFloat64, state.MinFloat64, -state.MinFloat64} {
			k := state.Key{Entity: "end", Bucket: int64(i + 1)}
			mustMerge(t, s, k, d, 0)
			if got := get(k); !near(got, d) {
				t.Fatalf("Get = %v, want %v", got, d)
			}
		}
	})
	t.Run("bad deltas", func(t *testing.T) {
		for i, d := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 1e126, -1e126, state.MinFloat64 / 2, math.SmallestNonzeroFloat64, math.MaxFloat64} {
			wantRefused(t, h, s, "bad delta", state.Key{Entity: "bad", Bucket: int64(i + 1)}, d, false, 0)
		}
	})
	t.Run("overflow", func(t *testing.T) {
		k := state.Key{Entity: "overflow"}
		mustMerge(t, s, k, state.MaxFloat64, 0)
		wantRefused(t, h, s, "MaxFloat64 + MaxFloat64", k, state.MaxFloat64, true, state.MaxFloat64)
		wantRefused(t, h, s, "MaxFloat64 + 1e116", k, 1e116, true, state.MaxFloat64)
		n := state.Key{Entity: "overflow", Bucket: -1}
		mustMerge(t, s, n, -state.MaxFloat64, 0)
		wantRefused(t, h, s, "-MaxFloat64 - MaxFloat64", n, -state.MaxFloat64, true, -state.MaxFloat64)
	})
	t.Run("underflow", func(t *testing.T) {
		k := state.Key{Entity: "underflow"}
		mustMerge(t, s, k, 3e-130, 0)
		wantRefused(t, h, s, "3e-130 - 2.5e-130", k, -2.5e-130, true, 3e-130)
		mustMerge(t, s, k, -3e-130, 0) // exactly 0 is in range
		if got := get(k); got != 0 {
			t.Fatalf("3e-130 - 3e-130 = %v, want 0", got)
		}
	})
}

// runLimits runs the limit tests that apply to h's value type and monoid.
func runLimits[V any](t *testing.T, h *Harness[V]) {
	t.Run("ttl limits", func(t *testing.T) { testTTLLimits(t, h) })
	t.Run("entity length in bytes", func(t *testing.T) { testEntityLengthInBytes(t, h) })
	if !h.SkipTTL {
		t.Run("expiry instant", func(t *testing.T) { testExpiryInstant(t, h) })
	}
	if h.SkipSumLimits || h.Monoid.Kind() != monoid.KindSum {
		return
	}
	switch h := any(h).(type) {
	case *Harness[int64]:
		t.Run("int64 sum limits", func(t *testing.T) { testInt64SumLimits(t, h) })
	case *Harness[float64]:
		t.Run("float64 sum limits", func(t *testing.T) { testFloat64SumLimits(t, h) })
	}
}
