// Package monoid defines Monoid[V] — an associative Combine with an Identity — and
// the monoids pipestate ships: Sum, Count, Min, Max (generic over integer and float
// types), First and Last over Timestamped values, and Set (union). Byte-encoded
// sketches (HyperLogLog, top-k, Bloom filters) live in monoid/sketch/...; law checks
// for any monoid live in monoid/monoidtest.
//
// State stores (package state) merge deltas into stored values with a monoid, so a
// value can be built from many workers' deltas in any grouping: Combine must be
// associative, and must not modify its arguments. Sharding and out-of-order
// coalescing also need commutativity, which a monoid declares by implementing
// Commutative; every monoid in this package is commutative.
//
// Decisions:
//   - Identities of Min and Max are the type's extreme values (±Inf for floats, 0 as
//     Max's identity for unsigned types), so Combine(Identity(), v) == v for all v.
//   - Integer Sum and Count wrap on overflow like Go's +; Count is int64.
//   - Float Sum is commutative but associative only up to rounding, like IEEE 754.
//   - First/Last break ties on At by Value, so they are commutative; the zero
//     Timestamped (zero At) is the "no value" identity.
//   - Set values are map[T]struct{}; Combine always returns a fresh map.
//   - Monoids whose values can fail to combine (sketches from untrusted bytes)
//     implement Fallible; their total Combine never panics (see each package).
//
// Example:
//
//	var views monoid.Sum[int64]
//	total := views.Combine(views.Identity(), 3) // 3
//	var latest monoid.Last[string]
//	v := latest.Combine(monoid.Timestamped[string]{At: t1, Value: "a"},
//		monoid.Timestamped[string]{At: t2, Value: "b"}) // the later one
package monoid
