package monoid

import "math"

// Integer is the set of Go integer types (and types defined on them).
type Integer interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 |
		~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr
}

// Float is the set of Go floating-point types (and types defined on them).
type Float interface {
	~float32 | ~float64
}

// Number is every integer and floating-point type.
type Number interface {
	Integer | Float
}

// Sum adds numbers. Identity is 0. Integer sums wrap on overflow exactly as Go's +
// does (so the laws hold for every input); float sums are commutative but only
// approximately associative, as IEEE 754 addition is (NaN and ±Inf propagate).
// The zero value is ready to use.
type Sum[V Number] struct{}

// Identity returns 0.
func (Sum[V]) Identity() V { return 0 }

// Combine returns a + b.
func (Sum[V]) Combine(a, b V) V { return a + b }

// Kind returns KindSum.
func (Sum[V]) Kind() Kind { return KindSum }

// Commutative returns true.
func (Sum[V]) Commutative() bool { return true }

// Count counts events as an int64: a delta is a number of events (usually 1) and
// Combine adds them. It is Sum[int64] under its own Kind, so stores and tools can tell
// "how many" from "how much"; int64 (not uint64) because every backend stores signed
// 64-bit integers natively (Redis INCRBY, DynamoDB ADD) and a negative delta can undo a
// count. Overflow wraps as Go's + does. The zero value is ready to use.
type Count struct{}

// Identity returns 0.
func (Count) Identity() int64 { return 0 }

// Combine returns a + b.
func (Count) Combine(a, b int64) int64 { return a + b }

// Kind returns KindCount.
func (Count) Kind() Kind { return KindCount }

// Commutative returns true.
func (Count) Commutative() bool { return true }

// Min keeps the smallest value. Identity is the type's largest value: +Inf for
// floats, the maximum for integers, so Combine(Identity(), v) == v for every v. For
// floats Combine is Go's built-in min: a NaN operand gives NaN and min(-0, +0) is
// -0, so the laws hold for every input. The zero value is ready to use.
type Min[V Number] struct{}

// Identity returns the largest value of V (+Inf for floats).
func (Min[V]) Identity() V { return maxOf[V]() }

// Combine returns min(a, b).
func (Min[V]) Combine(a, b V) V { return min(a, b) }

// Kind returns KindMin.
func (Min[V]) Kind() Kind { return KindMin }

// Commutative returns true.
func (Min[V]) Commutative() bool { return true }

// Max keeps the largest value. Identity is the type's smallest value: -Inf for
// floats, the minimum for integers (0 for unsigned types). For floats Combine is Go's
// built-in max (NaN propagates; max(-0, +0) is +0). The zero value is ready to use.
type Max[V Number] struct{}

// Identity returns the smallest value of V (-Inf for floats).
func (Max[V]) Identity() V { return minOf[V]() }

// Combine returns max(a, b).
func (Max[V]) Combine(a, b V) V { return max(a, b) }

// Kind returns KindMax.
func (Max[V]) Kind() Kind { return KindMax }

// Commutative returns true.
func (Max[V]) Commutative() bool { return true }

// isFloat reports whether V is a floating-point type (1/2 is not truncated to 0).
func isFloat[V Number]() bool {
	var one V = 1
	return one/2 != 0
}

// isSigned reports whether V can hold negative values.
func isSigned[V Number]() bool {
	var zero V
	return zero-1 < zero
}

// maxOf returns the largest value of V: +Inf for floats.
func maxOf[V Number]() V {
	switch {
	case isFloat[V]():
		return V(math.Inf(1))
	case !isSigned[V]():
		var zero V
		return zero - 1 // wraps to all ones
	default:
		// Double until the next doubling wraps negative: x = 2^(bits-2); the
		// maximum is 2x-1 = x + (x-1).
		var x V = 1
		for x*2 > 0 {
			x *= 2
		}
		return x + (x - 1)
	}
}

// minOf returns the smallest value of V: -Inf for floats, 0 for unsigned integers.
func minOf[V Number]() V {
	switch {
	case isFloat[V]():
		return V(math.Inf(-1))
	case !isSigned[V]():
		return 0
	default:
		return -maxOf[V]() - 1
	}
}
