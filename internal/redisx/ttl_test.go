package redisx

import (
	"math"
	"testing"
	"time"
)

func TestMillis(t *testing.T) {
	const ms = time.Millisecond
	for _, tc := range []struct {
		ttl  time.Duration
		want int64
	}{
		{0, 0}, {-ms, 0}, // no expiry
		{time.Nanosecond, 1}, {999 * time.Microsecond, 1}, {ms, 1}, // finer than Redis keeps: the shortest life
		{ms + time.Nanosecond, 1}, {2*ms - time.Nanosecond, 1}, {2 * ms, 1}, // gone from T+2
		{2*ms + time.Nanosecond, 2}, {3 * ms, 2},
		{time.Second, 999}, {time.Second + time.Nanosecond, 1000},
		{100 * 365 * 24 * time.Hour, int64(100*365*24*time.Hour/ms) - 1},
		{math.MaxInt64, int64(math.MaxInt64/ms) + 1 - 1},
	} {
		if got := Millis(tc.ttl); got != tc.want {
			t.Errorf("Millis(%v) = %d, want %d", tc.ttl, got, tc.want)
		}
	}
}

// TestMillisExpiry checks the rule against Redis's expiry on its millisecond
// clock: a key written at T with PX n is visible while now <= T+n. For every ttl
// above 1 ms and every reading now, the key is visible exactly when now < T+ttl
// (the contract: expired when now >= expiry); for ttl <= 1 ms, it is gone from T+2.
func TestMillisExpiry(t *testing.T) {
	const T = 1_000_000 // the server's clock at the write, in ms
	for ttl := time.Nanosecond; ttl <= 5*time.Millisecond; ttl += 333 * time.Microsecond / 7 {
		n := Millis(ttl)
		for now := int64(T); now <= T+10; now++ {
			visible := now <= T+n
			alive := time.Duration(now-T)*time.Millisecond < ttl
			if ttl <= time.Millisecond {
				alive = now < T+2
			}
			if visible != alive {
				t.Fatalf("ttl %v: PX %d at %d: visible %v, the contract says %v", ttl, n, now-T, visible, alive)
			}
		}
	}
}
