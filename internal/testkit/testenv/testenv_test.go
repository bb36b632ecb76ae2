package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"
)

func TestChoose(t *testing.T) {
	up := func() bool { return true }
	down := func() bool { return false }
	tests := []struct {
		name    string
		env     string
		require bool
		docker  func() bool
		want    plan
	}{
		{"env", "127.0.0.1:1", false, down, planEnv},
		{"env wins over docker", "127.0.0.1:1", false, up, planEnv},
		{"env when required", "127.0.0.1:1", true, nil, planEnv},
		{"docker", "", false, up, planContainer},
		{"docker when required", "", true, up, planContainer},
		{"skip", "", false, down, planSkip},
		{"fatal", "", true, down, planFatal},
		{"no fallback skip", "", false, nil, planSkip},
		{"no fallback fatal", "", true, nil, planFatal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := choose(tt.env, tt.require, tt.docker); got != tt.want {
				t.Errorf("choose(%q, %v) = %v, want %v", tt.env, tt.require, got, tt.want)
			}
		})
	}
}

func TestChooseProbesDockerOnlyWithoutEnv(t *testing.T) {
	probed := false
	probe := func() bool { probed = true; return true }
	choose("127.0.0.1:1", false, probe)
	if probed {
		t.Error("docker probed although the environment names a server")
	}
}

// fakeTB records Skip and Fatal instead of stopping the goroutine.
type fakeTB struct {
	testing.TB
	skipped, failed string
}

func (f *fakeTB) Helper()                        {}
func (f *fakeTB) Name() string                   { return "TestFake" }
func (f *fakeTB) Skip(args ...any)               { f.skipped = fmt.Sprint(args...) }
func (f *fakeTB) Fatalf(format string, a ...any) { f.failed = fmt.Sprintf(format, a...) }

func TestLookup(t *testing.T) {
	tests := []struct {
		name       string
		env        string
		require    string
		want       string
		wantSkip   bool
		wantFailed bool
	}{
		{name: "env", env: " 127.0.0.1:7000 ", want: "127.0.0.1:7000"},
		{name: "env required", env: "127.0.0.1:7000", require: "1", want: "127.0.0.1:7000"},
		{name: "skip", wantSkip: true},
		{name: "skip unless exactly 1", require: "true", wantSkip: true},
		{name: "fatal", require: "1", wantFailed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvRedisClusterAddrs, tt.env)
			t.Setenv(EnvRequireServers, tt.require)
			f := &fakeTB{}
			got := lookup(f, "Redis Cluster", EnvRedisClusterAddrs, nil)
			if got != tt.want {
				t.Errorf("lookup = %q, want %q", got, tt.want)
			}
			if (f.skipped != "") != tt.wantSkip || (f.failed != "") != tt.wantFailed {
				t.Fatalf("skipped=%q failed=%q, want skip=%v fail=%v", f.skipped, f.failed, tt.wantSkip, tt.wantFailed)
			}
			for _, msg := range []string{f.skipped, f.failed} {
				if msg != "" && (!strings.Contains(msg, "make test") || !strings.Contains(msg, EnvRedisClusterAddrs)) {
					t.Errorf("message %q does not say how to run the test", msg)
				}
			}
			if tt.wantFailed && !strings.Contains(f.failed, EnvRequireServers) {
				t.Errorf("failure %q does not name %s", f.failed, EnvRequireServers)
			}
		})
	}
}

func TestSplitAddrs(t *testing.T) {
	got := splitAddrs(" a:1, b:2,,c:3 ,")
	if strings.Join(got, "|") != "a:1|b:2|c:3" {
		t.Errorf("splitAddrs = %q", got)
	}
	if got := splitAddrs(""); len(got) != 0 {
		t.Errorf("splitAddrs(\"\") = %q, want empty", got)
	}
}

