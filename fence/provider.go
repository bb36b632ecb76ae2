package fence

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/pipestate/pipestate"
	"github.com/pipestate/pipestate/internal/nilcheck"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

//go:generate go run github.com/pipestate/pipestate/internal/capwrap -pkg fence -out restrict_provider.go -func restrictProvider -base provider.Provider -opt provider.Leaser,provider.CascadeReader,provider.RunCreator,provider.EventFollower,provider.MarkerWatcher,provider.LockInspector,provider.LockLister -import github.com/pipestate/pipestate/provider

// Provider returns p seen by the holder of lease: every write of the package doc's
// list carries the lease's token, and the backend refuses it, with an error
// wrapping ErrFenced and nothing written, once a newer lease of lease.Key has
// written the record. Reads and the other writes go to p unchanged. The view
// implements exactly the optional provider interfaces p implements. Renewing the
// lease keeps the view valid (Key and Fence do not change); a new lease needs a
// new view. Stop through the view stops p.
//
// It fails with an error wrapping pipestate.ErrInvalidArgument for a nil p or an
// invalid lease (see Of).
func Provider(p provider.Provider, lease types.Lease) (provider.Provider, error) {
	if nilcheck.IsNil(p) {
		return nil, fmt.Errorf("%w: fence.Provider: nil provider", pipestate.ErrInvalidArgument)
	}
	t, err := Of(lease)
	if err != nil {
		return nil, err
	}
	return restrictProvider(p, &fencedProvider{p, t}), nil
}

// fencedProvider implements every method of provider.Provider and its optional
// interfaces; restrictProvider hides the optional ones p lacks, so the assertions
// in those methods cannot fail.
type fencedProvider struct {
	provider.Provider
	t Token
}

func (f *fencedProvider) fenced(ctx context.Context) context.Context { return withToken(ctx, f.t) }

// PutRunState implements provider.RunStore; fenced.
func (f *fencedProvider) PutRunState(ctx context.Context, run types.RunState) error {
	return f.Provider.PutRunState(f.fenced(ctx), run)
}

// CompareAndSwapRunState implements provider.RunStore; fenced.
func (f *fencedProvider) CompareAndSwapRunState(ctx context.Context, runID string, expectedVersion int, newState types.RunState) (bool, error) {
	return f.Provider.CompareAndSwapRunState(f.fenced(ctx), runID, expectedVersion, newState)
}

// CreateRunState implements provider.RunCreator; fenced.
func (f *fencedProvider) CreateRunState(ctx context.Context, run types.RunState) (bool, error) {
	return f.Provider.(provider.RunCreator).CreateRunState(f.fenced(ctx), run)
}

// AppendEvent implements provider.EventStore; fenced.
func (f *fencedProvider) AppendEvent(ctx context.Context, ev types.Event) error {
	return f.Provider.AppendEvent(f.fenced(ctx), ev)
}

// PutRunLog implements provider.RunLogStore; fenced.
func (f *fencedProvider) PutRunLog(ctx context.Context, entry types.RunLogEntry) error {
	return f.Provider.PutRunLog(f.fenced(ctx), entry)
}

// PutRerun implements provider.RerunStore; fenced.
func (f *fencedProvider) PutRerun(ctx context.Context, rerun types.RerunRecord) error {
	return f.Provider.PutRerun(f.fenced(ctx), rerun)
}

// WriteCascadeMarker implements provider.CascadeStore; fenced.
func (f *fencedProvider) WriteCascadeMarker(ctx context.Context, pipelineID, scheduleID, date, source string) error {
	return f.Provider.WriteCascadeMarker(f.fenced(ctx), pipelineID, scheduleID, date, source)
}

// PutLateArrival implements provider.LateArrivalStore; fenced.
func (f *fencedProvider) PutLateArrival(ctx context.Context, la types.LateArrival) error {
	return f.Provider.PutLateArrival(f.fenced(ctx), la)
}

// PutReplay implements provider.ReplayStore; fenced.
func (f *fencedProvider) PutReplay(ctx context.Context, req types.ReplayRequest) error {
	return f.Provider.PutReplay(f.fenced(ctx), req)
}

// AcquireLease implements provider.Leaser; not fenced.
func (f *fencedProvider) AcquireLease(ctx context.Context, key string, ttl time.Duration) (*types.Lease, error) {
	return f.Provider.(provider.Leaser).AcquireLease(ctx, key, ttl)
}

// RenewLease implements provider.Leaser; not fenced.
func (f *fencedProvider) RenewLease(ctx context.Context, lease types.Lease, ttl time.Duration) (*types.Lease, error) {
	return f.Provider.(provider.Leaser).RenewLease(ctx, lease, ttl)
}

// ReleaseLease implements provider.Leaser; not fenced.
func (f *fencedProvider) ReleaseLease(ctx context.Context, lease types.Lease) error {
	return f.Provider.(provider.Leaser).ReleaseLease(ctx, lease)
}

// ListCascadeMarkers implements provider.CascadeReader.
func (f *fencedProvider) ListCascadeMarkers(ctx context.Context, pipelineID string, limit int) ([]types.CascadeMarker, error) {
	return f.Provider.(provider.CascadeReader).ListCascadeMarkers(ctx, pipelineID, limit)
}

// FollowEvents implements provider.EventFollower.
func (f *fencedProvider) FollowEvents(ctx context.Context, pipelineID, cursor string) iter.Seq2[types.EventRecord, error] {
	return f.Provider.(provider.EventFollower).FollowEvents(ctx, pipelineID, cursor)
}

// WatchCascadeMarkers implements provider.MarkerWatcher.
func (f *fencedProvider) WatchCascadeMarkers(ctx context.Context, cursor string) iter.Seq2[types.CascadeMarkerRecord, error] {
	return f.Provider.(provider.MarkerWatcher).WatchCascadeMarkers(ctx, cursor)
}

// GetLockInfo implements provider.LockInspector.
func (f *fencedProvider) GetLockInfo(ctx context.Context, key string) (*types.LockInfo, error) {
	return f.Provider.(provider.LockInspector).GetLockInfo(ctx, key)
}

// ListLocks implements provider.LockLister.
func (f *fencedProvider) ListLocks(ctx context.Context, match string, limit int) ([]types.LockInfo, error) {
	return f.Provider.(provider.LockLister).ListLocks(ctx, match, limit)
}
