package redisprovider

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/testkit/foreignbody"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// TestReindexRunUnderWrites rewrites a run between ReindexRun's read and its
// mark, as a writer of a version before the index would during a rolling
// upgrade (a new version, no mark, no entry): once, and ReindexRun repairs
// from the run as it is now; before every attempt, and it gives up with
// ErrContention after reindexAttempts, leaving the run as the writer left it.
func TestReindexRunUnderWrites(t *testing.T) {
	for _, s := range servers() {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			ps := s.providers(t, 2)
			p, writer, c, wc := ps[0], ps[1], ps[0].c, ps[1].c
			const id = "r-1"
			key, ix := p.k.run(id), p.k.activeRuns()
			version := 0
			oldWrite := func(st types.RunStatus) {
				version++
				must(t, writer.PutRunState(ctx, types.RunState{RunID: id, PipelineID: "p", Status: st, Version: version}))
				must(t, errors.Join(wc.HDel(ctx, key, "a").Err(), wc.ZRem(ctx, ix.z, id).Err(), wc.HDel(ctx, ix.h, id).Err(), wc.ZRem(ctx, ix.x, id).Err()))
			}
			active := func(when string, want ...types.RunState) {
				t.Helper()
				runs, _, err := p.ListActiveRuns(ctx, provider.ActiveRunFilter{}, "", 10)
				must(t, err)
				ok := len(runs) == len(want)
				for i := range want {
					ok = ok && runs[i].RunID == want[i].RunID && runs[i].Version == want[i].Version && runs[i].Status == want[i].Status
				}
				if !ok {
					t.Errorf("ListActiveRuns %s = %+v, want %+v", when, runs, want)
				}
			}
			marks, interfere := 0, 0
			c.AddHook(hookFunc(func(next goredis.ProcessHook) goredis.ProcessHook {
				return func(ctx context.Context, cmd goredis.Cmder) error {
					if isScript(cmd, scriptRunMark, 0, "") {
						if marks++; marks <= interfere {
							oldWrite(types.RunStatus([]types.RunStatus{types.RunPending, types.RunRunning}[marks%2]))
						}
					}
					return next(ctx, cmd)
				}
			}))

			oldWrite(types.RunRunning)
			interfere = 1
			if changed, err := p.ReindexRun(ctx, id); !changed || err != nil {
				t.Fatalf("ReindexRun with one write between its read and its mark = (%v, %v), want (true, nil)", changed, err)
			}
			if marks != 2 {
				t.Errorf("ReindexRun ran run_mark %d times, want 2 (the mark the write beat, then the mark)", marks)
			}
			active("after the repair", types.RunState{RunID: id, Version: version, Status: types.RunRunning})

			oldWrite(types.RunRunning)
			marks, interfere = 0, reindexAttempts
			if _, err := p.ReindexRun(ctx, id); !errors.Is(err, provider.ErrContention) {
				t.Fatalf("ReindexRun with a write before every mark = %v, want ErrContention", err)
			}
			if marks != reindexAttempts {
				t.Errorf("ReindexRun ran run_mark %d times before ErrContention, want %d", marks, reindexAttempts)
			}
			last := types.RunState{RunID: id, Version: version, Status: types.RunStatus([]types.RunStatus{types.RunPending, types.RunRunning}[reindexAttempts%2])}
			got, err := p.GetRunState(ctx, id)
			if err != nil || got == nil || got.Version != last.Version || got.Status != last.Status {
				t.Errorf("GetRunState after ErrContention = %+v, %v; want v%d %s (the last write's)", got, err, last.Version, last.Status)
			}
			active("after ErrContention (the last write removed the entry)")
			if changed, err := p.ReindexRun(ctx, id); !changed || err != nil {
				t.Errorf("ReindexRun once the writes stopped = (%v, %v), want (true, nil)", changed, err)
			}
			active("after the writes stopped and ReindexRun ran", last)
		})
	}
}

// pipelineHookFunc is a goredis.Hook that wraps pipelines only.
type pipelineHookFunc func(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook

func (h pipelineHookFunc) DialHook(next goredis.DialHook) goredis.DialHook { return next }
func (h pipelineHookFunc) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return next
}
func (h pipelineHookFunc) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return h(next)
}

