package providertest_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"iter"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pipestate/pipestate/internal/testkit/memorytest"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/memprovider"
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
	provider.RunCreator
	provider.EventFollower
	provider.MarkerWatcher
	provider.LockInspector
	provider.LockLister
	provider.ActiveRunLister
	provider.ActiveRunReindexer
	Owner() string
}

// shared is state the broken instances of one test share, keyed by t.Name().
type shared struct {
	now       func() time.Time // the test's clock
	mu        sync.Mutex
	instances []full
	appends   map[string]int
	held      map[full]map[string]bool
	stored    map[string]*types.PipelineConfig
	listing   int
	hidden    map[string]bool
	tokens    map[string]string
	expiries  map[string]time.Time
	leases    map[string]types.Lease
	events    map[string][]types.Event
	leaseRecs map[string]*leaseRecord
	appended  []types.EventRecord // every event appended, in commit order
	seqs      map[string]int64    // events appended per pipeline
	markerLog []markerLogEntry
	// countedLogs is eventsByCount's event log per pipeline.
	countedLogs map[string][]countedEvent
	runs        map[string]types.RunState // listKeepsExpiredRuns's index
	fenceSets   *ownFences                // the Fencing teeth's memory of fences
	active      map[string]bool           // activeIndex's index
	dropped     map[string]bool           // the entries Harness.DropActiveEntry took from lostEntries's index
}

var sharedByTest sync.Map // t.Name() -> *shared

