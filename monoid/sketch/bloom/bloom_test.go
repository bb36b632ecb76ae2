package bloom_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	bbloom "github.com/bits-and-blooms/bloom/v3"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/monoid/monoidtest"
	"github.com/pipestate/pipestate/monoid/sketch/bloom"
)

func mustNew(t testing.TB, m, k uint) bloom.Monoid {
	t.Helper()
	mo, err := bloom.New(m, k)
	if err != nil {
		t.Fatalf("bloom.New(%d, %d): %v", m, k, err)
	}
	return mo
}

func TestLaws(t *testing.T) {
	for _, shape := range [][2]uint{{1, 1}, {100, 3}, {4096, 7}} {
		t.Run(fmt.Sprintf("m%d k%d", shape[0], shape[1]), func(t *testing.T) {
			m := mustNew(t, shape[0], shape[1])
			gen := func(r *rand.Rand) []byte {
				items := make([]string, r.IntN(10))
				for i := range items {
					items[i] = fmt.Sprint(r.IntN(100))
				}
				return m.Delta(items...)
			}
			monoidtest.CheckLaws(t, m, gen, bytes.Equal)
		})
	}
}

func TestContainsAgreesWithLibrary(t *testing.T) {
	m := mustNew(t, 1000, 5)
	lib := bbloom.New(1000, 5)
	var acc []byte
	for i := range 100 {
		item := fmt.Sprint("in-", i)
		acc = m.Combine(acc, m.Delta(item))
		lib.AddString(item)
	}
	for i := range 100 {
		item := fmt.Sprint("in-", i)
		if ok, err := bloom.Contains(acc, item); err != nil || !ok {
			t.Fatalf("Contains(%q) = %v, %v: a false negative", item, ok, err)
		}
	}
	falsePositives := 0
	for i := range 2000 {
		item := fmt.Sprint("out-", i)
		ok, err := bloom.Contains(acc, item)
		if err != nil {
			t.Fatal(err)
		}
		if ok != lib.TestString(item) {
			t.Fatalf("Contains(%q) = %v, library says %v", item, ok, !ok)
		}
		if ok {
			falsePositives++
		}
	}
	if falsePositives > 200 {
		t.Errorf("%d false positives in 2000, expected about 1%%", falsePositives)
	}
	if ok, err := bloom.Contains(nil, "x"); ok || err != nil {
		t.Errorf("Contains(nil) = %v, %v", ok, err)
	}
}

func TestNewRejectsBadShapes(t *testing.T) {
	for _, s := range [][2]uint{{0, 1}, {1, 0}, {bloom.MaxBits + 1, 1}, {10, bloom.MaxK + 1}} {
		if _, err := bloom.New(s[0], s[1]); !errors.Is(err, monoid.ErrIncompatible) {
			t.Errorf("New(%d, %d): %v, want ErrIncompatible", s[0], s[1], err)
		}
	}
	if _, err := bloom.NewWithEstimates(1000, 1.5); err == nil {
		t.Error("NewWithEstimates(1000, 1.5): no error")
	}
	if m, err := bloom.NewWithEstimates(1000, 0.01); err != nil {
		t.Errorf("NewWithEstimates(1000, 0.01): %v", err)
	} else if bits, k := m.Shape(); bits < 9000 || k < 5 {
		t.Errorf("NewWithEstimates(1000, 0.01) shape = %d, %d", bits, k)
	}
}

func TestIncompatible(t *testing.T) {
	m, other, otherK := mustNew(t, 128, 3), mustNew(t, 64, 3), mustNew(t, 128, 4)
	a := m.Delta("x")
	tail := bytes.Clone(mustNew(t, 100, 3).Delta("q"))
	tail[len(tail)-1] |= 0x80 // bit 127 > m=100
	tests := []struct {
		name string
		b    []byte
	}{
		{"other m", other.Delta("y")},
		{"other k", otherK.Delta("y")},
		{"garbage", []byte("not a filter")},
		{"truncated", a[:len(a)-1]},
		{"too long", append(bytes.Clone(a), 0)},
		{"wrong magic", append([]byte{'X'}, a[1:]...)},
		{"future version", append([]byte{'B', 2}, a[2:]...)},
		{"poisoned", m.Combine(a, other.Delta("y"))},
		{"bits past m", tail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := m.TryCombine(a, tt.b); !errors.Is(err, monoid.ErrIncompatible) {
				t.Errorf("TryCombine: %v, want ErrIncompatible", err)
			}
			if _, err := m.TryCombine(tt.b, nil); !errors.Is(err, monoid.ErrIncompatible) {
				t.Errorf("TryCombine onto empty: %v, want ErrIncompatible", err)
			}
			if _, err := m.TryCombine(m.Combine(tt.b, a), a); err == nil {
				t.Error("Combine of a bad value is accepted later")
			}
		})
	}
}

func TestCombineDoesNotAlias(t *testing.T) {
	m := mustNew(t, 64, 2)
	a := m.Delta("x")
	out := m.Combine(nil, a)
	out[len(out)-1] ^= 0xff
	if !bytes.Equal(a, m.Delta("x")) {
		t.Error("changing the result changed the argument")
	}
}

func FuzzDecode(f *testing.F) {
	m := mustNew(f, 200, 3)
	f.Add([]byte{})
	f.Add(m.Delta("a", "b"))
	f.Add([]byte{'B', 1, 3, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{'B', 1, 3, 0, 0, 0, 200, 1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = bloom.Contains(b, "a")
		out, err := m.TryCombine(b, m.Delta("z"))
		if err != nil {
			return
		}
		if ok, err := bloom.Contains(out, "z"); err != nil || !ok {
			t.Fatalf("combined filter: Contains(z) = %v, %v", ok, err)
		}
	})
}
