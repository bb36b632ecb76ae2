package redisx

import (
	"strings"
	"testing"
)

func TestCheckPrefix(t *testing.T) {
	for _, tc := range []struct {
		prefix string
		ok     bool
	}{
		{"pipestate", true}, {"a", true}, {strings.Repeat("x", MaxPrefixLen), true}, {"é:ü", true},
		{"", false}, {strings.Repeat("x", MaxPrefixLen+1), false}, {"a{b", false}, {"a}b", false},
		{"a\nb", false}, {"a\x00", false}, {"\xff", false},
	} {
		if err := CheckPrefix(tc.prefix); (err == nil) != tc.ok {
			t.Errorf("CheckPrefix(%q) = %v, want ok=%v", tc.prefix, err, tc.ok)
		}
	}
}
