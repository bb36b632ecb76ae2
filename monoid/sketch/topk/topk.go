// Package topk is a mergeable heavy-hitters summary (Misra-Gries, with the merge of
// Agarwal et al., "Mergeable Summaries", 2012) as a monoid.Monoid[[]byte]: store it
// in any state.Store[[]byte] (BytesStore), merge deltas from many workers, and read
// the most frequent items with Top.
//
// # Guarantees
//
// A summary of capacity k keeps at most k counters. Combine adds the counters of
// both sides and, when more than k remain, subtracts the (k+1)-th largest count from
// every counter and drops those that reach zero. With N the total weight merged
// (kept exactly in the summary) and S the sum of the kept counters, every item's
// true count lies in [Count, Count+Error] where Error = (N-S)/(k+1) (rounded down),
// and an item that is not listed occurred at most Error times — whatever the order
// and grouping of merges. Error is 0 while at most k distinct items were seen.
//
// Combine is commutative, and associative exactly as long as no reduction happens
// (at most k distinct items in the operands); beyond that, different groupings give
// different (equally bounded) summaries. monoidtest.CheckLaws passes in the exact
// regime; TestErrorBound checks the bound on random merge trees.
//
// # Encoding (version 1)
//
//	byte 0     magic 'T' (0x54)
//	byte 1     encoding version: 1 (0 marks a poisoned value, see Combine)
//	uvarint    capacity k, 1..MaxCapacity
//	uvarint    total weight N
//	uvarint    n, the number of counters, 0..k
//	n times:   uvarint length, the item's bytes (at most MaxItemLen), uvarint count >= 1
//
// Counters are sorted by item bytes, strictly increasing, and varints are minimal,
// so the encoding is canonical; the counts sum to at most N; nothing follows the
// last counter. The empty byte slice is the empty summary and the monoid's identity.
//
// # Errors and untrusted bytes
//
// TryCombine and Top return errors wrapping monoid.ErrIncompatible for bytes that
// do not decode, for (TryCombine) another capacity than the monoid's, and for counts
// that would overflow uint64. Every length is checked against the remaining input
// and the limits before anything is allocated, and decoding never panics
// (FuzzDecode). The total Combine returns a poisoned value on failure, which every
// reader and TryCombine reject; stores call TryCombine, so they never store it.
//
// Example:
//
//	m, _ := topk.New(100)
//	delta, _ := m.Delta("/home", "/home", "/about")
//	err := store.MergeUpdate(ctx, state.Key{Entity: "top-pages"}, delta, 0)
//	b, _, _ := store.Get(ctx, state.Key{Entity: "top-pages"})
//	items, _ := topk.Top(b) // [{/home 2 0} {/about 1 0}]
package topk

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"math/bits"
	"slices"
	"strings"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/monoid/sketch/internal/codec"
)

// Encoding constants and limits.
const (
	Magic   = 'T' // first byte of every encoded summary
	Version = 1   // encoding version written and accepted

	// MaxCapacity bounds k, so a summary stays under about MaxCapacity*(MaxItemLen+12) bytes.
	MaxCapacity = 4096
	// MaxItemLen is the longest item, in bytes.
	MaxItemLen = 1024
)

// Item is one counter of a summary: the item's true count lies in
// [Count, Count+Error]; Error is the same for every item of a summary.
type Item struct {
	Value string
	Count uint64
	Error uint64
}

// Monoid merges summaries of one capacity. It is commutative. The zero value is
// not usable; use New.
type Monoid struct{ k int }

var (
	_ monoid.Monoid[[]byte]   = Monoid{}
	_ monoid.Fallible[[]byte] = Monoid{}
)

// New returns the monoid of summaries keeping at most capacity counters. A capacity
// outside 1..MaxCapacity is an error wrapping monoid.ErrIncompatible.
func New(capacity int) (Monoid, error) {
	if capacity < 1 || capacity > MaxCapacity {
		return Monoid{}, codec.Errorf("topk: capacity %d outside 1..%d", capacity, MaxCapacity)
	}
	return Monoid{k: capacity}, nil
}

