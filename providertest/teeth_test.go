package providertest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/memory"
	"github.com/pipestate/pipestate/providertest"
	"github.com/pipestate/pipestate/types"
)

// The teeth tests prove that the suite fails broken backends. Each broken backend
// wraps the memory one and overrides one method; TestTeeth runs the group of the
// suite that must catch it on it in a subprocess (TestBrokenBackend, selected by
// brokenEnv) and expects a non-zero exit whose output names the subtest that
// catches the fault.

const brokenEnv = "PROVIDERTEST_BROKEN"

// full is everything the memory provider implements; the wrappers embed it so
// that the optional interfaces stay visible.
type full interface {
	provider.Provider
	provider.Leaser
	provider.CascadeReader
}

// shared is state the broken instances of one test share, keyed by t.Name().
type shared struct {
	mu        sync.Mutex
	instances []full
	appends   map[string]int
	held      map[full]map[string]bool
	stored    map[string]*types.PipelineConfig
	listing   int
	hidden    map[string]bool
	tokens    map[string]string
}

var sharedByTest sync.Map // t.Name() -> *shared

func sharedOf(t *testing.T) *shared {
	v, _ := sharedByTest.LoadOrStore(t.Name(), &shared{
		appends: map[string]int{},
		held:    map[full]map[string]bool{},
		stored:  map[string]*types.PipelineConfig{},
		hidden:  map[string]bool{},
		tokens:  map[string]string{},
	})
	return v.(*shared)
}

// casIgnoresVersion swaps whatever the stored version is.
type casIgnoresVersion struct{ full }

func (b casIgnoresVersion) CompareAndSwapRunState(ctx context.Context, runID string, _ int, s types.RunState) (bool, error) {
	cur, err := b.full.GetRunState(ctx, runID)
	if err != nil || cur == nil {
		return false, err
	}
	return b.full.CompareAndSwapRunState(ctx, runID, cur.Version, s)
}

// casOverwritesCreatedAt stores newState's CreatedAt through CAS.
type casOverwritesCreatedAt struct{ full }

func (b casOverwritesCreatedAt) CompareAndSwapRunState(ctx context.Context, runID string, v int, s types.RunState) (bool, error) {
	ok, err := b.full.CompareAndSwapRunState(ctx, runID, v, s)
	if !ok || err != nil {
		return ok, err
	}
	cur, err := b.full.GetRunState(ctx, runID)
	if err != nil || cur == nil {
		return ok, err
	}
	cur.CreatedAt = s.CreatedAt
	return true, b.full.PutRunState(ctx, *cur)
}

// truncatesTimes keeps only milliseconds of CreatedAt.
type truncatesTimes struct{ full }

func (b truncatesTimes) PutRunState(ctx context.Context, run types.RunState) error {
	run.CreatedAt = run.CreatedAt.Truncate(time.Millisecond)
	return b.full.PutRunState(ctx, run)
}

// listRunsOldestFirst returns ListRuns in the wrong order.
type listRunsOldestFirst struct{ full }

func (b listRunsOldestFirst) ListRuns(ctx context.Context, pipelineID string, limit int) ([]types.RunState, error) {
	list, err := b.full.ListRuns(ctx, pipelineID, 1<<20)
	if err != nil || limit < 1 {
		return list, err
	}
	slices.Reverse(list)
	return list[:min(limit, len(list))], nil
}

// acceptsEmptyRunID stores a run with an empty ID under "empty" instead of failing.
type acceptsEmptyRunID struct{ full }

func (b acceptsEmptyRunID) PutRunState(ctx context.Context, run types.RunState) error {
	if run.RunID == "" {
		run.RunID = "empty"
	}
	return b.full.PutRunState(ctx, run)
}

// getMissingErrors returns an error, not (nil, nil), for a missing rerun.
type getMissingErrors struct{ full }

func (b getMissingErrors) GetRerun(ctx context.Context, rerunID string) (*types.RerunRecord, error) {
	r, err := b.full.GetRerun(ctx, rerunID)
	if r == nil && err == nil {
		return nil, errors.New("rerun not found")
	}
	return r, err
}

