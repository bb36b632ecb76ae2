// Package codec holds what the sketch encodings share: the two-byte header (magic,
// version), the poison value the total Combine returns on failure, and errors that
// wrap monoid.ErrIncompatible.
package codec

import (
	"fmt"

	"github.com/pipestate/pipestate/monoid"
)

// HeaderLen is the length of the magic and version bytes.
const HeaderLen = 2

// VersionPoisoned marks a value produced by a failed total Combine; no reader
// accepts it, and combining it with anything fails (so it is absorbing).
const VersionPoisoned = 0

// Errorf returns an error wrapping monoid.ErrIncompatible.
func Errorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", monoid.ErrIncompatible, fmt.Sprintf(format, args...))
}

// Poison returns a new poisoned value of the sketch with this magic.
func Poison(magic byte) []byte { return []byte{magic, VersionPoisoned} }

// Payload checks b's header and returns the bytes after it. b must not be empty.
func Payload(b []byte, what string, magic, version byte) ([]byte, error) {
	switch {
	case len(b) < HeaderLen:
		return nil, Errorf("%s: %d bytes, shorter than the header", what, len(b))
	case b[0] != magic:
		return nil, Errorf("%s: magic byte %#x, want %#x", what, b[0], magic)
	case b[1] == VersionPoisoned:
		return nil, Errorf("%s: poisoned value (an earlier Combine failed)", what)
	case b[1] != version:
		return nil, Errorf("%s: encoding version %d, want %d", what, b[1], version)
	}
	return b[HeaderLen:], nil
}
