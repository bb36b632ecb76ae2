package storekey

import (
	"strconv"
	"strings"
	"testing"
)

func TestPushToken(t *testing.T) {
	var toks []string
	ver := ""
	for i := range 2 * RecentWrites {
		tok := Token()
		if strings.ContainsAny(tok, " \t\n") || tok == "" {
			t.Fatalf("Token() = %q", tok)
		}
		toks = append([]string{tok}, toks...)
		ver = PushToken(ver, tok)
		want := strings.Join(toks[:min(len(toks), RecentWrites)], " ")
		if ver != want {
			t.Fatalf("after %d writes: version %q, want %q", i+1, ver, want)
		}
		for j, old := range toks {
			if got := HasToken(ver, old); got != (j < RecentWrites) {
				t.Fatalf("after %d writes: HasToken(token of write %d back) = %v", i+1, j, got)
			}
		}
	}
	// A version with stray whitespace keeps its tokens, single-spaced.
	if got := PushToken("  b \t c  ", "a"); got != "a b c" {
		t.Errorf("PushToken over stray whitespace = %q, want %q", got, "a b c")
	}
	if HasToken("ab", "a") || HasToken("", "") {
		t.Error("HasToken matched a prefix or an empty version")
	}
}

func TestTokenFresh(t *testing.T) {
	seen := map[string]bool{}
	for i := range 1000 {
		tok := Token()
		if seen[tok] {
			t.Fatalf("token %d repeats: %q", i, tok)
		}
		seen[tok] = true
		a, b, ok := strings.Cut(tok, ".")
		if _, err := strconv.ParseUint(a, 36, 64); !ok || err != nil {
			t.Fatalf("token %q is not two base-36 uint64s", tok)
		}
		if _, err := strconv.ParseUint(b, 36, 64); err != nil {
			t.Fatalf("token %q is not two base-36 uint64s", tok)
		}
	}
}
