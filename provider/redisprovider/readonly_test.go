package redisprovider

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/ids"
	"github.com/pipestate/pipestate/internal/readcheck"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// TestACLRulesDocumented: the package doc shows the rules the tests give their
// users, word for word.
func TestACLRulesDocumented(t *testing.T) { testenv.CheckRedisRulesDocumented(t, "doc.go") }

// credTarget is a keyspace under a prefix of its own and three clients of it: one
// with every right (to damage the index and look at the keys), one with the
// writer's ACL and one with the reader's.
type credTarget struct {
	admin, writer, reader goredis.UniversalClient
	prefix                string
}

// credTargets are miniredis, whose reader client refuses every command but the
// reads the provider sends (an emulation: miniredis has no ACL), and, when
// configured, a real server and a cluster with ACL users.
func credTargets(t *testing.T) map[string]func(t *testing.T) credTarget {
	targets := map[string]func(t *testing.T) credTarget{
		"miniredis": func(t *testing.T) credTarget {
			addr := miniredis.RunT(t).Addr()
			admin := goredis.NewClient(&goredis.Options{Addr: addr})
			reader := goredis.NewClient(&goredis.Options{Addr: addr})
			reader.AddHook(readsOnly{})
			t.Cleanup(func() { _ = admin.Close(); _ = reader.Close() })
			return credTarget{admin: admin, writer: admin, reader: reader, prefix: "ro"}
		},
	}
	if testenv.RedisWanted() {
		targets["redis"] = func(t *testing.T) credTarget {
			addr := testenv.RedisAddr(t)
			admin := goredis.NewClient(&goredis.Options{Addr: addr})
			t.Cleanup(func() { _ = admin.Close() })
			prefix := "pst:" + testenv.RedisPrefix(t)
			client := func(rules []string) goredis.UniversalClient {
				user, pass := testenv.RedisUser(t, admin, rules...)
				c := goredis.NewClient(&goredis.Options{Addr: addr, Username: user, Password: pass})
				t.Cleanup(func() { _ = c.Close() })
				return c
			}
			return credTarget{admin: admin, writer: client(testenv.RedisWriterRules(prefix, false)), reader: client(testenv.RedisReaderRules(prefix, false)), prefix: prefix}
		}
	}
	if testenv.RedisClusterWanted() {
		targets["cluster"] = func(t *testing.T) credTarget {
			seeds := testenv.RedisClusterAddrs(t)
			admin := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: seeds})
			t.Cleanup(func() { _ = admin.Close() })
			prefix := "pst:" + testenv.RedisPrefix(t)
			client := func(rules []string) goredis.UniversalClient {
				user, pass := testenv.RedisUser(t, admin, rules...)
				c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: seeds, Username: user, Password: pass})
				t.Cleanup(func() { _ = c.Close() })
				return c
			}
			return credTarget{admin: admin, writer: client(testenv.RedisWriterRules(prefix, true)), reader: client(testenv.RedisReaderRules(prefix, true)), prefix: prefix}
		}
	}
	return targets
}

// readsOnly is a go-redis hook that refuses, unsent, every command outside
// emulatedReads, and every pipeline holding one, as a server refuses the
// commands a user's ACL does not allow.
type readsOnly struct{}

// emulatedReads are the commands of the ACL category @read that the provider
// sends, and the others of the reader's rules (plus the connection's handshake).
var emulatedReads = map[string]bool{
	"get": true, "hget": true, "hmget": true, "hscan": true, "scan": true, "lrange": true, "xrange": true, "xrevrange": true,
	"xread": true, "pttl": true, "evalsha_ro": true, "eval_ro": true, "multi": true, "exec": true, "ping": true,
	"hello": true, "client": true,
}

func refused(cmd goredis.Cmder) error {
	if emulatedReads[cmd.Name()] {
		return nil
	}
	return fmt.Errorf("NOPERM (emulated) this user has no permissions to run the '%s' command", cmd.Name())
}

func (readsOnly) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (readsOnly) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if err := refused(cmd); err != nil {
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

func (readsOnly) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		for _, cmd := range cmds {
			if err := refused(cmd); err != nil {
				for _, c := range cmds {
					c.SetErr(err)
				}
				return err
			}
		}
		return next(ctx, cmds)
	}
}

// snapshot returns every key under prefix with its type and value, on every
// master (miniredis has DUMP for strings only), but the call markers of writes.
func snapshot(t *testing.T, c goredis.UniversalClient, prefix string) map[string]string {
	t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	out := map[string]string{}
	each := func(ctx context.Context, n *goredis.Client) error {
		iter := n.Scan(ctx, 0, prefix+":*", 1000).Iterator()
		for iter.Next(ctx) {
			k := iter.Val()
			if strings.Contains(k, callInfix) {
				continue // a write's call marker, which expires on its own
			}
			typ, err := n.Type(ctx, k).Result()
			if err != nil {
				return err
			}
			var v any
			switch typ {
			case "string":
				v, err = n.Get(ctx, k).Result()
			case "hash":
				v, err = n.HGetAll(ctx, k).Result()
			case "zset":
				v, err = n.ZRangeWithScores(ctx, k, 0, -1).Result()
			case "list":
				v, err = n.LRange(ctx, k, 0, -1).Result()
			case "stream":
				v, err = n.XRange(ctx, k, "-", "+").Result()
			}
			if err != nil && !errors.Is(err, goredis.Nil) {
				return err
			}
			mu.Lock()
			out[k] = fmt.Sprintf("%s %v", typ, v)
			mu.Unlock()
		}
		return iter.Err()
	}
	var err error
	switch cc := c.(type) {
	case *goredis.ClusterClient:
		err = cc.ForEachMaster(ctx, each)
	case *goredis.Client:
		err = each(ctx, cc)
	}
	must(t, err)
	return out
}

