// Package rediswalk corrupts, one at a time, every field of every key a Redis
// backend wrote, for tests that check each read notices and survives it (issue
// 35's breach class 4): each hash field, string value, list element, sorted-set
// member and stream entry field gets each value of Values (a word where a number
// is read, JSON cut short, empty, a number past int64) and is removed; after each
// case the key is restored as it was (COPY of a backup kept in the key's hash
// slot, so that it runs on a Redis Cluster as on one server or a miniredis).
package rediswalk

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	goredis "github.com/redis/go-redis/v9"
)

// Values are the wrong-shaped values each field gets, by name.
var Values = []struct{ Name, V string }{
	{"word", "seven"},
	{"json", `{"corrupt": tru`},
	{"empty", ""},
	{"huge", "99999999999999999999999"},
}

// Missing is Case.Value's name for a field removed.
const Missing = "missing"

// Case is one corruption: the key, its type, the field (hash field, list index,
// sorted-set member, "<entry ID> <field>" of a stream, "" of a string) and the
// name of the value it got (one of Values, or Missing).
type Case struct {
	Key, Type, Field, Value string
}

func (c Case) String() string {
	return fmt.Sprintf("%s %s %q := %s", c.Type, c.Key, c.Field, c.Value)
}

// Keys returns the keys matching the SCAN pattern match, sorted: of every
// master of a Cluster.
func Keys(ctx context.Context, c goredis.UniversalClient, match string) ([]string, error) {
	var (
		mu   sync.Mutex
		keys []string
	)
	scan := func(ctx context.Context, n goredis.Cmdable) error {
		it := n.Scan(ctx, 0, match, 1000).Iterator()
		for it.Next(ctx) {
			mu.Lock()
			keys = append(keys, it.Val())
			mu.Unlock()
		}
		return it.Err()
	}
	var err error
	if cc, ok := c.(*goredis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, n *goredis.Client) error { return scan(ctx, n) })
	} else {
		err = scan(ctx, c)
	}
	sort.Strings(keys)
	return keys, err
}

// backup is the name of key's backup: in key's hash slot (the first {tag} of
// "walkbak:"+key is key's own, or the whole key when it has none).
func backup(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return "walkbak:" + key
		}
	}
	return "walkbak:{" + key + "}"
}

// Snapshot returns the content of every key matching match (type and every
// field and value, in a canonical text), to compare the data before and after
// an operation that must write nothing. It takes three round trips.
func Snapshot(ctx context.Context, c goredis.UniversalClient, match string) (map[string]string, error) {
	keys, err := Keys(ctx, c, match)
	if err != nil {
		return nil, err
	}
	types := make([]*goredis.StatusCmd, len(keys))
	if _, err := c.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, k := range keys {
			types[i] = p.Type(ctx, k)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	reads := make([]goredis.Cmder, len(keys))
	if _, err := c.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, k := range keys {
			switch types[i].Val() {
			case "string":
				reads[i] = p.Get(ctx, k)
			case "hash":
				reads[i] = p.HGetAll(ctx, k)
			case "list":
				reads[i] = p.LRange(ctx, k, 0, -1)
			case "zset":
				reads[i] = p.ZRangeWithScores(ctx, k, 0, -1)
			case "stream":
				reads[i] = p.XRange(ctx, k, "-", "+")
			}
		}
		return nil
	}); err != nil && !errors.Is(err, goredis.Nil) {
		return nil, err
	}
	out := make(map[string]string, len(keys))
	for i, k := range keys {
		var v any
		switch r := reads[i].(type) {
		case nil:
		case *goredis.MapStringStringCmd:
			v = sorted(r.Val())
		case *goredis.StringCmd:
			v = r.Val()
		case *goredis.StringSliceCmd:
			v = r.Val()
		case *goredis.ZSliceCmd:
			v = r.Val()
		case *goredis.XMessageSliceCmd:
			v = r.Val()
		}
		out[k] = fmt.Sprintf("%s %q", types[i].Val(), fmt.Sprint(v))
	}
	return out, nil
}

