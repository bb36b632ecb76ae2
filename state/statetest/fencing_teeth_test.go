package statetest_test

import (
	"context"

	"github.com/pipestate/pipestate/fence"
)

// toyFences is a toy store's memory of fenced merges, by stored key; its owner
// locks it.
type toyFences map[string]fence.Set

// admit applies the fencing rule, as flaws f break it, to ctx's merge of key: an
// error wrapping fence.ErrFenced, or the function the merge calls once it wrote.
func (fs toyFences) admit(ctx context.Context, key string, f flaws) (remember func(), err error) {
	t, ok := fence.FromContext(ctx)
	if f.fenceIgnored {
		ok = false
	}
	if !ok {
		if f.fenceUnfencedForgets {
			delete(fs, key)
		}
		return func() {}, nil
	}
	if f.fenceKeysShared {
		t.Key = "every-key"
	}
	if newest, seen := fs[key][t.Key]; f.fenceEqualRefused && seen && newest == t.Fence {
		return nil, fence.Refused(t, key, newest)
	}
	if err := fs[key].Check(t, key); err != nil {
		return nil, err
	}
	return func() {
		if fs[key] == nil {
			fs[key] = fence.Set{}
		}
		fs[key].Remember(t)
	}, nil
}
