package topk_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/monoid/monoidtest"
	"github.com/pipestate/pipestate/monoid/sketch/topk"
)

func mustNew(t testing.TB, k int) topk.Monoid {
	t.Helper()
	m, err := topk.New(k)
	if err != nil {
		t.Fatalf("topk.New(%d): %v", k, err)
	}
	return m
}

func mustDelta(t testing.TB, m topk.Monoid, items ...string) []byte {
	t.Helper()
	d, err := m.Delta(items...)
	if err != nil {
		t.Fatalf("Delta: %v", err)
	}
	return d
}

func TestLawsInExactRegime(t *testing.T) {
	const k = 8
	m := mustNew(t, k)
	gen := func(r *rand.Rand) []byte {
		items := make([]string, r.IntN(12))
		for i := range items {
			items[i] = fmt.Sprint("v", r.IntN(k)) // at most k distinct items overall
		}
		d, _ := m.Delta(items...)
		return d
	}
	monoidtest.CheckLaws(t, m, gen, bytes.Equal)
}

func TestTop(t *testing.T) {
	m := mustNew(t, 3)
	a := mustDelta(t, m, "home", "home", "about", "home")
	b := mustDelta(t, m, "about", "pricing", "blog")
	got, err := topk.Top(m.Combine(a, b))
	if err != nil {
		t.Fatal(err)
	}
	// Counts home 3, about 2, pricing 1, blog 1 (N=7): four counters for k=3, so
	// 1 is subtracted: home 2, about 1; Error = (7-3)/4 = 1.
	want := []topk.Item{{"home", 2, 1}, {"about", 1, 1}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Top = %v, want %v", got, want)
	}
	if items, err := topk.Top(nil); items != nil || err != nil {
		t.Errorf("Top(nil) = %v, %v", items, err)
	}
}

// TestErrorBound merges random deltas in random groupings over far more distinct
// items than the capacity and checks the documented bound against exact counts.
func TestErrorBound(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 50 {
		k := 1 + r.IntN(10)
		m := mustNew(t, k)
		exact := map[string]uint64{}
		var parts [][]byte
		for range 1 + r.IntN(30) {
			items := make([]string, r.IntN(20))
			for i := range items {
				// Zipf-ish: small numbers are frequent.
				items[i] = fmt.Sprint(r.IntN(1 + r.IntN(40)))
				exact[items[i]]++
			}
			parts = append(parts, mustDelta(t, m, items...))
		}
		// Random merge tree.
		for len(parts) > 1 {
			i := r.IntN(len(parts) - 1)
			merged, err := m.TryCombine(parts[i], parts[i+1])
			if err != nil {
				t.Fatal(err)
			}
			parts = append(parts[:i], append([][]byte{merged}, parts[i+2:]...)...)
		}
		items, err := topk.Top(parts[0])
		if err != nil {
			t.Fatal(err)
		}
		if len(items) > k {
			t.Fatalf("round %d: %d items for capacity %d", round, len(items), k)
		}
		listed := map[string]topk.Item{}
		for _, it := range items {
			listed[it.Value] = it
		}
		for v, n := range exact {
			it, ok := listed[v]
			switch {
			case ok && (n < it.Count || n > it.Count+it.Error):
				t.Errorf("round %d: %q true count %d outside [%d, %d]", round, v, n, it.Count, it.Count+it.Error)
			case !ok && len(items) > 0 && n > items[0].Error:
				t.Errorf("round %d: unlisted %q occurred %d times, bound %d", round, v, n, items[0].Error)
			}
		}
	}
}

func TestNewAndDeltaReject(t *testing.T) {
	for _, k := range []int{0, -1, topk.MaxCapacity + 1} {
		if _, err := topk.New(k); !errors.Is(err, monoid.ErrIncompatible) {
			t.Errorf("New(%d): %v", k, err)
		}
	}
	if _, err := mustNew(t, 2).Delta(strings.Repeat("x", topk.MaxItemLen+1)); !errors.Is(err, monoid.ErrIncompatible) {
		t.Errorf("Delta(long item): %v", err)
	}
}

func TestIncompatible(t *testing.T) {
	m := mustNew(t, 4)
	a := mustDelta(t, m, "x", "y")
	tests := []struct {
		name string
		b    []byte
	}{
		{"other capacity", mustDelta(t, mustNew(t, 5), "x")},
		{"garbage", []byte("not a summary")},
		{"truncated", a[:len(a)-1]},
		{"trailing", append(bytes.Clone(a), 0)},
		{"wrong magic", append([]byte{'X'}, a[1:]...)},
		{"future version", append([]byte{'T', 2}, a[2:]...)},
		{"poisoned", m.Combine(a, mustDelta(t, mustNew(t, 5), "x"))},
		{"out of order", []byte{'T', 1, 4, 2, 2, 1, 'y', 1, 1, 'x', 1}},
		{"duplicate", []byte{'T', 1, 4, 2, 2, 1, 'x', 1, 1, 'x', 1}},
		{"zero count", []byte{'T', 1, 4, 2, 1, 1, 'x', 0}},
		{"counts over total", []byte{'T', 1, 4, 1, 1, 1, 'x', 2}},
		{"non-minimal varint", []byte{'T', 1, 0x84, 0x00, 0, 0}},
		{"huge counter count", []byte{'T', 1, 4, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}},
		{"huge item", []byte{'T', 1, 4, 1, 1, 0xff, 0xff, 0x03, 'x', 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := m.TryCombine(a, tt.b); !errors.Is(err, monoid.ErrIncompatible) {
				t.Errorf("TryCombine: %v, want ErrIncompatible", err)
			}
			if tt.name != "other capacity" {
				if _, err := topk.Top(tt.b); !errors.Is(err, monoid.ErrIncompatible) {
					t.Errorf("Top: %v, want ErrIncompatible", err)
				}
			}
			if _, err := topk.Top(m.Combine(tt.b, a)); err == nil {
				t.Error("Combine of a bad value is readable")
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	m := mustNew(f, 4)
	f.Add([]byte{})
	d, _ := m.Delta("a", "b", "b", "c", "d", "e", "e")
	f.Add(d)
	f.Add([]byte{'T', 1, 4, 2, 2, 1, 'x', 1, 1, 'y', 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		items, err := topk.Top(b)
		if err == nil && len(items) > topk.MaxCapacity {
			t.Fatalf("%d items", len(items))
		}
		out, err := m.TryCombine(b, d)
		if err != nil {
			return
		}
		if _, err := topk.Top(out); err != nil {
			t.Fatalf("combined summary does not decode: %v", err)
		}
	})
}