// TestReindexRunBesideCreate creates a run on another instance between
// ReindexRun's read of the missing truth and its read of the entry (which the
// create settled): ReindexRun must not take the entry of the run it found
// missing, whose CASes trust the mark and would never restore it.
func TestReindexRunBesideCreate(t *testing.T) {
	for _, s := range servers() {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			ps := s.providers(t, 2)
			p, creator := ps[0], ps[1]
			const id = "r-1"
			key := p.k.run(id)
			var armed atomic.Bool
			p.c.AddHook(pipelineHookFunc(func(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
				return func(ctx context.Context, cmds []goredis.Cmder) error {
					err := next(ctx, cmds)
					if a := cmds[0].Args(); len(a) > 1 && a[0] == "hmget" && a[1] == key && armed.CompareAndSwap(true, false) {
						created, err := creator.CreateRunState(ctx, types.RunState{RunID: id, PipelineID: "p", Status: types.RunRunning})
						if !created || err != nil {
							t.Errorf("CreateRunState between ReindexRun's reads = %v, %v", created, err)
						}
					}
					return err
				}
			}))
			armed.Store(true)
			if changed, err := p.ReindexRun(ctx, id); changed || err != nil {
				t.Errorf("ReindexRun beside a create = (%v, %v), want (false, nil): the create indexed its run", changed, err)
			}
			if armed.Load() {
				t.Fatal("the create never ran between ReindexRun's reads")
			}
			got, err := p.GetRunState(ctx, id)
			must(t, err)
			for _, when := range []string{"after ReindexRun", "after a CAS"} {
				runs, _, err := p.ListActiveRuns(ctx, provider.ActiveRunFilter{}, "", 10)
				must(t, err)
				if len(runs) != 1 || runs[0].RunID != id {
					t.Errorf("ListActiveRuns %s = %+v, want the unfinished run %s", when, runs, id)
				}
				next := *got
				next.Status = types.RunPending
				ok, err := creator.CompareAndSwapRunState(ctx, id, got.Version, next)
				if !ok || err != nil {
					t.Fatalf("CAS = %v, %v", ok, err)
				}
				got, err = p.GetRunState(ctx, id)
				must(t, err)
			}
		})
	}
}

// TestReindexRunRestoresOrder: an entry whose place in the index's order was
// lost (the sorted set's member deleted by hand, or lost in a failover) is
// repaired, and reported as a change.
func TestReindexRunRestoresOrder(t *testing.T) {
	for _, s := range servers() {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			p := s.providers(t, 1)[0]
			const id = "r-1"
			must(t, p.PutRunState(ctx, types.RunState{RunID: id, PipelineID: "p", Status: types.RunRunning, Version: 1}))
			must(t, p.c.ZRem(ctx, p.k.activeRuns().z, id).Err())
			if changed, err := p.ReindexRun(ctx, id); !changed || err != nil {
				t.Errorf("ReindexRun of a run whose member was lost = (%v, %v), want (true, nil)", changed, err)
			}
			runs, _, err := p.ListActiveRuns(ctx, provider.ActiveRunFilter{}, "", 10)
			must(t, err)
			if len(runs) != 1 || runs[0].RunID != id {
				t.Errorf("ListActiveRuns after ReindexRun = %+v, want %s", runs, id)
			}
			if changed, err := p.ReindexRun(ctx, id); changed || err != nil {
				t.Errorf("ReindexRun again = (%v, %v), want (false, nil)", changed, err)
			}
		})
	}
}

// TestActiveRunsBodyNamingAnotherRun: a run whose stored body names another
// run is corrupt (see package foreignbody): before provider.Decode said so, a
// paging of ListActiveRuns went on from the body's ID forever.
func TestActiveRunsBodyNamingAnotherRun(t *testing.T) {
	for _, s := range servers() {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			p := s.providers(t, 1)[0]
			rename := func(ctx context.Context, id, to string) {
				body, err := p.c.HGet(ctx, p.k.run(id), "j").Result()
				must(t, err)
				must(t, p.c.HSet(ctx, p.k.run(id), "j", strings.Replace(body, `"runId":"`+id+`"`, `"runId":"`+to+`"`, 1)).Err())
			}
			foreignbody.Check(t, p, rename, func(ctx context.Context, id string) any {
				fields, err := p.c.HGetAll(ctx, p.k.run(id)).Result()
				must(t, err)
				return fields
			})
		})
	}
}
