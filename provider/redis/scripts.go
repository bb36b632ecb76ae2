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

// script is one of the provider's Lua scripts and its name, for the reload
// signal. Scripts run through Provider.run (or runBatch), never directly.
type script struct {
	name string
	lua  *goredis.Script
}

func newScript(name string) script {
	src, err := luaFS.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic("redis: missing embedded script " + name) // a build defect, never input
	}
	scriptSources = append(scriptSources, string(src))
	return script{name, goredis.NewScript(string(src))}
}

// The provider's Lua scripts; each touches keys of one hash slot only.
var (
	scriptIdxApply     = newScript("idx_apply")
	scriptIdxPage      = newScript("idx_page")
	scriptRecordPut    = newScript("record_put")
	scriptRecordDel    = newScript("record_del")
	scriptRunCAS       = newScript("run_cas")
	scriptTraitPut     = newScript("trait_put")
	scriptTraitGet     = newScript("trait_get")
	scriptZList        = newScript("zlist")
	scriptLockAcquire  = newScript("lock_acquire")
	scriptLockRelease  = newScript("lock_release")
	scriptLeaseAcquire = newScript("lease_acquire")
	scriptLeaseRenew   = newScript("lease_renew")
	scriptAppendOnce   = newScript("append_once")
	scriptSlotPut      = newScript("slot_put")
	scriptMarkerLog    = newScript("marker_log")
)

// run runs s with EVALSHA and, when the server answers NOSCRIPT (its script cache
// is empty: first use, a restart, a failover, SCRIPT FLUSH), sends it again with
// EVAL, which also caches it (as goredis.Script.Run does, plus the signal).
func (p *Provider) run(ctx context.Context, s script, keys []string, args ...any) *goredis.Cmd {
	if r := s.lua.EvalSha(ctx, p.c, keys, args...); !isNoScript(r.Err()) {
		return r
	}
	return p.reload(ctx, s, keys, args...)
}

// reload sends s with EVAL after the server answered NOSCRIPT, recording the
// reload.
func (p *Provider) reload(ctx context.Context, s script, keys []string, args ...any) *goredis.Cmd {
	p.sig.ScriptLoad(ctx, s.name)
	return s.lua.Eval(ctx, p.c, keys, args...)
}

// isNoScript reports whether err is Redis's NOSCRIPT error.
func isNoScript(err error) bool { return err != nil && goredis.HasErrorPrefix(err, "NOSCRIPT") }
