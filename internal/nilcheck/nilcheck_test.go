package nilcheck

import "testing"

func TestIsNil(t *testing.T) {
	var p *int
	var m map[string]int
	var f func()
	var i interface{ M() }
	x := 1
	for _, c := range []struct {
		v    any
		want bool
	}{{nil, true}, {p, true}, {m, true}, {f, true}, {i, true}, {&x, false}, {x, false}, {"", false}, {map[string]int{}, false}} {
		if got := IsNil(c.v); got != c.want {
			t.Errorf("IsNil(%#v) = %v, want %v", c.v, got, c.want)
		}
	}
}
