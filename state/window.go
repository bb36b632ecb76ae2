package state

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/pipestate/pipestate/monoid"
)

// Window maps times to buckets (Key.Bucket) for windowed values. Bucket must be
// non-decreasing in t, consecutive windows must have consecutive bucket numbers
// (skipping 0, which means "not windowed"), and it must never return 0 for a valid
// window. A Window may also have a Check() error method, which ReadRange calls.
type Window interface {
	Bucket(t time.Time) int64
}

// Tumbling is a window of fixed-size, non-overlapping intervals aligned to the Unix
// epoch: state.Tumbling(time.Minute) puts 12:00:00.000 up to (not including)
// 12:01:00.000 in one bucket.
//
// Bucket numbers: the interval starting at the epoch is bucket 1, later intervals
// count up; the interval ending at the epoch is bucket -1, earlier ones count down;
// 0 is never used, so windowed keys never collide with un-windowed ones. Times are
// taken as instants (time zone and monotonic reading ignored) and must lie in the
// range of time.UnixNano (years 1678 to 2262); Bucket clamps times outside it, Key
// rejects them. A size below 1ns is invalid: Bucket returns 0 and Key, Check and
// ReadRange return errors wrapping ErrInvalidArgument.
type Tumbling time.Duration

// Bounds of the times a window maps.
var (
	// One nanosecond inside UnixNano's range, so bucket arithmetic cannot overflow
	// even for a 1ns window.
	minWindowTime = time.Unix(0, math.MinInt64+1)
	maxWindowTime = time.Unix(0, math.MaxInt64-1)
)

// Check returns an error wrapping ErrInvalidArgument unless the size is positive.
func (w Tumbling) Check() error {
	if w <= 0 {
		return Invalidf("tumbling window size %v is not positive", time.Duration(w))
	}
	return nil
}

// Bucket returns the bucket of t (never 0 for a valid window; 0 for an invalid one).
func (w Tumbling) Bucket(t time.Time) int64 {
	if w <= 0 {
		return 0
	}
	ns := t.UnixNano()
	switch {
	case t.Before(minWindowTime):
		ns = minWindowTime.UnixNano()
	case t.After(maxWindowTime):
		ns = maxWindowTime.UnixNano()
	}
	size := int64(w)
	if ns >= 0 {
		return ns/size + 1
	}
	return -((-(ns + 1))/size + 1) // floor division for negative ns: -1, -2, ...
}

// Start returns the first instant of bucket b (UTC); the zero time for bucket 0 or
// an invalid window.
func (w Tumbling) Start(b int64) time.Time {
	if w <= 0 || b == 0 {
		return time.Time{}
	}
	if b > 0 {
		b--
	}
	return time.Unix(0, b*int64(w)).UTC()
}

// Key returns the key of entity's window containing t. An invalid window or entity,
// or a time outside the UnixNano range, is an error wrapping ErrInvalidArgument.
func (w Tumbling) Key(entity string, t time.Time) (Key, error) {
	if err := w.Check(); err != nil {
		return Key{}, err
	}
	if t.Before(minWindowTime) || t.After(maxWindowTime) {
		return Key{}, Invalidf("time %v outside the range of windows", t)
	}
	k := Key{Entity: entity, Bucket: w.Bucket(t)}
	return k, CheckKey(k)
}

// MaxRangeBuckets is the most buckets one ReadRange reads.
const MaxRangeBuckets = 10_000

// ReadRange merges, with m and in time order, the values of entity's buckets of w
// that overlap the half-open interval [from, to), reading them with one GetMany, so
// adjacent ranges never share a bucket. An empty range (from == to) and a range with
// no stored bucket return m.Identity(); missing and expired buckets are skipped.
// from after to, a time outside the years 1678..2262, a nil or invalid window, a bad
// entity or more than MaxRangeBuckets buckets is an error wrapping
// ErrInvalidArgument; a store error is returned as is; a monoid.Fallible that cannot
// combine two buckets returns its error (wrapping monoid.ErrIncompatible).
func ReadRange[V any](ctx context.Context, store Store[V], m monoid.Monoid[V], entity string, w Window, from, to time.Time) (V, error) {
	var zero V
	if store == nil || m == nil || w == nil {
		return zero, Invalidf("ReadRange: nil store, monoid or window")
	}
	if c, ok := w.(interface{ Check() error }); ok {
		if err := c.Check(); err != nil {
			return zero, err
		}
	}
	if err := CheckKey(Key{Entity: entity}); err != nil {
		return zero, err
	}
	if from.After(to) {
		return zero, Invalidf("ReadRange: from %v is after to %v", from, to)
	}
	if from.Before(minWindowTime) || to.After(maxWindowTime) {
		return zero, Invalidf("ReadRange: range %v..%v outside the range of windows", from, to)
	}
	if from.Equal(to) {
		return m.Identity(), nil
	}
	first, last := w.Bucket(from), w.Bucket(to.Add(-time.Nanosecond))
	if first == 0 || last == 0 || last < first {
		return zero, Invalidf("ReadRange: window maps the range to buckets %d..%d", first, last)
	}
	// Count with unsigned arithmetic: last-first can overflow int64.
	n := uint64(last) - uint64(first) + 1
	if first < 0 && last > 0 {
		n-- // bucket 0 is skipped
	}
	if n > MaxRangeBuckets {
		return zero, Invalidf("ReadRange: %d buckets, more than %d", n, MaxRangeBuckets)
	}
	ks := make([]Key, 0, n)
	for b := first; ; b++ {
		if b != 0 {
			ks = append(ks, Key{Entity: entity, Bucket: b})
		}
		if b == last {
			break
		}
	}
	vs, found, err := store.GetMany(ctx, ks)
	if err != nil {
		return zero, err
	}
	if len(vs) != len(ks) || len(found) != len(ks) {
		return zero, fmt.Errorf("ReadRange: store returned %d values for %d keys", len(vs), len(ks))
	}
	acc := m.Identity()
	for i, v := range vs {
		if !found[i] {
			continue
		}
		if acc, err = Combine(m, acc, v); err != nil {
			return zero, fmt.Errorf("ReadRange: bucket %d: %w", ks[i].Bucket, err)
		}
	}
	return acc, nil
}