// Diff describes how after differs from before ("" when equal).
func Diff(before, after map[string]string) string {
	var d []string
	for k, v := range before {
		if w, ok := after[k]; !ok {
			d = append(d, "removed "+k)
		} else if w != v {
			d = append(d, fmt.Sprintf("changed %s: %s -> %s", k, v, w))
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			d = append(d, "added "+k)
		}
	}
	sort.Strings(d)
	return strings.Join(d, "; ")
}

func sorted(m map[string]string) []string {
	s := make([]string, 0, len(m))
	for k, v := range m {
		s = append(s, k+"="+v)
	}
	sort.Strings(s)
	return s
}

// Walk runs every case on the keys matching match (but those skip returns true
// for, when skip is not nil): it corrupts the field, calls check with the case,
// then restores every key matching match as it was before the walk (so check
// may write), removing the keys it added. A restored key has no TTL: the walk
// may outlast a key's real-time expiry (a 5-minute readiness key, a call's
// outcome), and each case must start from the same keys. It returns the number
// of cases. A failure of Redis itself fails t.
func Walk(t testing.TB, c goredis.UniversalClient, match string, skip func(key string) bool, check func(Case)) int {
	t.Helper()
	ctx := context.Background()
	keys, err := Keys(ctx, c, match)
	if err != nil {
		t.Fatalf("rediswalk: scan %s: %v", match, err)
	}
	all := func(do func(p goredis.Pipeliner, key string)) {
		t.Helper()
		if _, err := c.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for _, k := range keys {
				do(p, k)
			}
			return nil
		}); err != nil {
			t.Fatalf("rediswalk: %v", err)
		}
	}
	all(func(p goredis.Pipeliner, k string) {
		p.Copy(ctx, k, backup(k), 0, true)
		p.Persist(ctx, backup(k))
	})
	defer all(func(p goredis.Pipeliner, k string) { p.Del(ctx, backup(k)) })
	had := make(map[string]bool, len(keys))
	for _, k := range keys {
		had[k] = true
	}
	restore := func() {
		t.Helper()
		now, err := Keys(ctx, c, match)
		if err != nil {
			t.Fatalf("rediswalk: %v", err)
		}
		for _, k := range now {
			if !had[k] {
				if err := c.Del(ctx, k).Err(); err != nil {
					t.Fatalf("rediswalk: %v", err)
				}
			}
		}
		all(func(p goredis.Pipeliner, k string) { p.Copy(ctx, backup(k), k, 0, true) })
	}
	n := 0
	for _, key := range keys {
		if skip != nil && skip(key) {
			continue
		}
		for _, cs := range cases(ctx, t, c, key) {
			if err := cs.apply(ctx, c); err != nil {
				t.Fatalf("rediswalk: %s: %v", cs.Case, err)
			}
			n++
			check(cs.Case)
			restore()
		}
	}
	return n
}

type runnable struct {
	Case
	apply func(ctx context.Context, c goredis.UniversalClient) error
}

type setter = func(ctx context.Context, c goredis.UniversalClient, v string) error
type remover = func(ctx context.Context, c goredis.UniversalClient) error