// pipelineAliasing keeps and returns the caller's own PipelineConfig.
type pipelineAliasing struct {
	full
	s *shared
}

func (b pipelineAliasing) RegisterPipeline(ctx context.Context, cfg types.PipelineConfig) error {
	if err := b.full.RegisterPipeline(ctx, cfg); err != nil {
		return err
	}
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	b.s.stored[cfg.ID] = &cfg
	return nil
}

func (b pipelineAliasing) GetPipeline(ctx context.Context, id string) (*types.PipelineConfig, error) {
	b.s.mu.Lock()
	cfg, ok := b.s.stored[id]
	b.s.mu.Unlock()
	if ok {
		return cfg, nil
	}
	return b.full.GetPipeline(ctx, id)
}

// traitTTLIgnored stores every trait forever.
type traitTTLIgnored struct{ full }

func (b traitTTLIgnored) PutTrait(ctx context.Context, pipelineID string, tr types.TraitEvaluation, ttl time.Duration) error {
	if ttl < 0 {
		return b.full.PutTrait(ctx, pipelineID, tr, ttl)
	}
	return b.full.PutTrait(ctx, pipelineID, tr, 0)
}

// lostEvents drops the 100th append of every pipeline, which only a busy log reaches.
type lostEvents struct {
	full
	s *shared
}

func (b lostEvents) AppendEvent(ctx context.Context, ev types.Event) error {
	b.s.mu.Lock()
	b.s.appends[ev.PipelineID]++
	drop := b.s.appends[ev.PipelineID] == 100
	b.s.mu.Unlock()
	if drop {
		return nil
	}
	return b.full.AppendEvent(ctx, ev)
}

// inclusiveCursor returns the event at the cursor too.
type inclusiveCursor struct{ full }

func (b inclusiveCursor) ReadEventsSince(ctx context.Context, pipelineID, since string, count int64) ([]types.EventRecord, error) {
	if since == "" || count < 1 {
		return b.full.ReadEventsSince(ctx, pipelineID, since, count)
	}
	all, err := b.full.ReadEventsSince(ctx, pipelineID, "", 1<<20)
	if err != nil {
		return nil, err
	}
	for i, r := range all {
		if r.StreamID == since {
			return all[i:min(int64(len(all)), int64(i)+count)], nil
		}
	}
	return b.full.ReadEventsSince(ctx, pipelineID, since, count)
}

// listEventsNewestFirst returns ListEvents in the wrong order.
type listEventsNewestFirst struct{ full }

func (b listEventsNewestFirst) ListEvents(ctx context.Context, pipelineID string, limit int) ([]types.Event, error) {
	list, err := b.full.ListEvents(ctx, pipelineID, limit)
	slices.Reverse(list)
	return list, err
}

// ignoresContext appends even when the context is cancelled.
type ignoresContext struct{ full }

func (b ignoresContext) AppendEvent(_ context.Context, ev types.Event) error {
	return b.full.AppendEvent(context.Background(), ev)
}

// runLogIgnoresSchedule keys run logs by (pipeline, date) only.
type runLogIgnoresSchedule struct{ full }

func (b runLogIgnoresSchedule) PutRunLog(ctx context.Context, e types.RunLogEntry) error {
	e.ScheduleID = ""
	return b.full.PutRunLog(ctx, e)
}

func (b runLogIgnoresSchedule) GetRunLog(ctx context.Context, pipelineID, date, _ string) (*types.RunLogEntry, error) {
	return b.full.GetRunLog(ctx, pipelineID, date, "")
}

// anyInstanceReleases lets any instance release a lock, through its holder.
type anyInstanceReleases struct {
	full
	s *shared
}

func (b anyInstanceReleases) ReleaseLock(ctx context.Context, key string) error {
	err := b.full.ReleaseLock(ctx, key)
	if !errors.Is(err, provider.ErrLockNotHeld) {
		return err
	}
	b.s.mu.Lock()
	others := slices.Clone(b.s.instances)
	b.s.mu.Unlock()
	for _, o := range others {
		if o.ReleaseLock(ctx, key) == nil {
			return nil
		}
	}
	return err
}

