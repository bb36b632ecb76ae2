package redisprovider

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pipestate/pipestate/internal/redisx"
	"github.com/pipestate/pipestate/provider"
)

// WithRetention sets how long the provider keeps each record kind it writes
// (default provider.DefaultRetention(): 30 days), from each write, by the
// provider's clock (see provider.Retention and "Retention" in the package doc); a
// zero field keeps that kind forever. Its Events and MarkerLog fields do not
// apply: event streams and the marker log are kept by count (WithMaxEvents,
// WithMaxMarkerWrites). A field that is negative or above provider.MaxTTL is
// invalid.
func WithRetention(r provider.Retention) Option {
	return func(p *Provider) error {
		if err := r.Check(); err != nil {
			return fmt.Errorf("redis: WithRetention: %w", err)
		}
		p.retention = r
		return nil
	}
}

// deleteSlack is how long after a record's expiry, by the writer's clock, the
// server deletes its key (PEXPIRE retention + deleteSlack): the provider's clock
// decides when a record disappears, to the microsecond, and the server's TTL
// only reclaims the memory, never before that instant as long as the clocks
// agree within deleteSlack.
const deleteSlack = time.Minute

// tombstoneTTL is how long a deleted pipeline's config hash keeps its sequence:
// it orders the list changes of writes in flight, which end far sooner
// (provisionalGrace, callMemory).
const tombstoneTTL = time.Hour

// pruneBatch is the most expired records of one list or set a write removes:
// each write adds at most one record, so a list shrinks as fast as it grows, and
// no write pays for a long backlog at once.
const pruneBatch = 10

// lifetime is the retention a write gives a record, as script arguments: now and
// the expiry in Unix µs (exp 0: never), and the key's server TTL in ms (0: none).
type lifetime struct{ now, exp, ttl int64 }

// lifetime returns the lifetime of a record written at now with retention d;
// expiry is judged at microsecond granularity (provider.Expiry, truncated).
func lifetimeOf(now time.Time, d time.Duration) lifetime {
	l := lifetime{now: now.UnixMicro()}
	if exp := provider.Expiry(now, d); !exp.IsZero() {
		l.exp, l.ttl = exp.UnixMicro(), redisx.Millis(d+deleteSlack)
	}
	return l
}

// alive reports whether a record whose expiry is exp (Unix µs, 0: never) is
// visible at now, by provider.Live at the microsecond granularity the scripts
// use.
func alive(exp int64, now time.Time) bool {
	return exp == 0 || provider.Live(time.UnixMicro(exp), time.UnixMicro(now.UnixMicro()))
}

// aliveField is alive for the expiry field x of a truth hash as HMGET returns it
// (nil when absent: never expires; a value that is not a number, written by
// hand, never expires either).
func aliveField(x any, now time.Time) bool {
	s, _ := x.(string)
	exp, _ := strconv.ParseInt(s, 10, 64)
	return alive(exp, now)
}

// getLive is getJSON of the JSON field j of the truth hash at key, missing
// when its expiry field x has passed. Its caller has opened the method.
func getLive[T any](ctx context.Context, p *Provider, op string, kind provider.RecordKind, key string, name func() (id, key string)) (*T, error) {
	v, err := p.c.HMGet(ctx, key, "j", "x").Result()
	if err != nil {
		return nil, p.wrap(op, err)
	}
	j, ok := v[0].(string)
	if !ok || !aliveField(v[1], p.now()) {
		return nil, nil
	}
	var out T
	if err := decode(kind, j, &out, name); err != nil {
		return nil, err
	}
	return &out, nil
}

// unprefix splits a stored value "<expiry µs>|<JSON>" (run logs, cascade
// markers, late arrivals) into its expiry and JSON; a value without the prefix,
// written before retention or by hand, never expires and is all JSON.
func unprefix(v string) (exp int64, json string) {
	digits, rest, ok := strings.Cut(v, "|")
	if !ok || digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, v
	}
	exp, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, v
	}
	return exp, rest
}

// expiredCall reads the entries of up to pruneBatch records that list ix's
// expiry index lists as expired at now (see lua/idx_expired.lua); putIndexed
// sends it with its last step, and prune drops what it finds.
func expiredCall(ix index, now time.Time) call {
	return call{scriptIdxExpired, []string{ix.x, ix.h}, []any{now.UnixMicro(), pruneBatch}}
}

// prune drops, from each list of lists, the entries of the records that
// expiredCall found there (pages[i], ID and entry pairs, for lists[i]) whose
// truth (at key(id)) is missing or expired; a record that a later write of its
// truth alone (a CAS) kept alive gets its new expiry in the index instead. It
// costs two round trips (the truths, then the changes), none when nothing
// expired. It runs on the write paths that already write the lists, never on
// reads. An entry a writer stamped less than provisionalGrace ago stays, as in
// a reader's repair.
func (p *Provider) prune(ctx context.Context, op string, lists []index, pages [][]string, key func(id string) string) error {
	var keys []string
	for _, page := range pages {
		for i := 0; i+1 < len(page); i += 2 {
			keys = append(keys, key(page[i]))
		}
	}
	if len(keys) == 0 {
		return nil
	}
	recs, err := p.fetchRecords(ctx, op, keys)
	if err != nil {
		return err
	}
	calls := make([]call, 0, len(recs))
	for l, page := range pages {
		for i := 0; i+1 < len(page); i += 2 {
			id, entry, r := page[i], page[i+1], recs[len(calls)]
			if r.exists && entry != "" {
				calls = append(calls, call{scriptIdxApply, lists[l].keys(), []any{"x", id, strconv.FormatInt(r.exp, 10)}})
			} else {
				calls = append(calls, idxCall(lists[l], "d", id, entry, p.stampBound()))
			}
		}
	}
	_, err = p.runBatch(ctx, op, calls)
	return err
}
