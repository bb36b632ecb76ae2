package redis

import (
	"context"
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

// script is a Lua script and its name, for the reload signal.
type script struct {
	name string
	lua  *goredis.Script
}

// The merge scripts: the common head (claim check and finish) followed by one body.
var (
	scriptIncrBy   = script{"incrby", goredis.NewScript(luaCommon + luaIncrBy)}
	scriptFloatSum = script{"fsum", goredis.NewScript(luaCommon + luaFloatSum)}
	scriptMax      = script{"max", goredis.NewScript(luaCommon + luaMax)}
	scriptCAS      = script{"cas", goredis.NewScript(luaCommon + luaCAS)}
	scriptDedup    = script{"dedup", goredis.NewScript(luaDedup)}
)

// run runs s with EVALSHA and, when the server answers NOSCRIPT (its script cache
// is empty: a restart, a failover, SCRIPT FLUSH), sends it again with EVAL, which
// also caches it, recording the reload (as goredis.Script.Run does, plus the record).
func (b *base) run(ctx context.Context, s script, keys []string, args ...any) *goredis.Cmd {
	r := s.lua.EvalSha(ctx, b.client, keys, args...)
	if goredis.HasErrorPrefix(r.Err(), "NOSCRIPT") {
		b.sig.ScriptLoad(ctx, s.name)
		return s.lua.Eval(ctx, b.client, keys, args...)
	}
	return r
}

// scriptKeys returns the KEYS of a merge script: the value key, plus the claim key
// of eventID for MergeUpdateOnce (once).
func (ks keyspace) scriptKeys(kind string, k state.Key, once bool, eventID string) []string {
	if !once {
		return []string{ks.valueKey(kind, k)}
	}
	return []string{ks.valueKey(kind, k), ks.onceKey(kind, k, eventID)}
}
