package observe

import (
	"context"
	"errors"
	"iter"
	"reflect"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/pipestate/pipestate/internal/nilcheck"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

//go:generate go run github.com/pipestate/pipestate/internal/capwrap -pkg observe -out restrict_provider.go -func restrictProvider -base provider.Provider -opt provider.Leaser,provider.CascadeReader,provider.RunCreator,provider.EventFollower,provider.MarkerWatcher,provider.LockInspector,provider.LockLister,provider.ActiveRunLister,provider.ActiveRunReindexer -import github.com/pipestate/pipestate/provider

// Outcomes, the values of AttrOutcome.
const (
	OutcomeSwapped   = "swapped"   // CompareAndSwapRunState stored the new state
	OutcomeConflict  = "conflict"  // CompareAndSwapRunState found another version or no run
	OutcomeAcquired  = "acquired"  // AcquireLock, AcquireLease
	OutcomeHeld      = "held"      // AcquireLock, AcquireLease: another holder has it
	OutcomeReleased  = "released"  // ReleaseLock, ReleaseLease
	OutcomeNotHeld   = "not_held"  // ReleaseLock, ReleaseLease: the caller did not hold it
	OutcomeRenewed   = "renewed"   // RenewLease
	OutcomeLost      = "lost"      // RenewLease: the lease expired or was taken over
	OutcomeFirst     = "first"     // Deduper.MarkSeen claimed the event ID
	OutcomeDuplicate = "duplicate" // MarkSeen, MergeUpdateOnce: seen or applied before
	OutcomeApplied   = "applied"   // MergeUpdateOnce applied the delta
	OutcomeCreated   = "created"   // CreateRunState stored the run
	OutcomeExists    = "exists"    // CreateRunState found the run ID taken
)

var providerCounters = map[string]instrument{
	"CompareAndSwapRunState": {name: "pipestate.run.cas", unit: "{call}",
		desc: "Run compare-and-swap calls by outcome.", outcomes: []string{OutcomeSwapped, OutcomeConflict}},
	"AcquireLock": {name: "pipestate.lock.acquire", unit: "{call}", desc: "Lock and lease acquisitions by outcome.",
		extra: lockKind("lock"), outcomes: []string{OutcomeAcquired, OutcomeHeld}},
	"AcquireLease": {name: "pipestate.lock.acquire", unit: "{call}", desc: "Lock and lease acquisitions by outcome.",
		extra: lockKind("lease"), outcomes: []string{OutcomeAcquired, OutcomeHeld}},
	"ReleaseLock": {name: "pipestate.lock.release", unit: "{call}", desc: "Lock and lease releases by outcome.",
		extra: lockKind("lock"), outcomes: []string{OutcomeReleased, OutcomeNotHeld}},
	"ReleaseLease": {name: "pipestate.lock.release", unit: "{call}", desc: "Lock and lease releases by outcome.",
		extra: lockKind("lease"), outcomes: []string{OutcomeReleased, OutcomeNotHeld}},
	"CreateRunState": {name: "pipestate.run.create", unit: "{call}",
		desc: "Run creations by outcome.", outcomes: []string{OutcomeCreated, OutcomeExists}},
	"RenewLease": {name: "pipestate.lease.renew", unit: "{call}", desc: "Lease renewals by outcome.",
		outcomes: []string{OutcomeRenewed, OutcomeLost}},
}

func lockKind(k string) []attribute.KeyValue { return []attribute.KeyValue{AttrLockKind.String(k)} }

// Provider returns p decorated with a span and a duration measurement per call and
// the outcome counters of the package doc. The result implements exactly the
// optional provider interfaces (provider.Leaser, provider.CascadeReader,
// provider.RunCreator, provider.EventFollower, provider.MarkerWatcher,
// provider.LockInspector, provider.LockLister) that p implements. It fails only on a nil p or a bad
// option (ErrInvalidArgument).
func Provider(p provider.Provider, opts ...Option) (provider.Provider, error) {
	if nilcheck.IsNil(p) {
		return nil, invalidf("Provider: nil provider")
	}
	t, err := newTelemetry(p, reflect.TypeFor[restrictProviderFull](), opts, providerCounters)
	if err != nil {
		return nil, err
	}
	return restrictProvider(p, &observedProvider{p: p, t: t}), nil
}

// observedProvider implements every method of provider.Provider and its optional
// interfaces; restrictProvider hides the optional ones p lacks, so the assertions
// in those methods cannot fail.
type observedProvider struct {
	p provider.Provider
	t *telemetry
}

func (o *observedProvider) start(ctx context.Context, op string, id ids) (context.Context, call) {
	return o.t.start(ctx, op, id)
}

// Start implements provider.Provider.
func (o *observedProvider) Start(ctx context.Context) error {
	ctx, c := o.start(ctx, "Start", ids{})
	return c.done(o.p.Start(ctx))
}

// Stop implements provider.Provider.
func (o *observedProvider) Stop(ctx context.Context) error {
	ctx, c := o.start(ctx, "Stop", ids{})
	return c.done(o.p.Stop(ctx))
}

// Ping implements provider.Provider.
func (o *observedProvider) Ping(ctx context.Context) error {
	ctx, c := o.start(ctx, "Ping", ids{})
	return c.done(o.p.Ping(ctx))
}

// RegisterPipeline implements provider.PipelineStore.
func (o *observedProvider) RegisterPipeline(ctx context.Context, cfg types.PipelineConfig) error {
	ctx, c := o.start(ctx, "RegisterPipeline", ids{pipeline: cfg.ID})
	return c.done(o.p.RegisterPipeline(ctx, cfg))
}

// GetPipeline implements provider.PipelineStore.
func (o *observedProvider) GetPipeline(ctx context.Context, id string) (*types.PipelineConfig, error) {
	ctx, c := o.start(ctx, "GetPipeline", ids{pipeline: id})
	v, err := o.p.GetPipeline(ctx, id)
	return v, c.done(err)
}

// ListPipelines implements provider.PipelineStore.
func (o *observedProvider) ListPipelines(ctx context.Context) ([]types.PipelineConfig, error) {
	ctx, c := o.start(ctx, "ListPipelines", ids{})
	v, err := o.p.ListPipelines(ctx)
	return v, c.done(err)
}

// DeletePipeline implements provider.PipelineStore.
func (o *observedProvider) DeletePipeline(ctx context.Context, id string) error {
	ctx, c := o.start(ctx, "DeletePipeline", ids{pipeline: id})
	return c.done(o.p.DeletePipeline(ctx, id))
}

// PutTrait implements provider.TraitStore.
func (o *observedProvider) PutTrait(ctx context.Context, pipelineID string, trait types.TraitEvaluation, ttl time.Duration) error {
	ctx, c := o.start(ctx, "PutTrait", ids{pipeline: pipelineID})
	return c.done(o.p.PutTrait(ctx, pipelineID, trait, ttl))
}

// GetTraits implements provider.TraitStore.
func (o *observedProvider) GetTraits(ctx context.Context, pipelineID string) ([]types.TraitEvaluation, error) {
	ctx, c := o.start(ctx, "GetTraits", ids{pipeline: pipelineID})
	v, err := o.p.GetTraits(ctx, pipelineID)
	return v, c.done(err)
}

// GetTrait implements provider.TraitStore.
func (o *observedProvider) GetTrait(ctx context.Context, pipelineID, traitType string) (*types.TraitEvaluation, error) {
	ctx, c := o.start(ctx, "GetTrait", ids{pipeline: pipelineID})
	v, err := o.p.GetTrait(ctx, pipelineID, traitType)
	return v, c.done(err)
}

// PutReadiness implements provider.Provider.
func (o *observedProvider) PutReadiness(ctx context.Context, result types.ReadinessResult) error {
	ctx, c := o.start(ctx, "PutReadiness", ids{pipeline: result.PipelineID})
	return c.done(o.p.PutReadiness(ctx, result))
}

// GetReadiness implements provider.Provider.
func (o *observedProvider) GetReadiness(ctx context.Context, pipelineID string) (*types.ReadinessResult, error) {
	ctx, c := o.start(ctx, "GetReadiness", ids{pipeline: pipelineID})
	v, err := o.p.GetReadiness(ctx, pipelineID)
	return v, c.done(err)
}

// PutRunState implements provider.RunStore.
func (o *observedProvider) PutRunState(ctx context.Context, run types.RunState) error {
	ctx, c := o.start(ctx, "PutRunState", ids{pipeline: run.PipelineID, run: run.RunID})
	return c.done(o.p.PutRunState(ctx, run))
}

// GetRunState implements provider.RunStore.
func (o *observedProvider) GetRunState(ctx context.Context, runID string) (*types.RunState, error) {
	ctx, c := o.start(ctx, "GetRunState", ids{run: runID})
	v, err := o.p.GetRunState(ctx, runID)
	return v, c.done(err)
}

// ListRuns implements provider.RunStore.
func (o *observedProvider) ListRuns(ctx context.Context, pipelineID string, limit int) ([]types.RunState, error) {
	ctx, c := o.start(ctx, "ListRuns", ids{pipeline: pipelineID})
	v, err := o.p.ListRuns(ctx, pipelineID, limit)
	return v, c.done(err)
}

// CompareAndSwapRunState implements provider.RunStore. The outcome is swapped or
// conflict; conflict includes a missing run, which the call cannot tell apart
// without a read the decorator does not add.
func (o *observedProvider) CompareAndSwapRunState(ctx context.Context, runID string, expectedVersion int, newState types.RunState) (bool, error) {
	ctx, c := o.start(ctx, "CompareAndSwapRunState", ids{pipeline: newState.PipelineID, run: runID})
	ok, err := o.p.CompareAndSwapRunState(ctx, runID, expectedVersion, newState)
	return ok, c.end(outcome(err, ok, OutcomeSwapped, OutcomeConflict), err)
}

// AppendEvent implements provider.EventStore.
func (o *observedProvider) AppendEvent(ctx context.Context, ev types.Event) error {
	ctx, c := o.start(ctx, "AppendEvent", ids{pipeline: ev.PipelineID, run: ev.RunID})
	return c.done(o.p.AppendEvent(ctx, ev))
}

// ListEvents implements provider.EventStore.
func (o *observedProvider) ListEvents(ctx context.Context, pipelineID string, limit int) ([]types.Event, error) {
	ctx, c := o.start(ctx, "ListEvents", ids{pipeline: pipelineID})
	v, err := o.p.ListEvents(ctx, pipelineID, limit)
	return v, c.done(err)
}

// ReadEventsSince implements provider.EventStore.
func (o *observedProvider) ReadEventsSince(ctx context.Context, pipelineID, sinceID string, count int64) ([]types.EventRecord, error) {
	ctx, c := o.start(ctx, "ReadEventsSince", ids{pipeline: pipelineID})
	v, err := o.p.ReadEventsSince(ctx, pipelineID, sinceID, count)
	return v, c.done(err)
}

// PutRunLog implements provider.RunLogStore.
func (o *observedProvider) PutRunLog(ctx context.Context, entry types.RunLogEntry) error {
	ctx, c := o.start(ctx, "PutRunLog", ids{pipeline: entry.PipelineID, run: entry.RunID})
	return c.done(o.p.PutRunLog(ctx, entry))
}

// GetRunLog implements provider.RunLogStore.
func (o *observedProvider) GetRunLog(ctx context.Context, pipelineID, date, scheduleID string) (*types.RunLogEntry, error) {
	ctx, c := o.start(ctx, "GetRunLog", ids{pipeline: pipelineID})
	v, err := o.p.GetRunLog(ctx, pipelineID, date, scheduleID)
	return v, c.done(err)
}

// ListRunLogs implements provider.RunLogStore.
func (o *observedProvider) ListRunLogs(ctx context.Context, pipelineID string, limit int) ([]types.RunLogEntry, error) {
	ctx, c := o.start(ctx, "ListRunLogs", ids{pipeline: pipelineID})
	v, err := o.p.ListRunLogs(ctx, pipelineID, limit)
	return v, c.done(err)
}

// PutRerun implements provider.RerunStore.
func (o *observedProvider) PutRerun(ctx context.Context, rerun types.RerunRecord) error {
	ctx, c := o.start(ctx, "PutRerun", ids{pipeline: rerun.PipelineID, run: rerun.OriginalRunID})
	return c.done(o.p.PutRerun(ctx, rerun))
}

// GetRerun implements provider.RerunStore.
func (o *observedProvider) GetRerun(ctx context.Context, rerunID string) (*types.RerunRecord, error) {
	ctx, c := o.start(ctx, "GetRerun", ids{})
	v, err := o.p.GetRerun(ctx, rerunID)
	return v, c.done(err)
}

// ListReruns implements provider.RerunStore.
func (o *observedProvider) ListReruns(ctx context.Context, pipelineID string, limit int) ([]types.RerunRecord, error) {
	ctx, c := o.start(ctx, "ListReruns", ids{pipeline: pipelineID})
	v, err := o.p.ListReruns(ctx, pipelineID, limit)
	return v, c.done(err)
}

// ListAllReruns implements provider.RerunStore.
func (o *observedProvider) ListAllReruns(ctx context.Context, limit int) ([]types.RerunRecord, error) {
	ctx, c := o.start(ctx, "ListAllReruns", ids{})
	v, err := o.p.ListAllReruns(ctx, limit)
	return v, c.done(err)
}

// WriteCascadeMarker implements provider.CascadeStore.
func (o *observedProvider) WriteCascadeMarker(ctx context.Context, pipelineID, scheduleID, date, source string) error {
	ctx, c := o.start(ctx, "WriteCascadeMarker", ids{pipeline: pipelineID})
	return c.done(o.p.WriteCascadeMarker(ctx, pipelineID, scheduleID, date, source))
}

// PutLateArrival implements provider.LateArrivalStore.
func (o *observedProvider) PutLateArrival(ctx context.Context, la types.LateArrival) error {
	ctx, c := o.start(ctx, "PutLateArrival", ids{pipeline: la.PipelineID})
	return c.done(o.p.PutLateArrival(ctx, la))
}

// ListLateArrivals implements provider.LateArrivalStore.
func (o *observedProvider) ListLateArrivals(ctx context.Context, pipelineID, date, scheduleID string) ([]types.LateArrival, error) {
	ctx, c := o.start(ctx, "ListLateArrivals", ids{pipeline: pipelineID})
	v, err := o.p.ListLateArrivals(ctx, pipelineID, date, scheduleID)
	return v, c.done(err)
}

// PutReplay implements provider.ReplayStore.
func (o *observedProvider) PutReplay(ctx context.Context, req types.ReplayRequest) error {
	ctx, c := o.start(ctx, "PutReplay", ids{pipeline: req.PipelineID})
	return c.done(o.p.PutReplay(ctx, req))
}

// GetReplay implements provider.ReplayStore.
func (o *observedProvider) GetReplay(ctx context.Context, pipelineID, date, scheduleID string) (*types.ReplayRequest, error) {
	ctx, c := o.start(ctx, "GetReplay", ids{pipeline: pipelineID})
	v, err := o.p.GetReplay(ctx, pipelineID, date, scheduleID)
	return v, c.done(err)
}

// ListReplays implements provider.ReplayStore.
func (o *observedProvider) ListReplays(ctx context.Context, limit int) ([]types.ReplayRequest, error) {
	ctx, c := o.start(ctx, "ListReplays", ids{})
	v, err := o.p.ListReplays(ctx, limit)
	return v, c.done(err)
}

// AcquireLock implements provider.Locker.
func (o *observedProvider) AcquireLock(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	ctx, c := o.start(ctx, "AcquireLock", ids{lockKey: key})
	ok, err := o.p.AcquireLock(ctx, key, ttl)
	return ok, c.end(outcome(err, ok, OutcomeAcquired, OutcomeHeld), err)
}

// ReleaseLock implements provider.Locker.
func (o *observedProvider) ReleaseLock(ctx context.Context, key string) error {
	ctx, c := o.start(ctx, "ReleaseLock", ids{lockKey: key})
	err := o.p.ReleaseLock(ctx, key)
	return c.end(notHeldOutcome(err, OutcomeReleased), err)
}

// AcquireLease implements provider.Leaser.
func (o *observedProvider) AcquireLease(ctx context.Context, key string, ttl time.Duration) (*types.Lease, error) {
	ctx, c := o.start(ctx, "AcquireLease", ids{lockKey: key})
	l, err := o.p.(provider.Leaser).AcquireLease(ctx, key, ttl)
	out := OutcomeAcquired
	switch {
	case errors.Is(err, provider.ErrLockHeld):
		out = OutcomeHeld
	case err != nil:
		out = ""
	}
	return l, c.end(out, err)
}

// RenewLease implements provider.Leaser.
func (o *observedProvider) RenewLease(ctx context.Context, lease types.Lease, ttl time.Duration) (*types.Lease, error) {
	ctx, c := o.start(ctx, "RenewLease", ids{lockKey: lease.Key})
	l, err := o.p.(provider.Leaser).RenewLease(ctx, lease, ttl)
	out := OutcomeRenewed
	switch {
	case errors.Is(err, provider.ErrLockNotHeld):
		out = OutcomeLost
	case err != nil:
		out = ""
	}
	return l, c.end(out, err)
}

// ReleaseLease implements provider.Leaser.
func (o *observedProvider) ReleaseLease(ctx context.Context, lease types.Lease) error {
	ctx, c := o.start(ctx, "ReleaseLease", ids{lockKey: lease.Key})
	err := o.p.(provider.Leaser).ReleaseLease(ctx, lease)
	return c.end(notHeldOutcome(err, OutcomeReleased), err)
}

// ListCascadeMarkers implements provider.CascadeReader.
func (o *observedProvider) ListCascadeMarkers(ctx context.Context, pipelineID string, limit int) ([]types.CascadeMarker, error) {
	ctx, c := o.start(ctx, "ListCascadeMarkers", ids{pipeline: pipelineID})
	v, err := o.p.(provider.CascadeReader).ListCascadeMarkers(ctx, pipelineID, limit)
	return v, c.done(err)
}

// CreateRunState implements provider.RunCreator.
func (o *observedProvider) CreateRunState(ctx context.Context, run types.RunState) (bool, error) {
	ctx, c := o.start(ctx, "CreateRunState", ids{pipeline: run.PipelineID, run: run.RunID})
	ok, err := o.p.(provider.RunCreator).CreateRunState(ctx, run)
	return ok, c.end(outcome(err, ok, OutcomeCreated, OutcomeExists), err)
}

// GetLockInfo implements provider.LockInspector.
func (o *observedProvider) GetLockInfo(ctx context.Context, key string) (*types.LockInfo, error) {
	ctx, c := o.start(ctx, "GetLockInfo", ids{lockKey: key})
	v, err := o.p.(provider.LockInspector).GetLockInfo(ctx, key)
	return v, c.done(err)
}

// ListLocks implements provider.LockLister.
func (o *observedProvider) ListLocks(ctx context.Context, match string, limit int) ([]types.LockInfo, error) {
	ctx, c := o.start(ctx, "ListLocks", ids{})
	v, err := o.p.(provider.LockLister).ListLocks(ctx, match, limit)
	return v, c.done(err)
}

// ListActiveRuns implements provider.ActiveRunLister.
func (o *observedProvider) ListActiveRuns(ctx context.Context, filter provider.ActiveRunFilter, cursor string, limit int) ([]types.RunState, string, error) {
	ctx, c := o.start(ctx, "ListActiveRuns", ids{})
	v, next, err := o.p.(provider.ActiveRunLister).ListActiveRuns(ctx, filter, cursor, limit)
	return v, next, c.done(err)
}

// ReindexRun implements provider.ActiveRunReindexer.
func (o *observedProvider) ReindexRun(ctx context.Context, runID string) (bool, error) {
	ctx, c := o.start(ctx, "ReindexRun", ids{run: runID})
	changed, err := o.p.(provider.ActiveRunReindexer).ReindexRun(ctx, runID)
	return changed, c.done(err)
}

// FollowEvents implements provider.EventFollower: one span for the whole follow,
// ended when the sequence ends, with the number of events yielded.
func (o *observedProvider) FollowEvents(ctx context.Context, pipelineID, cursor string) iter.Seq2[types.EventRecord, error] {
	return func(yield func(types.EventRecord, error) bool) {
		ctx, c := o.start(ctx, "FollowEvents", ids{pipeline: pipelineID})
		stream(c, o.p.(provider.EventFollower).FollowEvents(ctx, pipelineID, cursor), yield)
	}
}

// WatchCascadeMarkers implements provider.MarkerWatcher, observed like FollowEvents.
func (o *observedProvider) WatchCascadeMarkers(ctx context.Context, cursor string) iter.Seq2[types.CascadeMarkerRecord, error] {
	return func(yield func(types.CascadeMarkerRecord, error) bool) {
		ctx, c := o.start(ctx, "WatchCascadeMarkers", ids{})
		stream(c, o.p.(provider.MarkerWatcher).WatchCascadeMarkers(ctx, cursor), yield)
	}
}

// outcome is yes or no after a successful call, "" after a failed one.
func outcome(err error, ok bool, yes, no string) string {
	switch {
	case err != nil:
		return ""
	case ok:
		return yes
	}
	return no
}

// notHeldOutcome is ok after success, OutcomeNotHeld after ErrLockNotHeld.
func notHeldOutcome(err error, ok string) string {
	switch {
	case err == nil:
		return ok
	case errors.Is(err, provider.ErrLockNotHeld):
		return OutcomeNotHeld
	}
	return ""
}
