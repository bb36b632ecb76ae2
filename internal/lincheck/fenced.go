package lincheck

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// FenceKey is the lease key of every fenced write of the FencedRuns workload.
const FenceKey = "lincheck-holder"

// FencedInput is the input of an operation of the fenced run register: a run
// register operation (RunInput), carrying Fence when it is a write.
type FencedInput struct {
	RunInput
	Fence int64 // PutRun, CASRun: the fence of the write
}

// FencedOutput is the output of an operation of the fenced run register (or
// Unknown): a run register output, or Fenced when the write was refused with
// ErrFenced.
type FencedOutput struct {
	RunOutput
	Fenced bool
}

// fencedState is one run's register and the highest fence that wrote it.
type fencedState struct {
	runState
	fence int64
}

// FencedModel is the sequential specification of the run register under fenced
// writes (package fence), per RunID, with one lease key: a write whose fence is
// below the highest fence that wrote the run is refused (ErrFenced) and changes
// nothing, before anything else is checked; otherwise PutRunState and
// CompareAndSwapRunState behave as in RunModel, and a write that wrote remembers
// its fence. So no history is accepted in which an older holder's write lands
// after a newer holder's.
func FencedModel() porcupine.Model {
	run := RunModel()
	return porcupine.Model{
		Partition: partitionBy(func(in any) string { return in.(FencedInput).RunID }),
		Init:      func() any { return fencedState{} },
		Step: func(st, in, out any) (bool, any) {
			s, i := st.(fencedState), in.(FencedInput)
			unknown := isUnknown(out)
			if i.Op == GetRun {
				var o any = Unknown{}
				if !unknown {
					o = out.(FencedOutput).RunOutput
				}
				ok, _ := run.Step(s.runState, i.RunInput, o)
				return ok, s
			}
			if i.Fence < s.fence { // stale: refused, nothing written
				return unknown || out.(FencedOutput).Fenced, s
			}
			var o any = Unknown{}
			if !unknown {
				fo := out.(FencedOutput)
				if fo.Fenced {
					return false, s
				}
				o = fo.RunOutput
			}
			ok, next := run.Step(s.runState, i.RunInput, o)
			if !ok {
				return false, s
			}
			wrote := i.Op == PutRun || next.(runState) != s.runState
			if wrote {
				return true, fencedState{next.(runState), i.Fence}
			}
			return true, s
		},
		DescribeOperation: func(in, out any) string {
			i := in.(FencedInput)
			var o any = out
			if fo, ok := out.(FencedOutput); ok {
				if fo.Fenced {
					return fmt.Sprintf("[fence %d] %s → fenced", i.Fence, run.DescribeOperation(i.RunInput, RunOutput{}))
				}
				o = fo.RunOutput
			}
			return fmt.Sprintf("[fence %d] %s", i.Fence, run.DescribeOperation(i.RunInput, o))
		},
		DescribeState: func(st any) string {
			s := st.(fencedState)
			return fmt.Sprintf("%s, fence %d", run.DescribeState(s.runState), s.fence)
		},
	}
}

// FencedRuns runs the fenced run-register workload for FencedModel and returns
// its history. cfg.Clients clients over ps (which share one storage) are holders
// of the lease key FenceKey: now and then a client takes the lease over, with a
// fence above every fence handed out so far (a shared counter stands in for the
// Leaser, so no test waits for a lease to expire), and writes through
// provider.Fenced with it; the others go on writing with the fences they hold, as
// holders that paused past their lease and woke up, and every client now and
// then writes with one of its own older fences, so that stale writes happen
// however the scheduler interleaves the clients. Each client runs cfg.Ops
// operations on cfg.Keys run IDs, as RunRegister's: PutRunState, GetRunState and
// mostly CompareAndSwapRunState. ErrFenced is an answer; every other error is an
// unknown outcome.
func FencedRuns(t testing.TB, ctx context.Context, ps []provider.Provider, cfg Config) []porcupine.Operation {
	t.Helper()
	cfg = cfg.withDefaults()
	checkInstances(t, len(ps), cfg)
	rec := NewRecorder()
	var fences atomic.Int64
	runClients(rec, cfg, func(i int, c *Client, r *rand.Rand, more func() bool) {
		p := ps[i%len(ps)]
		type holding struct {
			fence int64
			view  provider.Provider
		}
		var held []holding // every lease this client took, the newest last
		seen := map[string]int{}
		for n := 0; n < cfg.Ops && more(); n++ {
			if len(held) == 0 || r.IntN(6) == 0 { // take the lease over
				f := fences.Add(1)
				view, err := provider.Fenced(p, types.Lease{Key: FenceKey, Token: fmt.Sprint("holder-", i), Fence: f})
				if err != nil {
					t.Error(err)
					return
				}
				held = append(held, holding{f, view})
			}
			h := held[len(held)-1]
			if r.IntN(5) == 0 { // an older holding of this client wakes up
				h = held[r.IntN(len(held))]
			}
			fence, s := h.fence, h.view
			id := fmt.Sprintf("run-%d", r.IntN(cfg.Keys))
			st := statuses[r.IntN(len(statuses))]
			write := func(in RunInput, do func() (RunOutput, error)) (FencedOutput, error) {
				out, err := c.Do(FencedInput{in, fence}, func() (any, error) {
					o, err := do()
					if errors.Is(err, provider.ErrFenced) {
						return FencedOutput{Fenced: true}, nil
					}
					return FencedOutput{RunOutput: o}, err
				})
				return out.(FencedOutput), err
			}
			switch p := r.IntN(10); {
			case p < 2:
				in := RunInput{Op: PutRun, RunID: id, Version: r.IntN(3), Status: st}
				_, _ = write(in, func() (RunOutput, error) {
					return RunOutput{}, s.PutRunState(ctx, types.RunState{RunID: id, PipelineID: Pipeline, Status: st, Version: in.Version})
				})
			case p < 4:
				out, err := c.Do(FencedInput{RunInput: RunInput{Op: GetRun, RunID: id}}, func() (any, error) {
					run, err := s.GetRunState(ctx, id)
					if err != nil || run == nil {
						return FencedOutput{}, err
					}
					return FencedOutput{RunOutput: RunOutput{Found: true, Version: run.Version, Status: run.Status}}, nil
				})
				if o := out.(FencedOutput); err == nil && o.Found {
					seen[id] = o.Version
				}
			default:
				v := seen[id]
				out, err := write(RunInput{Op: CASRun, RunID: id, Version: v, Status: st}, func() (RunOutput, error) {
					ok, err := s.CompareAndSwapRunState(ctx, id, v, types.RunState{RunID: id, PipelineID: Pipeline, Status: st})
					return RunOutput{Swapped: ok}, err
				})
				if err == nil && out.Swapped {
					seen[id] = v + 1
				}
			}
		}
	})
	return withoutIdle(rec.Operations(), func(in any) bool { return in.(FencedInput).Op == GetRun })
}