// Capacity returns the number of counters a summary keeps.
func (m Monoid) Capacity() int { return m.k }

// Identity returns nil, the empty summary.
func (Monoid) Identity() []byte { return nil }

// Kind returns monoid.KindTopK.
func (Monoid) Kind() monoid.Kind { return monoid.KindTopK }

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

// TryCombine merges summaries a and b into a new slice (the arguments are not
// modified). Both must be empty or valid summaries of the monoid's capacity;
// otherwise the error wraps monoid.ErrIncompatible.
func (m Monoid) TryCombine(a, b []byte) ([]byte, error) {
	if m.k == 0 {
		return nil, codec.Errorf("topk: zero Monoid; use topk.New")
	}
	sa, err := m.decodeShape(a)
	if err != nil {
		return nil, err
	}
	sb, err := m.decodeShape(b)
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
	total, carry := bits.Add64(sa.total, sb.total, 0)
	if carry != 0 {
		return nil, codec.Errorf("topk: total weight overflows uint64")
	}
	counts := make(map[string]uint64, len(sa.counts)+len(sb.counts))
	for _, s := range []*summary{sa, sb} {
		for _, c := range s.counts {
			sum, carry := bits.Add64(counts[c.Value], c.Count, 0)
			if carry != 0 {
				return nil, codec.Errorf("topk: count of %q overflows uint64", c.Value)
			}
			counts[c.Value] = sum
		}
	}
	return encode(m.k, total, reduce(counts, m.k)), nil
}

// Delta returns a summary of items (nil for no items), ready to merge. An item
// longer than MaxItemLen is an error wrapping monoid.ErrIncompatible.
func (m Monoid) Delta(items ...string) ([]byte, error) {
	if m.k == 0 {
		return nil, codec.Errorf("topk: zero Monoid; use topk.New")
	}
	if len(items) == 0 {
		return nil, nil
	}
	counts := map[string]uint64{}
	for _, it := range items {
		if len(it) > MaxItemLen {
			return nil, codec.Errorf("topk: item of %d bytes, more than %d", len(it), MaxItemLen)
		}
		counts[it]++
	}
	return encode(m.k, uint64(len(items)), reduce(counts, m.k)), nil
}

// Top returns the counters of summary b, most frequent first (ties by Value), each
// with the summary's Error bound; nil for the empty summary. Bad bytes return an
// error wrapping monoid.ErrIncompatible.
func Top(b []byte) ([]Item, error) {
	s, err := decode(b)
	if err != nil || s == nil {
		return nil, err
	}
	var kept uint64
	for _, c := range s.counts {
		kept += c.Count // cannot overflow: decode checked the sum against total
	}
	errBound := (s.total - kept) / (uint64(s.k) + 1)
	items := make([]Item, len(s.counts))
	for i, c := range s.counts {
		items[i] = Item{Value: c.Value, Count: c.Count, Error: errBound}
	}
	slices.SortFunc(items, func(x, y Item) int {
		if c := cmp.Compare(y.Count, x.Count); c != 0 {
			return c
		}
		return strings.Compare(x.Value, y.Value)
	})
	return items, nil
}

// counter is one decoded counter.
type counter struct {
	Value string
	Count uint64
}

// summary is a decoded summary; counts are sorted by Value.
type summary struct {
	k      int
	total  uint64
	counts []counter
}

// reduce applies the Misra-Gries reduction to at most k counters and returns them
// sorted by value.
func reduce(counts map[string]uint64, k int) []counter {
	out := make([]counter, 0, len(counts))
	for v, c := range counts {
		out = append(out, counter{v, c})
	}
	if len(out) > k {
		cs := make([]uint64, len(out))
		for i, c := range out {
			cs[i] = c.Count
		}
		slices.Sort(cs)
		sub := cs[len(cs)-1-k] // the (k+1)-th largest
		kept := out[:0]
		for _, c := range out {
			if c.Count > sub {
				kept = append(kept, counter{c.Value, c.Count - sub})
			}
		}
		out = kept
	}
	slices.SortFunc(out, func(x, y counter) int { return strings.Compare(x.Value, y.Value) })
	return out
}

