package redisstate_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/redisstate"
)

// TestACLRulesDocumented: the package doc shows the rules the tests give their
// users, word for word.
func TestACLRulesDocumented(t *testing.T) { testenv.CheckRedisRulesDocumented(t, "doc.go") }

// storeSet is one store of each kind and a deduper, on one client and prefix.
type storeSet struct {
	sum   *redisstate.Int64SumStore
	fsum  *redisstate.Float64SumStore
	max   *redisstate.Int64MaxStore
	bytes *redisstate.BytesStore
	dedup *redisstate.Deduper
}

func openStores(t *testing.T, c goredis.UniversalClient, prefix string) storeSet {
	t.Helper()
	var s storeSet
	var err error
	check := func() {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	s.sum, err = redisstate.NewInt64SumStore(c, prefix)
	check()
	s.fsum, err = redisstate.NewFloat64SumStore(c, prefix)
	check()
	s.max, err = redisstate.NewInt64MaxStore(c, prefix)
	check()
	s.bytes, err = redisstate.NewBytesStore(c, prefix, concat{})
	check()
	s.dedup, err = redisstate.NewDeduper(c, prefix)
	check()
	return s
}

var roKeys = []state.Key{{Entity: "a", Bucket: 1}, {Entity: "b", Bucket: 2}, {Entity: "missing"}}

// writes is every write of s, once each; eventID makes the once-writes new.
func (s storeSet) writes(eventID string) map[string]func(ctx context.Context) error {
	k := roKeys[0]
	return map[string]func(ctx context.Context) error{
		"Int64Sum.MergeUpdate": func(ctx context.Context) error { return s.sum.MergeUpdate(ctx, k, 1, 0) },
		"Int64Sum.MergeUpdateOnce": func(ctx context.Context) error {
			_, err := s.sum.MergeUpdateOnce(ctx, eventID, k, 1, time.Hour)
			return err
		},
		"Int64Sum.MergeMany": func(ctx context.Context) error {
			return s.sum.MergeMany(ctx, []state.Update[int64]{{Key: k, Delta: 1}, {Key: roKeys[1], Delta: 2}})
		},
		"Float64Sum.MergeUpdate": func(ctx context.Context) error { return s.fsum.MergeUpdate(ctx, k, 0.5, 0) },
		"Float64Sum.MergeMany": func(ctx context.Context) error {
			return s.fsum.MergeMany(ctx, []state.Update[float64]{{Key: roKeys[1], Delta: 0.25}})
		},
		"Int64Max.MergeUpdate": func(ctx context.Context) error { return s.max.MergeUpdate(ctx, k, 7, 0) },
		"Int64Max.MergeMany": func(ctx context.Context) error {
			return s.max.MergeMany(ctx, []state.Update[int64]{{Key: roKeys[1], Delta: 9}})
		},
		"Bytes.MergeUpdate": func(ctx context.Context) error { return s.bytes.MergeUpdate(ctx, k, []byte("x"), 0) },
		"Bytes.MergeUpdateOnce": func(ctx context.Context) error {
			_, err := s.bytes.MergeUpdateOnce(ctx, eventID, roKeys[1], []byte("y"), time.Hour)
			return err
		},
		"Deduper.MarkSeen": func(ctx context.Context) error { _, err := s.dedup.MarkSeen(ctx, eventID); return err },
		"Deduper.Release":  func(ctx context.Context) error { return s.dedup.Release(ctx, "released-"+eventID) },
	}
}

// reads reads every key of roKeys from every store of s with Get and GetMany,
// and fails t on any error.
func (s storeSet) reads(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	read := func(what string, v any, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		fmt.Fprintf(&b, "%s: %v\n", what, v)
	}
	for _, k := range roKeys {
		v, ok, err := s.sum.Get(ctx, k)
		read("Int64Sum.Get", []any{v, ok}, err)
		f, ok, err := s.fsum.Get(ctx, k)
		read("Float64Sum.Get", []any{f, ok}, err)
		m, ok, err := s.max.Get(ctx, k)
		read("Int64Max.Get", []any{m, ok}, err)
		by, ok, err := s.bytes.Get(ctx, k)
		read("Bytes.Get", []any{string(by), ok}, err)
	}
	vs, oks, err := s.sum.GetMany(ctx, roKeys)
	read("Int64Sum.GetMany", []any{vs, oks}, err)
	fs, oks, err := s.fsum.GetMany(ctx, roKeys)
	read("Float64Sum.GetMany", []any{fs, oks}, err)
	ms, oks, err := s.max.GetMany(ctx, roKeys)
	read("Int64Max.GetMany", []any{ms, oks}, err)
	bs, oks, err := s.bytes.GetMany(ctx, roKeys)
	read("Bytes.GetMany", []any{bs, oks}, err)
	return b.String()
}

// TestStoreReadsWithReadCredentials: with the package doc's reader rules, every
// store's Get and GetMany succeed on values that a user with the writer's rules
// wrote through every write, and read what the writer reads; every write fails
// with the server's NOPERM and changes nothing.
func TestStoreReadsWithReadCredentials(t *testing.T) {
	for _, b := range []backend{realBackend, clusterBackend} {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			admin := b.client(t)
			prefix := prefixFor(t)
			cluster := b.name == "cluster"
			client := func(rules []string) goredis.UniversalClient {
				user, pass := testenv.RedisUser(t, admin, rules...)
				var c goredis.UniversalClient
				if cluster {
					c = goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: testenv.RedisClusterAddrs(t), Username: user, Password: pass})
				} else {
					c = goredis.NewClient(&goredis.Options{Addr: testenv.RedisAddr(t), Username: user, Password: pass})
				}
				return closeWith(t, c)
			}
			writer := openStores(t, client(testenv.RedisWriterRules(prefix, cluster)), prefix)
			reader := openStores(t, client(testenv.RedisReaderRules(prefix, cluster)), prefix)
			for name, w := range writer.writes("e1") {
				if err := w(ctx); err != nil {
					t.Fatalf("writer %s: %v", name, err)
				}
			}
			want := writer.reads(t)
			if got := reader.reads(t); got != want {
				t.Errorf("the reader reads\n%s\nthe writer\n%s", got, want)
			}
			for name, w := range reader.writes("e2") {
				if err := w(ctx); err == nil || !strings.Contains(err.Error(), "NOPERM") {
					t.Errorf("reader %s: %v, want NOPERM", name, err)
				}
			}
			if got := writer.reads(t); got != want {
				t.Errorf("the reader's refused writes changed the values:\n%s\nwant\n%s", got, want)
			}
			if first, err := writer.dedup.MarkSeen(ctx, "e2"); err != nil || !first {
				t.Errorf("MarkSeen(e2) after the reader's refused claim = %v, %v; want true", first, err)
			}
		})
	}
}
