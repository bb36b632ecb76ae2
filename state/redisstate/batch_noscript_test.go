package redisstate_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/redisstate"
)

// flushMidPipeline is a go-redis hook that, once armed, runs the next pipeline's
// first command alone, then SCRIPT FLUSH on the server, then the rest: the scripts
// vanish between two script calls of one batch.
type flushMidPipeline struct {
	armed atomic.Bool
	flush func(ctx context.Context) error
}

func (h *flushMidPipeline) DialHook(next goredis.DialHook) goredis.DialHook { return next }
func (h *flushMidPipeline) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return next
}

func (h *flushMidPipeline) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		if len(cmds) < 2 || !h.armed.Swap(false) {
			return next(ctx, cmds)
		}
		_ = next(ctx, cmds[:1])
		if err := h.flush(ctx); err != nil {
			return err
		}
		return next(ctx, cmds[1:])
	}
}

// TestMergeManyScriptFlushMidPipeline: on a client that groups by entity (a Ring),
// a SCRIPT FLUSH between two script calls of one pipeline leaves the first call
// applied by EVALSHA and the others answered NOSCRIPT: only those are sent again
// with EVAL, so every update applies once.
func TestMergeManyScriptFlushMidPipeline(t *testing.T) {
	m := miniFor(t)
	admin := closeWith(t, goredis.NewClient(&goredis.Options{Addr: m.Addr()}))
	ring := goredis.NewRing(&goredis.RingOptions{Addrs: map[string]string{"one": m.Addr()}})
	closeWith(t, ring)
	h := &flushMidPipeline{flush: func(ctx context.Context) error { return admin.ScriptFlush(ctx).Err() }}
	ring.AddHook(h)
	s, err := redisstate.NewInt64SumStore(ring, prefixFor(t))
	must(t, err)
	must(t, s.MergeMany(t.Context(), []state.Update[int64]{{Key: state.Key{Entity: "warm"}, Delta: 1}}))
	var ups []state.Update[int64]
	var keys []state.Key
	for e := range 4 {
		for b := range 3 {
			k := state.Key{Entity: fmt.Sprint("e", e), Bucket: int64(b)}
			keys = append(keys, k)
			ups = append(ups, state.Update[int64]{Key: k, Delta: int64(10*e + b + 1)})
		}
	}
	h.armed.Store(true)
	must(t, s.MergeMany(t.Context(), ups))
	if h.armed.Load() {
		t.Fatal("the hook did not fire")
	}
	vs, _, err := s.GetMany(t.Context(), keys)
	must(t, err)
	for i, u := range ups {
		if vs[i] != u.Delta {
			t.Errorf("key %v = %d, want %d (applied once)", u.Key, vs[i], u.Delta)
		}
	}
}
