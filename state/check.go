package state

import (
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/pipestate/pipestate/internal/nilcheck"
	"github.com/pipestate/pipestate/monoid"
)

// Limits on the strings every backend accepts. They are the same for all backends so
// that data and code move between them unchanged.
const (
	// MaxEntityLen is the longest Key.Entity, in bytes.
	MaxEntityLen = 512
	// MaxEventIDLen is the longest event ID (Deduper.MarkSeen, OnceStore.MergeUpdateOnce), in bytes.
	MaxEventIDLen = 512
)

// Invalidf returns an error wrapping ErrInvalidArgument with a formatted message.
func Invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// checkText is the one rule for entities and event IDs: 1..max bytes of valid UTF-8
// without control characters (so no NUL, newline or tab). Anything else, including
// ':' '#' '{' '}' '/' and spaces, is allowed: backends must encode it injectively.
func checkText(what, s string, max int) error {
	switch {
	case s == "":
		return Invalidf("%s is empty", what)
	case len(s) > max:
		return Invalidf("%s is %d bytes, more than %d", what, len(s), max)
	case !utf8.ValidString(s):
		return Invalidf("%s %q is not valid UTF-8", what, s)
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return Invalidf("%s %q has a control character", what, s)
		}
	}
	return nil
}

// CheckKey checks a key: Entity is 1..MaxEntityLen bytes of valid UTF-8 without
// control characters; every Bucket is valid (0 means not windowed). It returns nil or
// an error wrapping ErrInvalidArgument. Every backend calls it before any I/O.
func CheckKey(k Key) error {
	return checkText("entity", k.Entity, MaxEntityLen)
}

// CheckKeys runs CheckKey on every key and returns the first error, naming its index.
// An empty or nil slice is valid.
func CheckKeys(ks []Key) error {
	for i, k := range ks {
		if err := CheckKey(k); err != nil {
			return fmt.Errorf("key %d: %w", i, err)
		}
	}
	return nil
}

// CheckEventID checks an event ID by the same rule as an entity (1..MaxEventIDLen
// bytes of valid UTF-8 without control characters).
func CheckEventID(id string) error {
	return checkText("event ID", id, MaxEventIDLen)
}

// MaxTTL is the largest ttl a merge, a claim or a dedup option accepts: 100 years of
// 365 days, the same limit as the provider's, so that now+ttl never overflows in any
// backend's unit.
const MaxTTL = 100 * 365 * 24 * time.Hour

// CheckTTL rejects a negative ttl and one above MaxTTL. ttl == 0 means no expiry.
func CheckTTL(ttl time.Duration) error {
	if ttl < 0 || ttl > MaxTTL {
		return Invalidf("ttl %v is outside [0, %v]", ttl, MaxTTL)
	}
	return nil
}

// CheckDelta rejects a delta the monoid cannot combine: when m implements
// monoid.Fallible, the delta must combine with the identity (a sketch delta must
// decode and have a valid shape). The error wraps both ErrInvalidArgument and
// monoid.ErrIncompatible. A float64 delta must pass CheckFloat64. For other monoids
// every value is valid.
func CheckDelta[V any](m monoid.Monoid[V], delta V) error {
	if d, ok := any(delta).(float64); ok {
		if err := CheckFloat64("delta", d); err != nil {
			return err
		}
	}
	f, ok := m.(monoid.Fallible[V])
	if !ok {
		return nil
	}
	if _, err := f.TryCombine(m.Identity(), delta); err != nil {
		return fmt.Errorf("%w: delta: %w", ErrInvalidArgument, err)
	}
	return nil
}

// CheckMonoid returns an error wrapping ErrInvalidArgument when m is nil, also a
// typed nil (an interface holding a nil pointer, which would panic on first use).
// Every store constructor taking a monoid calls it.
func CheckMonoid[V any](m monoid.Monoid[V]) error {
	if nilcheck.IsNil(m) {
		return Invalidf("nil monoid")
	}
	return nil
}

// CheckMerge runs the checks of a MergeUpdate: CheckKey, CheckTTL and CheckDelta.
func CheckMerge[V any](m monoid.Monoid[V], k Key, delta V, ttl time.Duration) error {
	if err := CheckKey(k); err != nil {
		return err
	}
	if err := CheckTTL(ttl); err != nil {
		return err
	}
	return CheckDelta(m, delta)
}

// CheckWrite runs the checks of a merge: CheckEventID(eventID) first when once (a
// MergeUpdateOnce), then CheckMerge. eventID is ignored when once is false.
func CheckWrite[V any](m monoid.Monoid[V], once bool, eventID string, k Key, delta V, ttl time.Duration) error {
	if once {
		if err := CheckEventID(eventID); err != nil {
			return err
		}
	}
	return CheckMerge(m, k, delta, ttl)
}

// Combine combines a and b with m, through TryCombine when m implements
// monoid.Fallible; its error wraps monoid.ErrIncompatible. A float64 result outside
// the range of CheckFloat64, and an int64 sum (monoid.KindSum) that overflows, are
// errors wrapping ErrInvalidArgument. Stores use it so
// a value that does not combine, or cannot be stored, is reported, never stored.
func Combine[V any](m monoid.Monoid[V], a, b V) (V, error) {
	var next V
	if f, ok := m.(monoid.Fallible[V]); ok {
		var err error
		if next, err = f.TryCombine(a, b); err != nil {
			return next, err
		}
	} else {
		next = m.Combine(a, b)
	}
	switch n := any(next).(type) {
	case float64:
		if err := CheckFloat64("merged value", n); err != nil {
			return next, err
		}
	case int64:
		x, y := any(a).(int64), any(b).(int64)
		if m.Kind() == monoid.KindSum && (x > 0 && y > 0 && n < 0 || x < 0 && y < 0 && n >= 0) {
			return next, Invalidf("sum %d + %d overflows int64", x, y)
		}
	}
	return next, nil
}

// The float contract (Float64SumStore, and every float64 value a store keeps): a
// delta and a stored value are finite float64s of magnitude 0 or within
// [MinFloat64, MaxFloat64] — DynamoDB's number range, enforced identically by every
// backend. A delta outside it, or a merge whose result would leave it, is an error
// wrapping ErrInvalidArgument and stores nothing; tiny values never round to 0.
const (
	// MinFloat64 is the smallest non-zero magnitude of a float64 value or delta.
	MinFloat64 = 1e-130
	// MaxFloat64 is the largest magnitude of a float64 value or delta.
	MaxFloat64 = 1e125
)

// CheckFloat64 returns an error wrapping ErrInvalidArgument unless v is finite with
// magnitude 0 or within [MinFloat64, MaxFloat64]; what names v in the message.
func CheckFloat64(what string, v float64) error {
	if a := math.Abs(v); math.IsNaN(v) || a > MaxFloat64 || (a != 0 && a < MinFloat64) {
		return Invalidf("%s %v is outside the float range: 0 or magnitude in [%g, %g]", what, v, MinFloat64, MaxFloat64)
	}
	return nil
}

// OnceClaimID returns the identity of a MergeUpdateOnce claim: an injective encoding
// of (k, eventID), so that claims of different keys or events never collide whatever
// characters entities and event IDs hold. Backends store claims under it.
func OnceClaimID(k Key, eventID string) string {
	return strconv.Itoa(len(k.Entity)) + ":" + k.Entity + ":" + strconv.FormatInt(k.Bucket, 10) + ":" + eventID
}
