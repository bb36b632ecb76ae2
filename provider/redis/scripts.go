package redis

import (
	"context"
	"embed"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/provider"
)

//go:embed lua/*.lua
var luaFS embed.FS

// scriptSources holds the source of every script, for Start's SCRIPT LOAD.
var scriptSources []string

// script is one of the provider's Lua scripts, its source and its name, for the
// reload signal. Scripts run through Provider.run (or runBatch), never directly.
// A read script (ro) never writes: it runs with EVALSHA_RO (EVAL_RO after
// NOSCRIPT), which a user whose ACL allows reads only may call, and which the
// server refuses to let write.
type script struct {
	name, src string
	lua       *goredis.Script
	ro        bool
}

func newScript(name string) script { return loadScript(name, false, "") }

// newFencedScript is newScript for the script of a write that takes a fence:
// lua/fence.lua (the fencing rule, the one copy of it) goes before its body.
func newFencedScript(name string) script { return loadScript(name, false, luaFence) }

// luaFence is lua/fence.lua.
var luaFence = func() string {
	src, err := luaFS.ReadFile("lua/fence.lua")
	if err != nil {
		panic("redis: missing embedded script fence") // a build defect, never input
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
	return script{name, src, goredis.NewScript(src), ro}
}

// cmd returns the EVALSHA command of s on keys and args, or its EVAL command when
// eval is true (EVALSHA_RO and EVAL_RO when ro), with every argument in one slice
// (go-redis's Script methods copy keys and args into a slice of their own).
func (s script) cmd(ctx context.Context, eval, ro bool, keys []string, args []any) *goredis.Cmd {
	a := make([]any, 3+len(keys)+len(args))
	switch {
	case eval && ro:
		a[0], a[1] = "eval_ro", s.src
	case eval:
		a[0], a[1] = "eval", s.src
	case ro:
		a[0], a[1] = "evalsha_ro", s.lua.Hash()
	default:
		a[0], a[1] = "evalsha", s.lua.Hash()
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

// The provider's Lua scripts; each touches keys of one hash slot only. The read
// scripts never write.
var (
	scriptIdxApply     = newScript("idx_apply")
	scriptIdxPage      = newReadScript("idx_page")
	scriptIdxExpired   = newReadScript("idx_expired")
	scriptRecordPut    = newFencedScript("record_put")
	scriptRecordDel    = newScript("record_del")
	scriptRunCAS       = newFencedScript("run_cas")
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

// run runs s with EVALSHA (EVALSHA_RO for a read script) and, when the server
// answers NOSCRIPT (its script cache is empty: first use, a restart, a failover,
// SCRIPT FLUSH), sends it again with EVAL (EVAL_RO), which also caches it (as
// goredis.Script.Run does, plus the signal). A server without the _RO commands
// (before Redis 7.0) runs read scripts with EVALSHA and EVAL from its first
// "unknown command" answer on. A read-only provider runs read scripts only: a
// write script fails with ErrReadOnly, unsent (the write methods refuse before
// they get here; this is the backstop).
func (p *Provider) run(ctx context.Context, s script, keys []string, args ...any) *goredis.Cmd {
	if p.readOnly && !s.ro {
		c := goredis.NewCmd(ctx)
		c.SetErr(provider.ReadOnly("redis", "script "+s.name))
		return c
	}
	ro := s.ro && !p.noRO.Load()
	c := s.cmd(ctx, false, ro, keys, args)
	_ = p.c.Process(ctx, c)
	if ro && isUnknownCommand(c.Err()) {
		p.noRO.Store(true)
		return p.run(ctx, s, keys, args...)
	}
	if !isNoScript(c.Err()) {
		return c
	}
	return p.reload(ctx, s, keys, args...)
}

// reload sends s with EVAL (EVAL_RO for a read script) after the server answered
// NOSCRIPT, recording the reload.
func (p *Provider) reload(ctx context.Context, s script, keys []string, args ...any) *goredis.Cmd {
	p.sig.ScriptLoad(ctx, s.name)
	c := s.cmd(ctx, true, s.ro && !p.noRO.Load(), keys, args)
	_ = p.c.Process(ctx, c)
	return c
}

// isNoScript reports whether err is Redis's NOSCRIPT error.
func isNoScript(err error) bool { return err != nil && goredis.HasErrorPrefix(err, "NOSCRIPT") }

// isUnknownCommand reports whether err is Redis's answer to a command it does not
// have (EVALSHA_RO before Redis 7.0).
func isUnknownCommand(err error) bool {
	return err != nil && (goredis.HasErrorPrefix(err, "unknown command") || // HasErrorPrefix drops "ERR "
		// miniredis runs EVAL_RO but counts XINFO as a write, which Redis does not.
		strings.Contains(err.Error(), "Write commands are not allowed in read-only scripts"))
}
