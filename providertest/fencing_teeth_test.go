package providertest_test

import (
	"context"
	"errors"
	"sync"

	"github.com/pipestate/pipestate/fence"
	"github.com/pipestate/pipestate/internal/fencectx"
	"github.com/pipestate/pipestate/internal/testkit/memorytest"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// The broken backends of the Fencing group. Those that keep fences of their own
// (ownFences) strip the token before they call the memory backend, so that only
// their broken rule applies.

// fencingTeeth are the Fencing group's broken backends (see brokenBackends).
var fencingTeeth = []brokenBackend{
	// A backend that ignores the token writes whatever fence it carries.
	{"fence_ignored", "Fencing/AppendEvent/older_refused",
		func(p full, _ *shared) provider.Provider { return fenceIgnored{p} }},
	// A refusal writes nothing.
	{"fence_refusal_writes", "Fencing/PutRunLog/older_refused",
		func(p full, _ *shared) provider.Provider { return fenceRefusalWrites{p} }},
	// Equal fences pass: a holder writes a record many times.
	{"fence_equal_refused", "Fencing/PutRerun/equal_and_newer_pass",
		func(p full, s *shared) provider.Provider { return fenceEqualRefused{p, s.ownFences()} }},
	// Each lease key is remembered apart.
	{"fence_keys_shared", "Fencing/PutReplay/keys_apart",
		func(p full, _ *shared) provider.Provider { return fenceKeysShared{p} }},
	// An unfenced write leaves what a record remembers as it was.
	{"fence_forgot_by_unfenced", "Fencing/WriteCascadeMarker/unfenced_passes_and_forgets_nothing",
		func(p full, s *shared) provider.Provider { return fenceForgotByUnfenced{p, s.ownFences()} }},
	// A refused write does not lower what the record remembers.
	{"fence_last_attempt", "Fencing/PutLateArrival/refusal_remembers_nothing",
		func(p full, s *shared) provider.Provider { return fenceLastAttempt{p, s.ownFences()} }},
	// A CAS that lost on its version wrote nothing, so it remembers nothing.
	{"fence_cas_lost_remembers", "Fencing/cas_checks_fence_before_version",
		func(p full, s *shared) provider.Provider { return fenceCASLostRemembers{p, s.ownFences()} }},
	// The fence is checked before the version.
	{"fence_after_version", "Fencing/cas_checks_fence_before_version",
		func(p full, _ *shared) provider.Provider { return fenceAfterVersion{p} }},
	// What a record remembers lives as long as the record, whatever write
	// extended it last (issue 35: a memory whose life only the first fenced
	// write set).
	{"fence_memory_from_first_write", "Fencing/PutRerun/unfenced_rewrite_keeps_fence_past_first_retention",
		func(p full, s *shared) provider.Provider { return fenceMemoryFromFirstWrite{p, s, s.ownFences()} }},
	// What a record remembers is in the storage, not in one instance.
	{"fence_per_instance", "Fencing/PutRunState/older_refused",
		func(p full, _ *shared) provider.Provider {
			return fencePerInstance{p, &ownFences{sets: map[string]fence.Set{}}}
		}},
}

// ownFences is a broken backend's memory of fences, by record.
type ownFences struct {
	mu   sync.Mutex
	sets map[string]fence.Set
}

// ownFences returns the memory the broken instances of one test share.
func (s *shared) ownFences() *ownFences {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fenceSets == nil {
		s.fenceSets = &ownFences{sets: map[string]fence.Set{}}
	}
	return s.fenceSets
}

// write applies the correct rule to ctx's write of record, then do (with the
// token stripped) if it passes.
func (f *ownFences) write(ctx context.Context, record string, do func(ctx context.Context) error) error {
	t, ok := fence.FromContext(ctx)
	if !ok {
		return do(ctx)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.sets[record].Check(t, record); err != nil {
		return err
	}
	if err := do(unfenced(ctx)); err != nil {
		return err
	}
	f.remember(record, t)
	return nil
}

// remember raises record's fence of t.Key to t.Fence; f must be locked.
func (f *ownFences) remember(record string, t fence.Token) {
	if f.sets[record] == nil {
		f.sets[record] = fence.Set{}
	}
	f.sets[record].Remember(t)
}

// unfenced returns ctx without its token, as a backend that ignores fences sees it.
func unfenced(ctx context.Context) context.Context { return fencectx.With(ctx, nil) }

type fenceIgnored struct{ full }

func (b fenceIgnored) AppendEvent(ctx context.Context, ev types.Event) error {
	return b.full.AppendEvent(unfenced(ctx), ev)
}

// fenceRefusalWrites writes a refused entry anyway.
type fenceRefusalWrites struct{ full }

func (b fenceRefusalWrites) PutRunLog(ctx context.Context, e types.RunLogEntry) error {
	err := b.full.PutRunLog(ctx, e)
	if errors.Is(err, provider.ErrFenced) {
		_ = b.full.PutRunLog(unfenced(ctx), e)
	}
	return err
}

// fenceEqualRefused refuses a fence equal to the remembered one.
type fenceEqualRefused struct {
	full
	f *ownFences
}

func (b fenceEqualRefused) PutRerun(ctx context.Context, r types.RerunRecord) error {
	if t, ok := fence.FromContext(ctx); ok {
		b.f.mu.Lock()
		newest, seen := b.f.sets["rerun "+r.RerunID][t.Key]
		b.f.mu.Unlock()
		if seen && t.Fence == newest {
			return fence.Refused(t, "rerun "+r.RerunID, newest)
		}
	}
	return b.f.write(ctx, "rerun "+r.RerunID, func(ctx context.Context) error { return b.full.PutRerun(ctx, r) })
}

// fenceKeysShared remembers one fence per record, whatever the lease key.
type fenceKeysShared struct{ full }

func (b fenceKeysShared) PutReplay(ctx context.Context, r types.ReplayRequest) error {
	if t, ok := fence.FromContext(ctx); ok {
		ctx = fencectx.With(ctx, fence.Token{Key: "every-key", Fence: t.Fence})
	}
	return b.full.PutReplay(ctx, r)
}

// fenceForgotByUnfenced forgets a record's fences on an unfenced write.
type fenceForgotByUnfenced struct {
	full
	f *ownFences
}

func (b fenceForgotByUnfenced) WriteCascadeMarker(ctx context.Context, pipelineID, scheduleID, date, source string) error {
	record := "marker " + pipelineID + "/" + date
	if _, ok := fence.FromContext(ctx); !ok {
		b.f.mu.Lock()
		delete(b.f.sets, record)
		b.f.mu.Unlock()
	}
	return b.f.write(ctx, record, func(ctx context.Context) error {
		return b.full.WriteCascadeMarker(ctx, pipelineID, scheduleID, date, source)
	})
}

// fenceLastAttempt remembers the fence of the last write it was asked for,
// refused or not.
type fenceLastAttempt struct {
	full
	f *ownFences
}

func (b fenceLastAttempt) PutLateArrival(ctx context.Context, la types.LateArrival) error {
	record := "late " + la.PipelineID + "/" + la.Date
	err := b.f.write(ctx, record, func(ctx context.Context) error { return b.full.PutLateArrival(ctx, la) })
	if t, ok := fence.FromContext(ctx); ok {
		b.f.mu.Lock()
		b.f.sets[record] = fence.Set{t.Key: t.Fence}
		b.f.mu.Unlock()
	}
	return err
}

// fenceCASLostRemembers remembers the fence of a CAS before it compares versions.
type fenceCASLostRemembers struct {
	full
	f *ownFences
}

func (b fenceCASLostRemembers) CompareAndSwapRunState(ctx context.Context, runID string, v int, s types.RunState) (bool, error) {
	t, ok := fence.FromContext(ctx)
	if !ok {
		return b.full.CompareAndSwapRunState(ctx, runID, v, s)
	}
	record := "run " + runID
	b.f.mu.Lock()
	defer b.f.mu.Unlock()
	if err := b.f.sets[record].Check(t, record); err != nil {
		return false, err
	}
	b.f.remember(record, t)
	return b.full.CompareAndSwapRunState(unfenced(ctx), runID, v, s)
}

func (b fenceCASLostRemembers) PutRunState(ctx context.Context, r types.RunState) error {
	return b.f.write(ctx, "run "+r.RunID, func(ctx context.Context) error { return b.full.PutRunState(ctx, r) })
}

// fenceAfterVersion answers a CAS on a stale version false before it checks the
// fence.
type fenceAfterVersion struct{ full }

func (b fenceAfterVersion) CompareAndSwapRunState(ctx context.Context, runID string, v int, s types.RunState) (bool, error) {
	cur, err := b.full.GetRunState(ctx, runID)
	if err != nil || cur == nil || cur.Version != v {
		return false, err
	}
	return b.full.CompareAndSwapRunState(ctx, runID, v, s)
}

// fencePerInstance remembers fences in the instance, not in the storage.
type fencePerInstance struct {
	full
	f *ownFences
}

func (b fencePerInstance) PutRunState(ctx context.Context, r types.RunState) error {
	return b.f.write(ctx, "run "+r.RunID, func(ctx context.Context) error { return b.full.PutRunState(ctx, r) })
}

// fenceMemoryFromFirstWrite forgets what a rerun remembers one rerun retention after
// the fenced write that started remembering, as a backend whose fence memory
// takes its TTL from the first fenced write only does: the rerun, rewritten
// since, outlives it.
type fenceMemoryFromFirstWrite struct {
	full
	s *shared
	f *ownFences
}

func (b fenceMemoryFromFirstWrite) PutRerun(ctx context.Context, r types.RerunRecord) error {
	record := "rerun " + r.RerunID
	if _, ok := fence.FromContext(ctx); ok {
		b.s.mu.Lock()
		exp, set := b.s.expiries[record]
		now := b.s.now()
		if set && !now.Before(exp) {
			b.f.mu.Lock()
			delete(b.f.sets, record)
			b.f.mu.Unlock()
			set = false
		}
		if !set {
			b.s.expiries[record] = now.Add(memorytest.Retention.Reruns)
		}
		b.s.mu.Unlock()
	}
	return b.f.write(ctx, record, func(ctx context.Context) error { return b.full.PutRerun(ctx, r) })
}
