package monoid

import "errors"

// Kind names a monoid's algebra, so stores and tools can tell monoids apart.
type Kind string

// Kinds of the monoids pipestate ships; KindCustom is for everything else.
const (
	KindSum    Kind = "sum"
	KindCount  Kind = "count"
	KindMin    Kind = "min"
	KindMax    Kind = "max"
	KindFirst  Kind = "first"
	KindLast   Kind = "last"
	KindSet    Kind = "set"
	KindHLL    Kind = "hll"
	KindTopK   Kind = "topk"
	KindBloom  Kind = "bloom"
	KindMap    Kind = "map"
	KindCustom Kind = "custom"
)

// Monoid is an associative Combine with an Identity: Combine(Identity(), v) == v,
// Combine(v, Identity()) == v and Combine(Combine(a, b), c) == Combine(a, Combine(b, c)).
// Combine must not modify its arguments.
type Monoid[V any] interface {
	Identity() V
	Combine(a, b V) V
	Kind() Kind
}

// Commutative is implemented by monoids that declare Combine(a, b) == Combine(b, a).
// Sharding and out-of-order coalescing require it.
type Commutative interface {
	Commutative() bool
}

// IsCommutative reports whether m declares itself commutative.
func IsCommutative(m any) bool {
	c, ok := m.(Commutative)
	return ok && c.Commutative()
}

// ErrIncompatible is wrapped by TryCombine errors: the values cannot be combined
// (for example sketches of different shapes, or bytes that do not decode).
var ErrIncompatible = errors.New("monoid: incompatible values")

// Fallible is implemented by monoids whose values can fail to combine (byte-encoded
// sketches). Stores call TryCombine when it is there and return its error, wrapping
// ErrIncompatible, instead of storing a bad value.
type Fallible[V any] interface {
	TryCombine(a, b V) (V, error)
}
