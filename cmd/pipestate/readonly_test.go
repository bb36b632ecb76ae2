package main

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider"
)

// TestReadCredentials: with an ACL user of the reader's rules (those of the
// provider's and the stores' package docs, for both prefixes), every read
// command prints exactly its golden output on redis-server and on the cluster,
// also where a read that may write would repair the index (a provisional entry
// of a run and of a pipeline) or prune (the fixtures' expired trait); every
// write with --yes fails with NOPERM and changes nothing. The user is given
// through PIPESTATE_REDIS_USERNAME and PIPESTATE_REDIS_PASSWORD, and through a
// redis:// URL (standalone and cluster).
func TestReadCredentials(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"redis", "cluster"} {
		t.Run(kind, func(t *testing.T) {
			var (
				h     *harness
				admin goredis.UniversalClient
				seeds []string
			)
			if kind == "cluster" {
				seeds = testenv.RedisClusterAddrs(t)
				h = redisHarness(t, "redis-cluster", strings.Join(seeds, ","), seeds)
				admin = goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: seeds})
			} else {
				addr := testenv.RedisAddr(t)
				h = redisHarness(t, "redis", addr, nil)
				admin = goredis.NewClient(&goredis.Options{Addr: addr})
			}
			t.Cleanup(func() { _ = admin.Close() })
			ctx := context.Background()
			prefix := getenv(h.env)(envPrefix)
			storePrefix := h.storeFlags[1]
			rules := append(testenv.RedisReaderRules(prefix, kind == "cluster"), "%R~"+storePrefix+":*")
			user, pass := testenv.RedisUser(t, admin, rules...)

			// Entries a writer's listing would repair.
			for _, e := range []struct{ key, id string }{
				{prefix + ":{orders}:runs:ids", "r-0001"},
				{prefix + ":{:pipelines}:ids", "billing"},
			} {
				entry, err := admin.HGet(ctx, e.key, e.id).Result()
				if err != nil {
					t.Fatalf("the index entry of %s: %v", e.id, err)
				}
				_, member, _ := strings.Cut(entry, "|")
				if err := admin.HSet(ctx, e.key, e.id, "0@1|"+member).Err(); err != nil {
					t.Fatal(err)
				}
			}

			reader := *h
			reader.env = append(slices.Clone(h.env), envRedisUser+"="+user, envRedisPassword+"="+pass)
			reader.run = func(t *testing.T, args ...string) result { return runBinary(t, reader.env, args...) }
			cursors := eventCursors(t, h)
			for _, c := range readCases {
				t.Run(c.name, func(t *testing.T) {
					r := reader.run(t, expand(c.args, &reader, cursors)...)
					compareGolden(t, &reader, c.name, transcript(t, c, r, &reader, cursors))
				})
			}
			for _, c := range writeCases {
				if !slices.Contains([]string{"run-fail", "lock-release-other", "lock-release"}, c.name) {
					continue // the others stop before they write
				}
				r := reader.run(t, expand(c.args, &reader, cursors)...)
				if r.code != exitError || !strings.Contains(r.stderr, "NOPERM") {
					t.Errorf("%s with the reader's credentials: exit %d, stderr %q; want exit 1 and NOPERM", c.name, r.code, r.stderr)
				}
			}
			run, err := h.open(t, "").GetRunState(ctx, "r-0003")
			if err != nil || run == nil || run.Version != 4 {
				t.Errorf("after the refused run fail: %+v, %v; want version 4", run, err)
			}
			if info, err := h.open(t, "").(provider.LockInspector).GetLockInfo(ctx, "eval:orders:daily"); err != nil || info == nil || info.Owner != "worker-7" {
				t.Errorf("after the refused lock release: %+v, %v; want held by worker-7", info, err)
			}

			// The user in a redis:// URL.
			u := &url.URL{Scheme: "redis", User: url.UserPassword(user, pass)}
			env := []string{envPrefix + "=" + prefix}
			if kind == "cluster" {
				u.Host = seeds[0]
				q := url.Values{}
				for _, s := range seeds[1:] {
					q.Add("addr", s)
				}
				u.RawQuery = q.Encode()
				env = append(env, envRedisCluster+"="+u.String())
			} else {
				u.Host = testenv.RedisAddr(t)
				env = append(env, envRedis+"="+u.String())
			}
			r := runBinary(t, env, "runs", "orders")
			if r.code != exitOK || !strings.Contains(r.stdout, "r-0001") || strings.Contains(r.stdout+r.stderr, pass) {
				t.Errorf("runs with the user in the URL: exit %d\n%s%s\nwant exit 0, the runs, and no password", r.code, r.stdout, r.stderr)
			}
		})
	}
}