// TestReadsWithReadCredentials: with credentials that allow reads only (an ACL
// user with the reader's rules), a WithReadOnly provider's every read succeeds on
// a keyspace that a user with the writer's rules populated through every write
// method, including the states on which reads used to write (expired traits, in
// a small and in a large hash; list entries that need repair: provisional, moved,
// of a lost truth), returns what a writer's listing returns after its repairs,
// and changes no key. Every write fails cleanly: with ErrReadOnly on the
// read-only provider, with the server's NOPERM on a provider that may write, and
// nothing changes either way.
func TestReadsWithReadCredentials(t *testing.T) {
	for name, target := range credTargets(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			tg := target(t)
			clock := &settableClock{t: readcheck.At}
			at := clock.now()
			opts := []Option{WithKeyPrefix(tg.prefix), WithClock(clock.now), WithOwner("writer")}
			pw, err := New(tg.writer, opts...)
			must(t, err)
			must(t, pw.Start(ctx)) // SCRIPT LOAD: the writer's rules allow it
			readcheck.Seed(t, pw, 250, func() { clock.add(2 * time.Minute) })
			damageIndexes(t, pw, tg.admin, at)
			before := snapshot(t, tg.admin, tg.prefix)

			pr, err := New(tg.reader, append(opts, WithReadOnly())...)
			must(t, err)
			must(t, pr.Start(ctx))
			got := readcheck.Read(t, pr)
			if after := snapshot(t, tg.admin, tg.prefix); !reflect.DeepEqual(before, after) {
				t.Errorf("the reads changed the keyspace: %d keys before, %d after", len(before), len(after))
			}
			for what, want := range map[string]string{
				"pipelines":    "[billing orders]",
				"runs":         "[r3 r5 r4 r2 r1]",
				"runs limit 2": "[r5 r4]",
				"reruns":       "[rr1]",
				"all reruns":   "[rr3 rr1]",
				"traits":       "[forever live]",
				"big traits":   "250",
			} {
				if got.IDs[what] != want {
					t.Errorf("%s: %s, want %s", what, got.IDs[what], want)
				}
			}

			// Every write fails cleanly, and writes nothing.
			for _, w := range readcheck.Writes(pr) {
				if err := w.Do(ctx); !errors.Is(err, provider.ErrReadOnly) {
					t.Errorf("read-only %s: %v, want an error wrapping ErrReadOnly", w.Name, err)
				}
			}
			pn, err := New(tg.reader, opts...) // may write, but the credentials do not
			must(t, err)
			if err := pn.Start(ctx); !isNoPerm(err) {
				t.Errorf("Start with the reader's credentials: %v, want NOPERM", err)
			}
			for _, w := range readcheck.Writes(pn) {
				if err := w.Do(ctx); !isNoPerm(err) {
					t.Errorf("%s with the reader's credentials: %v, want NOPERM", w.Name, err)
				}
			}
			if after := snapshot(t, tg.admin, tg.prefix); !reflect.DeepEqual(before, after) {
				t.Errorf("the refused writes changed the keyspace: %d keys before, %d after", len(before), len(after))
			}

			// A writer's listings, which repair the index, list what the reader
			// listed; after the repairs, the reader and the writer agree again.
			fromWriter := readcheck.Read(t, pw)
			again := readcheck.Read(t, pr)
			writerAgain := readcheck.Read(t, pw)
			for what, ids := range got.IDs {
				if fromWriter.IDs[what] != ids || again.IDs[what] != writerAgain.IDs[what] {
					t.Errorf("%s: reader %s, writer %s; after the repairs: reader %s, writer %s",
						what, ids, fromWriter.IDs[what], again.IDs[what], writerAgain.IDs[what])
				}
			}
			if !reflect.DeepEqual(got.Values, fromWriter.Values) || !reflect.DeepEqual(again.Values, writerAgain.Values) {
				t.Errorf("the reader's values differ from the writer's:\nreader %v\nwriter %v", got.Values, fromWriter.Values)
			}
		})
	}
}

func isNoPerm(err error) bool {
	var re goredis.Error
	return err != nil && strings.Contains(err.Error(), "NOPERM") && (errors.As(err, &re) || strings.Contains(err.Error(), "emulated"))
}

