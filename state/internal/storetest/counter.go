// Package storetest holds test support shared by the state backends' own tests: a
// fallible byte monoid, the crash-window test of exactly-once merges, the checks
// of write-method coverage and of which constructor takes which option, and a meter
// provider and logger that tests read (Signals). (The
// conformance suite every backend passes is state/statetest.)
package storetest

import (
	"encoding/binary"
	"fmt"

	"github.com/pipestate/pipestate/monoid"
)

// Counter is a fallible Monoid[[]byte]: an 8-byte big-endian int64 sum (nil is the
// identity); any other length is monoid.ErrIncompatible. It lets BytesStore tests
// check exact totals.
type Counter struct{}

// Of encodes n.
func (Counter) Of(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }

// Decode decodes a value; nil is 0.
func (Counter) Decode(b []byte) (int64, error) {
	switch len(b) {
	case 0:
		return 0, nil
	case 8:
		return int64(binary.BigEndian.Uint64(b)), nil
	}
	return 0, fmt.Errorf("%w: %d bytes", monoid.ErrIncompatible, len(b))
}

// Identity implements monoid.Monoid.
func (Counter) Identity() []byte { return nil }

// Combine implements monoid.Monoid; it returns nil for values that do not decode
// (stores call TryCombine).
func (c Counter) Combine(a, b []byte) []byte {
	v, _ := c.TryCombine(a, b)
	return v
}

// TryCombine implements monoid.Fallible.
func (c Counter) TryCombine(a, b []byte) ([]byte, error) {
	x, err := c.Decode(a)
	if err != nil {
		return nil, err
	}
	y, err := c.Decode(b)
	if err != nil {
		return nil, err
	}
	return c.Of(x + y), nil
}

// Kind implements monoid.Monoid.
func (Counter) Kind() monoid.Kind { return monoid.KindCustom }

// Commutative implements monoid.Commutative.
func (Counter) Commutative() bool { return true }
