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
