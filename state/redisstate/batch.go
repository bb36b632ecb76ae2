package redisstate

import (
	"context"
	_ "embed"
	"fmt"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/redisx"
	"github.com/pipestate/pipestate/state"
)

//go:embed lua/batch.lua
var luaBatch string

// batchScript runs the single-key merge body b per key, through the batch
// wrapper (lua/batch.lua): every key is merged by the very code of MergeUpdate.
func batchScript(b mergeBody) script {
	return newEvalScript("batch_"+b.name, b.source(luaBatch))
}

// batchScripts are the batch scripts, by the name of their single-key script.
var batchScripts = map[string]script{
	bodyIncrBy.name:   batchScript(bodyIncrBy),
	bodyFloatSum.name: batchScript(bodyFloatSum),
	bodyMax.name:      batchScript(bodyMax),
}

var (
	_ state.BatchStore[int64]   = (*Int64SumStore)(nil)
	_ state.BatchStore[float64] = (*Float64SumStore)(nil)
	_ state.BatchStore[int64]   = (*Int64MaxStore)(nil)
)

// MergeMany applies every update as MergeUpdate would (see state.BatchStore): one
// pipeline per state.MergeBatchSize updates, sent one after another. In it, one
// batch script merges the keys of each group, each key as MergeUpdate's script does:
// a group is the whole chunk on a single server (a *goredis.Client) and the keys of
// one entity (one hash tag, so one slot) otherwise, so that on a Redis Cluster the
// pipeline goes to each node concurrently. Bad input anywhere is an error wrapping
// state.ErrInvalidArgument before any I/O; an overflow fails its update alone.
func (s *Int64SumStore) MergeMany(ctx context.Context, ups []state.Update[int64]) error {
	return s.n.mergeMany(ctx, ups)
}

// MergeMany applies every update as MergeUpdate would (see state.BatchStore), as
// Int64SumStore.MergeMany does; a sum leaving the float range fails its update
// alone.
func (s *Float64SumStore) MergeMany(ctx context.Context, ups []state.Update[float64]) error {
	return s.n.mergeMany(ctx, ups)
}

// MergeMany applies every update as MergeUpdate would (see state.BatchStore), as
// Int64SumStore.MergeMany does. Max updates are idempotent, so a pipeline that
// go-redis retries after a lost reply changes nothing twice.
func (s *Int64MaxStore) MergeMany(ctx context.Context, ups []state.Update[int64]) error {
	return s.n.mergeMany(ctx, ups)
}

// mergeMany is MergeMany: chunks of state.MergeBatchSize, one pipeline each.
func (s *numeric[V]) mergeMany(ctx context.Context, ups []state.Update[V]) error {
	if err := s.life.Enter(ctx, state.CheckUpdates(s.m, ups)); err != nil {
		return err
	}
	errs := make([]error, len(ups))
	for from := 0; from < len(ups); from += state.MergeBatchSize {
		to := min(from+state.MergeBatchSize, len(ups))
		if err := ctx.Err(); err != nil {
			for i := from; i < len(ups); i++ {
				errs[i] = err
			}
			break
		}
		s.mergeChunk(ctx, ups[from:to], errs[from:to])
	}
	return state.MergeErrors(errs)
}

// batchCall is one batch script call: the updates of one group.
type batchCall struct {
	idx  []int    // indexes of the updates in the chunk
	keys []string // their value keys, then their fence memories
	args []any
	// fences are the fence memories of the updates
	fences []string
	cmd    *goredis.Cmd
}

// mergeChunk merges ups (at most state.MergeBatchSize) in one pipeline, setting
// errs[i] for each update that failed. A pipeline whose scripts the server did not
// know (NOSCRIPT: nothing ran) is sent again with EVAL, which caches them: one
// more round trip.
func (s *numeric[V]) mergeChunk(ctx context.Context, ups []state.Update[V], errs []error) {
	sc := batchScripts[s.script.Name()]
	t, fenced := tokenOf(ctx)
	calls := s.group(ups)
	for _, c := range calls {
		if fenced {
			c.args = append(c.args, t.Key, t.Fence)
		} else {
			c.args = append(c.args, "", "")
		}
	}
	rc := make([]redisx.Call, len(calls))
	for i, c := range calls {
		rc[i] = redisx.Call{Script: sc, Keys: c.keys, Args: c.args}
	}
	for i, cmd := range s.scripts.RunMany(ctx, rc) {
		calls[i].cmd = cmd
	}
	for _, c := range calls {
		replies, err := c.cmd.Slice()
		if err == nil && len(replies) != len(c.idx) {
			err = fmt.Errorf("batch script answered %d replies for %d keys", len(replies), len(c.idx))
		}
		for j, i := range c.idx {
			if err != nil {
				errs[i] = s.wrap("merge many", c.keys[j], err)
			} else if newest, ok := refusedFence(replies[j]); fenced && ok {
				errs[i] = fenceError(s.base.name, t, ups[i].Key, newest)
			} else {
				errs[i] = s.reply("merge many", replies[j], ups[i].Delta, c.keys[j])
			}
		}
	}
}

// reply is the error of one update's reply in a batch script's answer: nil for 1,
// the refusal for -1, the error reply as an error.
func (s *numeric[V]) reply(op string, r any, delta V, key string) error {
	switch r := r.(type) {
	case int64:
		switch {
		case r == replyCorrupt:
			return s.wrap(op, key, fmt.Errorf("%w: the stored value does not decode as the store's type", state.ErrCorrupt))
		case r < 0:
			return state.Invalidf("%s: merging %s into %q would leave the value range", s.base.name, s.format(delta), key)
		}
		return nil
	case error:
		return s.wrap(op, key, r)
	}
	return s.wrap(op, key, fmt.Errorf("unexpected reply %v", r))
}

// replyCorrupt is a merge script's reply when the stored value does not decode
// as the store's type (lua/incrby.lua, fsum.lua, max.lua): nothing written.
const replyCorrupt = -3

// group splits ups into batch script calls: one on a single server, one per
// entity (the keys of one hash tag share a slot) on a cluster or ring, each in the
// order of ups. A call's keys are its value keys, then their fence memories
// (lua/batch.lua); c.fences holds the memories until then.
func (s *numeric[V]) group(ups []state.Update[V]) []*batchCall {
	_, single := s.client.(*goredis.Client)
	var calls []*batchCall
	byEntity := map[string]*batchCall{}
	for i, u := range ups {
		var c *batchCall
		switch {
		case single && len(calls) == 1:
			c = calls[0]
		case !single:
			c = byEntity[u.Key.Entity]
		}
		if c == nil {
			c = &batchCall{}
			calls = append(calls, c)
			if !single {
				byEntity[u.Key.Entity] = c
			}
		}
		c.idx = append(c.idx, i)
		c.keys = append(c.keys, s.keys.valueKey(s.kind, u.Key))
		c.args = append(c.args, redisx.Millis(u.TTL), s.arg(u.Delta))
		c.fences = append(c.fences, s.keys.fenceKey(s.kind, u.Key))
	}
	for _, c := range calls {
		c.keys = append(c.keys, c.fences...)
	}
	return calls
}
