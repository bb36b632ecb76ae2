package main

import (
	"fmt"
	"io"
	"reflect"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// text is a string the command did not write itself: a value read from storage,
// an error's message, an argument or flag echoed back. The output layer (say,
// table rows, fields, the error report) shows every such string as a text, the
// one place that makes it safe for a terminal and unambiguous (see "Stored
// text" in the package doc):
//
//   - a plain string is shown as it is: valid UTF-8 whose every rune is printable
//     as strconv.IsPrint says (letters, marks, numbers, punctuation, symbols of
//     any script, and the ASCII space), that does not start with a double quote
//     and neither starts nor ends with a space;
//   - any other string is shown Go-quoted, as strconv.Quote quotes it: between
//     double quotes, with \ and " escaped, and every rune that is not printable
//     escaped (\n, \t, \x1b, \x7f, \u009b, \u202e, \U000e0001), and each byte that
//     is not UTF-8 as \xff. Printable runes of any script stay as they are.
//
// So nothing but printable text reaches the terminal, and a shown value reads
// back to one stored value: a quoted one starts with a double quote, which a
// plain one never does, and within the quotes every backslash starts an escape.
type text string

// String is t as the terminal shows it.
func (t text) String() string {
	if plain(string(t)) {
		return string(t)
	}
	return strconv.Quote(string(t))
}

// Format writes t.String() for every verb but %q, which always quotes: the
// shape of a value that must stay one field of a line with spaces in it (a
// followed event's message).
func (t text) Format(f fmt.State, verb rune) {
	if verb == 'q' {
		_, _ = io.WriteString(f, strconv.Quote(string(t)))
		return
	}
	_, _ = io.WriteString(f, t.String())
}

// plain reports whether s is shown as it is.
func plain(s string) bool {
	if s == "" {
		return true
	}
	if s[0] == '"' || s[0] == ' ' || s[len(s)-1] == ' ' || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return false
		}
	}
	return true
}

// texts is the arguments of a human-readable line with every string among them
// (strings and string kinds such as types.RunStatus, errors, fmt.Stringers) made
// a text; numbers, booleans and texts stay as they are.
func texts(a []any) []any {
	out := make([]any, len(a))
	for i, v := range a {
		switch v := v.(type) {
		case text:
			out[i] = v
		case string:
			out[i] = text(v)
		case error:
			out[i] = text(v.Error())
		case fmt.Stringer:
			out[i] = text(v.String())
		default:
			out[i] = v
			if rv := reflect.ValueOf(v); rv.Kind() == reflect.String {
				out[i] = text(rv.String())
			}
		}
	}
	return out
}

// jsonText is b, JSON that encoding/json wrote, with every rune that is not
// printable (by the rule of text) escaped as \uXXXX, a surrogate pair above
// U+FFFF, but for the newline that ends a line. encoding/json escapes control
// characters below U+0020, quotes, backslashes, U+2028 and U+2029, and writes
// each invalid UTF-8 byte of a string as U+FFFD; it leaves DEL, the C1 controls,
// format characters (bidi overrides) and the like raw, inside strings, where the
// \u escape stands for the same rune: the JSON decodes to the same value, and
// what is already escaped is not escaped again.
func jsonText(b []byte) []byte {
	var out []byte
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == '\n' || (strconv.IsPrint(r) && (r != utf8.RuneError || n > 1)) {
			if out != nil {
				out = append(out, b[i:i+n]...)
			}
			i += n
			continue
		}
		if out == nil {
			out = append(make([]byte, 0, len(b)+16), b[:i]...)
		}
		if r > 0xffff {
			r1, r2 := utf16.EncodeRune(r)
			out = appendU(appendU(out, r1), r2)
		} else {
			out = appendU(out, r)
		}
		i += n
	}
	if out == nil {
		return b
	}
	return out
}

// appendU appends the JSON escape \uXXXX of r, at most U+FFFF.
func appendU(b []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	return append(b, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
}
