package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/testkit/benchpair"
)

// RedisAddr returns the host:port of a standalone Redis server: REDIS_ADDR if set,
// else a shared redis container when a Docker engine answers, else it skips t (fails
// it under PIPESTATE_REQUIRE_SERVERS=1). The server is shared: isolate keys under
// UniqueName(t).
func RedisAddr(t testing.TB) string {
	t.Helper()
	return lookup(t, "Redis server", EnvRedisAddr, redisContainer.get)
}

// RedisClusterAddrs returns the seed addresses of a Redis Cluster from
// REDIS_CLUSTER_ADDRS (comma-separated host:port), else it skips t (fails it under
// PIPESTATE_REQUIRE_SERVERS=1). There is no container fallback for a cluster.
func RedisClusterAddrs(t testing.TB) []string {
	t.Helper()
	return splitAddrs(lookup(t, "Redis Cluster", EnvRedisClusterAddrs, nil))
}

// splitAddrs splits a comma-separated address list, dropping blanks.
func splitAddrs(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// CountRedis installs a hook on c that counts network round trips and returns the
// counter. What counts as one:
//
//   - one command (Process, Do, Eval, EvalSha, ...);
//   - one Pipeline or TxPipeline (MULTI/EXEC) execution, however many commands it holds;
//   - on a *goredis.ClusterClient (and *goredis.Ring) the hook is installed on every
//     node client through OnNewNode, so a pipeline fanned out to three nodes counts 3,
//     and a MOVED/ASK redirect or cluster topology discovery (CLUSTER SLOTS, COMMAND)
//     counts as the round trip it is. Call CountRedis before the cluster client's first
//     command: node clients created earlier are not hooked. Warm the client up (e.g.
//     one Ping) and Reset the counter before measuring.
//
// Retries performed inside go-redis after a network error are not counted separately.
// Connection handshakes are not counted: go-redis sends them through the same hooks
// when it opens a connection (HELLO, AUTH, SELECT, READONLY, CLIENT SETINFO/SETNAME/
// TRACKING/MAINT_NOTIFICATIONS), so commands with those names, and pipelines made only
// of them, are ignored wherever they come from; otherwise counts would depend on how
// many connections the pool happened to open.
func CountRedis(c goredis.UniversalClient) *Counter {
	n := new(Counter)
	h := countHook{n: n}
	switch cc := c.(type) {
	case *goredis.ClusterClient:
		cc.OnNewNode(func(node *goredis.Client) { node.AddHook(h) })
	case *goredis.Ring:
		cc.OnNewNode(func(shard *goredis.Client) { shard.AddHook(h) })
	default:
		c.AddHook(h)
	}
	return n
}

// countHook is a goredis.Hook that adds one to n per command or pipeline.
type countHook struct{ n *Counter }

func (h countHook) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h countHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if !isHandshake(cmd) {
			h.n.add()
		}
		return next(ctx, cmd)
	}
}

func (h countHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		for _, cmd := range cmds {
			if !isHandshake(cmd) {
				h.n.add()
				break
			}
		}
		return next(ctx, cmds)
	}
}

// isHandshake reports whether cmd is one of the commands go-redis sends while
// initialising a connection.
func isHandshake(cmd goredis.Cmder) bool {
	switch cmd.Name() {
	case "hello", "auth", "select", "readonly":
		return true
	case "client":
		args := cmd.Args()
		if len(args) < 2 {
			return false
		}
		sub, _ := args[1].(string)
		switch strings.ToLower(sub) {
		case "setinfo", "setname", "tracking", "maint_notifications":
			return true
		}
	}
	return false
}

// RedisServerCPU is a benchpair meter of the CPU time c's server process has
// used, in µs (INFO cpu: used_cpu_user + used_cpu_sys): parsing, scripts, replies
// and background work such as expiring keys, the costs a caller's commands bring.
// (INFO commandstats would not do: it counts a script's time and again the
// commands the script calls.) The server must serve nothing else while it is
// read; miniredis keeps no such figures and gives an error.
func RedisServerCPU(c *goredis.Client) benchpair.Meter {
	return benchpair.Meter{Unit: "server-cpu-us", Read: func() (float64, error) {
		info, err := c.Info(context.Background(), "cpu").Result()
		if err != nil {
			return 0, err
		}
		var sum float64
		n := 0
		for line := range strings.Lines(info) {
			name, v, ok := strings.Cut(strings.TrimSpace(line), ":")
			if !ok || (name != "used_cpu_user" && name != "used_cpu_sys") {
				continue
			}
			s, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, fmt.Errorf("INFO cpu %s: %w", name, err)
			}
			sum += s * 1e6
			n++
		}
		if n != 2 {
			return 0, errors.New("the server reports no used_cpu_user and used_cpu_sys")
		}
		return sum, nil
	}}
}

// RedisWanted and RedisClusterWanted report whether a test should add its variant
// on a real standalone server or cluster beside miniredis: the server is
// configured, or servers are required, so that the variant's RedisAddr (or
// RedisClusterAddrs) fails it instead of the variant quietly not running.
func RedisWanted() bool { return strings.TrimSpace(os.Getenv(EnvRedisAddr)) != "" || requireServers() }

// RedisClusterWanted: see RedisWanted.
func RedisClusterWanted() bool {
	return strings.TrimSpace(os.Getenv(EnvRedisClusterAddrs)) != "" || requireServers()
}

