package redisstate

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
	luaFloatSum string
	//go:embed lua/max.lua
	luaMax string
	//go:embed lua/less.lua
	luaLess string
	//go:embed lua/cas.lua
	luaCAS string
	//go:embed lua/dedup.lua
	luaDedup string
)

// floatBounds is the float sum's prelude: the bounds of the float contract as Lua
// constants (compiled once with the script, not sent and parsed per call).
var floatBounds = "local minFloat, maxFloat = " + formatFloat(state.MinFloat64) + ", " + formatFloat(state.MaxFloat64) + "\n"

// script is a Lua script, run through base.run (internal/redisx).
type script = *redisx.Script

func newEvalScript(name, src string) script { return redisx.NewScript(name, src, false) }

// mergeBody is a merge script's body (lua/<name>.lua) with the arguments it takes
// before a fenced merge's lease key and fence (see lua/common.lua) and its
// prelude, Lua it needs defined once per script call.
type mergeBody struct {
	name, prelude, body string
	args                int
}

// The merge bodies, each run by a single-key script (mergeScript) and, for the
// numeric stores, a batch script (batchScript).
var (
	bodyIncrBy   = mergeBody{name: "incrby", body: luaIncrBy, args: numericArgs}
	bodyFloatSum = mergeBody{name: "fsum", prelude: floatBounds, body: luaFloatSum, args: numericArgs}
	bodyMax      = mergeBody{name: "max", prelude: luaLess, body: luaMax, args: numericArgs}
	bodyCAS      = mergeBody{name: "cas", body: luaCAS, args: casArgs}
)

// source is the Lua of a script that runs b: the fencing rule (redisx.FenceLua),
// the common head, b's prelude, b's body as the function merge(KEYS, ARGV), then
// call, which calls merge.
func (b mergeBody) source(call string) string {
	return redisx.FenceLua + "local fenceAt = " + strconv.Itoa(b.args+1) + "\n" + luaCommon + b.prelude +
		"local function merge(KEYS, ARGV)\nlocal decided = claimed(KEYS, ARGV)\nif decided then return decided end\n" +
		b.body + "\nend\n" + call
}

// mergeScript is the single-key script of b: merge called once.
func mergeScript(b mergeBody) script {
	return newEvalScript(b.name, b.source("return merge(KEYS, ARGV)\n"))
}

// The merge scripts.
var (
	scriptIncrBy   = mergeScript(bodyIncrBy)
	scriptFloatSum = mergeScript(bodyFloatSum)
	scriptMax      = mergeScript(bodyMax)
	scriptCAS      = mergeScript(bodyCAS)
	scriptDedup    = newEvalScript("dedup", luaDedup)
)

// The arguments of the merge scripts before a fenced merge's lease key and
// fence: the head's three and the body's (a numeric delta; the compare-and-swap's
// version read, value and version written).
const (
	numericArgs = 3 + 1
	casArgs     = 3 + 3
)

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
