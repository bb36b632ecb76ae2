package redis

import (
	_ "embed"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/state"
)

var (
	//go:embed lua/common.lua
	luaCommon string
	//go:embed lua/incrby.lua
	luaIncrBy string
	//go:embed lua/fsum.lua
	luaFloatSum string
	//go:embed lua/max.lua
	luaMax string
	//go:embed lua/cas.lua
	luaCAS string
	//go:embed lua/dedup.lua
	luaDedup string
)

// The merge scripts: the common head (claim check and finish) followed by one body.
// goredis.Script runs EVALSHA and falls back to EVAL once per server on NOSCRIPT.
var (
	scriptIncrBy   = goredis.NewScript(luaCommon + luaIncrBy)
	scriptFloatSum = goredis.NewScript(luaCommon + luaFloatSum)
	scriptMax      = goredis.NewScript(luaCommon + luaMax)
	scriptCAS      = goredis.NewScript(luaCommon + luaCAS)
	scriptDedup    = goredis.NewScript(luaDedup)
)

// scriptKeys returns the KEYS of a merge script: the value key, plus the claim key
// of eventID for MergeUpdateOnce (once).
func (ks keyspace) scriptKeys(kind string, k state.Key, once bool, eventID string) []string {
	if !once {
		return []string{ks.valueKey(kind, k)}
	}
	return []string{ks.valueKey(kind, k), ks.onceKey(kind, k, eventID)}
}