// RedisUser creates an ACL user named UniqueName(t), with a random password and
// rules (e.g. "resetkeys", "~app:*", "-@all", "+@read"), on every node that c
// reaches: the server of a *goredis.Client, or each master and replica of a
// *goredis.ClusterClient (ACL SETUSER is per node), and deletes it (ACL DELUSER)
// from each when t ends, also when t fails; a failed create fails t (t.Fatalf), a
// failed delete too (t.Errorf). The user is "on" with the password as its only
// one. Main deletes and reports a user a cleanup missed. It returns the user's
// name and password.
func RedisUser(t testing.TB, c goredis.UniversalClient, rules ...string) (user, password string) {
	t.Helper()
	user = UniqueName(t)
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("testenv: RedisUser: %v", err)
	}
	password = hex.EncodeToString(b[:])
	// Registered first, so that a create that fails on some node is cleaned up.
	t.Cleanup(func() {
		if err := eachNode(c, func(ctx context.Context, n *goredis.Client) error {
			return n.ACLDelUser(ctx, user).Err()
		}); err != nil {
			t.Errorf("testenv: delete ACL user %s: %v", user, err)
		}
	})
	args := append([]any{"acl", "setuser", user, "reset", "on", ">" + password}, toAny(rules)...)
	if err := eachNode(c, func(ctx context.Context, n *goredis.Client) error {
		return n.Do(ctx, args...).Err()
	}); err != nil {
		t.Fatalf("testenv: create ACL user %s: %v", user, err)
	}
	return user, password
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// eachNode runs fn on the server of c, or on every master and replica of a
// cluster, one at a time.
func eachNode(c goredis.UniversalClient, fn func(ctx context.Context, n *goredis.Client) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	switch cc := c.(type) {
	case *goredis.ClusterClient:
		var mu sync.Mutex
		return cc.ForEachShard(ctx, func(ctx context.Context, n *goredis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			return fn(ctx, n)
		})
	case *goredis.Client:
		return fn(ctx, cc)
	}
	return fmt.Errorf("testenv: unsupported Redis client %T", c)
}

// deleteUsers deletes the ACL users whose name leak matches from every node of c
// and returns how many it found.
func deleteUsers(c goredis.UniversalClient, leak *regexp.Regexp) (int, error) {
	var found int
	return found, eachNode(c, func(ctx context.Context, n *goredis.Client) error {
		users, err := n.ACLUsers(ctx).Result()
		if err != nil {
			return err
		}
		for _, u := range users {
			if leak.MatchString(u) {
				found++
				if err := n.ACLDelUser(ctx, u).Err(); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// RedisReaderRules and RedisWriterRules are the ACL rules that the package docs
// of provider/redisprovider and state/redisstate give a reader and a writer of the keys under
// prefix (which holds no glob character), on a single server or, with cluster,
// on every node of a Redis Cluster; the tests give their users these and hold
// the docs to them.
func RedisReaderRules(prefix string, cluster bool) []string {
	r := []string{"resetkeys", "%R~" + prefix + ":*", "resetchannels", "-@all", "+@read", "+evalsha_ro", "+eval_ro", "+multi", "+exec", "+ping"}
	if cluster {
		r = append(r, redisClusterRules...)
	}
	return r
}

// RedisWriterRules: see RedisReaderRules.
func RedisWriterRules(prefix string, cluster bool) []string {
	r := []string{"resetkeys", "~" + prefix + ":*", "resetchannels", "-@all", "+@read", "+@write", "+evalsha", "+eval", "+evalsha_ro", "+eval_ro",
		"+script|load", "+multi", "+exec", "+ping"}
	if cluster {
		r = append(r, redisClusterRules...)
	}
	return r
}

// redisClusterRules is what go-redis's cluster client sends besides: the slot
// map, the command table (it routes by it), and ASKING during a slot migration.
var redisClusterRules = []string{"+cluster|slots", "+command", "+asking"}

// CheckRedisRulesDocumented fails t unless the doc comment in file (a package's
// doc.go) shows the ACL SETUSER lines of RedisReaderRules and RedisWriterRules,
// for prefix P, on a single server and on a cluster, each as a line of its own.
func CheckRedisRulesDocumented(t testing.TB, file string) {
	t.Helper()
	doc, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(doc), "\n//\t", "\n")
	for _, cluster := range []bool{false, true} {
		for who, rules := range map[string][]string{"reader": RedisReaderRules("P", cluster), "writer": RedisWriterRules("P", cluster)} {
			line := "ACL SETUSER pipestate-" + who + " on >PASSWORD " + strings.Join(rules, " ")
			if !strings.Contains(text, "\n"+line+"\n") {
				t.Errorf("%s does not show the rules the tests use:\n%s", file, line)
			}
		}
	}
}

// ResetCommandStats resets c's server's command statistics (CONFIG RESETSTAT),
// which EvalshaUsec reads.
func ResetCommandStats(tb testing.TB, c *goredis.Client) {
	tb.Helper()
	if err := c.ConfigResetStat(context.Background()).Err(); err != nil {
		tb.Fatal(err)
	}
}

// EvalshaUsec returns the server's CPU per EVALSHA call since
// ResetCommandStats, in µs (INFO commandstats, usec_per_call of
// cmdstat_evalsha).
func EvalshaUsec(tb testing.TB, c *goredis.Client) float64 {
	tb.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		tb.Fatal(err)
	}
	for line := range strings.Lines(info) {
		v, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_evalsha:")
		if !ok {
			continue
		}
		for f := range strings.SplitSeq(v, ",") {
			if u, ok := strings.CutPrefix(f, "usec_per_call="); ok {
				n, err := strconv.ParseFloat(u, 64)
				if err != nil {
					tb.Fatal(err)
				}
				return n
			}
		}
	}
	tb.Fatal("no cmdstat_evalsha in INFO commandstats")
	return 0
}