// reentrantLock lets the holder acquire its lock again.
type reentrantLock struct {
	full
	s *shared
}

func (b reentrantLock) AcquireLock(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	ok, err := b.full.AcquireLock(ctx, key, ttl)
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	if b.s.held[b.full] == nil {
		b.s.held[b.full] = map[string]bool{}
	}
	if ok {
		b.s.held[b.full][key] = true
	}
	return ok || (err == nil && b.s.held[b.full][key]), err
}

func (b reentrantLock) ReleaseLock(ctx context.Context, key string) error {
	err := b.full.ReleaseLock(ctx, key)
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	delete(b.s.held[b.full], key)
	return err
}

// lockTTLIgnored takes every lock forever.
type lockTTLIgnored struct{ full }

func (b lockTTLIgnored) AcquireLock(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	if ttl < 0 {
		return b.full.AcquireLock(ctx, key, ttl)
	}
	return b.full.AcquireLock(ctx, key, 0)
}

// fenceNotIncreasing hands out fence 1 every time.
type fenceNotIncreasing struct{ full }

func (b fenceNotIncreasing) AcquireLease(ctx context.Context, key string, ttl time.Duration) (*types.Lease, error) {
	l, err := b.full.AcquireLease(ctx, key, ttl)
	if l != nil {
		l.Fence = 1
	}
	return l, err
}

// stopNotClosing keeps working after Stop.
type stopNotClosing struct{ full }

func (stopNotClosing) Stop(context.Context) error { return nil }

// listForgetsConcurrentCreates hides, from every later listing, a new run whose
// first put happened while a listing was in flight (a list repair that drops an
// entry it did not re-check).
type listForgetsConcurrentCreates struct {
	full
	s *shared
}

func (b listForgetsConcurrentCreates) PutRunState(ctx context.Context, run types.RunState) error {
	old, err := b.full.GetRunState(ctx, run.RunID)
	if err != nil {
		return err
	}
	b.s.mu.Lock()
	if old == nil && b.s.listing > 0 {
		b.s.hidden[run.RunID] = true
	}
	b.s.mu.Unlock()
	return b.full.PutRunState(ctx, run)
}

func (b listForgetsConcurrentCreates) ListRuns(ctx context.Context, pipelineID string, limit int) ([]types.RunState, error) {
	b.s.mu.Lock()
	b.s.listing++
	b.s.mu.Unlock()
	list, err := b.full.ListRuns(ctx, pipelineID, limit)
	time.Sleep(100 * time.Microsecond) // a listing takes time
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	b.s.listing--
	return slices.DeleteFunc(list, func(r types.RunState) bool { return b.s.hidden[r.RunID] }), err
}

// offsetPaging lists runs in pages of 100 by offset, each page from a fresh
// listing, so an item that moves between pages is seen twice or not at all.
type offsetPaging struct{ full }

func (b offsetPaging) ListRuns(ctx context.Context, pipelineID string, limit int) ([]types.RunState, error) {
	const page = 100
	var out []types.RunState
	for off := 0; off < limit; off += page {
		all, err := b.full.ListRuns(ctx, pipelineID, limit)
		if err != nil {
			return nil, err
		}
		if off >= len(all) {
			break
		}
		out = append(out, all[off:min(off+page, len(all))]...)
		time.Sleep(200 * time.Microsecond) // the next page is another round trip
	}
	return out, nil
}

// ttlClamped clamps a lock ttl above the limit instead of rejecting it.
type ttlClamped struct{ full }

func (b ttlClamped) AcquireLock(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	return b.full.AcquireLock(ctx, key, min(ttl, provider.MaxTTL))
}

// renewLongDeletes renews a lease with a ttl at the limit into deletion, as an
// overflowing expiry computation would.
type renewLongDeletes struct{ full }

func (b renewLongDeletes) RenewLease(ctx context.Context, l types.Lease, ttl time.Duration) (*types.Lease, error) {
	if ttl >= provider.MaxTTL/2 {
		if err := b.full.ReleaseLease(ctx, l); err != nil {
			return nil, err
		}
		l.ExpiresAt = time.Now().Add(ttl)
		return &l, nil
	}
	return b.full.RenewLease(ctx, l, ttl)
}

