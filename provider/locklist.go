package provider

import (
	"context"
	"regexp"
	"slices"
	"strings"

	"github.com/pipestate/pipestate/types"
)

// LockLister is an optional interface for listing the locks and leases held now,
// for operators (cmd/pipestate's locks list) who do not know the keys. Like
// LockInspector it takes, extends and frees nothing, and what it reports may
// change as soon as it returns. It is a maintenance read, not a hot-path one: on
// the built-in networked backends it visits every lock key ever taken (Redis:
// SCAN of the keyspace; DynamoDB: a Scan of the table); each backend's doc states
// the cost.
type LockLister interface {
	// ListLocks returns what holds each key held now whose name matches the
	// pattern match (see ParseLockPattern; "" matches every key), as
	// GetLockInfo would report it, in key order (bytewise), at most limit. A
	// key that is free (never taken, released, or expired: now >= its expiry)
	// is not listed; every key held, unchanged, for the whole call that falls
	// within the limit is. limit < 1 or a bad pattern is an error wrapping
	// ErrInvalidArgument. A holder that does not decode is skipped and
	// reported (SkipCorrupt), like a corrupt record of any List*.
	ListLocks(ctx context.Context, match string, limit int) ([]types.LockInfo, error)
}

// LockPattern is a parsed ListLocks pattern: a glob over the whole lock key in
// which '*' matches any run of characters (':' and '/' included), '?' any one
// character, and '\' makes the next character literal. Every other character
// matches itself; there are no character classes.
type LockPattern struct {
	re     *regexp.Regexp
	prefix string
}

// ParseLockPattern parses match ("" is "*", every key); a pattern that ends in an
// unfinished '\' is an error wrapping ErrInvalidArgument.
func ParseLockPattern(match string) (*LockPattern, error) {
	if match == "" {
		match = "*"
	}
	var (
		re        strings.Builder
		prefix    strings.Builder
		wildcards bool
	)
	re.WriteString(`^(?s:`)
	for rs, i := []rune(match), 0; i < len(rs); i++ {
		var lit string
		switch rs[i] {
		case '*':
			re.WriteString(`.*`)
			wildcards = true
			continue
		case '?':
			re.WriteString(`.`)
			wildcards = true
			continue
		case '\\':
			if i++; i == len(rs) {
				return nil, Invalidf("lock pattern %q ends in an unfinished '\\'", match)
			}
			lit = string(rs[i])
		default:
			lit = string(rs[i])
		}
		re.WriteString(regexp.QuoteMeta(lit))
		if !wildcards {
			prefix.WriteString(lit)
		}
	}
	re.WriteString(`)$`)
	return &LockPattern{re: regexp.MustCompile(re.String()), prefix: prefix.String()}, nil
}

// Match reports whether key matches the pattern.
func (m *LockPattern) Match(key string) bool { return m.re.MatchString(key) }

// Prefix is the literal start of every key the pattern matches (the pattern up to
// its first wildcard, unescaped), so that a backend can narrow what it reads to
// the keys with that prefix before it applies Match.
func (m *LockPattern) Prefix() string { return m.prefix }

// FirstByKey keeps the first limit values, in the bytewise order of their keys,
// of values seen in any order, in memory bounded by 2*limit values: how a
// backend that reads its lock keys unordered (a Redis SCAN, a DynamoDB Scan)
// finds the ones ListLocks returns. Of values with equal keys the first added is
// kept. The zero value is not usable; use NewFirstByKey.
type FirstByKey[T any] struct {
	limit int
	key   func(T) string
	items []T
}

// NewFirstByKey returns an empty FirstByKey of limit (>= 1) values whose keys
// key returns.
func NewFirstByKey[T any](limit int, key func(T) string) *FirstByKey[T] {
	return &FirstByKey[T]{limit: limit, key: key}
}

// Add notes v.
func (f *FirstByKey[T]) Add(v T) {
	f.items = append(f.items, v)
	if len(f.items) >= 2*f.limit {
		f.trim()
	}
}

// Items returns the first limit values added, in the order of their keys.
func (f *FirstByKey[T]) Items() []T {
	f.trim()
	return slices.Clone(f.items)
}

func (f *FirstByKey[T]) trim() {
	byKey := func(a, b T) int { return strings.Compare(f.key(a), f.key(b)) }
	slices.SortStableFunc(f.items, byKey)
	f.items = slices.CompactFunc(f.items, func(a, b T) bool { return byKey(a, b) == 0 })
	f.items = f.items[:min(f.limit, len(f.items))]
}

// QuoteLockPattern returns a ListLocks pattern that matches exactly key, as
// regexp.QuoteMeta does for a regular expression: add "*" to match the keys
// that start with key.
func QuoteLockPattern(key string) string { return lockPatternQuoter.Replace(key) }

var lockPatternQuoter = strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`)
