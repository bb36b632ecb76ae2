package redisx

import (
	_ "embed"
	"fmt"
	"strconv"

	"github.com/pipestate/pipestate"
)

// FenceLua is the fencing rule of package fence as Lua functions (fence.lua):
// fence_check(key, lease, value) before a fenced write writes, and
// fence_remember(ttl, key) after any write of a guarded record wrote, fenced
// or not (an existing memory then lives at least as long as the record). The
// provider's and the stores' scripts of those writes start with it and say
// where their fence arguments are.
//
//go:embed fence.lua
var FenceLua string

// FenceMemoryMillis is the TTL in ms that fence_remember gives a memory whose
// TTL is below ms, the server TTL of the record a write wrote: ms plus a slack
// of max(ms/16, 1 minute), so that the writes in the slack after it pay a PTTL
// only. Tests check the scripts against it.
func FenceMemoryMillis(ms int64) int64 { return ms + max(ms/16, 60000) }

// FenceRefusalCode is the first element of a fenced script's refusal:
// {-2, ..., remembered}, the fence its memory remembers last.
const FenceRefusalCode = -2

// Refusal is a fenced script's refusal: the fence the memory remembers, or,
// when what it holds is not a fence (a corrupt memory, which fence.lua refuses
// every fenced write over: it fails closed), Corrupt, an error wrapping
// pipestate.ErrCorrupt that quotes it.
type Refusal struct {
	Newest  int64
	Corrupt error
}

// RefusedFence reports whether res is a fenced script's refusal, and which.
func RefusedFence(res any) (Refusal, bool) {
	a, ok := res.([]any)
	if !ok || len(a) < 2 {
		return Refusal{}, false
	}
	if n, ok := a[0].(int64); !ok || n != FenceRefusalCode {
		return Refusal{}, false
	}
	s, ok := a[len(a)-1].(string)
	if !ok {
		return Refusal{}, false
	}
	newest, err := strconv.ParseInt(s, 10, 64)
	if err != nil || newest < 1 || strconv.FormatInt(newest, 10) != s {
		return Refusal{Corrupt: fmt.Errorf("%w: the fence memory holds %q, not a fence", pipestate.ErrCorrupt, s)}, true
	}
	return Refusal{Newest: newest}, true
}
