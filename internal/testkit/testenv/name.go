package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
)

// maxFragment bounds the test-name part of a UniqueName so the whole name fits in 40.
const maxFragment = 20

// processTag is 8 random hex digits that every UniqueName of this process carries
// right after its fragment's '-', so that Main can find what this process's tests
// left behind on a shared server (tables, keys) without touching other processes'.
var processTag = func() string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}()

// UniqueName returns a short name for t's private data: a sanitized fragment of
// t.Name(), '-', this process's tag (8 hex digits) and 10 random hex digits, e.g.
// "testcas-a-b-1a2b3c4d3f9c01d2e7". It is at most 40 bytes of [a-z0-9-], at least 3
// bytes, never starts or ends with '-', and is unique across tests, processes and
// runs (40 random bits per call), so it is usable as a Redis key prefix or a
// DynamoDB table name. Each call returns a new name. Data named by it must be
// deleted when t ends (DynamoDBTable, RedisPrefix); Main reports what was not.
func UniqueName(t testing.TB) string {
	t.Helper()
	var b [5]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("testenv: UniqueName: %v", err)
	}
	return nameFragment(t.Name()) + "-" + processTag + hex.EncodeToString(b[:])
}

// uniqueName is UniqueName for a fragment that is not a test's name (a pooled
// table's), which Main finds like the others.
func uniqueName(fragment string) string {
	var b [5]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return nameFragment(fragment) + "-" + processTag + hex.EncodeToString(b[:])
}

// nameFragment lowercases s, maps runs of characters outside [a-z0-9] to a single '-',
// trims '-' at both ends, keeps the tail (the subtest names, the most specific part)
// when longer than maxFragment, and returns "t" for an empty result.
func nameFragment(s string) string {
	var sb strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			sb.WriteRune(r)
			dash = false
			continue
		}
		if !dash {
			sb.WriteByte('-')
			dash = true
		}
	}
	f := strings.Trim(sb.String(), "-")
	if len(f) > maxFragment {
		f = strings.Trim(f[len(f)-maxFragment:], "-")
	}
	if f == "" {
		return "t"
	}
	return f
}