func TestNameFragment(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"simple", "TestFoo", "testfoo"},
		{"subtests", "TestFoo/bar_baz#01", "testfoo-bar-baz-01"},
		{"runs collapse", "a//__b", "a-b"},
		{"trim", "/x/", "x"},
		{"empty", "", "t"},
		{"only symbols", "#/_", "t"},
		{"unicode", "TestÄrger/µ", "test-rger"},
		{"long keeps tail", "TestAVeryLongName/with/many/subtests/deep_inside", "subtests-deep-inside"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := nameFragment(tt.in)
			if got != tt.want {
				t.Errorf("nameFragment(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if len(got) > maxFragment {
				t.Errorf("nameFragment(%q) has %d bytes, max %d", tt.in, len(got), maxFragment)
			}
		})
	}
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{1,38}[a-z0-9]$`)

func TestUniqueName(t *testing.T) {
	seen := make(map[string]bool)
	for i := 0; i < 1000; i++ {
		n := UniqueName(t)
		if !nameRE.MatchString(n) {
			t.Fatalf("UniqueName = %q, want 3..40 bytes of [a-z0-9-] not starting or ending with '-'", n)
		}
		if seen[n] {
			t.Fatalf("UniqueName repeated %q", n)
		}
		seen[n] = true
	}
	t.Run(strings.Repeat("x", 100)+"/"+strings.Repeat("é", 50), func(t *testing.T) {
		if n := UniqueName(t); !nameRE.MatchString(n) {
			t.Errorf("UniqueName = %q (%d bytes)", n, len(n))
		}
	})
}

func TestCountRedis(t *testing.T) {
	ctx := context.Background()
	m := miniredis.RunT(t)
	c := goredis.NewClient(&goredis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	n := CountRedis(c)

	steps := []struct {
		name string
		run  func() error
		want int64
	}{
		{"single command", func() error { return c.Set(ctx, "k", "v", 0).Err() }, 1},
		{"do", func() error { return c.Do(ctx, "GET", "k").Err() }, 1},
		{"pipeline", func() error {
			_, err := c.Pipelined(ctx, func(p goredis.Pipeliner) error {
				p.Incr(ctx, "a")
				p.Incr(ctx, "b")
				p.Get(ctx, "k")
				return nil
			})
			return err
		}, 1},
		{"tx pipeline", func() error {
			_, err := c.TxPipelined(ctx, func(p goredis.Pipeliner) error {
				p.Incr(ctx, "a")
				p.Incr(ctx, "b")
				return nil
			})
			return err
		}, 1},
		{"watch", func() error {
			return c.Watch(ctx, func(tx *goredis.Tx) error {
				if err := tx.Get(ctx, "a").Err(); err != nil {
					return err
				}
				_, err := tx.TxPipelined(ctx, func(p goredis.Pipeliner) error {
					p.Incr(ctx, "a")
					return nil
				})
				return err
			}, "a")
		}, 3}, // WATCH, GET, MULTI/EXEC
		{"error reply still counts", func() error {
			if err := c.Do(ctx, "NOSUCHCOMMAND").Err(); err == nil {
				return fmt.Errorf("want an error")
			}
			return nil
		}, 1},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			n.Reset()
			if err := s.run(); err != nil {
				t.Fatal(err)
			}
			if got := n.Load(); got != s.want {
				t.Errorf("counted %d round trips, want %d", got, s.want)
			}
		})
	}
}

func TestCountingHTTPClient(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	hc, n := CountingHTTPClient()
	for i := 0; i < 3; i++ {
		resp, err := hc.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	if got := n.Load(); got != 3 {
		t.Errorf("counted %d requests, want 3", got)
	}
	for _, h := range []string{"attempt=1; max=3", "attempt=2; max=3", "attempt=3; max=3"} {
		req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("amz-sdk-request", h)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	if got := n.Load(); got != 4 {
		t.Errorf("counted %d requests after a first attempt and two SDK retries, want 4", got)
	}
	n.Reset()
	if got := n.Load(); got != 0 {
		t.Errorf("after Reset: %d, want 0", got)
	}
}

// TestRedisWanted: a real-server variant is added when its server is configured or
// servers are required, and only then.
func TestRedisWanted(t *testing.T) {
	for _, tc := range []struct {
		addr, cluster, require string
		want, wantCluster      bool
	}{
		{"", "", "", false, false},
		{"127.0.0.1:6379", "", "", true, false},
		{"", "127.0.0.1:7000", "", false, true},
		{"", "", "1", true, true},
		{" ", "", "0", false, false},
	} {
		t.Setenv(EnvRedisAddr, tc.addr)
		t.Setenv(EnvRedisClusterAddrs, tc.cluster)
		t.Setenv(EnvRequireServers, tc.require)
		if got, gotCluster := RedisWanted(), RedisClusterWanted(); got != tc.want || gotCluster != tc.wantCluster {
			t.Errorf("%+v: RedisWanted %v, RedisClusterWanted %v", tc, got, gotCluster)
		}
	}
}

// TestLeaksFound: what a test leaves behind on the environment's servers is found
// by the check Main runs, reported, and deleted; what RedisPrefix and DynamoDBTable
// clean up is not; nor is a key that only looks alike (a UUID whose last group
// starts with the tag).
func TestLeaksFound(t *testing.T) {
	if os.Getenv(EnvRedisAddr) == "" || os.Getenv(EnvDynamoDBEndpoint) == "" {
		t.Skip("needs REDIS_ADDR and DYNAMODB_ENDPOINT (make test)")
	}
	ctx := context.Background()
	tag := UniqueName(t)[len(UniqueName(t))-8:] // a tag no process uses
	name := func(what string) string { return what + "-" + tag + "0123456789" }
	rc := goredis.NewClient(&goredis.Options{Addr: RedisAddr(t)})
	t.Cleanup(func() { _ = rc.Close() })
	dc := DynamoDBClient(t)
	var user string
	t.Run("cleaned", func(t *testing.T) {
		user, _ = RedisUser(t, rc, "~x:*", "+get")
		if users := rc.ACLUsers(ctx).Val(); !slices.Contains(users, user) {
			t.Fatalf("RedisUser: %s is not among the users %v", user, users)
		}
		if err := rc.Set(ctx, "x:"+RedisPrefix(t)+name("k"), "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		DynamoDBTable(t, dc, name("t"), func(ctx context.Context, name string) error {
			_, err := dc.CreateTable(ctx, smokeTable(name))
			return err
		})
	})
	if err := removeLeaks(tag); err != nil {
		t.Fatalf("after cleanups: %v", err)
	}
	if users := rc.ACLUsers(ctx).Val(); slices.Contains(users, user) {
		t.Fatalf("RedisUser's cleanup left the user %s", user)
	}
	uuid := "x:00000000-0000-0000-0000-" + tag + "abcd"
	for _, k := range []string{name("x:leaked") + ":k", uuid} {
		if err := rc.Set(ctx, k, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { rc.Del(context.Background(), uuid) })
	if err := rc.Do(ctx, "acl", "setuser", name("u")).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := dc.CreateTable(ctx, smokeTable(name("t-leaked"))); err != nil {
		t.Fatal(err)
	}
	err := removeLeaks(tag)
	if err == nil || !strings.Contains(err.Error(), "1 Redis keys") || !strings.Contains(err.Error(), "1 DynamoDB tables") ||
		!strings.Contains(err.Error(), "1 Redis ACL users") {
		t.Fatalf("removeLeaks = %v, want the leaked key, table and ACL user reported", err)
	}
	if err := removeLeaks(tag); err != nil {
		t.Errorf("removeLeaks did not delete what it reported: %v", err)
	}
	if n, err := rc.Exists(ctx, uuid).Result(); err != nil || n != 1 {
		t.Errorf("the UUID key is gone (%d, %v): the check deleted what was not its own", n, err)
	}
}

// TestBlackHole: a black hole accepts a connection and answers nothing.
func TestBlackHole(t *testing.T) {
	conn, err := net.Dial("tcp", BlackHole(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	if err := conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if n, err := conn.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read %d bytes, %v; want a timeout", n, err)
	}
}
