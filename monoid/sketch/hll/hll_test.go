package hll_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/monoid/monoidtest"
	"github.com/pipestate/pipestate/monoid/sketch/hll"
)

func mustNew(t testing.TB, p uint8) hll.Monoid {
	t.Helper()
	m, err := hll.New(p)
	if err != nil {
		t.Fatalf("hll.New(%d): %v", p, err)
	}
	return m
}

func mustEqual(a, b []byte) bool {
	eq, err := hll.Equal(a, b)
	return err == nil && eq
}

func TestLaws(t *testing.T) {
	for _, p := range []uint8{4, 10, 14} {
		t.Run(fmt.Sprint("p", p), func(t *testing.T) {
			m := mustNew(t, p)
			gen := func(r *rand.Rand) []byte {
				items := make([]string, r.IntN(40))
				for i := range items {
					items[i] = fmt.Sprint("item-", r.IntN(500))
				}
				if r.IntN(20) == 0 { // a dense sketch now and then
					for i := range 3000 {
						items = append(items, fmt.Sprint("many-", i))
					}
				}
				return m.Delta(items...)
			}
			monoidtest.CheckLaws(t, m, gen, mustEqual)
		})
	}
}

func TestEstimate(t *testing.T) {
	m := mustNew(t, hll.DefaultPrecision)
	var acc []byte
	for w := range 10 {
		items := make([]string, 0, 1000)
		for i := range 1000 {
			items = append(items, fmt.Sprintf("user-%d", (w*1000+i)%7000)) // 7000 distinct
		}
		var err error
		if acc, err = m.TryCombine(acc, m.Delta(items...)); err != nil {
			t.Fatal(err)
		}
	}
	n, err := hll.Estimate(acc)
	if err != nil {
		t.Fatal(err)
	}
	if n < 6800 || n > 7200 {
		t.Errorf("Estimate = %d, want about 7000", n)
	}
	if n, err := hll.Estimate(nil); n != 0 || err != nil {
		t.Errorf("Estimate(nil) = %d, %v", n, err)
	}
}

func TestNewRejectsBadPrecision(t *testing.T) {
	for _, p := range []uint8{0, 3, 19, 255} {
		if _, err := hll.New(p); !errors.Is(err, monoid.ErrIncompatible) {
			t.Errorf("New(%d): %v, want ErrIncompatible", p, err)
		}
	}
}

func TestIncompatible(t *testing.T) {
	m14, m12 := mustNew(t, 14), mustNew(t, 12)
	a, b := m14.Delta("x"), m12.Delta("y")
	tests := []struct {
		name string
		a, b []byte
	}{
		{"other precision", a, b},
		{"other precision onto empty", nil, b},
		{"garbage", a, []byte("hello world")},
		{"truncated", a, a[:len(a)-1]},
		{"wrong magic", append([]byte{'X'}, a[1:]...), nil},
		{"future version", append([]byte{'H', 2}, a[2:]...), nil},
		{"poisoned", m14.Combine(a, b), a},
		{"header precision differs from payload", append([]byte{'H', 1, 12}, a[3:]...), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := m14.TryCombine(tt.a, tt.b); !errors.Is(err, monoid.ErrIncompatible) {
				t.Errorf("TryCombine: %v, want ErrIncompatible", err)
			}
			if _, err := m14.TryCombine(tt.b, tt.a); !errors.Is(err, monoid.ErrIncompatible) {
				t.Errorf("TryCombine swapped: %v, want ErrIncompatible", err)
			}
			bad := m14.Combine(tt.a, tt.b)
			if _, err := hll.Estimate(bad); !errors.Is(err, monoid.ErrIncompatible) {
				t.Errorf("Estimate(Combine result): %v, want ErrIncompatible", err)
			}
			if _, err := m14.TryCombine(m14.Combine(bad, a), nil); err == nil {
				t.Error("a poisoned value stopped being poisoned")
			}
		})
	}
}

func TestCombineDoesNotAlias(t *testing.T) {
	m := mustNew(t, 14)
	a := m.Delta("x")
	out := m.Combine(a, nil)
	out[len(out)-1] ^= 0xff
	if ok, err := hll.Equal(a, m.Delta("x")); err != nil || !ok {
		t.Errorf("changing the result changed the argument (%v)", err)
	}
}

// FuzzDecode feeds arbitrary bytes to every decoder: none may panic, and whatever
// decodes must combine and re-encode to something that decodes.
func FuzzDecode(f *testing.F) {
	m := mustNew(f, 8)
	f.Add([]byte{})
	f.Add(m.Delta("a", "b"))
	var items []string
	for i := range 500 {
		items = append(items, fmt.Sprint(i))
	}
	f.Add(m.Delta(items...))
	f.Add([]byte{'H', 1, 8, 2, 8, 0, 1, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = hll.Estimate(b)
		_, _ = hll.Equal(b, b)
		out, err := m.TryCombine(b, m.Delta("z"))
		if err != nil {
			return
		}
		if _, err := hll.Estimate(out); err != nil {
			t.Fatalf("combined value does not decode: %v", err)
		}
	})
}
