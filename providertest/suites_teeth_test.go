package providertest_test

import (
	"context"
	"time"

	"github.com/pipestate/pipestate/fence"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// suitesTeeth are the broken backends of the rules of issue 35's "Rules the
// suites do not test yet" (fencing under concurrency, long lease keys, a
// follower's neighbours, read-only handles); init adds them to brokenBackends.
var suitesTeeth = []brokenBackend{
	// The fence is checked and the record written in one atomic step.
	{"fence_check_then_write", "FencingRace/PutRunState",
		func(p full, s *shared) provider.Provider { return fenceCheckThenWrite{p, s.ownFences()} }},
}

func init() { brokenBackends = append(brokenBackends, suitesTeeth...) }

// fenceCheckThenWrite checks a run's fence memory, lets another caller run, and
// then writes: a newer holder's write may land in the gap.
type fenceCheckThenWrite struct {
	full
	f *ownFences
}

func (b fenceCheckThenWrite) PutRunState(ctx context.Context, r types.RunState) error {
	t, ok := fence.FromContext(ctx)
	if !ok {
		return b.full.PutRunState(ctx, r)
	}
	record := "run " + r.RunID
	b.f.mu.Lock()
	err := b.f.sets[record].Check(t, record)
	b.f.mu.Unlock()
	if err != nil {
		return err
	}
	time.Sleep(time.Millisecond) // a round trip between the check and the write
	if err := b.full.PutRunState(unfenced(ctx), r); err != nil {
		return err
	}
	b.f.mu.Lock()
	defer b.f.mu.Unlock()
	b.f.remember(record, t)
	return nil
}
