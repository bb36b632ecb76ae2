package ddbprovider

import (
	"math"
	"strings"
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

// TestPrefixEnd: BETWEEN prefix AND prefixEnd(prefix) holds exactly the sort keys
// that begin with the prefix, for every prefix the queries use, among sort keys of
// every kind (the fixed ones, the other kinds' prefixes with IDs that sort low and
// high, and IDs holding '$').
func TestPrefixEnd(t *testing.T) {
	prefixes := []string{skTrait, skRun, skRunLog, skEvent, skRerun, skReplay, skLate + slotSK("2026-01-01", "s") + "#",
		skMarkerByTime, skLogEntry}
	sks := []string{skConfig, skState, skReadiness, skEventSeq, skLock, skLogSeq, "", "$", "\U0010FFFF",
		lateGuardSK("2026-01-01", "s"), lateGuardSK("2026-01-01", ""), lateGuardSK("2026-01-01", "s#")} // no query reads a late list's fences
	for _, p := range prefixes {
		if !strings.HasSuffix(p, "#") {
			t.Fatalf("prefix %q does not end in '#'", p)
		}
		for _, id := range []string{"", "0", "a", "$", "~", "a$b", "\u00e9", "\U0010FFFF\U0010FFFF"} {
			sks = append(sks, p+id, p[:len(p)-1]+id, p+"#"+id, slotSK(p, id)+"#"+id)
		}
	}
	for _, p := range prefixes {
		hi := prefixEnd(p)
		for _, sk := range sks {
			if sk == hi {
				continue // not a sort key of the schema: none ends in '$' after a kind's prefix
			}
			if in, want := p <= sk && sk <= hi, strings.HasPrefix(sk, p); in != want {
				t.Errorf("sort key %q: between %q and %q is %v, begins with %q is %v", sk, p, hi, in, p, want)
			}
		}
	}
}

// TestLateGuardUnlisted: the item that remembers a late-arrival list's fences is
// in no query's range: no prefix a query reads begins it.
func TestLateGuardUnlisted(t *testing.T) {
	for _, sk := range []string{lateGuardSK("2026-01-01", ""), lateGuardSK("2026-01-01", "s")} {
		for _, p := range []string{skTrait, skRun, skRunLog, skEvent, skRerun, skReplay, skLate, skMarkerByTime, skLogEntry} {
			if strings.HasPrefix(sk, p) {
				t.Errorf("fence item %q is in the range of prefix %q", sk, p)
			}
		}
		if sk >= eventSK(0) && sk <= skEventSeq {
			t.Errorf("fence item %q is in ReadEventsSince's range", sk)
		}
	}
}