// expiryInclusive keeps a trait live at its ExpiresAt (expiry when now > ExpiresAt).
type expiryInclusive struct{ full }

func (b expiryInclusive) PutTrait(ctx context.Context, pipelineID string, tr types.TraitEvaluation, ttl time.Duration) error {
	if ttl > 0 {
		ttl += time.Millisecond
	}
	return b.full.PutTrait(ctx, pipelineID, tr, ttl)
}

// rerunTimeNotFilled stores a zero RequestedAt as the Unix epoch.
type rerunTimeNotFilled struct{ full }

func (b rerunTimeNotFilled) PutRerun(ctx context.Context, r types.RerunRecord) error {
	if r.RequestedAt.IsZero() {
		r.RequestedAt = time.Unix(0, 0).UTC()
	}
	return b.full.PutRerun(ctx, r)
}

// tokenPrefixReleases frees a lease for a token that is a prefix of the current one.
type tokenPrefixReleases struct {
	full
	s *shared
}

func (b tokenPrefixReleases) AcquireLease(ctx context.Context, key string, ttl time.Duration) (*types.Lease, error) {
	l, err := b.full.AcquireLease(ctx, key, ttl)
	if l != nil {
		b.s.mu.Lock()
		b.s.tokens[key] = l.Token
		b.s.mu.Unlock()
	}
	return l, err
}

func (b tokenPrefixReleases) ReleaseLease(ctx context.Context, l types.Lease) error {
	b.s.mu.Lock()
	if cur := b.s.tokens[l.Key]; l.Token != "" && strings.HasPrefix(cur, l.Token) {
		l.Token = cur
	}
	b.s.mu.Unlock()
	return b.full.ReleaseLease(ctx, l)
}

// brokenBackend is one broken variant and the subtest that must catch it.
type brokenBackend struct {
	name string
	want string // the failed subtest, below the top-level test
	wrap func(p full, s *shared) provider.Provider
}