// damageIndexes leaves list entries that a writer's listing repairs: run r2's
// entry provisional (its writer crashed after its truth), run r3's truth moved to
// a later CreatedAt without its final step, rerun rr2's truth lost, and the
// billing pipeline's entry provisional.
func damageIndexes(t *testing.T, p *Provider, admin goredis.UniversalClient, at time.Time) {
	t.Helper()
	ctx := context.Background()
	provisional := func(ix index, id string) {
		t.Helper()
		entry, err := admin.HGet(ctx, ix.h, id).Result()
		must(t, err)
		_, member, _ := strings.Cut(entry, "|")
		must(t, admin.HSet(ctx, ix.h, id, "0@1|"+member).Err())
	}
	provisional(p.k.runs("orders"), "r2")
	provisional(p.k.globalPipelines(), "billing")
	later := at.Add(10 * time.Hour)
	moved := run("orders", "r3", later)
	data, err := p.encode(moved)
	must(t, err)
	key := p.k.run("r3")
	must(t, lua(scriptRecordPut).Run(ctx, admin, []string{key, p.k.call(key, "n")}, ids.TimeKey(later)+"r3", data, "orders", "strict", 1000, 0, 0, 0,
		"v", 0, "c", later.Format(time.RFC3339Nano), "", "").Err())
	must(t, admin.Del(ctx, p.k.rerun("rr2")).Err())
}

// TestReadOnlyRefusals: a read-only provider refuses every write, also one with
// bad arguments, with ErrReadOnly, after the context's and the lifecycle's
// checks, and sends nothing; Start sends nothing either.
func TestReadOnlyRefusals(t *testing.T) {
	m := miniredis.RunT(t)
	c := goredis.NewClient(&goredis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	counter := testenv.CountRedis(c)
	p, err := New(c, WithReadOnly())
	must(t, err)
	if !p.ReadOnly() {
		t.Fatal("ReadOnly() = false under WithReadOnly")
	}
	ctx := context.Background()
	must(t, p.Start(ctx))
	for _, w := range readcheck.Writes(p) {
		err := w.Do(ctx)
		if !errors.Is(err, provider.ErrReadOnly) || errors.Is(err, provider.ErrInvalidArgument) {
			t.Errorf("%s: %v, want an error wrapping ErrReadOnly (and not ErrInvalidArgument)", w.Name, err)
		}
	}
	if err := p.PutRunState(ctx, types.RunState{}); !errors.Is(err, provider.ErrReadOnly) {
		t.Errorf("PutRunState of an invalid run: %v, want ErrReadOnly", err)
	}
	if n := counter.Load(); n != 0 {
		t.Errorf("Start and the refused writes sent %d round trips, want 0", n)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := p.PutTrait(cancelled, "p", types.TraitEvaluation{TraitType: "t", Status: types.TraitPass}, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("a write with a cancelled context: %v, want context.Canceled", err)
	}
	must(t, p.Stop(ctx))
	if err := p.AppendEvent(ctx, types.Event{PipelineID: "p", Kind: "K"}); !errors.Is(err, provider.ErrClosed) {
		t.Errorf("a write after Stop: %v, want ErrClosed", err)
	}
	// The backstop: a write script never runs on a read-only provider.
	p2, err := New(c, WithReadOnly())
	must(t, err)
	if err := p2.run(ctx, scriptTraits, []string{"a", "a:exp"}, 0, "t", 0, "{}").Err(); !errors.Is(err, provider.ErrReadOnly) {
		t.Errorf("a write script on a read-only provider: %v, want ErrReadOnly", err)
	}
	if n := counter.Load(); n != 0 {
		t.Errorf("%d round trips sent, want 0", n)
	}
}

// TestReadScriptsWithoutRO: on a server without EVALSHA_RO (before Redis 7.0),
// the read scripts run with EVALSHA from the first "unknown command" on.
func TestReadScriptsWithoutRO(t *testing.T) {
	m := miniredis.RunT(t)
	c := goredis.NewClient(&goredis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	var mu sync.Mutex
	var sent []string
	c.AddHook(hookFunc(func(next goredis.ProcessHook) goredis.ProcessHook {
		return func(ctx context.Context, cmd goredis.Cmder) error {
			if n := cmd.Name(); n != "hello" && n != "client" { // the handshake
				mu.Lock()
				sent = append(sent, n)
				mu.Unlock()
			}
			if n := cmd.Name(); n == "evalsha_ro" || n == "eval_ro" {
				err := serverError(fmt.Sprintf("ERR unknown command `%s`, with args beginning with: ", n))
				cmd.SetErr(err)
				return err
			}
			return next(ctx, cmd)
		}
	}))
	p, err := New(c, WithReadOnly())
	must(t, err)
	ctx := context.Background()
	for range 2 {
		if _, err := p.ListRunLogs(ctx, "p", 10); err != nil {
			t.Fatalf("ListRunLogs: %v", err)
		}
	}
	want := "[evalsha_ro evalsha eval evalsha]" // unknown, NOSCRIPT, EVAL; then EVALSHA at once
	if got := fmt.Sprint(sent); got != want {
		t.Errorf("sent %s, want %s", got, want)
	}
}

// serverError is an error as the server answers it (a goredis.Error).
type serverError string

func (e serverError) Error() string { return string(e) }
func (serverError) RedisError()     {}
