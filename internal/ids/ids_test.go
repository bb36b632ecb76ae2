package ids

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestTimeKeyOrder(t *testing.T) {
	times := []time.Time{
		{}, // year 1
		time.Unix(-1, 999_999_999),
		time.Unix(0, 0),
		time.Unix(0, 1),
		time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.UTC),
		time.Date(2026, 3, 4, 5, 6, 7, 123456790, time.FixedZone("x", 3600)).Add(time.Hour),
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
		ka, kb := TimeKey(a), TimeKey(b)
		if len(ka) != TimeKeyLen || len(kb) != TimeKeyLen {
			t.Fatalf("keys %q, %q are not %d bytes", ka, kb, TimeKeyLen)
		}
		return strings.Compare(ka, kb)
	})
	for i := range byTime {
		if !byTime[i].Equal(byKey[i]) {
			t.Fatalf("position %d: time order %v, key order %v", i, byTime[i], byKey[i])
		}
	}
	u := time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC)
	if TimeKey(u) != TimeKey(u.In(time.FixedZone("x", -7*3600))) {
		t.Error("zone changes the key")
	}
}

func TestRandom(t *testing.T) {
	hex32 := regexp.MustCompile(`^[0-9a-f]{32}$`)
	seen := map[string]bool{}
	for range 1000 {
		id := Random()
		if !hex32.MatchString(id) {
			t.Fatalf("Random() = %q, want 32 lowercase hex digits", id)
		}
		if seen[id] {
			t.Fatalf("Random() repeated %q", id)
		}
		seen[id] = true
	}
}
