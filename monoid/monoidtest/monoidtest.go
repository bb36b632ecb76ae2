// Package monoidtest checks the monoid laws on random samples:
//
//   - left and right identity: Combine(Identity(), a) == a == Combine(a, Identity());
//   - associativity: Combine(Combine(a, b), c) == Combine(a, Combine(b, c));
//   - commutativity, when the monoid declares it (monoid.IsCommutative);
//   - Combine does not modify its arguments (each sample is generated twice from the
//     same seed and compared with its twin after every Combine).
//
// Use it in the tests of every monoid, built in or your own:
//
//	func TestLaws(t *testing.T) {
//		monoidtest.CheckLaws(t, monoid.Sum[int64]{},
//			func(r *rand.Rand) int64 { return r.Int64N(1000) - 500 },
//			func(a, b int64) bool { return a == b })
//	}
package monoidtest

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/pipestate/pipestate/monoid"
)

// Samples is how many random triples CheckLaws tries.
const Samples = 300

// maxReports bounds how many failures of one law CheckLaws reports.
const maxReports = 3

// CheckLaws reports through t.Errorf every violation of the monoid laws it finds on
// Samples random triples drawn with gen (a deterministic, logged seed), comparing
// values with eq. gen must be deterministic given r (CheckLaws calls it twice with
// equal seeds to detect arguments modified by Combine). It never calls t.Fatal, so it
// can be run on a testing.TB that records failures.
func CheckLaws[V any](t testing.TB, m monoid.Monoid[V], gen func(r *rand.Rand) V, eq func(a, b V) bool) {
	t.Helper()
	const seed = 20260101
	r := rand.New(rand.NewPCG(seed, uint64(len(m.Kind()))))
	commutative := monoid.IsCommutative(m)
	failures := map[string]int{}
	fail := func(law string, format string, args ...any) {
		t.Helper()
		failures[law]++
		if failures[law] <= maxReports {
			t.Errorf("%s monoid (%T): %s: %s", m.Kind(), m, law, fmt.Sprintf(format, args...))
		}
	}
	// twin draws a sample and an independent copy of it.
	twin := func() (V, V) {
		s1, s2 := r.Uint64(), r.Uint64()
		return gen(rand.New(rand.NewPCG(s1, s2))), gen(rand.New(rand.NewPCG(s1, s2)))
	}
	if e := m.Identity(); !eq(e, m.Identity()) {
		fail("identity", "Identity() is not equal to itself: %v", e)
	}
	for i := range Samples {
		a, a0 := twin()
		b, b0 := twin()
		c, c0 := twin()
		if !eq(a, a0) {
			fail("generator", "gen is not deterministic or eq is not reflexive: %v vs %v", a, a0)
			continue
		}
		if got := m.Combine(m.Identity(), a); !eq(got, a0) {
			fail("left identity", "sample %d: Combine(Identity, %v) = %v", i, a0, got)
		}
		if got := m.Combine(a, m.Identity()); !eq(got, a0) {
			fail("right identity", "sample %d: Combine(%v, Identity) = %v", i, a0, got)
		}
		left := m.Combine(m.Combine(a, b), c)
		right := m.Combine(a, m.Combine(b, c))
		if !eq(left, right) {
			fail("associativity", "sample %d: a=%v b=%v c=%v: (a.b).c = %v, a.(b.c) = %v", i, a0, b0, c0, left, right)
		}
		if commutative {
			if ab, ba := m.Combine(a, b), m.Combine(b, a); !eq(ab, ba) {
				fail("commutativity", "sample %d: a=%v b=%v: a.b = %v, b.a = %v", i, a0, b0, ab, ba)
			}
		}
		if !eq(a, a0) || !eq(b, b0) || !eq(c, c0) {
			fail("no mutation", "sample %d: Combine modified an argument", i)
		}
	}
	for law, n := range failures {
		if n > maxReports {
			t.Errorf("%s monoid: %s: %d failures in all", m.Kind(), law, n)
		}
	}
}
