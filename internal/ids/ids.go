// Package ids holds the random identifiers and the time-ordered key parts shared by
// pipestate's provider backends, so that each rule is written once.
package ids

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"
)

// Random returns 128 random bits in 32 lowercase hex digits: lock owner
// identities, lease tokens and call nonces.
func Random() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// TimeKeyLen is the length of every TimeKey.
const TimeKeyLen = 24

// TimeKey encodes t so that byte order is time order, to the nanosecond, for every
// time.Time: 16 hex digits of the Unix second with the sign bit flipped, then 8 of
// the nanosecond. Equal instants in different zones share a key.
func TimeKey(t time.Time) string {
	return fmt.Sprintf("%016x%08x", uint64(t.Unix())^(1<<63), t.Nanosecond())
}
