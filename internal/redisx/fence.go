package redisx

import _ "embed"

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
