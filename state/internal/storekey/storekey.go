// Package storekey names what the state backends put in their keys beside the
// caller's key: the kind of each store, so that stores of different kinds sharing a
// key prefix (Redis) or a table (DynamoDB) never share data, and the per-call tokens
// by which a write recognises itself when the client library retried it after a lost
// reply.
package storekey

import (
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/pipestate/pipestate/monoid"
)

// Kinds of the numeric stores.
const (
	Int64Sum   = "isum"
	Float64Sum = "fsum"
	Int64Max   = "imax"
)

// kindEscaper escapes every character a backend uses as a delimiter or a Redis
// Cluster hash tag (and '%' itself), so the escaped kind is injective and never
// ends a key segment.
var kindEscaper = strings.NewReplacer("%", "%25", ":", "%3A", "#", "%23", "{", "%7B", "}", "%7D", " ", "%20")

// Bytes is the kind of a BytesStore merging with a monoid of kind k: "bytes." and
// the escaped k, so that, say, an HLL store and a TopK store never share values.
// It contains no ':', '#', '{', '}' or space.
func Bytes(k monoid.Kind) string {
	return "bytes." + kindEscaper.Replace(string(k))
}

// Token returns a fresh random 128-bit token (without spaces): a write carries it so
// that a retry of the same write recognises what the first attempt stored. Tokens
// are never reused.
func Token() string {
	var b [2*13 + 1]byte // two base-36 uint64s of at most 13 digits and the '.'
	t := strconv.AppendUint(b[:0], rand.Uint64(), 36)
	t = append(t, '.')
	return string(strconv.AppendUint(t, rand.Uint64(), 36))
}

// RecentWrites is how many writes a BytesStore version remembers: a retried write
// recognises itself if fewer than RecentWrites other writes landed on the key between
// its first attempt and the retry (the retries of one client library call follow
// within milliseconds).
const RecentWrites = 16

// PushToken returns the version a write with token tok stores over version ver: tok
// and the newest RecentWrites-1 tokens of ver, space-separated. Every write gets a
// version no earlier write had, so versions also serve as compare-and-swap values.
func PushToken(ver, tok string) string {
	var b strings.Builder
	b.Grow(len(tok) + 1 + len(ver))
	b.WriteString(tok)
	kept := 0
	for t := range strings.FieldsSeq(ver) {
		if kept == RecentWrites-1 {
			break
		}
		b.WriteByte(' ')
		b.WriteString(t)
		kept++
	}
	return b.String()
}

// HasToken reports whether version ver was written, or overwritten within the last
// RecentWrites writes, by the write carrying token tok.
func HasToken(ver, tok string) bool {
	for t := range strings.FieldsSeq(ver) {
		if t == tok {
			return true
		}
	}
	return false
}