func sharedOf(t *testing.T) *shared {
	v, _ := sharedByTest.LoadOrStore(t.Name(), &shared{
		appends:   map[string]int{},
		held:      map[full]map[string]bool{},
		stored:    map[string]*types.PipelineConfig{},
		hidden:    map[string]bool{},
		tokens:    map[string]string{},
		expiries:  map[string]time.Time{},
		leases:    map[string]types.Lease{},
		events:    map[string][]types.Event{},
		leaseRecs: map[string]*leaseRecord{},
		seqs:      map[string]int64{},

		countedLogs: map[string][]countedEvent{},
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

// versionInt32 keeps run versions in a 32-bit column, as a SQL INT would.
type versionInt32 struct{ full }

func (b versionInt32) PutRunState(ctx context.Context, run types.RunState) error {
	run.Version = int(int32(run.Version))
	return b.full.PutRunState(ctx, run)
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

// checkThenActPause stands, in the check-then-act backends, for the round trip a
// real one makes between reading and writing: callers started together all pass
// the check before any writes, so the race is certain, not a matter of how the
// scheduler of a loaded machine interleaves them.
const checkThenActPause = 20 * time.Millisecond

// checkThenActCAS compares the version it read and writes in a second step: two
// callers can both pass the check.
type checkThenActCAS struct{ full }

func (b checkThenActCAS) CompareAndSwapRunState(ctx context.Context, runID string, v int, s types.RunState) (bool, error) {
	cur, err := b.full.GetRunState(ctx, runID)
	if err != nil || cur == nil || cur.Version != v || cur.PipelineID != s.PipelineID {
		return false, err
	}
	s.Version, s.CreatedAt, s.UpdatedAt = v+1, cur.CreatedAt, time.Time{}
	time.Sleep(checkThenActPause)
	return true, b.full.PutRunState(ctx, s)
}

// checkThenActLock keeps each lock as a record of a store without conditional
// writes (a trait: Reason is the owner, the ttl its ttl): AcquireLock reads the
// record, then writes it in a second step, so two acquirers can both find the key
// free.
type checkThenActLock struct{ full }

// lockRecord returns the pipeline and trait type of key's record.
func lockRecord(key string) (string, string) {
	h := fnv.New64a()
	h.Write([]byte(key))
	return "locks", fmt.Sprintf("k%016x", h.Sum64())
}

func (b checkThenActLock) AcquireLock(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	if err := cmp.Or(provider.CheckLockKey(key), provider.CheckTTL(ttl)); err != nil {
		return false, err
	}
	pid, tt := lockRecord(key)
	cur, err := b.full.GetTrait(ctx, pid, tt)
	if err != nil || (cur != nil && cur.Reason != "") {
		return false, err
	}
	rec := types.TraitEvaluation{TraitType: tt, Status: types.TraitPass, Reason: b.Owner()}
	time.Sleep(checkThenActPause)
	return err == nil, b.full.PutTrait(ctx, pid, rec, ttl)
}

func (b checkThenActLock) ReleaseLock(ctx context.Context, key string) error {
	pid, tt := lockRecord(key)
	cur, err := b.full.GetTrait(ctx, pid, tt)
	if err != nil {
		return err
	}
	if cur == nil || cur.Reason != b.Owner() {
		return provider.ErrLockNotHeld
	}
	return b.full.PutTrait(ctx, pid, types.TraitEvaluation{TraitType: tt, Status: types.TraitPass}, 0)
}

// lateArrivalsDeduped drops a late arrival identical to one already stored (a
// key built from the record's fields).
type lateArrivalsDeduped struct {
	full
	s *shared
}

func (b lateArrivalsDeduped) PutLateArrival(ctx context.Context, la types.LateArrival) error {
	if b.s.seenBefore(fmt.Sprintf("%+v", la)) {
		return nil
	}
	return b.full.PutLateArrival(ctx, la)
}

// seenBefore reports whether key was seen before, and records it.
func (s *shared) seenBefore(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hidden[key] {
		return true
	}
	s.hidden[key] = true
	return false
}

// eventsKeyedByTimestamp stores events under (pipeline, Timestamp, Message), so an
// identical event appended again overwrites the first.
type eventsKeyedByTimestamp struct {
	full
	s *shared
}

func (b eventsKeyedByTimestamp) AppendEvent(ctx context.Context, ev types.Event) error {
	if !ev.Timestamp.IsZero() && b.s.seenBefore(ev.PipelineID+ev.Timestamp.String()+ev.Message) {
		return nil
	}
	return b.full.AppendEvent(ctx, ev)
}

// deleteClearsPartition deletes everything stored under the pipeline's partition
// (its traits, here) with its config.
type deleteClearsPartition struct {
	full
	s *shared
}

func (b deleteClearsPartition) DeletePipeline(ctx context.Context, id string) error {
	b.s.mu.Lock()
	b.s.hidden["deleted:"+id] = true
	b.s.mu.Unlock()
	return b.full.DeletePipeline(ctx, id)
}

func (b deleteClearsPartition) GetTraits(ctx context.Context, pipelineID string) ([]types.TraitEvaluation, error) {
	b.s.mu.Lock()
	deleted := b.s.hidden["deleted:"+pipelineID]
	b.s.mu.Unlock()
	if deleted {
		return []types.TraitEvaluation{}, nil
	}
	return b.full.GetTraits(ctx, pipelineID)
}

// cancelledPutApplied writes the run, then reports the cancelled context.
type cancelledPutApplied struct{ full }

func (b cancelledPutApplied) PutRunState(ctx context.Context, run types.RunState) error {
	if err := b.full.PutRunState(context.WithoutCancel(ctx), run); err != nil {
		return err
	}
	return ctx.Err()
}

// eventCheckedFirst checks an event's kind before the context and Stop (the
// provider backends' opening order before v0.1.0).
type eventCheckedFirst struct{ full }

func (b eventCheckedFirst) AppendEvent(ctx context.Context, ev types.Event) error {
	if ev.Kind == "" {
		return provider.Invalidf("event kind is empty")
	}
	return b.full.AppendEvent(ctx, ev)
}

// acquireThenCancelled takes the lock, then reports the cancelled context.
type acquireThenCancelled struct{ full }

func (b acquireThenCancelled) AcquireLock(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	ok, err := b.full.AcquireLock(context.WithoutCancel(ctx), key, ttl)
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	return ok, err
}

// traitTTLWholeSeconds keeps whole seconds of a trait ttl (a TTL attribute in
// seconds): a sub-second ttl becomes 0, no expiry.
type traitTTLWholeSeconds struct{ full }

func (b traitTTLWholeSeconds) PutTrait(ctx context.Context, pipelineID string, tr types.TraitEvaluation, ttl time.Duration) error {
	if ttl > 0 {
		ttl = ttl.Truncate(time.Second)
	}
	return b.full.PutTrait(ctx, pipelineID, tr, ttl)
}

// lockTTLRoundedUp holds a lock for whole seconds (SET EX with the ttl rounded up).
type lockTTLRoundedUp struct{ full }

func (b lockTTLRoundedUp) AcquireLock(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	if ttl > 0 {
		ttl = (ttl + time.Second - 1).Truncate(time.Second)
	}
	return b.full.AcquireLock(ctx, key, ttl)
}

// traitReadCache is a read-through cache of GetTrait, per instance, that keeps
// what it read while live.
type traitReadCache struct {
	full
	cache *sync.Map
}

func (b traitReadCache) GetTrait(ctx context.Context, pipelineID, traitType string) (*types.TraitEvaluation, error) {
	if v, ok := b.cache.Load(pipelineID + "/" + traitType); ok {
		tr := v.(types.TraitEvaluation)
		return &tr, nil
	}
	tr, err := b.full.GetTrait(ctx, pipelineID, traitType)
	if tr != nil {
		b.cache.Store(pipelineID+"/"+traitType, *tr)
	}
	return tr, err
}

func (b traitReadCache) PutTrait(ctx context.Context, pipelineID string, tr types.TraitEvaluation, ttl time.Duration) error {
	b.cache.Delete(pipelineID + "/" + tr.TraitType)
	return b.full.PutTrait(ctx, pipelineID, tr, ttl)
}

// traitKeepsLaterExpiry never shortens a live trait's expiry (an EXPIRE ... GT).
type traitKeepsLaterExpiry struct {
	full
	s *shared
}

func (b traitKeepsLaterExpiry) PutTrait(ctx context.Context, pipelineID string, tr types.TraitEvaluation, ttl time.Duration) error {
	if cur, err := b.full.GetTrait(ctx, pipelineID, tr.TraitType); err == nil && cur != nil && cur.ExpiresAt != nil && ttl > 0 {
		ttl = max(ttl, cur.ExpiresAt.Sub(b.s.now()))
	}
	return b.full.PutTrait(ctx, pipelineID, tr, ttl)
}

// traitKeepsFirstExpiresAt refreshes a live trait's value but keeps its expiry.
type traitKeepsFirstExpiresAt struct {
	full
	s *shared
}

func (b traitKeepsFirstExpiresAt) PutTrait(ctx context.Context, pipelineID string, tr types.TraitEvaluation, ttl time.Duration) error {
	if cur, err := b.full.GetTrait(ctx, pipelineID, tr.TraitType); err == nil && cur != nil && cur.ExpiresAt != nil && ttl > 0 {
		ttl = cur.ExpiresAt.Sub(b.s.now())
	}
	return b.full.PutTrait(ctx, pipelineID, tr, ttl)
}

// readinessKeepsFirstExpiry re-puts a live readiness result without refreshing
// its ttl (SET ... KEEPTTL).
type readinessKeepsFirstExpiry struct {
	full
	s *shared
}

func (b readinessKeepsFirstExpiry) PutReadiness(ctx context.Context, r types.ReadinessResult) error {
	b.s.mu.Lock()
	if exp, ok := b.s.expiries[r.PipelineID]; !ok || !b.s.now().Before(exp) {
		b.s.expiries[r.PipelineID] = b.s.now().Add(memprovider.DefaultReadinessTTL)
	}
	b.s.mu.Unlock()
	return b.full.PutReadiness(ctx, r)
}

func (b readinessKeepsFirstExpiry) GetReadiness(ctx context.Context, pipelineID string) (*types.ReadinessResult, error) {
	b.s.mu.Lock()
	exp, ok := b.s.expiries[pipelineID]
	b.s.mu.Unlock()
	if ok && !b.s.now().Before(exp) {
		return nil, nil
	}
	return b.full.GetReadiness(ctx, pipelineID)
}

// lockNegativeCache remembers, per instance, the keys it found held and refuses
// them from then on without asking.
type lockNegativeCache struct {
	full
	held *sync.Map
}

func (b lockNegativeCache) AcquireLock(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	if _, ok := b.held.Load(key); ok {
		return false, nil
	}
	ok, err := b.full.AcquireLock(ctx, key, ttl)
	if err == nil && !ok {
		b.held.Store(key, true)
	}
	return ok, err
}

// ownerPrefixReleases releases a lock held by an owner this owner is a prefix of
// (a LIKE 'owner%' match).
type ownerPrefixReleases struct {
	full
	s *shared
}

func (b ownerPrefixReleases) ReleaseLock(ctx context.Context, key string) error {
	err := b.full.ReleaseLock(ctx, key)
	if !errors.Is(err, provider.ErrLockNotHeld) {
		return err
	}
	b.s.mu.Lock()
	others := slices.Clone(b.s.instances)
	b.s.mu.Unlock()
	for _, o := range others {
		if o.Owner() != b.Owner() && strings.HasPrefix(o.Owner(), b.Owner()) && o.ReleaseLock(ctx, key) == nil {
			return nil
		}
	}
	return err
}

// leaseOwnedBy records the leases each instance takes, for the wrappers below.
func (s *shared) leaseOwnedBy(p full, l *types.Lease) {
	if l == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leases[p.Owner()+"\n"+l.Key] = *l
}

func (s *shared) ownLease(p full, key string) (types.Lease, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.leases[p.Owner()+"\n"+key]
	return l, ok
}

// lockOverOwnLease lets an instance lock a key it leases itself (holders
// compared by owner, not by lock or lease).
type lockOverOwnLease struct {
	full
	s *shared
}

func (b lockOverOwnLease) AcquireLease(ctx context.Context, key string, ttl time.Duration) (*types.Lease, error) {
	l, err := b.full.AcquireLease(ctx, key, ttl)
	b.s.leaseOwnedBy(b.full, l)
	return l, err
}

func (b lockOverOwnLease) AcquireLock(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	if l, ok := b.s.ownLease(b.full, key); ok && b.full.ReleaseLease(ctx, l) == nil {
		return b.full.AcquireLock(ctx, key, ttl)
	}
	return b.full.AcquireLock(ctx, key, ttl)
}

// releaseLockFreesOwnLease lets ReleaseLock free a lease the instance holds.
type releaseLockFreesOwnLease struct {
	full
	s *shared
}

func (b releaseLockFreesOwnLease) AcquireLease(ctx context.Context, key string, ttl time.Duration) (*types.Lease, error) {
	l, err := b.full.AcquireLease(ctx, key, ttl)
	b.s.leaseOwnedBy(b.full, l)
	return l, err
}

func (b releaseLockFreesOwnLease) ReleaseLock(ctx context.Context, key string) error {
	err := b.full.ReleaseLock(ctx, key)
	if l, ok := b.s.ownLease(b.full, key); ok && errors.Is(err, provider.ErrLockNotHeld) {
		return b.full.ReleaseLease(ctx, l)
	}
	return err
}

// renewFromOldExpiry extends a lease from its old expiry, not from now.
type renewFromOldExpiry struct {
	full
	s *shared
}

func (b renewFromOldExpiry) RenewLease(ctx context.Context, l types.Lease, ttl time.Duration) (*types.Lease, error) {
	if extra := l.ExpiresAt.Sub(b.s.now()); extra > 0 {
		ttl += extra
	}
	return b.full.RenewLease(ctx, l, ttl)
}

// markerSameSourceNoop skips a marker write whose source is already stored
// (a conditional update on Source <> :source).
type markerSameSourceNoop struct{ full }

func (b markerSameSourceNoop) WriteCascadeMarker(ctx context.Context, pipelineID, scheduleID, date, source string) error {
	list, err := b.full.ListCascadeMarkers(ctx, pipelineID, 1000)
	if err != nil {
		return b.full.WriteCascadeMarker(ctx, pipelineID, scheduleID, date, source)
	}
	for _, m := range list {
		if m.ScheduleID == types.ScheduleOrDefault(scheduleID) && m.Date == date && m.Source == source {
			return nil
		}
	}
	return b.full.WriteCascadeMarker(ctx, pipelineID, scheduleID, date, source)
}

// preEpochIsUnset takes a CreatedAt before 1970 (a negative Unix time) for an
// unset one and fills it.
type preEpochIsUnset struct{ full }

func (b preEpochIsUnset) PutRunState(ctx context.Context, run types.RunState) error {
	if run.CreatedAt.Unix() < 0 {
		run.CreatedAt = time.Time{}
	}
	return b.full.PutRunState(ctx, run)
}

// rerunsByUnixNano orders reruns by RequestedAt.UnixNano(), which overflows
// outside the years 1678 to 2262.
type rerunsByUnixNano struct{ full }

func (b rerunsByUnixNano) ListReruns(ctx context.Context, pipelineID string, limit int) ([]types.RerunRecord, error) {
	list, err := b.full.ListReruns(ctx, pipelineID, max(limit, 1<<20))
	slices.SortStableFunc(list, func(a, c types.RerunRecord) int {
		return cmp.Or(cmp.Compare(c.RequestedAt.UnixNano(), a.RequestedAt.UnixNano()), cmp.Compare(c.RerunID, a.RerunID))
	})
	return list[:min(limit, len(list))], err
}

// replaysByWallClock orders replays by CreatedAt as written (its zone's wall
// clock), not by instant.
type replaysByWallClock struct{ full }

func (b replaysByWallClock) ListReplays(ctx context.Context, limit int) ([]types.ReplayRequest, error) {
	list, err := b.full.ListReplays(ctx, max(limit, 1<<20))
	slices.SortStableFunc(list, func(a, c types.ReplayRequest) int {
		return strings.Compare(c.CreatedAt.Format(time.RFC3339Nano), a.CreatedAt.Format(time.RFC3339Nano))
	})
	return list[:min(limit, len(list))], err
}

// runIDsUpTo100 rejects run IDs longer than its own key limit of 100 bytes.
type runIDsUpTo100 struct{ full }

func (b runIDsUpTo100) PutRunState(ctx context.Context, run types.RunState) error {
	if len(run.RunID) > 100 {
		return fmt.Errorf("%w: run ID longer than 100 bytes", provider.ErrInvalidArgument)
	}
	return b.full.PutRunState(ctx, run)
}

// replayDatesPathSafe rejects dates with '.' or '/', which it keys as paths.
type replayDatesPathSafe struct{ full }

func (b replayDatesPathSafe) PutReplay(ctx context.Context, r types.ReplayRequest) error {
	if strings.ContainsAny(r.Date, "./") {
		return fmt.Errorf("%w: date %q is not path-safe", provider.ErrInvalidArgument, r.Date)
	}
	return b.full.PutReplay(ctx, r)
}

// lateArrivalDatePrefix lists late arrivals with a key prefix that lacks the
// delimiter after the date (begins_with(SK, "LATE#"+date)).
type lateArrivalDatePrefix struct {
	full
	s *shared
}

func (b lateArrivalDatePrefix) PutLateArrival(ctx context.Context, la types.LateArrival) error {
	b.s.seenBefore("late\n" + la.PipelineID + "\n" + la.Date)
	return b.full.PutLateArrival(ctx, la)
}

func (b lateArrivalDatePrefix) ListLateArrivals(ctx context.Context, pipelineID, date, scheduleID string) ([]types.LateArrival, error) {
	out, err := b.full.ListLateArrivals(ctx, pipelineID, date, scheduleID)
	if err != nil {
		return out, err
	}
	b.s.mu.Lock()
	var dates []string
	for k := range b.s.hidden {
		if parts := strings.Split(k, "\n"); len(parts) == 3 && parts[0] == "late" && parts[1] == pipelineID && parts[2] != date && strings.HasPrefix(parts[2], date) {
			dates = append(dates, parts[2])
		}
	}
	b.s.mu.Unlock()
	for _, d := range dates {
		more, _ := b.full.ListLateArrivals(ctx, pipelineID, d, scheduleID)
		out = append(out, more...)
	}
	return out, nil
}

// traitsPipelinePrefix reads a pipeline's traits with a key scan that lacks the
// delimiter after the pipeline ID (SCAN prefix:{p}*).
type traitsPipelinePrefix struct {
	full
	s *shared
}

func (b traitsPipelinePrefix) PutTrait(ctx context.Context, pipelineID string, tr types.TraitEvaluation, ttl time.Duration) error {
	b.s.seenBefore("trait\n" + pipelineID)
	return b.full.PutTrait(ctx, pipelineID, tr, ttl)
}

func (b traitsPipelinePrefix) GetTraits(ctx context.Context, pipelineID string) ([]types.TraitEvaluation, error) {
	out, err := b.full.GetTraits(ctx, pipelineID)
	if err != nil {
		return out, err
	}
	b.s.mu.Lock()
	var pids []string
	for k := range b.s.hidden {
		if pid, ok := strings.CutPrefix(k, "trait\n"); ok && pid != pipelineID && strings.HasPrefix(pid, pipelineID) {
			pids = append(pids, pid)
		}
	}
	b.s.mu.Unlock()
	for _, pid := range pids {
		more, _ := b.full.GetTraits(ctx, pid)
		out = append(out, more...)
	}
	return out, nil
}

// runLogsOnePage returns one page of 100 run logs at most, forgetting the rest.
type runLogsOnePage struct{ full }

func (b runLogsOnePage) ListRunLogs(ctx context.Context, pipelineID string, limit int) ([]types.RunLogEntry, error) {
	if limit > 100 {
		limit = 100
	}
	return b.full.ListRunLogs(ctx, pipelineID, limit)
}

// eventsPageCap returns at most 200 events from ListEvents (a page limit it
// never follows past).
type eventsPageCap struct{ full }

func (b eventsPageCap) ListEvents(ctx context.Context, pipelineID string, limit int) ([]types.Event, error) {
	return b.full.ListEvents(ctx, pipelineID, min(limit, 200))
}

// markersPageBoundary drops the first item of the second page (the page's
// exclusive start key is one past the last item returned).
type markersPageBoundary struct{ full }

func (b markersPageBoundary) ListCascadeMarkers(ctx context.Context, pipelineID string, limit int) ([]types.CascadeMarker, error) {
	list, err := b.full.ListCascadeMarkers(ctx, pipelineID, limit+1)
	if err != nil || len(list) <= 100 {
		return list[:min(limit, len(list))], err
	}
	list = slices.Delete(list, 100, 101)
	return list[:min(limit, len(list))], nil
}

// rerunListAppends appends to the pipeline's rerun list on every put, deduping
// only a record that changed.
type rerunListAppends struct {
	full
	s *shared
}

func (b rerunListAppends) PutRerun(ctx context.Context, r types.RerunRecord) error {
	if cur, err := b.full.GetRerun(ctx, r.RerunID); err == nil && cur != nil && fmt.Sprint(*cur) == fmt.Sprint(r) {
		b.s.mu.Lock()
		b.s.appends[r.RerunID]++
		b.s.mu.Unlock()
	}
	return b.full.PutRerun(ctx, r)
}

func (b rerunListAppends) ListReruns(ctx context.Context, pipelineID string, limit int) ([]types.RerunRecord, error) {
	list, err := b.full.ListReruns(ctx, pipelineID, limit)
	var out []types.RerunRecord
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	for _, r := range list {
		for range 1 + b.s.appends[r.RerunID] {
			out = append(out, r)
		}
	}
	return out[:min(limit, len(out))], err
}

// replayCreatedAtIfNotExists fills a zero CreatedAt only on the first put
// (SET CreatedAt = if_not_exists(CreatedAt, :now)).
type replayCreatedAtIfNotExists struct{ full }

func (b replayCreatedAtIfNotExists) PutReplay(ctx context.Context, r types.ReplayRequest) error {
	if cur, err := b.full.GetReplay(ctx, r.PipelineID, r.Date, r.ScheduleID); err == nil && cur != nil && r.CreatedAt.IsZero() {
		r.CreatedAt = cur.CreatedAt
	}
	return b.full.PutReplay(ctx, r)
}

// runLogTooLargePartial stores a truncated entry, then reports ErrTooLarge.
type runLogTooLargePartial struct{ full }

func (b runLogTooLargePartial) PutRunLog(ctx context.Context, e types.RunLogEntry) error {
	if len(e.FailureMessage) > 400<<10 {
		e.FailureMessage = e.FailureMessage[:400<<10]
		if err := b.full.PutRunLog(ctx, e); err != nil {
			return err
		}
		return provider.ErrTooLarge
	}
	return b.full.PutRunLog(ctx, e)
}

// readinessUpTo128K stores readiness results of at most 128 KiB.
type readinessUpTo128K struct{ full }

func (b readinessUpTo128K) PutReadiness(ctx context.Context, r types.ReadinessResult) error {
	if body, _ := json.Marshal(r); len(body) > 128<<10 {
		return provider.ErrTooLarge
	}
	return b.full.PutReadiness(ctx, r)
}

// listEventsIgnoresRetention serves ListEvents from a copy of the log that
// retention does not trim.
type listEventsIgnoresRetention struct {
	full
	s *shared
}

func (b listEventsIgnoresRetention) AppendEvent(ctx context.Context, ev types.Event) error {
	if err := b.full.AppendEvent(ctx, ev); err != nil {
		return err
	}
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	b.s.events[ev.PipelineID] = append(b.s.events[ev.PipelineID], ev)
	return nil
}

func (b listEventsIgnoresRetention) ListEvents(ctx context.Context, pipelineID string, limit int) ([]types.Event, error) {
	if _, err := b.full.ListEvents(ctx, pipelineID, limit); err != nil {
		return nil, err
	}
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	log := b.s.events[pipelineID]
	return slices.Clone(log[max(0, len(log)-limit):]), nil
}

// readResumesFromOldest reads on from the oldest event retained when the cursor
// expired, as the rule was before ErrCursorExpired: a silent gap.
type readResumesFromOldest struct{ full }

func (b readResumesFromOldest) ReadEventsSince(ctx context.Context, pipelineID, since string, count int64) ([]types.EventRecord, error) {
	recs, err := b.full.ReadEventsSince(ctx, pipelineID, since, count)
	if errors.Is(err, provider.ErrCursorExpired) {
		return b.full.ReadEventsSince(ctx, pipelineID, "", count)
	}
	return recs, err
}

// followResumesFromOldest follows on from the oldest event retained when the
// cursor expired, without a word.
type followResumesFromOldest struct{ full }

func (b followResumesFromOldest) FollowEvents(ctx context.Context, pipelineID, cursor string) iter.Seq2[types.EventRecord, error] {
	return func(yield func(types.EventRecord, error) bool) {
		for r, err := range b.full.FollowEvents(ctx, pipelineID, cursor) {
			if errors.Is(err, provider.ErrCursorExpired) {
				for r, err := range b.full.FollowEvents(ctx, pipelineID, "") {
					if !yield(r, err) {
						return
					}
				}
				return
			}
			if !yield(r, err) {
				return
			}
		}
	}
}

// eventsByCount keeps an event log of its own per pipeline, the last
// teethMaxEvents events (a capped list, as Redis's MAXLEN), whose cursors are
// event numbers. A read from a cursor that fell off the list resumes from the
// oldest event kept, without a word.
type eventsByCount struct {
	full
	s *shared
}

// countedEvent is one event of eventsByCount's log; capped is set on the entry
// before the oldest event that the list kept.
type countedEvent struct {
	seq    int64
	ev     types.Event
	capped bool
}

// teethMaxEvents is eventsByCount's log length.
const teethMaxEvents = 50

func (b eventsByCount) AppendEvent(ctx context.Context, ev types.Event) error {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	if err := b.full.AppendEvent(ctx, ev); err != nil {
		return err
	}
	b.s.seqs[ev.PipelineID]++
	log := append(b.s.countedLogs[ev.PipelineID], countedEvent{seq: b.s.seqs[ev.PipelineID], ev: ev})
	if n := len(log) - teethMaxEvents - 1; n >= 0 {
		// Keep the last event dropped, marked, to tell where the list starts.
		log = log[n:]
		log[0].capped = true
	}
	b.s.countedLogs[ev.PipelineID] = log
	return nil
}

func (b eventsByCount) ReadEventsSince(ctx context.Context, pipelineID, since string, count int64) ([]types.EventRecord, error) {
	if _, err := b.full.ReadEventsSince(ctx, pipelineID, "", count); err != nil {
		return nil, err // bad input, cancellation
	}
	n, err := provider.ParseSeqCursor(since)
	if err != nil {
		return nil, err
	}
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	out := []types.EventRecord{}
	for _, e := range b.s.countedLogs[pipelineID] {
		switch {
		case e.capped:
			n = max(n, e.seq) // the bug: past the cap, silently
		case e.seq > n && int64(len(out)) < count:
			out = append(out, types.EventRecord{StreamID: provider.FormatSeqCursor(e.seq), Event: e.ev})
		}
	}
	return out, nil
}

// brokenBackend is one broken variant and the subtest that must catch it.
type brokenBackend struct {
	name string
	want string // the failed subtest, below the top-level test
	wrap func(p full, s *shared) provider.Provider
}

// brokenHarness changes the harness a broken variant, named by the key, runs
// under.
var brokenHarness = map[string]func(h *providertest.Harness){
	"reindex_no_restore": func(h *providertest.Harness) {
		h.DropActiveEntry = func(t *testing.T, runID string) {
			s := sharedOf(t)
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.dropped == nil {
				s.dropped = map[string]bool{}
			}
			s.dropped[runID] = true
		}
	},
	"marker_log_by_count": func(h *providertest.Harness) { h.MaxMarkerWrites = teethMarkerWrites },
	"events_by_count": func(h *providertest.Harness) {
		open := h.Open
		h.OpenMaxEvents = func(t *testing.T, _ int) provider.Provider { return open(t) }
	},
}

// fenceWithLeaseRecord keeps a key's fence counter in its lease record, which a
// sweeper deletes an hour after the lease expired or was released (DynamoDB's
// TTL deletion, an eviction): the counter starts again after a long idle gap.
type fenceWithLeaseRecord struct {
	full
	s *shared
}

// leaseRecord is fenceWithLeaseRecord's record of a key.
type leaseRecord struct {
	base int64     // the true fence when the counter started again, minus one
	ends time.Time // when the lease expired or was released
}

// leaseSweepDelay is how long after its end fenceWithLeaseRecord's sweeper
// deletes a lease record.
const leaseSweepDelay = time.Hour

func (b fenceWithLeaseRecord) AcquireLease(ctx context.Context, key string, ttl time.Duration) (*types.Lease, error) {
	l, err := b.full.AcquireLease(ctx, key, ttl)
	if l == nil {
		return l, err
	}
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	rec, ok := b.s.leaseRecs[key]
	switch {
	case !ok:
		rec = &leaseRecord{}
		b.s.leaseRecs[key] = rec
	case !b.s.now().Before(rec.ends.Add(leaseSweepDelay)): // swept: a new record
		rec.base = l.Fence - 1
	}
	l.Fence -= rec.base
	rec.ends = l.ExpiresAt
	return l, nil
}

func (b fenceWithLeaseRecord) RenewLease(ctx context.Context, l types.Lease, ttl time.Duration) (*types.Lease, error) {
	next, err := b.full.RenewLease(ctx, l, ttl)
	if next != nil {
		b.s.mu.Lock()
		if rec, ok := b.s.leaseRecs[l.Key]; ok {
			rec.ends = next.ExpiresAt
		}
		b.s.mu.Unlock()
	}
	return next, err
}

func (b fenceWithLeaseRecord) ReleaseLease(ctx context.Context, l types.Lease) error {
	err := b.full.ReleaseLease(ctx, l)
	if err == nil {
		b.s.mu.Lock()
		if rec, ok := b.s.leaseRecs[l.Key]; ok {
			rec.ends = b.s.now()
		}
		b.s.mu.Unlock()
	}
	return err
}

func (b fenceWithLeaseRecord) GetLockInfo(ctx context.Context, key string) (*types.LockInfo, error) {
	info, err := b.full.GetLockInfo(ctx, key)
	if info != nil && info.IsLease() {
		b.s.mu.Lock()
		if rec, ok := b.s.leaseRecs[key]; ok {
			info.Fence -= rec.base
		}
		b.s.mu.Unlock()
	}
	return info, err
}

// zeroTimesAsEpoch stores the zero times of a run log as the Unix epoch (a
// column of epoch seconds that has no zero).
type zeroTimesAsEpoch struct{ full }

func (b zeroTimesAsEpoch) PutRunLog(ctx context.Context, e types.RunLogEntry) error {
	epoch := time.Unix(0, 0).UTC()
	fix := func(at *time.Time) {
		if at.IsZero() {
			*at = epoch
		}
	}
	fix(&e.StartedAt)
	fix(&e.UpdatedAt)
	if e.CompletedAt != nil {
		done := *e.CompletedAt
		fix(&done)
		e.CompletedAt = &done
	}
	e.RetryHistory = slices.Clone(e.RetryHistory)
	for i := range e.RetryHistory {
		fix(&e.RetryHistory[i].At)
	}
	return b.full.PutRunLog(ctx, e)
}

// runeLimited maps a key that is over limit in bytes but not in runes to a key
// the memory backend accepts: a backend that counts the limit in runes (a
// VARCHAR(n) of characters) and stores such a key.
func runeLimited(key string, limit int) string {
	if len(key) <= limit || !utf8.ValidString(key) || utf8.RuneCountInString(key) > limit {
		return key
	}
	h := fnv.New64a()
	h.Write([]byte(key))
	return fmt.Sprintf("runes-%x", h.Sum64())
}

// lockKeyRunes limits lock keys to MaxLockKeyLen runes, not bytes.
type lockKeyRunes struct{ full }

func (b lockKeyRunes) AcquireLock(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	return b.full.AcquireLock(ctx, runeLimited(key, types.MaxLockKeyLen), ttl)
}

func (b lockKeyRunes) ReleaseLock(ctx context.Context, key string) error {
	return b.full.ReleaseLock(ctx, runeLimited(key, types.MaxLockKeyLen))
}

// leaseKeyRunes limits lease keys to MaxLockKeyLen runes, not bytes.
type leaseKeyRunes struct{ full }

func (b leaseKeyRunes) AcquireLease(ctx context.Context, key string, ttl time.Duration) (*types.Lease, error) {
	return b.full.AcquireLease(ctx, runeLimited(key, types.MaxLockKeyLen), ttl)
}

// eventKindRunes limits event kinds to MaxEventKindLen runes, not bytes, and
// stores a longer kind cut at the limit.
type eventKindRunes struct{ full }

func (b eventKindRunes) AppendEvent(ctx context.Context, ev types.Event) error {
	if len(ev.Kind) > types.MaxEventKindLen && utf8.RuneCountInString(ev.Kind) <= types.MaxEventKindLen {
		cut := types.MaxEventKindLen
		for !utf8.RuneStart(ev.Kind[cut]) {
			cut--
		}
		ev.Kind = ev.Kind[:cut]
	}
	return b.full.AppendEvent(ctx, ev)
}

// followPipelinePrefix follows, from the start, every pipeline whose ID starts
// with the one followed (a subscription to a key pattern, a change stream
// filtered by prefix), in commit order.
type followPipelinePrefix struct {
	full
	s *shared
}

func (b followPipelinePrefix) AppendEvent(ctx context.Context, ev types.Event) error {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	if err := b.full.AppendEvent(ctx, ev); err != nil {
		return err
	}
	seq := b.s.seqs[ev.PipelineID]
	b.s.seqs[ev.PipelineID] = seq + 1
	recs, err := b.full.ReadEventsSince(ctx, ev.PipelineID, provider.FormatSeqCursor(seq), 1)
	if err != nil || len(recs) != 1 {
		return fmt.Errorf("reading back the event appended: %v, %v", recs, err)
	}
	b.s.appended = append(b.s.appended, recs[0])
	return nil
}

func (b followPipelinePrefix) FollowEvents(ctx context.Context, pipelineID, cursor string) iter.Seq2[types.EventRecord, error] {
	if cursor != "" || types.ValidateID("pipeline ID", pipelineID) != nil {
		return b.full.FollowEvents(ctx, pipelineID, cursor)
	}
	return func(yield func(types.EventRecord, error) bool) {
		for next := 0; ; {
			b.s.mu.Lock()
			recs := slices.Clone(b.s.appended[next:])
			b.s.mu.Unlock()
			next += len(recs)
			for _, r := range recs {
				if strings.HasPrefix(r.Event.PipelineID, pipelineID) && !yield(r, nil) {
					return
				}
			}
			select {
			case <-ctx.Done():
				yield(types.EventRecord{}, ctx.Err())
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}
}

// watchSplitsOnSlash keeps a marker write's key as pipeline/schedule/date and
// splits it on '/' when it delivers the write, although IDs may contain '/'.
type watchSplitsOnSlash struct{ full }

func (b watchSplitsOnSlash) WatchCascadeMarkers(ctx context.Context, cursor string) iter.Seq2[types.CascadeMarkerRecord, error] {
	return func(yield func(types.CascadeMarkerRecord, error) bool) {
		for r, err := range b.full.WatchCascadeMarkers(ctx, cursor) {
			if err == nil {
				m := &r.Marker
				parts := strings.SplitN(m.PipelineID+"/"+m.ScheduleID+"/"+m.Date, "/", 3)
				m.PipelineID, m.ScheduleID, m.Date = parts[0], parts[1], parts[2]
			}
			if !yield(r, err) {
				return
			}
		}
	}
}

// runLogsPipelinePrefix lists run logs with a key range that lacks the
// delimiter after the pipeline ID (begins_with(SK, "RUNLOG#"+pipeline)).
type runLogsPipelinePrefix struct {
	full
	s *shared
}

func (b runLogsPipelinePrefix) PutRunLog(ctx context.Context, e types.RunLogEntry) error {
	b.s.seenBefore("runlog\n" + e.PipelineID)
	return b.full.PutRunLog(ctx, e)
}

func (b runLogsPipelinePrefix) ListRunLogs(ctx context.Context, pipelineID string, limit int) ([]types.RunLogEntry, error) {
	out, err := b.full.ListRunLogs(ctx, pipelineID, limit)
	if err != nil {
		return out, err
	}
	b.s.mu.Lock()
	var pids []string
	for k := range b.s.hidden {
		if pid, ok := strings.CutPrefix(k, "runlog\n"); ok && pid != pipelineID && strings.HasPrefix(pid, pipelineID) {
			pids = append(pids, pid)
		}
	}
	b.s.mu.Unlock()
	for _, pid := range pids {
		more, _ := b.full.ListRunLogs(ctx, pid, limit)
		out = append(out, more...)
	}
	return out[:min(limit, len(out))], nil
}

// watchResumesFromOldest resumes a watch whose cursor expired from the oldest
// write retained, without a word.
type watchResumesFromOldest struct{ full }

func (b watchResumesFromOldest) WatchCascadeMarkers(ctx context.Context, cursor string) iter.Seq2[types.CascadeMarkerRecord, error] {
	return func(yield func(types.CascadeMarkerRecord, error) bool) {
		for r, err := range b.full.WatchCascadeMarkers(ctx, cursor) {
			if errors.Is(err, provider.ErrCursorExpired) {
				for r, err := range b.full.WatchCascadeMarkers(ctx, "") {
					if !yield(r, err) {
						return
					}
				}
				return
			}
			if !yield(r, err) {
				return
			}
		}
	}
}

// watchHearsExpiryOnNextWrite notices that a watch's cursor expired only once
// a write after the gap is there to read, as a watch that looks for the gap in
// the entries it reads would: until the next write, it waits without a word.
type watchHearsExpiryOnNextWrite struct{ full }

func (b watchHearsExpiryOnNextWrite) WatchCascadeMarkers(ctx context.Context, cursor string) iter.Seq2[types.CascadeMarkerRecord, error] {
	return func(yield func(types.CascadeMarkerRecord, error) bool) {
		for r, err := range b.full.WatchCascadeMarkers(ctx, cursor) {
			if errors.Is(err, provider.ErrCursorExpired) {
				for _, werr := range b.full.WatchCascadeMarkers(ctx, "") {
					if werr == nil {
						werr = err // a write after the gap: now the gap shows
					}
					yield(types.CascadeMarkerRecord{}, werr)
					return
				}
				return
			}
			if !yield(r, err) {
				return
			}
		}
	}
}

// markerLogByCount keeps a marker log of its own, the last teethMarkerWrites
// writes (a capped list) for memorytest.MarkerRetention at most, whose cursors
// are write numbers. A watch whose cursor is older than a write retention
// dropped fails with ErrCursorExpired, unless the write fell off the end of the
// list: then it resumes from the oldest write kept, without a word.
type markerLogByCount struct {
	full
	s *shared
}

// markerLogEntry is one write of markerLogByCount's log; capped is set on the
// entry before the oldest write that the list kept.
type markerLogEntry struct {
	seq    int64
	m      types.CascadeMarker
	capped bool
}

// teethMarkerWrites is markerLogByCount's log length.
const teethMarkerWrites = 50

func (b markerLogByCount) WriteCascadeMarker(ctx context.Context, pipelineID, scheduleID, date, source string) error {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	if err := b.full.WriteCascadeMarker(ctx, pipelineID, scheduleID, date, source); err != nil {
		return err
	}
	seq := int64(1)
	if n := len(b.s.markerLog); n > 0 {
		seq = b.s.markerLog[n-1].seq + 1
	}
	m := types.CascadeMarker{PipelineID: pipelineID, ScheduleID: types.ScheduleOrDefault(scheduleID), Date: date, Source: source, WrittenAt: b.s.now()}
	b.s.markerLog = append(b.s.markerLog, markerLogEntry{seq: seq, m: m})
	if n := len(b.s.markerLog) - teethMarkerWrites - 1; n >= 0 {
		// Keep the last write dropped, marked, to tell the cap from retention.
		b.s.markerLog = b.s.markerLog[n:]
		b.s.markerLog[0].capped = true
	}
	return nil
}

func (b markerLogByCount) WatchCascadeMarkers(ctx context.Context, cursor string) iter.Seq2[types.CascadeMarkerRecord, error] {
	since, err := provider.ParseSeqCursor(cursor)
	if err != nil {
		return provider.Fail[types.CascadeMarkerRecord](err)
	}
	return func(yield func(types.CascadeMarkerRecord, error) bool) {
		for {
			b.s.mu.Lock()
			var recs []types.CascadeMarkerRecord
			expired, now := int64(0), b.s.now()
			for _, e := range b.s.markerLog {
				switch {
				case e.capped:
					since = max(since, e.seq) // the bug: past the cap, silently
				case !now.Before(e.m.WrittenAt.Add(memorytest.MarkerRetention)):
					expired = e.seq
				case e.seq > since:
					recs = append(recs, types.CascadeMarkerRecord{Cursor: provider.FormatSeqCursor(e.seq), Marker: e.m})
				}
			}
			b.s.mu.Unlock()
			if cursor != "" && since < expired {
				yield(types.CascadeMarkerRecord{}, fmt.Errorf("%w: marker writes up to %d were dropped", provider.ErrCursorExpired, expired))
				return
			}
			cursor = "-"
			for _, r := range recs {
				if !yield(r, nil) {
					return
				}
				since, _ = provider.ParseSeqCursor(r.Cursor)
			}
			select {
			case <-ctx.Done():
				yield(types.CascadeMarkerRecord{}, ctx.Err())
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}
}

// createOverwrites stores the run whether or not it exists.
type createOverwrites struct{ full }

func (b createOverwrites) CreateRunState(ctx context.Context, run types.RunState) (bool, error) {
	return true, b.full.PutRunState(ctx, run)
}

// createChecksThenPuts reads, then writes: two creators that both read "missing"
// both create.
type createChecksThenPuts struct{ full }

func (b createChecksThenPuts) CreateRunState(ctx context.Context, run types.RunState) (bool, error) {
	cur, err := b.full.GetRunState(ctx, run.RunID)
	if err != nil || cur != nil {
		return false, err
	}
	time.Sleep(checkThenActPause)
	return true, b.full.PutRunState(ctx, run)
}

// followSnapshot yields what is in the log when it starts, then only waits.
type followSnapshot struct{ full }

func (b followSnapshot) FollowEvents(ctx context.Context, pipelineID, cursor string) iter.Seq2[types.EventRecord, error] {
	return func(yield func(types.EventRecord, error) bool) {
		recs, err := b.full.ReadEventsSince(ctx, pipelineID, cursor, 1<<20)
		if err != nil {
			yield(types.EventRecord{}, err)
			return
		}
		for _, r := range recs {
			if !yield(r, nil) {
				return
			}
		}
		<-ctx.Done()
		yield(types.EventRecord{}, ctx.Err())
	}
}

// followRepeatsCursor yields the cursor's own event again before the ones after it.
type followRepeatsCursor struct{ full }

func (b followRepeatsCursor) FollowEvents(ctx context.Context, pipelineID, cursor string) iter.Seq2[types.EventRecord, error] {
	if n, err := strconv.Atoi(cursor); err == nil && n > 0 {
		cursor = strconv.Itoa(n - 1)
	}
	return b.full.FollowEvents(ctx, pipelineID, cursor)
}

// watchOncePerMarker delivers each marker once, however often it is rewritten.
type watchOncePerMarker struct{ full }

func (b watchOncePerMarker) WatchCascadeMarkers(ctx context.Context, cursor string) iter.Seq2[types.CascadeMarkerRecord, error] {
	return func(yield func(types.CascadeMarkerRecord, error) bool) {
		seen := map[string]bool{}
		for r, err := range b.full.WatchCascadeMarkers(ctx, cursor) {
			key := r.Marker.PipelineID + "|" + r.Marker.Date + "|" + r.Marker.ScheduleID
			if err == nil && seen[key] {
				continue
			}
			seen[key] = true
			if !yield(r, err) {
				return
			}
		}
	}
}

// inspectExpiryInclusive judges expiry in GetLockInfo as now > ExpiresAt: a lock
// it saw held still shows at the exact instant it expires.
type inspectExpiryInclusive struct {
	full
	s *shared
}

func (b inspectExpiryInclusive) GetLockInfo(ctx context.Context, key string) (*types.LockInfo, error) {
	info, err := b.full.GetLockInfo(ctx, key)
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	switch {
	case err != nil:
		return nil, err
	case info != nil:
		if info.ExpiresAt != nil {
			b.s.expiries[key] = *info.ExpiresAt
		}
		return info, nil
	}
	if exp, ok := b.s.expiries[key]; ok && !b.s.now().After(exp) {
		return &types.LockInfo{Key: key, Owner: b.Owner(), ExpiresAt: &exp}, nil
	}
	return nil, nil
}

// inspectCallerOwner reports the asking instance as the owner of every lock.
type inspectCallerOwner struct{ full }

func (b inspectCallerOwner) GetLockInfo(ctx context.Context, key string) (*types.LockInfo, error) {
	info, err := b.full.GetLockInfo(ctx, key)
	if info != nil && !info.IsLease() {
		info.Owner = b.Owner()
	}
	return info, err
}

// listFailsOnCorrupt fails the whole ListRuns when one run does not decode, as
// a backend that returns the first decode error does.
type listFailsOnCorrupt struct{ full }

func (b listFailsOnCorrupt) ListRuns(ctx context.Context, pipelineID string, limit int) ([]types.RunState, error) {
	var bad error
	list, err := b.full.ListRuns(provider.OnCorrupt(ctx, func(e *provider.CorruptError) { bad = e }), pipelineID, limit)
	if err == nil && bad != nil {
		return nil, bad
	}
	return list, err
}

// corruptUnreported skips a run that does not decode without a word.
type corruptUnreported struct{ full }

func (b corruptUnreported) ListRuns(ctx context.Context, pipelineID string, limit int) ([]types.RunState, error) {
	return b.full.ListRuns(provider.OnCorrupt(ctx, nil), pipelineID, limit)
}

// limitCountsCorrupt counts the runs it skipped toward the limit, as a backend
// that reads limit rows and then drops the bad ones does.
type limitCountsCorrupt struct{ full }

func (b limitCountsCorrupt) ListRuns(ctx context.Context, pipelineID string, limit int) ([]types.RunState, error) {
	skipped := 0
	list, err := b.full.ListRuns(provider.OnCorrupt(ctx, func(e *provider.CorruptError) {
		skipped++
		provider.SkipCorrupt(ctx, nil, e) // still reported to the caller
	}), pipelineID, limit)
	if n := limit - skipped; err == nil && len(list) > n {
		list = list[:max(n, 0)]
	}
	return list, err
}

// getCorruptMissing hides a run that does not decode as missing.
type getCorruptMissing struct{ full }

func (b getCorruptMissing) GetRunState(ctx context.Context, runID string) (*types.RunState, error) {
	r, err := b.full.GetRunState(ctx, runID)
	if errors.Is(err, provider.ErrCorrupt) {
		return nil, nil
	}
	return r, err
}

// corruptUnnamed returns ErrCorrupt for a rerun that does not decode without
// saying which.
type corruptUnnamed struct{ full }

func (b corruptUnnamed) GetRerun(ctx context.Context, rerunID string) (*types.RerunRecord, error) {
	r, err := b.full.GetRerun(ctx, rerunID)
	if errors.Is(err, provider.ErrCorrupt) {
		return nil, fmt.Errorf("stored value does not decode: %w", provider.ErrCorrupt)
	}
	return r, err
}

// followStopsAtCorrupt ends a follow at the first event that does not decode.
type followStopsAtCorrupt struct{ full }

func (b followStopsAtCorrupt) FollowEvents(ctx context.Context, pipelineID, cursor string) iter.Seq2[types.EventRecord, error] {
	return func(yield func(types.EventRecord, error) bool) {
		var bad error
		ctx := provider.OnCorrupt(ctx, func(e *provider.CorruptError) { bad = e })
		for r, err := range b.full.FollowEvents(ctx, pipelineID, cursor) {
			if bad != nil {
				yield(types.EventRecord{}, bad)
				return
			}
			if !yield(r, err) || err != nil {
				return
			}
		}
	}
}

// retentionReadsLate judges retention one nanosecond late (now > expiry rather
// than now >= expiry): its reads go through a handle whose clock is 1 ns behind.
type retentionReadsLate struct {
	full
	late full
}

func newRetentionReadsLate(p full, s *shared) provider.Provider {
	late, err := p.(*memprovider.Provider).NewHandle(memprovider.WithRetention(memorytest.Retention),
		memprovider.WithClock(func() time.Time { return s.now().Add(-time.Nanosecond) }))
	if err != nil {
		panic(err)
	}
	return retentionReadsLate{p, late}
}

func (b retentionReadsLate) GetRunState(ctx context.Context, runID string) (*types.RunState, error) {
	return b.late.GetRunState(ctx, runID)
}

func (b retentionReadsLate) ListRuns(ctx context.Context, pipelineID string, limit int) ([]types.RunState, error) {
	return b.late.ListRuns(ctx, pipelineID, limit)
}

// retentionFromFirstWrite counts a run's retention from its first write, as a
// backend that sets a TTL on create and never refreshes it does.
type retentionFromFirstWrite struct {
	full
	s *shared
}

func (b retentionFromFirstWrite) PutRunState(ctx context.Context, run types.RunState) error {
	b.s.mu.Lock()
	if _, ok := b.s.expiries[run.RunID]; !ok {
		b.s.expiries[run.RunID] = b.s.now().Add(memorytest.Retention.Runs)
	}
	b.s.mu.Unlock()
	return b.full.PutRunState(ctx, run)
}

func (b retentionFromFirstWrite) expired(runID string) bool {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	exp, ok := b.s.expiries[runID]
	return ok && !b.s.now().Before(exp)
}

func (b retentionFromFirstWrite) GetRunState(ctx context.Context, runID string) (*types.RunState, error) {
	if b.expired(runID) {
		return nil, nil
	}
	return b.full.GetRunState(ctx, runID)
}

func (b retentionFromFirstWrite) ListRuns(ctx context.Context, pipelineID string, limit int) ([]types.RunState, error) {
	list, err := b.full.ListRuns(ctx, pipelineID, limit)
	return slices.DeleteFunc(list, func(r types.RunState) bool { return b.expired(r.RunID) }), err
}

// listKeepsExpiredRuns lists runs from an index that nothing prunes: a run
// stays in ListRuns, as last written, after it expired.
type listKeepsExpiredRuns struct {
	full
	s *shared
}

func (b listKeepsExpiredRuns) PutRunState(ctx context.Context, run types.RunState) error {
	if err := b.full.PutRunState(ctx, run); err != nil {
		return err
	}
	got, err := b.full.GetRunState(ctx, run.RunID)
	if err != nil || got == nil {
		return err
	}
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	if b.s.runs == nil {
		b.s.runs = map[string]types.RunState{}
	}
	b.s.runs[run.RunID] = *got
	return nil
}

func (b listKeepsExpiredRuns) ListRuns(ctx context.Context, pipelineID string, limit int) ([]types.RunState, error) {
	list, err := b.full.ListRuns(ctx, pipelineID, limit)
	if err != nil {
		return nil, err
	}
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	for id, r := range b.s.runs {
		if r.PipelineID == pipelineID && !slices.ContainsFunc(list, func(l types.RunState) bool { return l.RunID == id }) {
			list = append(list, r)
		}
	}
	return list, nil
}

// createRefusesExpiredRun remembers every RunID it created and refuses to
// create one again, as a create conditioned on the key's existence alone does
// while the expired record is not deleted yet.
type createRefusesExpiredRun struct {
	full
	s *shared
}

func (b createRefusesExpiredRun) CreateRunState(ctx context.Context, run types.RunState) (bool, error) {
	b.s.mu.Lock()
	if b.s.hidden[run.RunID] {
		b.s.mu.Unlock()
		return false, nil
	}
	b.s.mu.Unlock()
	ok, err := b.full.CreateRunState(ctx, run)
	if ok {
		b.s.mu.Lock()
		b.s.hidden[run.RunID] = true
		b.s.mu.Unlock()
	}
	return ok, err
}

// listLocksExpiryInclusive judges expiry in ListLocks as now > ExpiresAt: a lock
// it listed still shows at the exact instant it expires.
type listLocksExpiryInclusive struct {
	full
	s *shared
}

func (b listLocksExpiryInclusive) ListLocks(ctx context.Context, match string, limit int) ([]types.LockInfo, error) {
	list, err := b.full.ListLocks(ctx, match, limit)
	if err != nil {
		return nil, err
	}
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	listed := map[string]bool{}
	for _, info := range list {
		listed[info.Key] = true
		if info.ExpiresAt != nil {
			b.s.expiries[info.Key] = *info.ExpiresAt
		}
	}
	for key, exp := range b.s.expiries {
		if !listed[key] && !b.s.now().After(exp) {
			list = append(list, types.LockInfo{Key: key, Owner: b.Owner(), ExpiresAt: &exp})
		}
	}
	slices.SortFunc(list, func(a, b types.LockInfo) int { return strings.Compare(a.Key, b.Key) })
	return list[:min(limit, len(list))], nil
}

// listLocksUnordered returns the locks in reverse key order, cut at limit
// after that: the wrong ones when there are more.
type listLocksUnordered struct{ full }

func (b listLocksUnordered) ListLocks(ctx context.Context, match string, limit int) ([]types.LockInfo, error) {
	list, err := b.full.ListLocks(ctx, match, max(limit, 1<<20))
	if err != nil || limit < 1 {
		return list, err
	}
	slices.Reverse(list)
	return list[:min(limit, len(list))], nil
}

// listLocksByPrefix matches every key that starts with the pattern's literal
// prefix, whatever follows it.
type listLocksByPrefix struct{ full }

func (b listLocksByPrefix) ListLocks(ctx context.Context, match string, limit int) ([]types.LockInfo, error) {
	m, err := provider.ParseLockPattern(match)
	if err != nil {
		return nil, err
	}
	return b.full.ListLocks(ctx, provider.QuoteLockPattern(m.Prefix())+"*", limit)
}

var brokenBackends = append([]brokenBackend{
	// Retention: a record is expired from the instant now >= its expiry.
	{"retention_reads_late", "Retention/runs/expires_at_retention", newRetentionReadsLate},
	// Retention: every write restarts a record's retention.
	{"retention_from_first_write", "Retention/runs/write_restarts_retention",
		func(p full, s *shared) provider.Provider { return retentionFromFirstWrite{p, s} }},
	// Retention: an expired record is invisible to lists too.
	{"list_keeps_expired_runs", "Retention/runs/expires_at_retention",
		func(p full, s *shared) provider.Provider { return listKeepsExpiredRuns{p, s} }},
	// Retention: an expired run is created again.
	{"create_refuses_expired_run", "Retention/runs/created_again_after_expiry",
		func(p full, s *shared) provider.Provider { return createRefusesExpiredRun{p, s} }},
	// Corrupt: a listing skips a record that does not decode, and returns the others.
	{"list_fails_on_corrupt", "Corrupt/run_state/skip/ListRuns",
		func(p full, _ *shared) provider.Provider { return listFailsOnCorrupt{p} }},
	// Corrupt: each record skipped is reported.
	{"corrupt_unreported", "Corrupt/run_state/report/ListRuns",
		func(p full, _ *shared) provider.Provider { return corruptUnreported{p} }},
	// Corrupt: a List(limit) returns limit good records when there are that many.
	{"limit_counts_corrupt", "Corrupt/run_state/limit/ListRuns",
		func(p full, _ *shared) provider.Provider { return limitCountsCorrupt{p} }},
	// Corrupt: a Get of a corrupt record is ErrCorrupt, not missing.
	{"get_corrupt_missing", "Corrupt/run_state/get",
		func(p full, _ *shared) provider.Provider { return getCorruptMissing{p} }},
	// Corrupt: the error names the record.
	{"corrupt_unnamed", "Corrupt/rerun/get",
		func(p full, _ *shared) provider.Provider { return corruptUnnamed{p} }},
	// Corrupt: an iterator goes on past a record that does not decode.
	{"follow_stops_at_corrupt", "Corrupt/event/skip/FollowEvents",
		func(p full, _ *shared) provider.Provider { return followStopsAtCorrupt{p} }},
	// RunCreator: an existing run is left alone.
	{"create_overwrites", "RunCreator/create_once",
		func(p full, _ *shared) provider.Provider { return createOverwrites{p} }},
	// RunCreator: exactly one of concurrent creates wins.
	{"create_checks_then_puts", "RunCreator/concurrent_creates_one_winner",
		func(p full, _ *shared) provider.Provider { return createChecksThenPuts{p} }},
	// LockInspector: a lock is gone at the exact instant of its expiry.
	{"inspect_expiry_inclusive", "LockInspector/expired_at_exact_ttl",
		func(p full, s *shared) provider.Provider { return inspectExpiryInclusive{p, s} }},
	// LockInspector: the owner shown is the holder's, whoever asks.
	{"inspect_caller_owner", "LockInspector/owners_per_instance",
		func(p full, _ *shared) provider.Provider { return inspectCallerOwner{p} }},
	// LockLister: a lock is gone at the exact instant of its expiry.
	{"list_locks_expiry_inclusive", "LockLister/expired_at_exact_ttl",
		func(p full, s *shared) provider.Provider { return listLocksExpiryInclusive{p, s} }},
	// LockLister: the first limit keys in key order.
	{"list_locks_unordered", "LockLister/key_order_and_limit",
		func(p full, _ *shared) provider.Provider { return listLocksUnordered{p} }},
	// LockLister: the whole pattern matches, not its literal prefix alone.
	{"list_locks_by_prefix", "LockLister/pattern",
		func(p full, _ *shared) provider.Provider { return listLocksByPrefix{p} }},
	// EventFollower: events appended after the follow started are delivered.
	{"follow_snapshot", "EventFollower/from_start_then_live",
		func(p full, _ *shared) provider.Provider { return followSnapshot{p} }},
	// EventFollower: strictly after the cursor.
	{"follow_repeats_cursor", "EventFollower/from_cursor",
		func(p full, _ *shared) provider.Provider { return followRepeatsCursor{p} }},
	// ActiveRunLister: a finished run leaves the index.
	{"active_keeps_finished", "ActiveRunLister/listed_while_unfinished",
		func(p full, s *shared) provider.Provider { return activeIndex{full: p, s: s, keepFinished: true} }},
	// ActiveRunLister: a refused write leaves the index as the truth is.
	{"active_lost_cas_applied", "ActiveRunLister/refused_writes_match_truth",
		func(p full, s *shared) provider.Provider { return activeIndex{full: p, s: s, early: true} }},
	// ActiveRunReindexer: ReindexRun writes nothing of the run (a rewrite makes a stuck run look fresh).
	{"reindex_rewrites_run", "ActiveRunLister/reindex_keeps_runs",
		func(p full, _ *shared) provider.Provider { return reindexRewritesRun{p} }},
	// ActiveRunReindexer: ReindexRun restores an entry the index lost.
	{"reindex_no_restore", "ActiveRunLister/reindex_restores_lost_entry",
		func(p full, s *shared) provider.Provider { return lostEntries{p, s} }},
	// ActiveRunLister: paging is duplicate-free (each page strictly after the cursor).
	{"active_next_repeats", "ActiveRunLister/paging_while_runs_change",
		func(p full, _ *shared) provider.Provider { return activeNextRepeats{p} }},
	// MarkerWatcher: a rewrite is a new write, delivered again.
	{"watch_once_per_marker", "MarkerWatcher/rewrite_delivered_again",
		func(p full, _ *shared) provider.Provider { return watchOncePerMarker{p} }},
	// Runs: CAS succeeds only if the stored Version equals expectedVersion.
	{"cas_ignores_version", "RunStore/cas_version_mismatch",
		func(p full, _ *shared) provider.Provider { return casIgnoresVersion{p} }},
	// Runs: CreatedAt never changes through CAS.
	{"cas_overwrites_created_at", "RunStore/cas_keeps_created_at",
		func(p full, _ *shared) provider.Provider { return casOverwritesCreatedAt{p} }},
	// Round trip: times are Equal to the nanosecond.
	{"truncates_times", "RunStore/put_get_round_trip",
		func(p full, _ *shared) provider.Provider { return truncatesTimes{p} }},
	// Runs: ListRuns is newest CreatedAt first.
	{"list_runs_oldest_first", "RunStore/list_runs_newest_first",
		func(p full, _ *shared) provider.Provider { return listRunsOldestFirst{p} }},
	// Bad input: an empty ID is ErrInvalidArgument.
	{"accepts_empty_run_id", "RunStore/bad_input/put_run_id_empty",
		func(p full, _ *shared) provider.Provider { return acceptsEmptyRunID{p} }},
	// Missing: a Get of a missing entity is (nil, nil).
	{"get_missing_errors", "RerunStore/get_missing",
		func(p full, _ *shared) provider.Provider { return getMissingErrors{p} }},
	// No aliasing: mutating a value after Put never changes what is stored.
	{"pipeline_aliasing", "PipelineStore/no_aliasing",
		func(p full, s *shared) provider.Provider { return pipelineAliasing{p, s} }},
	// TTL: an expired trait is invisible.
	{"trait_ttl_ignored", "TraitStore/ttl_expiry",
		func(p full, _ *shared) provider.Provider { return traitTTLIgnored{p} }},
	// Events: a reader paging while writers append sees every event once.
	{"lost_events", "EventStore/concurrent_append_paging",
		func(p full, s *shared) provider.Provider { return lostEvents{p, s} }},
	// Events: ReadEventsSince returns events strictly after the cursor.
	{"inclusive_cursor", "EventStore/read_since_strictly_after",
		func(p full, _ *shared) provider.Provider { return inclusiveCursor{p} }},
	// Events: ListEvents is oldest first.
	{"list_events_newest_first", "EventStore/list_events_most_recent_oldest_first",
		func(p full, _ *shared) provider.Provider { return listEventsNewestFirst{p} }},
	// Context: a cancelled context returns context.Canceled.
	{"ignores_context", "EventStore/cancelled_context",
		func(p full, _ *shared) provider.Provider { return ignoresContext{p} }},
	// Run logs: keyed by (pipeline, date, schedule).
	{"run_log_ignores_schedule", "RunLogStore/schedules_independent",
		func(p full, _ *shared) provider.Provider { return runLogIgnoresSchedule{p} }},
	// Locks: ReleaseLock releases only a lock this instance holds.
	{"any_instance_releases", "Locker/release_by_other_instance",
		func(p full, s *shared) provider.Provider { return anyInstanceReleases{p, s} }},
	// Locks: not re-entrant.
	{"reentrant_lock", "Locker/not_reentrant",
		func(p full, s *shared) provider.Provider { return reentrantLock{p, s} }},
	// Locks: an expired lock is free.
	{"lock_ttl_ignored", "Locker/expiry_takeover",
		func(p full, _ *shared) provider.Provider { return lockTTLIgnored{p} }},
	// Leases: Fence strictly increases across leases of a key.
	{"fence_not_increasing", "Leaser/fence_strictly_increases",
		func(p full, _ *shared) provider.Provider { return fenceNotIncreasing{p} }},
	// Lists: every item that existed for the whole call appears.
	{"list_forgets_concurrent_creates", "Lists/create_while_listing/runs",
		func(p full, s *shared) provider.Provider { return listForgetsConcurrentCreates{p, s} }},
	// Lists: no duplicates and nothing missing while items move.
	{"offset_paging", "Lists/moves_while_listing/runs",
		func(p full, _ *shared) provider.Provider { return offsetPaging{p} }},
	// Limits: a ttl beyond MaxTTL is ErrInvalidArgument, never clamped.
	// Limits: versions up to MaxRunVersion are stored exactly.
	{"version_int32", "Limits/cas_up_to_max_version",
		func(p full, _ *shared) provider.Provider { return versionInt32{p} }},
	{"ttl_clamped", "Limits/ttl_beyond_max",
		func(p full, _ *shared) provider.Provider { return ttlClamped{p} }},
	// Limits: a lease renewed with MaxTTL stays held.
	{"renew_long_deletes", "Limits/lease_ttl_limits",
		func(p full, _ *shared) provider.Provider { return renewLongDeletes{p} }},
	// TTL: expired when now >= ExpiresAt.
	{"expiry_inclusive", "TraitStore/expired_at_exact_ttl",
		func(p full, _ *shared) provider.Provider { return expiryInclusive{p} }},
	// Fills: a zero RequestedAt is filled from the clock.
	{"rerun_time_not_filled", "RerunStore/put_fills_zero_requested_at",
		func(p full, _ *shared) provider.Provider { return rerunTimeNotFilled{p} }},
	// Leases: tokens are compared exactly, never by prefix.
	{"token_prefix_releases", "Leaser/token_prefix_rejected",
		func(p full, s *shared) provider.Provider { return tokenPrefixReleases{p, s} }},
	// Lifecycle: after Stop every call returns ErrClosed.
	{"stop_not_closing", "Lifecycle/after_stop/GetPipeline",
		func(p full, _ *shared) provider.Provider { return stopNotClosing{p} }},
	// Races: of N concurrent CAS calls from one version exactly one wins.
	{"check_then_act_cas", "RunStore/cas_concurrent_one_winner",
		func(p full, _ *shared) provider.Provider { return checkThenActCAS{p} }},
	// Races: of N concurrent acquirers exactly one wins.
	{"check_then_act_lock", "Locker/concurrent_one_winner",
		func(p full, _ *shared) provider.Provider { return checkThenActLock{p} }},
	// Appends: PutLateArrival appends, also a record identical to one stored.
	{"late_arrivals_deduped", "LateArrivalStore/put_identical_appends",
		func(p full, s *shared) provider.Provider { return lateArrivalsDeduped{p, s} }},
	// Appends: AppendEvent appends, also an event identical to one appended.
	{"events_keyed_by_timestamp", "EventStore/append_identical_appends",
		func(p full, s *shared) provider.Provider { return eventsKeyedByTimestamp{p, s} }},
	// DeletePipeline removes the config only.
	{"delete_clears_partition", "PipelineStore/delete_keeps_other_data",
		func(p full, s *shared) provider.Provider { return deleteClearsPartition{p, s} }},
	// Context: a cancelled write changes nothing stored.
	{"cancelled_put_applied", "RunStore/cancelled_context",
		func(p full, _ *shared) provider.Provider { return cancelledPutApplied{p} }},
	// Opening order: closed, then the context, then the arguments.
	{"arguments_before_context", "EventStore/bad_input/append_empty_kind",
		func(p full, _ *shared) provider.Provider { return eventCheckedFirst{p} }},
	// Context: a cancelled AcquireLock takes nothing.
	{"acquire_then_cancelled", "Locker/cancelled_context",
		func(p full, _ *shared) provider.Provider { return acquireThenCancelled{p} }},
	// TTL: a sub-second trait ttl is honoured.
	{"trait_ttl_whole_seconds", "Expiry/sub_second_ttl/traits",
		func(p full, _ *shared) provider.Provider { return traitTTLWholeSeconds{p} }},
	// TTL: a sub-second lock ttl is honoured.
	{"lock_ttl_rounded_up", "Expiry/sub_second_ttl/locks",
		func(p full, _ *shared) provider.Provider { return lockTTLRoundedUp{p} }},
	// TTL: an expired trait is invisible to every read, also one read while live.
	{"trait_read_cache", "Expiry/read_live_then_expired/traits",
		func(p full, _ *shared) provider.Provider { return traitReadCache{p, new(sync.Map)} }},
	// TTL: a shorter ttl after a longer one is honoured.
	{"trait_keeps_later_expiry", "Expiry/shorter_ttl_after_longer/traits",
		func(p full, s *shared) provider.Provider { return traitKeepsLaterExpiry{p, s} }},
	// Traits: PutTrait sets ExpiresAt = now + ttl, on every put.
	{"trait_keeps_first_expires_at", "TraitStore/put_again_sets_new_expires_at",
		func(p full, s *shared) provider.Provider { return traitKeepsFirstExpiresAt{p, s} }},
	// Readiness: a re-put keeps the result for ReadinessTTL from then.
	{"readiness_keeps_first_expiry", "Expiry/re_put_mid_ttl/readiness",
		func(p full, s *shared) provider.Provider { return readinessKeepsFirstExpiry{p, s} }},
	// Locks: AcquireLock is (true, nil) when the key is free, whatever this instance saw before.
	{"lock_negative_cache", "Locker/release_visible_to_waiting_instance",
		func(p full, _ *shared) provider.Provider { return lockNegativeCache{p, new(sync.Map)} }},
	// Locks: owners are compared exactly, never by prefix.
	{"owner_prefix_releases", "Locker/owner_prefix_cannot_release",
		func(p full, s *shared) provider.Provider { return ownerPrefixReleases{p, s} }},
	// Leases: a key leased is held for locks, also of the same instance.
	{"lock_over_own_lease", "Leaser/lease_blocks_lock",
		func(p full, s *shared) provider.Provider { return lockOverOwnLease{p, s} }},
	// Leases: ReleaseLease frees a lease; ReleaseLock frees only a lock.
	{"release_lock_frees_own_lease", "Leaser/release_lock_keeps_lease",
		func(p full, s *shared) provider.Provider { return releaseLockFreesOwnLease{p, s} }},
	// Leases: RenewLease sets ExpiresAt = now + ttl.
	{"renew_from_old_expiry", "Leaser/renew_sets_expiry_from_now",
		func(p full, s *shared) provider.Provider { return renewFromOldExpiry{p, s} }},
	// Cascade: writing a marker again sets WrittenAt = now, also with the same source.
	{"marker_same_source_noop", "CascadeReader/rewrite_identical_updates_written_at",
		func(p full, _ *shared) provider.Provider { return markerSameSourceNoop{p} }},
	// Fidelity: only the zero time is filled; year 1 is kept.
	{"pre_epoch_is_unset", "Fidelity/times/runs",
		func(p full, _ *shared) provider.Provider { return preEpochIsUnset{p} }},
	// Fidelity: ListReruns is ordered by instant, for every representable time.
	{"reruns_by_unix_nano", "Fidelity/times/reruns",
		func(p full, _ *shared) provider.Provider { return rerunsByUnixNano{p} }},
	// Fidelity: ListReplays is ordered by instant, whatever the zone.
	{"replays_by_wall_clock", "Fidelity/times/replays",
		func(p full, _ *shared) provider.Provider { return replaysByWallClock{p} }},
	// Fidelity: every valid ID is accepted, up to types.MaxIDLen.
	{"run_ids_up_to_100", "Fidelity/valid_ids/runs",
		func(p full, _ *shared) provider.Provider { return runIDsUpTo100{p} }},
	// Fidelity: every valid ID is accepted, '.' and '/' included.
	{"replay_dates_path_safe", "Fidelity/valid_ids/replays",
		func(p full, _ *shared) provider.Provider { return replayDatesPathSafe{p} }},
	// Fidelity: prefix-related dates never see each other's late arrivals.
	{"late_arrival_date_prefix", "Fidelity/prefix_ids/late_arrivals_by_date",
		func(p full, s *shared) provider.Provider { return lateArrivalDatePrefix{p, s} }},
	// Fidelity: prefix-related pipelines never see each other's traits.
	{"traits_pipeline_prefix", "Fidelity/prefix_ids/traits_by_pipeline",
		func(p full, s *shared) provider.Provider { return traitsPipelinePrefix{p, s} }},
	// Lists: a list longer than a page is complete.
	{"run_logs_one_page", "Lists/long/run_logs",
		func(p full, _ *shared) provider.Provider { return runLogsOnePage{p} }},
	// Lists: ListEvents(limit) returns the most recent limit events, past any page.
	{"events_page_cap", "Lists/long/events",
		func(p full, _ *shared) provider.Provider { return eventsPageCap{p} }},
	// Lists: every item appears, also at a page boundary.
	{"markers_page_boundary", "Lists/long/markers",
		func(p full, _ *shared) provider.Provider { return markersPageBoundary{p} }},
	// Upserts: a rerun put twice, identical, is listed once.
	{"rerun_list_appends", "RerunStore/put_identical_twice",
		func(p full, s *shared) provider.Provider { return rerunListAppends{p, s} }},
	// Fills: a zero CreatedAt is filled from the clock on every put.
	{"replay_created_at_if_not_exists", "ReplayStore/re_put_fills_zero_created_at_again",
		func(p full, _ *shared) provider.Provider { return replayCreatedAtIfNotExists{p} }},
	// Sizes: ErrTooLarge writes nothing.
	{"run_log_too_large_partial", "RunLogStore/huge_value_too_large_or_stored",
		func(p full, _ *shared) provider.Provider { return runLogTooLargePartial{p} }},
	// Sizes: 256 KB of metadata fits, in every entity kind.
	{"readiness_up_to_128k", "Readiness/large_value_round_trips",
		func(p full, _ *shared) provider.Provider { return readinessUpTo128K{p} }},
	// Retention: dropped events are invisible to every read.
	{"list_events_ignores_retention", "EventStore/retention_drops_old_events",
		func(p full, s *shared) provider.Provider { return listEventsIgnoresRetention{p, s} }},
	// Retention: a read from a cursor whose successors were dropped fails with
	// ErrCursorExpired, never resuming from the oldest event retained.
	{"read_resumes_from_oldest", "EventStore/retention_old_cursor_expired",
		func(p full, _ *shared) provider.Provider { return readResumesFromOldest{p} }},
	// Retention: so does a follow.
	{"follow_resumes_from_oldest", "EventFollower/expired_cursor_fails",
		func(p full, _ *shared) provider.Provider { return followResumesFromOldest{p} }},
	// Retention: so does a read whose cursor a log kept by count left behind.
	{"events_by_count", "EventStore/retention_by_count_expires_old_cursor",
		func(p full, s *shared) provider.Provider { return eventsByCount{p, s} }},
	// Leases: fences increase forever, also after the lease record is gone.
	{"fence_with_lease_record", "Leaser/fence_increases_after_idle_day",
		func(p full, s *shared) provider.Provider { return fenceWithLeaseRecord{p, s} }},
	// Fidelity: a zero time the backend does not fill comes back as the zero time.
	{"zero_times_as_epoch", "Fidelity/zero_times/run_logs",
		func(p full, _ *shared) provider.Provider { return zeroTimesAsEpoch{p} }},
	// Limits: lock key lengths are bytes, not runes.
	{"lock_key_runes", "Limits/lock_key_length_in_bytes",
		func(p full, _ *shared) provider.Provider { return lockKeyRunes{p} }},
	// Limits: lease key lengths are bytes, not runes.
	{"lease_key_runes", "Limits/lease_key_length_in_bytes",
		func(p full, _ *shared) provider.Provider { return leaseKeyRunes{p} }},
	// Limits: event kind lengths are bytes, not runes.
	{"event_kind_runes", "Limits/event_kind_length_in_bytes",
		func(p full, _ *shared) provider.Provider { return eventKindRunes{p} }},
	// Fidelity: a follower yields only its own pipeline's events.
	{"follow_pipeline_prefix", "Fidelity/prefix_ids/follow_events",
		func(p full, s *shared) provider.Provider { return followPipelinePrefix{p, s} }},
	// Fidelity: a watch delivers each marker write as written, whatever its IDs hold.
	{"watch_splits_on_slash", "Fidelity/prefix_ids/watch_markers",
		func(p full, _ *shared) provider.Provider { return watchSplitsOnSlash{p} }},
	// Fidelity: prefix-related pipelines never see each other's run logs in a list.
	{"run_logs_pipeline_prefix", "Fidelity/prefix_ids/run_logs_by_pipeline",
		func(p full, s *shared) provider.Provider { return runLogsPipelinePrefix{p, s} }},
	// Retention: a watch from a cursor retention passed fails with ErrCursorExpired.
	{"watch_resumes_from_oldest", "MarkerWatcher/expired_cursor_fails",
		func(p full, _ *shared) provider.Provider { return watchResumesFromOldest{p} }},
	// Retention: also before anything newer was written.
	{"watch_hears_expiry_on_next_write", "MarkerWatcher/expired_cursor_fails_before_next_write",
		func(p full, _ *shared) provider.Provider { return watchHearsExpiryOnNextWrite{p} }},
	// Retention: so does one whose cursor a log kept by count left behind.
	{"marker_log_by_count", "MarkerWatcher/count_retention_expires_old_cursor",
		func(p full, s *shared) provider.Provider { return markerLogByCount{p, s} }},
}, fencingTeeth...)

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
	b := memorytest.New()
	h := b.Harness(func(t *testing.T, p *memprovider.Provider) provider.Provider {
		s := sharedOf(t)
		s.mu.Lock()
		s.now = func() time.Time { return b.Now(t) }
		s.instances = append(s.instances, p)
		s.mu.Unlock()
		return wrap(p, s)
	})
	if change := brokenHarness[name]; change != nil {
		change(&h)
	}
	providertest.Run(t, h)
}

// TestDocCountsTeeth: the package doc says how many broken backends the suite
// fails, and the number stays true.
func TestDocCountsTeeth(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("wrap the memory backend in %d broken", len(brokenBackends)); !strings.Contains(string(doc), want) {
		t.Errorf("doc.go does not say %q", want)
	}
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
			// Only the subtest that must catch the fault runs: every subtest has
			// storage of its own, so it fails alone as it fails in the whole suite.
			run := "^TestBrokenBackend$"
			for _, part := range strings.Split(b.want, "/") {
				run += "/^" + regexp.QuoteMeta(part) + "$"
			}
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run="+run, "-test.count=1", "-test.timeout=5m")
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

// harnessEnv names the harness mistake TestBrokenHarness makes: "run" runs the
// whole suite under it, "group" one group.
const harnessEnv = "PROVIDERTEST_HARNESS_MISTAKE"

// harnessMistake is the message the suite fails with when the providers of one
// test do not share storage.
const harnessMistake = "Harness.Open: two providers opened in one test do not share storage: "

// TestBrokenHarness runs the suite on a harness whose Open returns a fresh
// memory provider every call, so the providers of a test share nothing; it is
// meant to fail, and runs only as TestHarnessMistakes's subprocess.
func TestBrokenHarness(t *testing.T) {
	fresh := providertest.Harness{Open: func(t *testing.T) provider.Provider {
		p, err := memprovider.New()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}}
	switch mode := os.Getenv(harnessEnv); mode {
	case "":
		t.Skip(harnessEnv + " is not set: this test runs as a subprocess of TestHarnessMistakes")
	case "run":
		providertest.Run(t, fresh)
	case "group":
		providertest.RunRunStore(t, fresh)
	default:
		t.Fatalf("%s=%q names no mode", harnessEnv, mode)
	}
}

// TestHarnessMistakes requires the suite to name a harness whose providers do
// not share storage, in one failure before any test runs: from Run, and from a
// group run alone.
func TestHarnessMistakes(t *testing.T) {
	if os.Getenv(harnessEnv) != "" || os.Getenv(brokenEnv) != "" {
		t.Skip("running as a subprocess")
	}
	if testing.Short() {
		t.Skip("runs the suite in a subprocess")
	}
	for _, c := range []struct {
		mode   string
		failed []string // every test that fails, the innermost last
	}{
		{"run", []string{"TestBrokenHarness"}},
		{"group", []string{"TestBrokenHarness", "TestBrokenHarness/RunStore"}},
	} {
		t.Run(c.mode, func(t *testing.T) {
			t.Parallel()
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestBrokenHarness$", "-test.count=1", "-test.v", "-test.timeout=5m")
			cmd.Env = append(os.Environ(), harnessEnv+"="+c.mode)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("the suite on a harness without shared storage: got %v, want a non-zero exit; output:\n%s", err, out)
			}
			var failed, ran []string
			for _, line := range strings.Split(string(out), "\n") {
				line = strings.TrimSpace(line)
				if name, ok := strings.CutPrefix(line, "--- FAIL: "); ok {
					failed = append(failed, strings.Fields(name)[0])
				}
				if name, ok := strings.CutPrefix(line, "=== RUN   "); ok {
					ran = append(ran, name)
				}
			}
			slices.Sort(failed)
			if !slices.Equal(failed, c.failed) || !slices.Equal(ran, c.failed) {
				t.Errorf("tests run %q and failed %q, want %q, each failing in the harness check:\n%s", ran, failed, c.failed, tail(string(out), 60))
			}
			if n := strings.Count(string(out), harnessMistake); n != 1 {
				t.Errorf("the output has %q %d times, want once:\n%s", harnessMistake, n, tail(string(out), 60))
			}
		})
	}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// activeIndex is a wrapper's own active-runs index, kept beside the memory
// backend's runs as a backend with a separate index keeps it, with one fault:
// keepFinished never removes a run that finished; early applies a CAS's new
// status to the index before the CAS decides (so a lost CAS changes it too).
type activeIndex struct {
	full
	s            *shared
	keepFinished bool
	early        bool
}

func (b activeIndex) note(r types.RunState) {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	if b.s.active == nil {
		b.s.active = map[string]bool{}
	}
	if !r.Status.Terminal() {
		b.s.active[r.RunID] = true
	} else if !b.keepFinished {
		delete(b.s.active, r.RunID)
	}
}

func (b activeIndex) PutRunState(ctx context.Context, r types.RunState) error {
	err := b.full.PutRunState(ctx, r)
	if err == nil {
		b.note(r)
	}
	return err
}

func (b activeIndex) CompareAndSwapRunState(ctx context.Context, runID string, v int, r types.RunState) (bool, error) {
	if b.early {
		b.note(r)
	}
	ok, err := b.full.CompareAndSwapRunState(ctx, runID, v, r)
	if ok && err == nil {
		b.note(r)
	}
	return ok, err
}

func (b activeIndex) CreateRunState(ctx context.Context, r types.RunState) (bool, error) {
	ok, err := b.full.CreateRunState(ctx, r)
	if ok && err == nil {
		b.note(r)
	}
	return ok, err
}

// ListActiveRuns shows the index's runs that the truth has, by the filter but
// for the terminal rule (the fault of keepFinished shows).
func (b activeIndex) ListActiveRuns(ctx context.Context, f provider.ActiveRunFilter, cursor string, limit int) ([]types.RunState, string, error) {
	if err := provider.CheckActiveRuns(f, cursor, limit); err != nil {
		return nil, "", err
	}
	b.s.mu.Lock()
	ids := slices.Sorted(func(yield func(string) bool) {
		for id := range b.s.active {
			if id > cursor && !yield(id) {
				return
			}
		}
	})
	b.s.mu.Unlock()
	var out []types.RunState
	for _, id := range ids {
		if len(out) == limit {
			break
		}
		r, err := b.full.GetRunState(ctx, id)
		if err != nil {
			return nil, "", err
		}
		if r == nil {
			continue
		}
		shown := *r
		if shown.Status.Terminal() {
			shown.Status = types.RunRunning // listed as the index has it, not as the truth is
		}
		if f.Match(shown) {
			out = append(out, *r)
		}
	}
	page, next := provider.ActivePage(out, limit)
	return page, next, nil
}

// reindexRewritesRun repairs an entry the way the CLI's backfill first did: a
// compare-and-swap of the run onto itself, which moves its version and UpdatedAt.
type reindexRewritesRun struct{ full }

func (b reindexRewritesRun) ReindexRun(ctx context.Context, runID string) (bool, error) {
	if err := provider.CheckID("run ID", runID); err != nil {
		return false, err
	}
	r, err := b.full.GetRunState(ctx, runID)
	if err != nil || r == nil || r.Status.Terminal() {
		return false, err
	}
	_, err = b.full.CompareAndSwapRunState(ctx, runID, r.Version, *r)
	return false, err
}

// lostEntries is an index that loses the entries Harness.DropActiveEntry takes
// (shared.dropped): a write of the run indexes it again, but ReindexRun, the
// memory backend's, does not restore it.
type lostEntries struct {
	full
	s *shared
}

func (b lostEntries) wrote(runID string) {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	delete(b.s.dropped, runID)
}

func (b lostEntries) PutRunState(ctx context.Context, r types.RunState) error {
	err := b.full.PutRunState(ctx, r)
	if err == nil {
		b.wrote(r.RunID)
	}
	return err
}

func (b lostEntries) CompareAndSwapRunState(ctx context.Context, runID string, v int, r types.RunState) (bool, error) {
	ok, err := b.full.CompareAndSwapRunState(ctx, runID, v, r)
	if ok && err == nil {
		b.wrote(runID)
	}
	return ok, err
}

func (b lostEntries) ListActiveRuns(ctx context.Context, f provider.ActiveRunFilter, cursor string, limit int) ([]types.RunState, string, error) {
	runs, next, err := b.full.ListActiveRuns(ctx, f, cursor, limit)
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	return slices.DeleteFunc(runs, func(r types.RunState) bool { return b.s.dropped[r.RunID] }), next, err
}

// activeNextRepeats gives as the next cursor the RunID before the page's last,
// so each page starts with the previous page's last run again.
type activeNextRepeats struct{ full }

func (b activeNextRepeats) ListActiveRuns(ctx context.Context, f provider.ActiveRunFilter, cursor string, limit int) ([]types.RunState, string, error) {
	runs, next, err := b.full.ListActiveRuns(ctx, f, cursor, limit)
	if next != "" && len(runs) > 1 {
		next = runs[len(runs)-2].RunID
	}
	return runs, next, err
}
