package provider

import (
	"context"
	"iter"
	"time"

	"github.com/pipestate/pipestate/fence"
	"github.com/pipestate/pipestate/internal/fencectx"
	"github.com/pipestate/pipestate/internal/nilcheck"
	"github.com/pipestate/pipestate/types"
)

//go:generate go run github.com/pipestate/pipestate/internal/capwrap -pkg provider -out restrict_fenced.go -func restrictFenced -base Provider -opt Leaser,CascadeReader,RunCreator,EventFollower,MarkerWatcher,LockInspector,LockLister,ActiveRunLister,ActiveRunReindexer

// Fenced returns p seen by the holder of lease: every write that takes a fence
// (see package fence: the run, event, run-log, rerun, replay, late-arrival and
// marker writes) carries the lease's token, and the backend refuses it, with an error
// wrapping ErrFenced and nothing written, once a newer lease of lease.Key has
// written the record. Reads and the other writes go to p unchanged. The view
// implements exactly the optional provider interfaces p implements. Renewing the
// lease keeps the view valid (Key and Fence do not change); a new lease needs a
// new view. Stop through the view stops p.
//
// It fails with an error wrapping ErrInvalidArgument for a nil p or an
// invalid lease (see fence.Of).
func Fenced(p Provider, lease types.Lease) (Provider, error) {
	if nilcheck.IsNil(p) {
		return nil, Invalidf("provider.Fenced: nil provider")
	}
	t, err := fence.Of(lease)
	if err != nil {
		return nil, err
	}
	return restrictFenced(p, &fencedProvider{p, t}), nil
}

// fencedProvider implements every method of Provider and its optional
// interfaces; restrictProvider hides the optional ones p lacks, so the assertions
// in those methods cannot fail.
type fencedProvider struct {
	Provider
	t fence.Token
}

func (f *fencedProvider) fenced(ctx context.Context) context.Context { return fencectx.With(ctx, f.t) }

// PutRunState implements RunStore; fenced.
func (f *fencedProvider) PutRunState(ctx context.Context, run types.RunState) error {
	return f.Provider.PutRunState(f.fenced(ctx), run)
}

// CompareAndSwapRunState implements RunStore; fenced.
func (f *fencedProvider) CompareAndSwapRunState(ctx context.Context, runID string, expectedVersion int, newState types.RunState) (bool, error) {
	return f.Provider.CompareAndSwapRunState(f.fenced(ctx), runID, expectedVersion, newState)
}

// CreateRunState implements RunCreator; fenced.
func (f *fencedProvider) CreateRunState(ctx context.Context, run types.RunState) (bool, error) {
	return f.Provider.(RunCreator).CreateRunState(f.fenced(ctx), run)
}

// AppendEvent implements EventStore; fenced.
func (f *fencedProvider) AppendEvent(ctx context.Context, ev types.Event) error {
	return f.Provider.AppendEvent(f.fenced(ctx), ev)
}

// PutRunLog implements RunLogStore; fenced.
func (f *fencedProvider) PutRunLog(ctx context.Context, entry types.RunLogEntry) error {
	return f.Provider.PutRunLog(f.fenced(ctx), entry)
}

// PutRerun implements RerunStore; fenced.
func (f *fencedProvider) PutRerun(ctx context.Context, rerun types.RerunRecord) error {
	return f.Provider.PutRerun(f.fenced(ctx), rerun)
}

// WriteCascadeMarker implements CascadeStore; fenced.
func (f *fencedProvider) WriteCascadeMarker(ctx context.Context, pipelineID, scheduleID, date, source string) error {
	return f.Provider.WriteCascadeMarker(f.fenced(ctx), pipelineID, scheduleID, date, source)
}

// PutLateArrival implements LateArrivalStore; fenced.
func (f *fencedProvider) PutLateArrival(ctx context.Context, la types.LateArrival) error {
	return f.Provider.PutLateArrival(f.fenced(ctx), la)
}

// PutReplay implements ReplayStore; fenced.
func (f *fencedProvider) PutReplay(ctx context.Context, req types.ReplayRequest) error {
	return f.Provider.PutReplay(f.fenced(ctx), req)
}

// AcquireLease implements Leaser; not fenced.
func (f *fencedProvider) AcquireLease(ctx context.Context, key string, ttl time.Duration) (*types.Lease, error) {
	return f.Provider.(Leaser).AcquireLease(ctx, key, ttl)
}

// RenewLease implements Leaser; not fenced.
func (f *fencedProvider) RenewLease(ctx context.Context, lease types.Lease, ttl time.Duration) (*types.Lease, error) {
	return f.Provider.(Leaser).RenewLease(ctx, lease, ttl)
}

// ReleaseLease implements Leaser; not fenced.
func (f *fencedProvider) ReleaseLease(ctx context.Context, lease types.Lease) error {
	return f.Provider.(Leaser).ReleaseLease(ctx, lease)
}

// ListCascadeMarkers implements CascadeReader.
func (f *fencedProvider) ListCascadeMarkers(ctx context.Context, pipelineID string, limit int) ([]types.CascadeMarker, error) {
	return f.Provider.(CascadeReader).ListCascadeMarkers(ctx, pipelineID, limit)
}

// FollowEvents implements EventFollower.
func (f *fencedProvider) FollowEvents(ctx context.Context, pipelineID, cursor string) iter.Seq2[types.EventRecord, error] {
	return f.Provider.(EventFollower).FollowEvents(ctx, pipelineID, cursor)
}

// WatchCascadeMarkers implements MarkerWatcher.
func (f *fencedProvider) WatchCascadeMarkers(ctx context.Context, cursor string) iter.Seq2[types.CascadeMarkerRecord, error] {
	return f.Provider.(MarkerWatcher).WatchCascadeMarkers(ctx, cursor)
}

// GetLockInfo implements LockInspector.
func (f *fencedProvider) GetLockInfo(ctx context.Context, key string) (*types.LockInfo, error) {
	return f.Provider.(LockInspector).GetLockInfo(ctx, key)
}

// ListLocks implements LockLister.
func (f *fencedProvider) ListLocks(ctx context.Context, match string, limit int) ([]types.LockInfo, error) {
	return f.Provider.(LockLister).ListLocks(ctx, match, limit)
}

// ReindexRun implements ActiveRunReindexer, unfenced: it writes nothing of the
// run, only the index's agreement with it.
func (f *fencedProvider) ReindexRun(ctx context.Context, runID string) (bool, error) {
	return f.Provider.(ActiveRunReindexer).ReindexRun(ctx, runID)
}

// ListActiveRuns implements ActiveRunLister.
func (f *fencedProvider) ListActiveRuns(ctx context.Context, filter ActiveRunFilter, cursor string, limit int) ([]types.RunState, string, error) {
	return f.Provider.(ActiveRunLister).ListActiveRuns(ctx, filter, cursor, limit)
}
