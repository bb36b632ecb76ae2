// Package hll is a HyperLogLog distinct-count sketch as a monoid.Monoid[[]byte],
// built on github.com/axiomhq/hyperloglog: store it in any state.Store[[]byte]
// (BytesStore) and merge deltas from many workers.
//
// # Encoding (version 1)
//
//	byte 0     magic 'H' (0x48)
//	byte 1     encoding version: 1 (0 marks a poisoned value, see Combine)
//	byte 2     precision p, MinPrecision..MaxPrecision (2^p registers)
//	bytes 3..  the axiomhq/hyperloglog MarshalBinary encoding (its own version 2,
//	           MetroHash64 seed 1337) of a sketch of precision p
//
// The empty byte slice (nil or length 0) is the empty sketch and the monoid's
// identity. Encodings are not canonical (sparse and dense forms of the same
// registers differ); compare sketches with Equal, not bytes.Equal.
//
// # Errors and untrusted bytes
//
// TryCombine, Estimate and Equal decode their inputs and return errors wrapping
// monoid.ErrIncompatible for bytes that do not decode, for another precision than
// the monoid's, and for inputs longer than MaxEncodedLen(p) (checked before anything
// is allocated). Decoding never panics: the header, precision and length are
// checked here, and the library validates every length prefix before allocating
// (both are fuzzed, see FuzzDecode). The total Combine cannot return an error:
// on failure it returns a poisoned value (magic, version 0) that every reader and
// TryCombine reject, and that stays poisoned when combined further; stores call
// TryCombine, so they never store it.
//
// Example:
//
//	m, _ := hll.New(hll.DefaultPrecision)
//	delta := m.Delta("alice", "bob")
//	err := store.MergeUpdate(ctx, state.Key{Entity: "visitors"}, delta, 0)
//	b, _, _ := store.Get(ctx, state.Key{Entity: "visitors"})
//	n, _ := hll.Estimate(b) // ~2
package hll

import (
	"bytes"
	"math"

	"github.com/axiomhq/hyperloglog"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/monoid/sketch/internal/codec"
)

// Encoding constants.
const (
	Magic   = 'H' // first byte of every encoded sketch
	Version = 1   // encoding version written and accepted

	// DefaultPrecision is 2^14 registers: about 0.8% standard error, 16 KiB dense.
	DefaultPrecision = 14
	// MinPrecision and MaxPrecision bound the precision (the library's range).
	MinPrecision = 4
	MaxPrecision = 18
)

const prefixLen = codec.HeaderLen + 1

// MaxEncodedLen is the longest encoding accepted for precision p: a sparse form
// never holds more than 2^p tmp-set keys (4 bytes each) plus 2^p list entries (at
// most 5 bytes each) before the library converts it to the dense form of 2^p bytes.
func MaxEncodedLen(p uint8) int { return prefixLen + 8 + 12 + 9<<p }

// Monoid merges HyperLogLog sketches of one precision. It is commutative. The zero
// value is not usable; use New.
type Monoid struct{ p uint8 }

var (
	_ monoid.Monoid[[]byte]   = Monoid{}
	_ monoid.Fallible[[]byte] = Monoid{}
)

// New returns the monoid of sketches with 2^precision registers. A precision outside
// MinPrecision..MaxPrecision is an error wrapping monoid.ErrIncompatible.
func New(precision uint8) (Monoid, error) {
	if precision < MinPrecision || precision > MaxPrecision {
		return Monoid{}, codec.Errorf("hll: precision %d outside %d..%d", precision, MinPrecision, MaxPrecision)
	}
	return Monoid{p: precision}, nil
}

// Precision returns the monoid's precision.
func (m Monoid) Precision() uint8 { return m.p }

// StandardError returns the relative standard error of an estimate from a dense
// sketch, 1.04/sqrt(2^precision): about 68% of estimates fall within one
// standard error of the true count, 99.7% within three.
func (m Monoid) StandardError() float64 { return 1.04 / math.Sqrt(float64(uint64(1)<<m.p)) }

// Identity returns nil, the empty sketch.
func (Monoid) Identity() []byte { return nil }

// Kind returns monoid.KindHLL.
func (Monoid) Kind() monoid.Kind { return monoid.KindHLL }

// Commutative returns true.
func (Monoid) Commutative() bool { return true }

// Combine is TryCombine without the error: on failure it returns a poisoned value
// that TryCombine and every reader reject. It never panics.
func (m Monoid) Combine(a, b []byte) []byte {
	out, err := m.TryCombine(a, b)
	if err != nil {
		return codec.Poison(Magic)
	}
	return out
}