// encode writes a summary; counters must be sorted by value.
func encode(k int, total uint64, counts []counter) []byte {
	size := 2 + 3*binary.MaxVarintLen64
	for _, c := range counts {
		size += len(c.Value) + 2*binary.MaxVarintLen64
	}
	out := make([]byte, 0, size)
	out = append(out, Magic, Version)
	out = binary.AppendUvarint(out, uint64(k))
	out = binary.AppendUvarint(out, total)
	out = binary.AppendUvarint(out, uint64(len(counts)))
	for _, c := range counts {
		out = binary.AppendUvarint(out, uint64(len(c.Value)))
		out = append(out, c.Value...)
		out = binary.AppendUvarint(out, c.Count)
	}
	return out
}

// decodeShape decodes b (nil for empty) and checks its capacity against m's.
func (m Monoid) decodeShape(b []byte) (*summary, error) {
	s, err := decode(b)
	if err != nil || s == nil {
		return nil, err
	}
	if s.k != m.k {
		return nil, codec.Errorf("topk: capacity %d, want %d", s.k, m.k)
	}
	return s, nil
}

// reader reads minimal uvarints from untrusted bytes.
type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = codec.Errorf("topk: bad varint for %s", what)
		return 0
	}
	var buf [binary.MaxVarintLen64]byte
	if binary.PutUvarint(buf[:], v) != n {
		r.err = codec.Errorf("topk: non-minimal varint for %s", what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

// decode decodes a summary, or returns nil for the empty one.
func decode(b []byte) (*summary, error) {
	if len(b) == 0 {
		return nil, nil
	}
	rest, err := codec.Payload(b, "topk", Magic, Version)
	if err != nil {
		return nil, err
	}
	r := &reader{b: rest}
	k := r.uvarint("capacity")
	total := r.uvarint("total")
	n := r.uvarint("counter count")
	switch {
	case r.err != nil:
		return nil, r.err
	case k < 1 || k > MaxCapacity:
		return nil, codec.Errorf("topk: capacity %d outside 1..%d", k, MaxCapacity)
	case n > k:
		return nil, codec.Errorf("topk: %d counters, more than the capacity %d", n, k)
	case n > uint64(len(r.b))/2: // every counter takes at least 2 bytes
		return nil, codec.Errorf("topk: %d counters in %d bytes", n, len(r.b))
	}
	s := &summary{k: int(k), total: total, counts: make([]counter, 0, n)}
	var sum uint64
	for i := range n {
		l := r.uvarint("item length")
		if r.err != nil {
			return nil, r.err
		}
		if l > MaxItemLen || l > uint64(len(r.b)) {
			return nil, codec.Errorf("topk: counter %d: item of %d bytes (limit %d, %d left)", i, l, MaxItemLen, len(r.b))
		}
		v := string(r.b[:l])
		r.b = r.b[l:]
		c := r.uvarint("count")
		if r.err != nil {
			return nil, r.err
		}
		if c == 0 {
			return nil, codec.Errorf("topk: counter %d has count 0", i)
		}
		if len(s.counts) > 0 && v <= s.counts[len(s.counts)-1].Value {
			return nil, codec.Errorf("topk: counter %d out of order", i)
		}
		var carry uint64
		if sum, carry = bits.Add64(sum, c, 0); carry != 0 || sum > total {
			return nil, codec.Errorf("topk: counts sum past the total %d", total)
		}
		s.counts = append(s.counts, counter{v, c})
	}
	if len(r.b) != 0 {
		return nil, codec.Errorf("topk: %d bytes after the last counter", len(r.b))
	}
	return s, nil
}
