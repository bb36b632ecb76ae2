package dynamodb

import (
	"math"
	"testing"
	"time"
)

func TestUnixNanoSaturates(t *testing.T) {
	for _, tc := range []struct {
		name string
		t    time.Time
		want int64
	}{
		{name: "epoch", t: time.Unix(0, 5), want: 5},
		{name: "far future", t: time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), want: math.MaxInt64},
		{name: "far past", t: time.Time{}, want: math.MinInt64 + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := unixNano(tc.t); got != tc.want {
				t.Fatalf("unixNano = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestEventSKOrder(t *testing.T) {
	if !(eventSK(9) < eventSK(10) && eventSK(10) < eventSK(math.MaxInt64)) {
		t.Fatal("event sort keys do not sort by number")
	}
}
