package redisx

import (
	"context"
	"fmt"
	"testing"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"
)

// TestRunnerReloads: each way of running a script sends it with EVAL after
// NOSCRIPT, which caches it, and reports the reload once per resend.
func TestRunnerReloads(t *testing.T) {
	m := miniredis.RunT(t)
	c := goredis.NewClient(&goredis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	var reloads []string
	r := &Runner{Client: c, Reloaded: func(_ context.Context, name string) { reloads = append(reloads, name) }}
	incr := NewScript("incr", "return redis.call('INCRBY', KEYS[1], ARGV[1])", false)
	get := NewScript("get", "return redis.call('GET', KEYS[1])", true)
	ctx := t.Context()

	if n, err := r.Run(ctx, incr, []string{"k"}, 1).Int64(); err != nil || n != 1 {
		t.Fatalf("Run = %d, %v", n, err)
	}
	if n, err := r.Run(ctx, incr, []string{"k"}, 1).Int64(); err != nil || n != 2 {
		t.Fatalf("Run again = %d, %v", n, err)
	}
	c.ScriptFlush(ctx)
	line := append(r.Line(incr, 1, 1), "k", 5)
	if n, err := r.RunLine(ctx, incr, line).Int64(); err != nil || n != 7 {
		t.Fatalf("RunLine = %d, %v", n, err)
	}
	c.ScriptFlush(ctx)
	cmds := r.RunMany(ctx, []Call{{incr, []string{"k"}, []any{1}}, {get, []string{"k"}, nil}})
	if n, err := cmds[0].Int64(); err != nil || n != 8 {
		t.Fatalf("RunMany incr = %d, %v", n, err)
	}
	if v, err := cmds[1].Text(); err != nil || v != "8" {
		t.Fatalf("RunMany get = %q, %v", v, err)
	}
	if got, want := fmt.Sprint(reloads), "[incr incr incr get]"; got != want {
		t.Errorf("reloads %s, want %s", got, want)
	}
}
