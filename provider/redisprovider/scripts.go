package redisprovider

import (
	"context"
	"embed"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/redisx"
	"github.com/pipestate/pipestate/provider"
)

//go:embed lua/*.lua
var luaFS embed.FS

// scriptSources holds the source of every script, for Start's SCRIPT LOAD.
var scriptSources []string

// script is one of the provider's Lua scripts. Scripts run through Provider.run
// (or runBatch), never directly. A read script never writes: it runs with
// EVALSHA_RO (EVAL_RO after NOSCRIPT), which a user whose ACL allows reads only may
// call, and which the server refuses to let write (see internal/redisx).
type script = *redisx.Script

func newScript(name string) script { return loadScript(name, false, "") }

// newFencedScript is newScript for the script of a write that takes a fence:
// the fencing rule (redisx.FenceLua, the one copy of it) and lua/fence.lua (where
// the provider's scripts pass their fence) go before its body.
func newFencedScript(name string) script { return loadScript(name, false, luaFence) }

// luaFence is the rule and lua/fence.lua.
var luaFence = func() string {
	src, err := luaFS.ReadFile("lua/fence.lua")
	if err != nil {
		panic("redis: missing embedded script fence") // a build defect, never input
	}
	return redisx.FenceLua + string(src)
}()

// newRecordScript is newFencedScript for a script that writes a record's
// truth hash: lua/record.lua (how it reads the hash's x and s) goes before its
// body too.
func newRecordScript(name string) script { return loadScript(name, false, luaFence+luaRecord) }

// luaRecord is lua/record.lua.
var luaRecord = func() string {
	src, err := luaFS.ReadFile("lua/record.lua")
	if err != nil {
		panic("redis: missing embedded script record") // a build defect, never input
	}
	return string(src)
}()

// newReadScript is newScript for a script that never writes.
func newReadScript(name string) script { return loadScript(name, true, "") }

// loadScript loads lua/<name>.lua, after head.
func loadScript(name string, ro bool, head string) script {
	body, err := luaFS.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic("redis: missing embedded script " + name) // a build defect, never input
	}
	src := head + string(body)
	scriptSources = append(scriptSources, src)
	return redisx.NewScript(name, src, ro)
}

// The provider's Lua scripts; each touches keys of one hash slot only. The read
// scripts never write.
var (
	scriptIdxApply     = newScript("idx_apply")
	scriptIdxPage      = newReadScript("idx_page")
	scriptIdxExpired   = newReadScript("idx_expired")
	scriptRecordPut    = newRecordScript("record_put")
	scriptRecordDel    = loadScript("record_del", false, luaRecord) // reads s as the writes do
	scriptRunCAS       = newRecordScript("run_cas")
	scriptRunMark      = loadScript("run_mark", false, luaRecord) // reads x as the writes do
	scriptTraits       = newScript("traits")
	scriptTraitsRead   = newReadScript("traits_read")
	scriptZList        = newReadScript("zlist")
	scriptLockAcquire  = newScript("lock_acquire")
	scriptLockRelease  = newScript("lock_release")
	scriptLeaseAcquire = newScript("lease_acquire")
	scriptLeaseRenew   = newScript("lease_renew")
	scriptAppendOnce   = newFencedScript("append_once")
	scriptEventsCheck  = newReadScript("events_check")
	scriptSlotPut      = newFencedScript("slot_put")
	scriptMarkerLog    = newScript("marker_log")
)

// run runs s through p's redisx.Runner: EVALSHA (EVALSHA_RO for a read script),
// sent again with EVAL (EVAL_RO) after NOSCRIPT, which the reload signal records;
// a server without the _RO commands (before Redis 7.0) runs read scripts with
// EVALSHA and EVAL from its first "unknown command" answer on. A read-only
// provider runs read scripts only: a write script fails with ErrReadOnly, unsent
// (the write methods refuse before they get here; this is the backstop).
func (p *Provider) run(ctx context.Context, s script, keys []string, args ...any) *goredis.Cmd {
	if p.life.ReadOnly() && !s.ReadOnly() {
		c := goredis.NewCmd(ctx)
		c.SetErr(provider.ReadOnly("redis", "script "+s.Name()))
		return c
	}
	return p.scripts.Run(ctx, s, keys, args...)
}
