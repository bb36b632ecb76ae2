package monoidtest_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/monoid/monoidtest"
)

func eqInt(a, b int64) bool { return a == b }

func genInt(r *rand.Rand) int64 { return r.Int64N(2001) - 1000 }

// genInt8 covers the extremes, where identity and overflow bugs live.
func genInt8(r *rand.Rand) int8 { return int8(r.IntN(256) - 128) }

func genUint16(r *rand.Rand) uint16 { return uint16(r.IntN(1 << 16)) }

// genFloat draws floats including the specials; sums use genIntFloat instead
// because IEEE addition is not associative.
func genFloat(r *rand.Rand) float64 {
	switch r.IntN(10) {
	case 0:
		return math.Inf(1)
	case 1:
		return math.Inf(-1)
	case 2:
		return math.Copysign(0, -1)
	case 3:
		return math.NaN()
	default:
		return r.NormFloat64() * 1e6
	}
}

// genIntFloat draws integral floats, whose sums are exact.
func genIntFloat(r *rand.Rand) float64 { return float64(r.IntN(1<<20) - 1<<19) }

// eqFloat is bit equality except that every NaN equals every NaN, so -0 != +0.
func eqFloat(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Float64bits(a) == math.Float64bits(b)
}

func genStamp(r *rand.Rand) monoid.Timestamped[string] {
	if r.IntN(8) == 0 {
		return monoid.Timestamped[string]{} // empty
	}
	// Few distinct instants and values, so ties are common; random locations.
	at := time.Unix(int64(r.IntN(4)), 0).In(time.FixedZone("z", 3600*r.IntN(3)))
	return monoid.Timestamped[string]{At: at, Value: string(rune('a' + r.IntN(3)))}
}

func eqStamp(a, b monoid.Timestamped[string]) bool { return a.At.Equal(b.At) && a.Value == b.Value }

func genSet(r *rand.Rand) map[int]struct{} {
	s := map[int]struct{}{}
	for range r.IntN(5) {
		s[r.IntN(8)] = struct{}{}
	}
	return s
}

func eqSet(a, b map[int]struct{}) bool {
	if len(a) != len(b) {
		return false
	}
	for x := range a {
		if _, ok := b[x]; !ok {
			return false
		}
	}
	return true
}

func TestLawsHoldForShippedMonoids(t *testing.T) {
	t.Run("sum int64", func(t *testing.T) { monoidtest.CheckLaws(t, monoid.Sum[int64]{}, genInt, eqInt) })
	t.Run("sum int8", func(t *testing.T) {
		monoidtest.CheckLaws(t, monoid.Sum[int8]{}, genInt8, func(a, b int8) bool { return a == b })
	})
	t.Run("sum float64", func(t *testing.T) { monoidtest.CheckLaws(t, monoid.Sum[float64]{}, genIntFloat, eqFloat) })
	t.Run("count", func(t *testing.T) { monoidtest.CheckLaws(t, monoid.Count{}, genInt, eqInt) })
	t.Run("min int64", func(t *testing.T) { monoidtest.CheckLaws(t, monoid.Min[int64]{}, genInt, eqInt) })
	t.Run("min int8", func(t *testing.T) {
		monoidtest.CheckLaws(t, monoid.Min[int8]{}, genInt8, func(a, b int8) bool { return a == b })
	})
	t.Run("max int8", func(t *testing.T) {
		monoidtest.CheckLaws(t, monoid.Max[int8]{}, genInt8, func(a, b int8) bool { return a == b })
	})
	t.Run("min uint16", func(t *testing.T) {
		monoidtest.CheckLaws(t, monoid.Min[uint16]{}, genUint16, func(a, b uint16) bool { return a == b })
	})
	t.Run("max uint16", func(t *testing.T) {
		monoidtest.CheckLaws(t, monoid.Max[uint16]{}, genUint16, func(a, b uint16) bool { return a == b })
	})
	t.Run("max int64", func(t *testing.T) { monoidtest.CheckLaws(t, monoid.Max[int64]{}, genInt, eqInt) })
	t.Run("min float64", func(t *testing.T) { monoidtest.CheckLaws(t, monoid.Min[float64]{}, genFloat, eqFloat) })
	t.Run("max float64", func(t *testing.T) { monoidtest.CheckLaws(t, monoid.Max[float64]{}, genFloat, eqFloat) })
	t.Run("first", func(t *testing.T) { monoidtest.CheckLaws(t, monoid.First[string]{}, genStamp, eqStamp) })
	t.Run("last", func(t *testing.T) { monoidtest.CheckLaws(t, monoid.Last[string]{}, genStamp, eqStamp) })
	t.Run("set", func(t *testing.T) { monoidtest.CheckLaws(t, monoid.Set[int]{}, genSet, eqSet) })
}

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// broken monoids, each breaking one law.
type (
	subtraction   struct{ monoid.Sum[int64] } // not associative, not commutative
	wrongIdentity struct{ monoid.Sum[int64] }
	liar          struct{ monoid.Sum[int64] } // declares commutativity it lacks
	mutatingSet   struct{ monoid.Set[int] }
	firstArg      struct{ monoid.Sum[int64] } // Combine(a, b) = a unless a is 0
)

func (subtraction) Combine(a, b int64) int64 { return a - b }
func (wrongIdentity) Identity() int64        { return 1 }
func (liar) Combine(a, b int64) int64        { return 2*a + b }
func (firstArg) Combine(a, b int64) int64 {
	if a == 0 {
		return b
	}
	return a
}
func (mutatingSet) Combine(a, b map[int]struct{}) map[int]struct{} {
	if a == nil {
		a = map[int]struct{}{}
	}
	for x := range b {
		a[x] = struct{}{}
	}
	return a
}

func TestCheckLawsCatchesBrokenMonoids(t *testing.T) {
	tests := []struct {
		name string
		run  func(tb testing.TB)
		law  string
	}{
		{"subtraction", func(tb testing.TB) { monoidtest.CheckLaws(tb, monoid.Monoid[int64](subtraction{}), genInt, eqInt) }, "associativity"},
		{"wrong identity", func(tb testing.TB) { monoidtest.CheckLaws(tb, monoid.Monoid[int64](wrongIdentity{}), genInt, eqInt) }, "left identity"},
		{"false commutativity", func(tb testing.TB) { monoidtest.CheckLaws(tb, monoid.Monoid[int64](liar{}), genInt, eqInt) }, "commutativity"},
		{"first argument", func(tb testing.TB) { monoidtest.CheckLaws(tb, monoid.Monoid[int64](firstArg{}), genInt, eqInt) }, "commutativity"},
		{"mutation", func(tb testing.TB) {
			monoidtest.CheckLaws(tb, monoid.Monoid[map[int]struct{}](mutatingSet{}), genSet, eqSet)
		}, "no mutation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{TB: t}
			tt.run(rec)
			joined := strings.Join(rec.errors, "\n")
			if !strings.Contains(joined, tt.law) {
				t.Errorf("CheckLaws did not report %q; reported:\n%s", tt.law, joined)
			}
		})
	}
}
