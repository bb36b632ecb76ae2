package monoid

import (
	"cmp"
	"time"
)

// Timestamped is a value with the time it was observed, the element type of First
// and Last. The zero At means "no value": the zero Timestamped is the identity of
// both monoids, so real observations must carry a non-zero At.
type Timestamped[V cmp.Ordered] struct {
	At    time.Time
	Value V
}

// IsZero reports whether t is the empty value (its At is the zero time).
func (t Timestamped[V]) IsZero() bool { return t.At.IsZero() }

// compare orders by At (as instants: location and monotonic reading are ignored),
// then by Value, with the empty value before everything.
func (t Timestamped[V]) compare(u Timestamped[V]) int {
	switch tz, uz := t.IsZero(), u.IsZero(); {
	case tz && uz:
		return 0
	case tz:
		return -1
	case uz:
		return 1
	}
	if c := t.At.Compare(u.At); c != 0 {
		return c
	}
	return cmp.Compare(t.Value, u.Value)
}

// First keeps the earliest observation. Ties on At are broken by the smaller Value
// (cmp.Compare order), so Combine is a minimum over a total order: associative and
// commutative, and the result never depends on arrival order. Identity is the zero
// Timestamped; an operand with a zero At is empty and ignored (Combine of two empty
// values returns the zero Timestamped). The zero value is ready to use.
type First[V cmp.Ordered] struct{}

// Identity returns the zero Timestamped (no value).
func (First[V]) Identity() Timestamped[V] { return Timestamped[V]{} }

// Combine returns the earlier of a and b (the smaller Value on a tie).
func (First[V]) Combine(a, b Timestamped[V]) Timestamped[V] {
	switch {
	case a.IsZero() && b.IsZero():
		return Timestamped[V]{}
	case a.IsZero():
		return b
	case b.IsZero():
		return a
	case b.compare(a) < 0:
		return b
	default:
		return a
	}
}

// Kind returns KindFirst.
func (First[V]) Kind() Kind { return KindFirst }

// Commutative returns true.
func (First[V]) Commutative() bool { return true }

// Last keeps the latest observation. Ties on At are broken by the larger Value, so
// Combine is a maximum over a total order: associative and commutative. Identity is
// the zero Timestamped; an operand with a zero At is empty and ignored. The zero value
// is ready to use.
type Last[V cmp.Ordered] struct{}

// Identity returns the zero Timestamped (no value).
func (Last[V]) Identity() Timestamped[V] { return Timestamped[V]{} }

// Combine returns the later of a and b (the larger Value on a tie).
func (Last[V]) Combine(a, b Timestamped[V]) Timestamped[V] {
	switch {
	case a.IsZero() && b.IsZero():
		return Timestamped[V]{}
	case a.compare(b) < 0:
		return b
	default:
		return a
	}
}

// Kind returns KindLast.
func (Last[V]) Kind() Kind { return KindLast }

// Commutative returns true.
func (Last[V]) Commutative() bool { return true }