var brokenBackends = []brokenBackend{
	{"cas_ignores_version", "RunStore/cas_version_mismatch",
		func(p full, _ *shared) provider.Provider { return casIgnoresVersion{p} }},
	{"cas_overwrites_created_at", "RunStore/cas_keeps_created_at",
		func(p full, _ *shared) provider.Provider { return casOverwritesCreatedAt{p} }},
	{"truncates_times", "RunStore/put_get_round_trip",
		func(p full, _ *shared) provider.Provider { return truncatesTimes{p} }},
	{"list_runs_oldest_first", "RunStore/list_runs_newest_first",
		func(p full, _ *shared) provider.Provider { return listRunsOldestFirst{p} }},
	{"accepts_empty_run_id", "RunStore/bad_input/put_run_id_empty",
		func(p full, _ *shared) provider.Provider { return acceptsEmptyRunID{p} }},
	{"get_missing_errors", "RerunStore/get_missing",
		func(p full, _ *shared) provider.Provider { return getMissingErrors{p} }},
	{"pipeline_aliasing", "PipelineStore/no_aliasing",
		func(p full, s *shared) provider.Provider { return pipelineAliasing{p, s} }},
	{"trait_ttl_ignored", "TraitStore/ttl_expiry",
		func(p full, _ *shared) provider.Provider { return traitTTLIgnored{p} }},
	{"lost_events", "EventStore/concurrent_append_paging",
		func(p full, s *shared) provider.Provider { return lostEvents{p, s} }},
	{"inclusive_cursor", "EventStore/read_since_strictly_after",
		func(p full, _ *shared) provider.Provider { return inclusiveCursor{p} }},
	{"list_events_newest_first", "EventStore/list_events_most_recent_oldest_first",
		func(p full, _ *shared) provider.Provider { return listEventsNewestFirst{p} }},
	{"ignores_context", "EventStore/cancelled_context",
		func(p full, _ *shared) provider.Provider { return ignoresContext{p} }},
	{"run_log_ignores_schedule", "RunLogStore/schedules_independent",
		func(p full, _ *shared) provider.Provider { return runLogIgnoresSchedule{p} }},
	{"any_instance_releases", "Locker/release_by_other_instance",
		func(p full, s *shared) provider.Provider { return anyInstanceReleases{p, s} }},
	{"reentrant_lock", "Locker/not_reentrant",
		func(p full, s *shared) provider.Provider { return reentrantLock{p, s} }},
	{"lock_ttl_ignored", "Locker/expiry_takeover",
		func(p full, _ *shared) provider.Provider { return lockTTLIgnored{p} }},
	{"fence_not_increasing", "Leaser/fence_strictly_increases",
		func(p full, _ *shared) provider.Provider { return fenceNotIncreasing{p} }},
	{"list_forgets_concurrent_creates", "Lists/create_while_listing/runs",
		func(p full, s *shared) provider.Provider { return listForgetsConcurrentCreates{p, s} }},
	{"offset_paging", "Lists/moves_while_listing/runs",
		func(p full, _ *shared) provider.Provider { return offsetPaging{p} }},
	{"ttl_clamped", "Limits/ttl_beyond_max",
		func(p full, _ *shared) provider.Provider { return ttlClamped{p} }},
	{"renew_long_deletes", "Limits/lease_ttl_limits",
		func(p full, _ *shared) provider.Provider { return renewLongDeletes{p} }},
	{"expiry_inclusive", "TraitStore/expired_at_exact_ttl",
		func(p full, _ *shared) provider.Provider { return expiryInclusive{p} }},
	{"rerun_time_not_filled", "RerunStore/put_fills_zero_requested_at",
		func(p full, _ *shared) provider.Provider { return rerunTimeNotFilled{p} }},
	{"token_prefix_releases", "Leaser/token_prefix_rejected",
		func(p full, s *shared) provider.Provider { return tokenPrefixReleases{p, s} }},
	{"stop_not_closing", "Lifecycle/after_stop/GetPipeline",
		func(p full, _ *shared) provider.Provider { return stopNotClosing{p} }},
}

// TestBrokenBackend runs the suite on the broken backend named by brokenEnv; it
// is meant to fail, and runs only as TestTeeth's subprocess.
func TestBrokenBackend(t *testing.T) {
	name := os.Getenv(brokenEnv)
	if name == "" {
		t.Skip(brokenEnv + " is not set: this test runs as a subprocess of TestTeeth")
	}
	i := slices.IndexFunc(brokenBackends, func(b brokenBackend) bool { return b.name == name })
	if i < 0 {
		t.Fatalf("%s=%q names no broken backend", brokenEnv, name)
	}
	wrap := brokenBackends[i].wrap
	providertest.Run(t, new(memoryBackend).harness(func(t *testing.T, p *memory.Provider) provider.Provider {
		s := sharedOf(t)
		s.mu.Lock()
		s.instances = append(s.instances, p)
		s.mu.Unlock()
		return wrap(p, s)
	}))
}

func TestTeeth(t *testing.T) {
	if os.Getenv(brokenEnv) != "" {
		t.Skip("running as a subprocess")
	}
	if testing.Short() {
		t.Skip("runs the suite once per broken backend in a subprocess")
	}
	for _, b := range brokenBackends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			group, _, _ := strings.Cut(b.want, "/")
			cmd := exec.CommandContext(t.Context(), os.Args[0],
				"-test.run=^TestBrokenBackend$/^"+group+"$",
				// The size tests copy megabytes and catch none of these faults.
				"-test.skip=^TestBrokenBackend$/./(huge|large)_",
				"-test.count=1", "-test.timeout=5m")
			cmd.Env = append(os.Environ(), brokenEnv+"="+b.name)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("the suite on %s: got %v, want a non-zero exit; output:\n%s", b.name, err, out)
			}
			if want := "--- FAIL: TestBrokenBackend/" + b.want + " "; !strings.Contains(string(out), want) {
				t.Errorf("the suite on %s failed, but its output does not have %q:\n%s", b.name, want, tail(string(out), 60))
			}
		})
	}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
