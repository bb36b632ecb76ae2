package monoid

// Set is the union of sets of comparable elements, held as map[T]struct{}.
// Identity is an empty map; Combine always returns a new map and never modifies or
// returns its arguments, so callers may change a result without touching the inputs.
// A nil map is a valid empty set. The zero value is ready to use.
type Set[T comparable] struct{}

// Identity returns a new empty set.
func (Set[T]) Identity() map[T]struct{} { return map[T]struct{}{} }

// Combine returns a new set holding the elements of a and of b.
func (Set[T]) Combine(a, b map[T]struct{}) map[T]struct{} {
	out := make(map[T]struct{}, len(a)+len(b))
	for x := range a {
		out[x] = struct{}{}
	}
	for x := range b {
		out[x] = struct{}{}
	}
	return out
}

// Kind returns KindSet.
func (Set[T]) Kind() Kind { return KindSet }

// Commutative returns true.
func (Set[T]) Commutative() bool { return true }

// SetOf returns a new set holding items: a delta for Set.
func SetOf[T comparable](items ...T) map[T]struct{} {
	out := make(map[T]struct{}, len(items))
	for _, x := range items {
		out[x] = struct{}{}
	}
	return out
}
