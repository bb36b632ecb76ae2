package redisstate

import (
	"context"
	"fmt"

	"github.com/pipestate/pipestate/fence"
	"github.com/pipestate/pipestate/internal/redisx"
	"github.com/pipestate/pipestate/state"
)

// This file holds the Go side of fenced merges (package fence, state.Fenced):
// the merge scripts' common head (lua/common.lua) applies the rule
// (redisx.FenceLua). Every merge passes its value's fence memory
// (keyspace.fenceKey) as its last key; a fenced one also passes the lease key
// and fence as its last two arguments. An unfenced merge never reads a memory
// nor creates one; it extends an existing one's TTL to its value's.

// refusedFence reports whether res is a fenced merge's refusal {-2, newest}
// (see redisx.RefusedFence).
func refusedFence(res any) (redisx.Refusal, bool) { return redisx.RefusedFence(res) }

// fenceError is the error of a merge of k by the store named name that the
// fence t refused (newest wrote).
// A memory that holds no fence refuses every fenced merge: that error wraps
// ErrCorrupt.
func fenceError(name string, t fence.Token, k state.Key, r redisx.Refusal) error {
	if r.Corrupt != nil {
		return fmt.Errorf("state/redisstate: %s merge: key %q/%d: %w", name, k.Entity, k.Bucket, r.Corrupt)
	}
	return fmt.Errorf("state/redisstate: %s merge: %w", name, fence.Refused(t, fmt.Sprintf("key %q/%d", k.Entity, k.Bucket), r.Newest))
}

// tokenOf returns ctx's fence token, if any.
func tokenOf(ctx context.Context) (fence.Token, bool) { return fence.FromContext(ctx) }