// cases lists the cases of key.
func cases(ctx context.Context, t testing.TB, c goredis.UniversalClient, key string) []runnable {
	t.Helper()
	typ, err := c.Type(ctx, key).Result()
	if err != nil {
		t.Fatalf("rediswalk: %v", err)
	}
	var out []runnable
	each := func(field string, set setter, remove remover) {
		for _, v := range Values {
			out = append(out, runnable{Case{key, typ, field, v.Name}, func(ctx context.Context, c goredis.UniversalClient) error { return set(ctx, c, v.V) }})
		}
		out = append(out, runnable{Case{key, typ, field, Missing}, remove})
	}
	fail := func(err error) {
		if err != nil {
			t.Fatalf("rediswalk: read %s: %v", key, err)
		}
	}
	switch typ {
	case "string":
		each("", func(ctx context.Context, c goredis.UniversalClient, v string) error {
			return c.SetArgs(ctx, key, v, goredis.SetArgs{KeepTTL: true}).Err()
		}, func(ctx context.Context, c goredis.UniversalClient) error { return c.Del(ctx, key).Err() })
	case "hash":
		fields, err := c.HKeys(ctx, key).Result()
		fail(err)
		sort.Strings(fields)
		for _, f := range fields {
			each(f, func(ctx context.Context, c goredis.UniversalClient, v string) error {
				return c.HSet(ctx, key, f, v).Err()
			},
				func(ctx context.Context, c goredis.UniversalClient) error { return c.HDel(ctx, key, f).Err() })
		}
	case "list":
		n, err := c.LLen(ctx, key).Result()
		fail(err)
		for i := range n {
			each(strconv.FormatInt(i, 10), func(ctx context.Context, c goredis.UniversalClient, v string) error {
				return c.LSet(ctx, key, i, v).Err()
			},
				removeAt(key, i))
		}
	case "zset":
		members, err := c.ZRangeWithScores(ctx, key, 0, -1).Result()
		fail(err)
		for _, m := range members {
			name := fmt.Sprint(m.Member)
			each(name, func(ctx context.Context, c goredis.UniversalClient, v string) error {
				return c.Eval(ctx, `redis.call('ZREM', KEYS[1], ARGV[1]); return redis.call('ZADD', KEYS[1], ARGV[2], ARGV[3])`,
					[]string{key}, name, m.Score, v).Err()
			}, func(ctx context.Context, c goredis.UniversalClient) error { return c.ZRem(ctx, key, name).Err() })
		}
	case "stream":
		entries, err := c.XRange(ctx, key, "-", "+").Result()
		fail(err)
		for i, e := range entries {
			fields := make([]string, 0, len(e.Values))
			for f := range e.Values {
				fields = append(fields, f)
			}
			sort.Strings(fields)
			for _, f := range fields {
				each(e.ID+" "+f, func(ctx context.Context, c goredis.UniversalClient, v string) error {
					return rebuildStream(ctx, c, key, entries, i, f, &v)
				}, func(ctx context.Context, c goredis.UniversalClient) error {
					return rebuildStream(ctx, c, key, entries, i, f, nil)
				})
			}
		}
	case "none": // expired since the walk listed it (a call marker, say)
	default:
		t.Fatalf("rediswalk: key %s of type %s", key, typ)
	}
	return out
}

// removeAt removes element i of the list at key, keeping the others in order.
func removeAt(key string, i int64) remover {
	return func(ctx context.Context, c goredis.UniversalClient) error {
		const mark = "\x00rediswalk-removed"
		if err := c.LSet(ctx, key, i, mark).Err(); err != nil {
			return err
		}
		return c.LRem(ctx, key, 1, mark).Err()
	}
}

// rebuildStream rewrites the stream at key with entries, entry i's field f set
// to *v (removed when v is nil), keeping every ID, the last generated ID and the
// key's TTL.
func rebuildStream(ctx context.Context, c goredis.UniversalClient, key string, entries []goredis.XMessage, i int, f string, v *string) error {
	info, err := c.XInfoStream(ctx, key).Result()
	if err != nil {
		return err
	}
	ttl, err := c.PTTL(ctx, key).Result()
	if err != nil {
		return err
	}
	if err := c.Del(ctx, key).Err(); err != nil {
		return err
	}
	for j, e := range entries {
		names := make([]string, 0, len(e.Values))
		for name := range e.Values {
			names = append(names, name)
		}
		sort.Strings(names)
		var vals []any
		for _, name := range names {
			val := fmt.Sprint(e.Values[name])
			if j == i && name == f {
				if v == nil {
					continue
				}
				val = *v
			}
			vals = append(vals, name, val)
		}
		if len(vals) == 0 {
			vals = []any{"rediswalk", "-"} // an entry holds at least one field
		}
		if err := c.XAdd(ctx, &goredis.XAddArgs{Stream: key, ID: e.ID, Values: vals}).Err(); err != nil {
			return err
		}
	}
	if last := entries[len(entries)-1].ID; info.LastGeneratedID != last {
		// miniredis has no XSETID; its streams keep no ID past their last entry here.
		if err := c.Do(ctx, "XSETID", key, info.LastGeneratedID).Err(); err != nil && !strings.Contains(err.Error(), "unknown command") {
			return err
		}
	}
	if ttl > 0 {
		return c.PExpire(ctx, key, ttl).Err()
	}
	return nil
}
