// Package bloom is a Bloom filter as a monoid.Monoid[[]byte] (set union by bitwise
// OR), hashing with github.com/bits-and-blooms/bloom/v3: store it in any
// state.Store[[]byte] (BytesStore) and merge deltas from many workers.
//
// # Encoding (version 1)
//
//	byte 0      magic 'B' (0x42)
//	byte 1      encoding version: 1 (0 marks a poisoned value, see Combine)
//	byte 2      k, the number of hash functions, 1..MaxK
//	bytes 3..6  m, the number of bits, big-endian uint32, 1..MaxBits
//	bytes 7..   ceil(m/64) 64-bit words of the bit set, each big-endian, word i
//	            holding bits 64i..64i+63 (the library's bitset layout); the bits
//	            past m in the last word are zero
//
// The encoding is canonical: equal filters have equal bytes. The empty byte slice
// (nil or length 0) is the empty filter and the monoid's identity.
//
// # Errors and untrusted bytes
//
// TryCombine and Contains return errors wrapping monoid.ErrIncompatible for bytes
// that do not decode, or (TryCombine) whose shape (m, k) differs from the monoid's.
// The length must be exactly what m says, so decoding allocates at most the input's
// size, and never panics (FuzzDecode). The library's own UnmarshalBinary is not used
// (it trusts the length prefix it reads). The total Combine cannot return an error:
// on failure it returns a poisoned value that every reader and TryCombine reject;
// stores call TryCombine, so they never store it.
//
// Example:
//
//	m, _ := bloom.NewWithEstimates(100_000, 0.01)
//	err := store.MergeUpdate(ctx, state.Key{Entity: "seen-urls"}, m.Delta(url), 0)
//	b, _, _ := store.Get(ctx, state.Key{Entity: "seen-urls"})
//	maybe, _ := bloom.Contains(b, url)
package bloom

import (
	"bytes"
	"encoding/binary"

	bbloom "github.com/bits-and-blooms/bloom/v3"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/monoid/sketch/internal/codec"
)

// Encoding constants and limits.
const (
	Magic   = 'B' // first byte of every encoded filter
	Version = 1   // encoding version written and accepted

	MaxK    = 64      // most hash functions
	MaxBits = 1 << 30 // most bits (a 128 MiB filter)
)

const prefixLen = codec.HeaderLen + 1 + 4

// EncodedLen is the length of the encoding of a filter of m bits.
func EncodedLen(m uint32) int { return prefixLen + 8*words(m) }

func words(m uint32) int { return int((uint64(m) + 63) / 64) }

// Monoid merges Bloom filters of one shape (m bits, k hash functions). It is
// commutative. The zero value is not usable; use New or NewWithEstimates.
type Monoid struct {
	m uint32
	k uint8
}

var (
	_ monoid.Monoid[[]byte]   = Monoid{}
	_ monoid.Fallible[[]byte] = Monoid{}
)

// New returns the monoid of filters of m bits and k hash functions. m outside
// 1..MaxBits or k outside 1..MaxK is an error wrapping monoid.ErrIncompatible.
func New(m uint, k uint) (Monoid, error) {
	if m < 1 || m > MaxBits || k < 1 || k > MaxK {
		return Monoid{}, codec.Errorf("bloom: shape m=%d k=%d outside m 1..%d, k 1..%d", m, k, MaxBits, MaxK)
	}
	return Monoid{m: uint32(m), k: uint8(k)}, nil
}

// NewWithEstimates returns the monoid of filters sized for n items at false-positive
// rate fp (bits-and-blooms' EstimateParameters). Sizes over the limits are errors.
func NewWithEstimates(n uint, fp float64) (Monoid, error) {
	if n < 1 || !(fp > 0 && fp < 1) {
		return Monoid{}, codec.Errorf("bloom: n=%d fp=%v: want n >= 1 and 0 < fp < 1", n, fp)
	}
	m, k := bbloom.EstimateParameters(n, fp)
	return New(m, k)
}

// Shape returns the number of bits and hash functions.
func (mo Monoid) Shape() (m uint, k uint) { return uint(mo.m), uint(mo.k) }

// Identity returns nil, the empty filter.
func (Monoid) Identity() []byte { return nil }

// Kind returns monoid.KindBloom.
func (Monoid) Kind() monoid.Kind { return monoid.KindBloom }

