package redisstate_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/redisstate"
)

// cancelAfterPipeline is a go-redis hook that, once armed, cancels a context when
// a pipeline has run.
type cancelAfterPipeline struct {
	cancel atomic.Pointer[context.CancelFunc]
}

func (h *cancelAfterPipeline) DialHook(next goredis.DialHook) goredis.DialHook { return next }
func (h *cancelAfterPipeline) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return next
}

func (h *cancelAfterPipeline) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		err := next(ctx, cmds)
		if c := h.cancel.Swap(nil); c != nil {
			(*c)()
		}
		return err
	}
}

// TestMergeManyCancelledBetweenChunks: a ctx cancelled after the first chunk's
// pipeline leaves the first chunk applied (nil entries) and the rest unsent: their
// entries are ctx's error and nothing of them was written.
func TestMergeManyCancelledBetweenChunks(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		c := b.client(t)
		h := &cancelAfterPipeline{}
		c.AddHook(h)
		s, err := redisstate.NewInt64SumStore(c, prefixFor(t))
		must(t, err)
		// Loads the batch script, so that the first chunk takes one pipeline.
		must(t, s.MergeMany(t.Context(), []state.Update[int64]{{Key: state.Key{Entity: "warm"}, Delta: 1}}))
		// One entity: on a cluster every chunk is then one script call to one node,
		// so the first pipeline to end is the whole first chunk (with several
		// entities a chunk is one pipeline per node, sent at once, and cancelling
		// after the first of them cuts the chunk).
		ups := make([]state.Update[int64], state.MergeBatchSize+2)
		keys := make([]state.Key, len(ups))
		for i := range ups {
			keys[i] = state.Key{Entity: "e", Bucket: int64(i)}
			ups[i] = state.Update[int64]{Key: keys[i], Delta: int64(i + 1)}
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		h.cancel.Store(&cancel)
		err = s.MergeMany(ctx, ups)
		var me *state.MergeError
		if !errors.As(err, &me) || len(me.Errs) != len(ups) {
			t.Fatalf("MergeMany = %v, want a *state.MergeError of %d entries", err, len(ups))
		}
		vs, found, err := s.GetMany(t.Context(), keys)
		must(t, err)
		for i := range ups {
			applied := i < state.MergeBatchSize
			if e := me.Errs[i]; applied != (e == nil) || !applied && !errors.Is(e, context.Canceled) {
				t.Errorf("update %d: %v", i, e)
			}
			if found[i] != applied || applied && vs[i] != int64(i+1) {
				t.Errorf("key %v = %d (found %v), want applied %v", keys[i], vs[i], found[i], applied)
			}
		}
	})
}
