package redisprovider

import (
	"context"
	"fmt"

	"github.com/pipestate/pipestate/fence"
	"github.com/pipestate/pipestate/internal/redisx"
	"github.com/pipestate/pipestate/provider"
)

// This file holds the Go side of fenced writes (package fence): the scripts of
// the writes that may take a fence start with the rule (redisx.FenceLua) and
// lua/fence.lua, and every call of them, fenced or not, passes its record's
// fence memory after the script's own keys and the lease key and fence as its
// last two arguments ("" and "" unfenced). An unfenced call never reads a
// memory nor creates one; it makes an existing one live at least as long as
// the record it wrote, so that a memory never expires before a record it
// guards, whatever write extended the record last.

// fenceArgs appends memory (when not "": the record has one) to keys and ctx's
// fence token, or "" and "" when ctx carries none, to args; it returns them,
// the token and whether the call is fenced.
func fenceArgs(ctx context.Context, memory string, keys []string, args []any) ([]string, []any, fence.Token, bool) {
	if memory != "" {
		keys = append(keys, memory)
	}
	t, ok := fence.FromContext(ctx)
	return keys, appendFence(args, t, ok), t, ok
}

// appendFence appends the lease key and fence of t to args when fenced, else
// "" and "".
func appendFence(args []any, t fence.Token, fenced bool) []any {
	if !fenced {
		return append(args, "", "")
	}
	return append(args, t.Key, t.Fence)
}

// refusedFence is a fenced script's refusal: {-2, ..., newest}, the remembered
// fence last (see redisx.RefusedFence).
func refusedFence(res any) (redisx.Refusal, bool) { return redisx.RefusedFence(res) }

// fenceRefusal is the first element of a fenced script's refusal.
const fenceRefusal = redisx.FenceRefusalCode

// fenceError is the error of a fenced write of op that the fence refused: record
// is what it was to write, of kind.
// A memory that holds no fence refuses every fenced write: that error wraps
// ErrCorrupt.
func fenceError(op string, t fence.Token, kind provider.RecordKind, record string, r redisx.Refusal) error {
	if r.Corrupt != nil {
		return fmt.Errorf("redis: %s: %s %s: %w", op, kind, record, r.Corrupt)
	}
	return fmt.Errorf("redis: %s: %w", op, fence.Refused(t, fmt.Sprintf("%s %s", kind, record), r.Newest))
}

// fenceReply is the outcome of a fenced script whose other replies are
// integers: the integer, or the refusal's error (see fenceError).
func fenceReply(op string, res any, t fence.Token, kind provider.RecordKind, record string) (int64, error) {
	if newest, ok := refusedFence(res); ok {
		return 0, fenceError(op, t, kind, record, newest)
	}
	n, ok := res.(int64)
	if !ok {
		return 0, fmt.Errorf("redis: %s: unexpected script reply %v", op, res)
	}
	return n, nil
}
