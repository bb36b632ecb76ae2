package monoid_test

import (
	"math"
	"testing"
	"time"

	"github.com/pipestate/pipestate/monoid"
)

type myInt int16

func TestIdentitiesAreTheExtremes(t *testing.T) {
	check := func(name string, got, want any) {
		t.Helper()
		if got != want {
			t.Errorf("%s: got %v, want %v", name, got, want)
		}
	}
	check("min int8", monoid.Min[int8]{}.Identity(), int8(math.MaxInt8))
	check("max int8", monoid.Max[int8]{}.Identity(), int8(math.MinInt8))
	check("min int64", monoid.Min[int64]{}.Identity(), int64(math.MaxInt64))
	check("max int64", monoid.Max[int64]{}.Identity(), int64(math.MinInt64))
	check("min int", monoid.Min[int]{}.Identity(), math.MaxInt)
	check("min uint32", monoid.Min[uint32]{}.Identity(), uint32(math.MaxUint32))
	check("max uint64", monoid.Max[uint64]{}.Identity(), uint64(0))
	check("min named", monoid.Min[myInt]{}.Identity(), myInt(math.MaxInt16))
	check("max named", monoid.Max[myInt]{}.Identity(), myInt(math.MinInt16))
	check("min float32", monoid.Min[float32]{}.Identity(), float32(math.Inf(1)))
	check("max float64", monoid.Max[float64]{}.Identity(), math.Inf(-1))
}

func TestKindsAndCommutativity(t *testing.T) {
	tests := []struct {
		name string
		m    interface{ Kind() monoid.Kind }
		kind monoid.Kind
	}{
		{"sum", monoid.Sum[float64]{}, monoid.KindSum},
		{"count", monoid.Count{}, monoid.KindCount},
		{"min", monoid.Min[int]{}, monoid.KindMin},
		{"max", monoid.Max[int]{}, monoid.KindMax},
		{"first", monoid.First[int]{}, monoid.KindFirst},
		{"last", monoid.Last[int]{}, monoid.KindLast},
		{"set", monoid.Set[string]{}, monoid.KindSet},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.m.Kind(); got != tt.kind {
				t.Errorf("Kind() = %q, want %q", got, tt.kind)
			}
			if !monoid.IsCommutative(tt.m) {
				t.Error("not declared commutative")
			}
		})
	}
}

func TestFirstLastPickByTimeThenValue(t *testing.T) {
	t1, t2 := time.Unix(100, 0), time.Unix(200, 0)
	a := monoid.Timestamped[string]{At: t1, Value: "z"}
	b := monoid.Timestamped[string]{At: t2, Value: "a"}
	tie := monoid.Timestamped[string]{At: t1.In(time.FixedZone("x", 7200)), Value: "b"}
	if got := (monoid.First[string]{}).Combine(b, a); got != a {
		t.Errorf("First = %v, want %v", got, a)
	}
	if got := (monoid.Last[string]{}).Combine(b, a); got != b {
		t.Errorf("Last = %v, want %v", got, b)
	}
	if got := (monoid.First[string]{}).Combine(a, tie); got.Value != "b" {
		t.Errorf("First tie = %v, want value b", got)
	}
	if got := (monoid.Last[string]{}).Combine(tie, a); got.Value != "z" {
		t.Errorf("Last tie = %v, want value z", got)
	}
}

func TestSetCombineDoesNotAlias(t *testing.T) {
	var s monoid.Set[string]
	a := monoid.SetOf("x")
	got := s.Combine(a, nil)
	got["y"] = struct{}{}
	if len(a) != 1 {
		t.Errorf("changing the result changed the argument: %v", a)
	}
}
