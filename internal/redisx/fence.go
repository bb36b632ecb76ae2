package redisx

import _ "embed"

// FenceLua is the fencing rule of package fence as Lua functions (fence.lua):
// fence_check(key, lease, value) before a fenced write writes, and
// fence_remember(ttl) after it wrote. The provider's and the stores' fenced
// scripts start with it and say where their fence arguments are.
//
//go:embed fence.lua
var FenceLua string
