package redis

import (
	"context"
	_ "embed"
	"strconv"

	goredis "github.com/redis/go-redis/v9"

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

// script is a Lua script and its name, for the reload signal.
type script struct {
	name string
	lua  *goredis.Script
}

// evalScript is a script run one call at a time (run), with the heads of its
// command lines boxed once: a call allocates no interface for them.
type evalScript struct {
	script
	sha any // the SHA1 of the source, EVALSHA's argument
	src any // the source, EVAL's argument
}

func newEvalScript(name, src string) evalScript {
	s := goredis.NewScript(src)
	return evalScript{script: script{name, s}, sha: s.Hash(), src: src}
}

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
// are n (see lua/common.lua).
func head(n int) string { return "local fenceAt = " + strconv.Itoa(n+1) + "\n" + luaCommon }

// args starts a command line of s with nkeys keys, with room for nargs arguments
// after them: EVALSHA, the SHA1, nkeys. The caller appends the keys and the
// arguments, and hands it to run.
func (s evalScript) args(nkeys, nargs int) []any {
	a := make([]any, 3, 3+nkeys+nargs)
	a[0], a[1], a[2] = "evalsha", s.sha, nkeys
	return a
}

// run sends the command line args (from s.args) and, when the server answers
// NOSCRIPT (its script cache is empty: a restart, a failover, SCRIPT FLUSH), sends
// it again as EVAL of the source, which also caches it, recording the reload (as
// goredis.Script.Run does, plus the record). go-redis takes args as they are: no
// copy, no boxing again.
func (b *base) run(ctx context.Context, s evalScript, args []any) *goredis.Cmd {
	r := b.eval(ctx, args)
	if err := r.Err(); err != nil && goredis.HasErrorPrefix(err, "NOSCRIPT") {
		b.sig.ScriptLoad(ctx, s.name)
		args[0], args[1] = "eval", s.src
		return b.eval(ctx, args)
	}
	return r
}

// eval sends one EVAL or EVALSHA command line, routed on a cluster by its first key.
func (b *base) eval(ctx context.Context, args []any) *goredis.Cmd {
	cmd := goredis.NewCmd(ctx, args...)
	cmd.SetFirstKeyPos(3)
	_ = b.client.Process(ctx, cmd)
	return cmd
}
