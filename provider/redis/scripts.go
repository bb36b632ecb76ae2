package redis

import (
	"context"
	"embed"

	goredis "github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFS embed.FS

// scriptSources holds the source of every script, for Start's SCRIPT LOAD.
var scriptSources []string

// script is one of the provider's Lua scripts, its source and its name, for the
// reload signal. Scripts run through Provider.run (or runBatch), never directly.
type script struct {
	name, src string
	lua       *goredis.Script
}

func newScript(name string) script {
	src, err := luaFS.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic("redis: missing embedded script " + name) // a build defect, never input
	}
	scriptSources = append(scriptSources, string(src))
	return script{name, string(src), goredis.NewScript(string(src))}
}

// cmd returns the EVALSHA command of s on keys and args, or its EVAL command when
// eval is true, with every argument in one slice (go-redis's Script methods copy
// keys and args into a slice of their own).
func (s script) cmd(ctx context.Context, eval bool, keys []string, args []any) *goredis.Cmd {
	a := make([]any, 3+len(keys)+len(args))
	a[0], a[1] = "evalsha", s.lua.Hash()
	if eval {
		a[0], a[1] = "eval", s.src
	}
	a[2] = len(keys)
	for i, k := range keys {
		a[3+i] = k
	}
	copy(a[3+len(keys):], args)
	c := goredis.NewCmd(ctx, a...)
	if len(keys) > 0 {
		c.SetFirstKeyPos(3)
	}
	return c
}

// The provider's Lua scripts; each touches keys of one hash slot only.
var (
	scriptIdxApply     = newScript("idx_apply")
	scriptIdxPage      = newScript("idx_page")
	scriptRecordPut    = newScript("record_put")
	scriptRecordDel    = newScript("record_del")
	scriptRunCAS       = newScript("run_cas")
	scriptTraits       = newScript("traits")
	scriptZList        = newScript("zlist")
	scriptLockAcquire  = newScript("lock_acquire")
	scriptLockRelease  = newScript("lock_release")
	scriptLeaseAcquire = newScript("lease_acquire")
	scriptLeaseRenew   = newScript("lease_renew")
	scriptAppendOnce   = newScript("append_once")
	scriptEventsCheck  = newScript("events_check")
	scriptSlotPut      = newScript("slot_put")
	scriptMarkerLog    = newScript("marker_log")
)

// run runs s with EVALSHA and, when the server answers NOSCRIPT (its script cache
// is empty: first use, a restart, a failover, SCRIPT FLUSH), sends it again with
// EVAL, which also caches it (as goredis.Script.Run does, plus the signal).
func (p *Provider) run(ctx context.Context, s script, keys []string, args ...any) *goredis.Cmd {
	c := s.cmd(ctx, false, keys, args)
	if _ = p.c.Process(ctx, c); !isNoScript(c.Err()) {
		return c
	}
	return p.reload(ctx, s, keys, args...)
}

// reload sends s with EVAL after the server answered NOSCRIPT, recording the
// reload.
func (p *Provider) reload(ctx context.Context, s script, keys []string, args ...any) *goredis.Cmd {
	p.sig.ScriptLoad(ctx, s.name)
	c := s.cmd(ctx, true, keys, args)
	_ = p.c.Process(ctx, c)
	return c
}

// isNoScript reports whether err is Redis's NOSCRIPT error.
func isNoScript(err error) bool { return err != nil && goredis.HasErrorPrefix(err, "NOSCRIPT") }
