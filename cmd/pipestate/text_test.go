package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"unicode/utf8"
)

func TestText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"orders", "orders"},
		{"row count 120 is below 1000", "row count 120 is below 1000"},
		{"Größe für 東京 — ok ✓ 🚀", "Größe für 東京 — ok ✓ 🚀"}, // printable text of any script as it is
		{`C:\data\x1b`, `C:\data\x1b`},                     // plain: a backslash is only a backslash
		{`say "hi"`, `say "hi"`},
		{"-", "-"},
		{`"quoted"`, `"\"quoted\""`}, // a plain value never starts with a quote
		{" padded", `" padded"`},
		{"padded ", `"padded "`},
		{"a\nb", `"a\nb"`},
		{"tab\there", `"tab\there"`},
		{"\x1b[2J", `"\x1b[2J"`},
		{"\x1b]0;title\x07", `"\x1b]0;title\a"`},
		{"\x1b]8;;http://x\x1b\\link", `"\x1b]8;;http://x\x1b\\link"`},
		{"csi\u009b31m", `"csi\u009b31m"`},
		{"del\x7f", `"del\x7f"`},
		{"\u202eevil", `"\u202eevil"`},
		{"line\u2028sep", `"line\u2028sep"`},
		{"nbsp\u00a0", `"nbsp\u00a0"`},
		{"tag\U000e0041", `"tag\U000e0041"`},
		{"bad\xff\xfe", `"bad\xff\xfe"`},
		{"\ufffd", "\ufffd"},             // the replacement character itself is printable
		{`\x1b` + "\x1b", `"\\x1b\x1b"`}, // quoted, a literal escape cannot pass for a real one
	} {
		if got := text(tc.in).String(); got != tc.want {
			t.Errorf("text(%q) = %s, want %s", tc.in, got, tc.want)
		}
		if got := fmt.Sprintf("%s|%v", text(tc.in), text(tc.in)); got != tc.want+"|"+tc.want {
			t.Errorf("%%s|%%v of text(%q) = %s", tc.in, got)
		}
		if got := fmt.Sprintf("%q", text(tc.in)); got != strconv.Quote(tc.in) {
			t.Errorf("%%q of text(%q) = %s, want %s", tc.in, got, strconv.Quote(tc.in))
		}
	}
}

// TestTextEveryRune: every rune, alone and between letters, and every byte that
// is not UTF-8, is shown as printable text that reads back to it.
func TestTextEveryRune(t *testing.T) {
	t.Parallel()
	check := func(s string) {
		t.Helper()
		got := text(s).String()
		for _, r := range got {
			if !strconv.IsPrint(r) {
				t.Fatalf("text(%q) = %q has %U", s, got, r)
			}
		}
		if !utf8.ValidString(got) {
			t.Fatalf("text(%q) = %q is not UTF-8", s, got)
		}
		back := got
		if !plain(s) {
			var err error
			if back, err = strconv.Unquote(got); err != nil {
				t.Fatalf("text(%q) = %s does not unquote: %v", s, got, err)
			}
		}
		if back != s {
			t.Fatalf("text(%q) = %s reads back as %q", s, got, back)
		}
	}
	for _, s := range runeChunks() {
		check(s)
	}
	for r := rune(0); r < 0x3000; r++ {
		check(string(r))
	}
	for b := 0x80; b <= 0xff; b++ {
		check("a" + string([]byte{byte(b)}) + "b")
	}
}

// runeChunks is every rune, 256 to a string.
func runeChunks() []string {
	var chunks []string
	var b []rune
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if utf8.ValidRune(r) {
			b = append(b, r)
		}
		if len(b) == 256 || r == utf8.MaxRune {
			chunks = append(chunks, string(b))
			b = b[:0]
		}
	}
	return chunks
}

// TestJSONText: JSON with every rune in a string, and with every invalid byte,
// is printable after jsonText, decodes to what encoding/json decodes it to, and
// what encoding/json escaped already stays as it was.
func TestJSONText(t *testing.T) {
	t.Parallel()
	for _, s := range runeChunks() {
		b, err := json.Marshal(map[string]string{s: s})
		if err != nil {
			t.Fatal(err)
		}
		got := jsonText(append(b, '\n'))
		for i, c := range string(got[:len(got)-1]) {
			if !strconv.IsPrint(c) {
				t.Fatalf("jsonText of %q: %U at %d in %s", s, c, i, got)
			}
		}
		var m map[string]string
		if err := json.Unmarshal(got, &m); err != nil || m[s] != s || len(m) != 1 {
			t.Fatalf("jsonText of %q: %s decodes to %q, %v", s, got, m, err)
		}
		if utf8.Valid(b) && bytes.IndexFunc(b, func(r rune) bool { return !strconv.IsPrint(r) }) < 0 && string(got) != string(b)+"\n" {
			t.Fatalf("jsonText changed %s to %s", b, got)
		}
	}
	b, err := json.Marshal("a\xff\xfeb\\u202e")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(jsonText(b)), `"a\ufffd\ufffdb\\u202e"`; got != want {
		t.Errorf("jsonText(%s) = %s, want %s", b, got, want)
	}
}