// TryCombine returns the union of sketches a and b as a new slice (the arguments are
// not modified). Both must be empty or valid sketches of the monoid's precision;
// otherwise the error wraps monoid.ErrIncompatible.
func (m Monoid) TryCombine(a, b []byte) ([]byte, error) {
	if m.p == 0 {
		return nil, codec.Errorf("hll: zero Monoid; use hll.New")
	}
	sa, err := decode(a, m.p)
	if err != nil {
		return nil, err
	}
	sb, err := decode(b, m.p)
	if err != nil {
		return nil, err
	}
	switch {
	case sa == nil && sb == nil:
		return nil, nil
	case sa == nil:
		return bytes.Clone(b), nil
	case sb == nil:
		return bytes.Clone(a), nil
	}
	if err := sa.Merge(sb); err != nil {
		return nil, codec.Errorf("hll: %v", err)
	}
	return encode(sa, m.p)
}

// Delta returns a sketch of items (nil for no items), ready to merge.
func (m Monoid) Delta(items ...string) []byte {
	if len(items) == 0 || m.p == 0 {
		return nil
	}
	sk, _ := hyperloglog.NewSketch(m.p, true) // m.p was checked by New
	for _, it := range items {
		sk.Insert([]byte(it))
	}
	out, err := encode(sk, m.p)
	if err != nil { // unreachable: the precision is valid
		return codec.Poison(Magic)
	}
	return out
}

// Estimate returns the estimated number of distinct items in sketch b (0 for the
// empty sketch), of any precision. Bad bytes return an error wrapping
// monoid.ErrIncompatible.
func Estimate(b []byte) (uint64, error) {
	sk, err := decode(b, 0)
	if err != nil || sk == nil {
		return 0, err
	}
	return sk.Estimate(), nil
}

// Equal reports whether a and b hold the same registers (the same distinct items,
// up to hash collisions), whatever their sparse or dense form. Bad bytes return an
// error wrapping monoid.ErrIncompatible.
func Equal(a, b []byte) (bool, error) {
	ca, err := canonical(a)
	if err != nil {
		return false, err
	}
	cb, err := canonical(b)
	if err != nil {
		return false, err
	}
	return bytes.Equal(ca, cb), nil
}

// canonical returns the dense library encoding of b (nil for empty).
func canonical(b []byte) ([]byte, error) {
	sk, err := decode(b, 0)
	if err != nil || sk == nil {
		return nil, err
	}
	dense, _ := hyperloglog.NewSketch(b[codec.HeaderLen], false) // checked by decode
	if err := dense.Merge(sk); err != nil {
		return nil, codec.Errorf("hll: %v", err)
	}
	return dense.MarshalBinary()
}

// decode returns the sketch in b, or nil for the empty sketch. want is the
// required precision, or 0 for any.
func decode(b []byte, want uint8) (*hyperloglog.Sketch, error) {
	if len(b) == 0 {
		return nil, nil
	}
	payload, err := codec.Payload(b, "hll", Magic, Version)
	if err != nil {
		return nil, err
	}
	if len(payload) < 1 {
		return nil, codec.Errorf("hll: no precision byte")
	}
	p := payload[0]
	switch {
	case p < MinPrecision || p > MaxPrecision:
		return nil, codec.Errorf("hll: precision %d outside %d..%d", p, MinPrecision, MaxPrecision)
	case want != 0 && p != want:
		return nil, codec.Errorf("hll: precision %d, want %d", p, want)
	case len(b) > MaxEncodedLen(p):
		return nil, codec.Errorf("hll: %d bytes, more than %d for precision %d", len(b), MaxEncodedLen(p), p)
	case len(payload) >= 3 && payload[2] != p:
		// The library's own header is version, precision, ...
		return nil, codec.Errorf("hll: header precision %d, payload precision %d", p, payload[2])
	}
	var sk hyperloglog.Sketch
	if err := sk.UnmarshalBinary(payload[1:]); err != nil {
		return nil, codec.Errorf("hll: %v", err)
	}
	return &sk, nil
}

// encode returns the encoding of sk.
func encode(sk *hyperloglog.Sketch, p uint8) ([]byte, error) {
	out := []byte{Magic, Version, p}
	out, err := sk.AppendBinary(out)
	if err != nil {
		return nil, codec.Errorf("hll: %v", err)
	}
	return out, nil
}
