package redis

import (
	"context"
	_ "embed"
	"strconv"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/redisx"
	"github.com/pipestate/pipestate/state"
)

var (
	//go:embed lua/common.lua
	luaCommon string
	//go:embed lua/incrby.lua
	luaIncrBy string
	//go:embed lua/fsum.lua
	luaFloatSumBody string
	//go:embed lua/max.lua
	luaMax string
	//go:embed lua/cas.lua
	luaCAS string
	//go:embed lua/dedup.lua
	luaDedup string
)

// luaFloatSum is the float sum body with the bounds of the float contract as Lua
// constants (compiled once with the script, not sent and parsed per call).
var luaFloatSum = "local minFloat, maxFloat = " + formatFloat(state.MinFloat64) + ", " + formatFloat(state.MaxFloat64) + "\n" + luaFloatSumBody

// script is a Lua script, run through base.run (internal/redisx).
type script = *redisx.Script

func newEvalScript(name, src string) script { return redisx.NewScript(name, src, false) }

// The merge scripts: the common head (claim check, the fence rule and finish)
// followed by one body.
var (
	scriptIncrBy   = newEvalScript("incrby", head(numericArgs)+luaIncrBy)
	scriptFloatSum = newEvalScript("fsum", head(numericArgs)+luaFloatSum)
	scriptMax      = newEvalScript("max", head(numericArgs)+luaMax)
	scriptCAS      = newEvalScript("cas", head(casArgs)+luaCAS)
	scriptDedup    = newEvalScript("dedup", luaDedup)
)

// The arguments of the merge scripts before a fenced merge's lease key and
// fence: the head's three and the body's (a numeric delta; the compare-and-swap's
// version read, value and version written).
const (
	numericArgs = 3 + 1
	casArgs     = 3 + 3
)

// head is the common head of a merge script whose arguments before the fence's
// are n (see lua/common.lua), after the fencing rule (redisx.FenceLua).
func head(n int) string {
	return redisx.FenceLua + "local fenceAt = " + strconv.Itoa(n+1) + "\n" + luaCommon
}

// args starts a command line of s with nkeys keys, with room for nargs arguments
// after them: EVALSHA, the SHA1, nkeys. The caller appends the keys and the
// arguments, and hands it to run.
func (b *base) args(s script, nkeys, nargs int) []any { return b.scripts.Line(s, nkeys, nargs) }

// run sends the command line args (from b.args) and, when the server answers
// NOSCRIPT (its script cache is empty: a restart, a failover, SCRIPT FLUSH), sends
// it again as EVAL of the source, which also caches it, recording the reload.
// go-redis takes args as they are: no copy, no boxing again.
func (b *base) run(ctx context.Context, s script, args []any) *goredis.Cmd {
	return b.scripts.RunLine(ctx, s, args)
}
