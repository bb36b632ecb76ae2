package dynamodb

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestTimeKeyOrder(t *testing.T) {
	times := []time.Time{
		{}, // year 1
		time.Unix(-1, 999_999_999),
		time.Unix(0, 0),
		time.Unix(0, 1),
		time.Date(2262, 4, 12, 0, 0, 0, 0, time.UTC), // past UnixNano's range
		time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
	}
	for range 200 {
		times = append(times, time.Unix(rand.Int64N(1<<40)-1<<39, rand.Int64N(1e9)))
	}
	byTime := slices.Clone(times)
	slices.SortFunc(byTime, func(a, b time.Time) int { return a.Compare(b) })
	byKey := slices.Clone(times)
	slices.SortFunc(byKey, func(a, b time.Time) int {
		ka, kb := timeKey(a), timeKey(b)
		if len(ka) != 24 || len(kb) != 24 {
			t.Fatalf("keys %q, %q are not 24 bytes", ka, kb)
		}
		return compareStrings(ka, kb)
	})
	for i := range byTime {
		if !byTime[i].Equal(byKey[i]) {
			t.Fatalf("position %d: time order %v, key order %v", i, byTime[i], byKey[i])
		}
	}
	// Equal instants in different zones share a key.
	u := time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC)
	if timeKey(u) != timeKey(u.In(time.FixedZone("x", -7*3600))) {
		t.Error("zone changes the key")
	}
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

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
