package redisstate

import (
	"context"
	"fmt"
	"strconv"

	"github.com/pipestate/pipestate/fence"
	"github.com/pipestate/pipestate/state"
)

// This file holds the Go side of fenced merges (package fence, state.Fenced):
// the merge scripts' common head (lua/common.lua) applies the rule
// (redisx.FenceLua). Every merge passes its value's fence memory
// (keyspace.fenceKey) as its last key; a fenced one also passes the lease key
// and fence as its last two arguments. An unfenced merge never reads a memory
// nor creates one; it extends an existing one's TTL to its value's.

// fenceRefusal is the first element of a fenced merge's refusal {-2, newest}.
const fenceRefusal = -2

// refusedFence reports whether res is a fenced merge's refusal and the fence
// the memory holds.
func refusedFence(res any) (int64, bool) {
	a, ok := res.([]any)
	if !ok || len(a) != 2 {
		return 0, false
	}
	if n, ok := a[0].(int64); !ok || n != fenceRefusal {
		return 0, false
	}
	s, _ := a[1].(string)
	newest, err := strconv.ParseInt(s, 10, 64)
	return newest, err == nil
}

// fenceError is the error of a merge of k by the store named name that the
// fence t refused (newest wrote).
func fenceError(name string, t fence.Token, k state.Key, newest int64) error {
	return fmt.Errorf("state/redisstate: %s merge: %w", name, fence.Refused(t, fmt.Sprintf("key %q/%d", k.Entity, k.Bucket), newest))
}

// tokenOf returns ctx's fence token, if any.
func tokenOf(ctx context.Context) (fence.Token, bool) { return fence.FromContext(ctx) }