// Commutative returns true.
func (Monoid) Commutative() bool { return true }

// Combine is TryCombine without the error: on failure it returns a poisoned value
// that TryCombine and every reader reject. It never panics.
func (mo Monoid) Combine(a, b []byte) []byte {
	out, err := mo.TryCombine(a, b)
	if err != nil {
		return codec.Poison(Magic)
	}
	return out
}

// TryCombine returns the union of filters a and b as a new slice (the arguments are
// not modified). Both must be empty or valid filters of the monoid's shape;
// otherwise the error wraps monoid.ErrIncompatible.
func (mo Monoid) TryCombine(a, b []byte) ([]byte, error) {
	if mo.m == 0 {
		return nil, codec.Errorf("bloom: zero Monoid; use bloom.New")
	}
	if err := mo.check(a); err != nil {
		return nil, err
	}
	if err := mo.check(b); err != nil {
		return nil, err
	}
	switch {
	case len(a) == 0:
		return bytes.Clone(b), nil
	case len(b) == 0:
		return bytes.Clone(a), nil
	}
	out := bytes.Clone(a)
	for i := prefixLen; i < len(out); i++ {
		out[i] |= b[i]
	}
	return out, nil
}

// check validates b (empty is fine) and its shape against the monoid's.
func (mo Monoid) check(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	m, k, _, err := decode(b)
	if err != nil {
		return err
	}
	if m != mo.m || k != mo.k {
		return codec.Errorf("bloom: filter shape m=%d k=%d, want m=%d k=%d", m, k, mo.m, mo.k)
	}
	return nil
}

// Delta returns a filter holding items (nil for no items), ready to merge.
func (mo Monoid) Delta(items ...string) []byte {
	if len(items) == 0 || mo.m == 0 {
		return nil
	}
	f := bbloom.New(uint(mo.m), uint(mo.k))
	for _, it := range items {
		f.AddString(it)
	}
	ws := f.BitSet().Words()
	out := make([]byte, prefixLen, EncodedLen(mo.m))
	out[0], out[1], out[2] = Magic, Version, mo.k
	binary.BigEndian.PutUint32(out[3:], mo.m)
	for i := range words(mo.m) {
		var w uint64
		if i < len(ws) {
			w = ws[i]
		}
		out = binary.BigEndian.AppendUint64(out, w)
	}
	return out
}

// Contains reports whether item may be in filter b (false positives are possible,
// false negatives are not); the empty filter contains nothing. Bad bytes return an
// error wrapping monoid.ErrIncompatible.
func Contains(b []byte, item string) (bool, error) {
	if len(b) == 0 {
		return false, nil
	}
	m, k, payload, err := decode(b)
	if err != nil {
		return false, err
	}
	// The library's locations (Test does the same), read straight from the bytes.
	for _, loc := range bbloom.Locations([]byte(item), uint(k)) {
		bit := loc % uint64(m)
		if binary.BigEndian.Uint64(payload[8*(bit/64):])&(1<<(bit%64)) == 0 {
			return false, nil
		}
	}
	return true, nil
}

// decode checks a non-empty encoding and returns its shape and bit words.
func decode(b []byte) (m uint32, k uint8, payload []byte, err error) {
	rest, err := codec.Payload(b, "bloom", Magic, Version)
	if err != nil {
		return 0, 0, nil, err
	}
	if len(rest) < 5 {
		return 0, 0, nil, codec.Errorf("bloom: %d bytes, shorter than the shape", len(b))
	}
	k, m = rest[0], binary.BigEndian.Uint32(rest[1:5])
	switch {
	case k < 1 || k > MaxK:
		return 0, 0, nil, codec.Errorf("bloom: k=%d outside 1..%d", k, MaxK)
	case m < 1 || m > MaxBits:
		return 0, 0, nil, codec.Errorf("bloom: m=%d outside 1..%d", m, MaxBits)
	case len(b) != EncodedLen(m):
		return 0, 0, nil, codec.Errorf("bloom: %d bytes, want %d for m=%d", len(b), EncodedLen(m), m)
	}
	payload = rest[5:]
	if tail := m % 64; tail != 0 {
		last := binary.BigEndian.Uint64(payload[len(payload)-8:])
		if last>>tail != 0 {
			return 0, 0, nil, codec.Errorf("bloom: bits set past m=%d", m)
		}
	}
	return m, k, payload, nil
}
