package redisx

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxPrefixLen is the longest key prefix, in bytes.
const MaxPrefixLen = 64

// CheckPrefix checks a key prefix: 1 to MaxPrefixLen bytes of valid UTF-8 without
// '{', '}' (the prefix must not decide a key's cluster slot) or control characters.
func CheckPrefix(prefix string) error {
	if prefix == "" || len(prefix) > MaxPrefixLen || !utf8.ValidString(prefix) ||
		strings.ContainsAny(prefix, "{}") || strings.ContainsFunc(prefix, unicode.IsControl) {
		return fmt.Errorf("key prefix %q must be 1 to %d bytes of valid UTF-8 without '{', '}' or control characters", prefix, MaxPrefixLen)
	}
	return nil
}
