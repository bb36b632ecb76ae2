package redis

import (
	"embed"

	goredis "github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFS embed.FS

// scriptSources holds the source of every script, for Start's SCRIPT LOAD.
var scriptSources []string

func script(name string) *goredis.Script {
	src, err := luaFS.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic("redis: missing embedded script " + name) // a build defect, never input
	}
	scriptSources = append(scriptSources, string(src))
	return goredis.NewScript(string(src))
}

// The provider's Lua scripts; each touches keys of one hash slot only.
var (
	scriptIdxApply     = script("idx_apply")
	scriptIdxPage      = script("idx_page")
	scriptRecordPut    = script("record_put")
	scriptRecordDel    = script("record_del")
	scriptRunCAS       = script("run_cas")
	scriptTraitPut     = script("trait_put")
	scriptTraitGet     = script("trait_get")
	scriptZList        = script("zlist")
	scriptLockAcquire  = script("lock_acquire")
	scriptLockRelease  = script("lock_release")
	scriptLeaseAcquire = script("lease_acquire")
	scriptLeaseRenew   = script("lease_renew")
	scriptAppendOnce   = script("append_once")
	scriptSlotPut      = script("slot_put")
	scriptMarkerLog    = script("marker_log")
)
