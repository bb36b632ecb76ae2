package fence

import (
	"context"
	"fmt"
	"time"

	"github.com/pipestate/pipestate"
	"github.com/pipestate/pipestate/internal/nilcheck"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/types"
)

//go:generate go run github.com/pipestate/pipestate/internal/capwrap -pkg fence -out restrict_store.go -func restrictStore -base state.Store[V] -opt onceMethods[V],batchMethods[V],revisionMethods[V] -import github.com/pipestate/pipestate/state -tparams "V any" -targs V

// onceMethods is what state.OnceStore adds to state.Store.
type onceMethods[V any] interface {
	MergeUpdateOnce(ctx context.Context, eventID string, k state.Key, delta V, ttl time.Duration) (applied bool, err error)
}

// batchMethods is what state.BatchStore adds to state.Store.
type batchMethods[V any] interface {
	MergeMany(ctx context.Context, updates []state.Update[V]) error
}

// revisionMethods is what state.RevisionStore adds to state.Store.
type revisionMethods[V any] interface {
	GetRevisions(ctx context.Context, ks []state.Key) ([]state.Revision[V], error)
}

// Store returns s seen by the holder of lease: MergeUpdate, MergeUpdateOnce and
// MergeMany carry the lease's token, and the store refuses a merge into a key that
// a newer lease of lease.Key has merged into, with an error wrapping ErrFenced and
// nothing written (MergeMany: that update's entry of the *state.MergeError).
// Reads go to s unchanged. The view implements exactly the optional interfaces
// (state.OnceStore, state.BatchStore, state.RevisionStore) s implements. Close
// through the view closes s.
//
// It fails with an error wrapping pipestate.ErrInvalidArgument for a nil s or an
// invalid lease (see Of).
func Store[V any](s state.Store[V], lease types.Lease) (state.Store[V], error) {
	if nilcheck.IsNil(s) {
		return nil, fmt.Errorf("%w: fence.Store: nil store", pipestate.ErrInvalidArgument)
	}
	t, err := Of(lease)
	if err != nil {
		return nil, err
	}
	return restrictStore(s, &fencedStore[V]{s, t}), nil
}

// fencedStore implements state.Store and every optional interface;
// restrictStore hides the ones s lacks.
type fencedStore[V any] struct {
	state.Store[V]
	t Token
}

// MergeUpdate implements state.Store; fenced.
func (f *fencedStore[V]) MergeUpdate(ctx context.Context, k state.Key, delta V, ttl time.Duration) error {
	return f.Store.MergeUpdate(withToken(ctx, f.t), k, delta, ttl)
}

// MergeUpdateOnce implements state.OnceStore; fenced.
func (f *fencedStore[V]) MergeUpdateOnce(ctx context.Context, eventID string, k state.Key, delta V, ttl time.Duration) (bool, error) {
	return f.Store.(onceMethods[V]).MergeUpdateOnce(withToken(ctx, f.t), eventID, k, delta, ttl)
}

// MergeMany implements state.BatchStore; fenced.
func (f *fencedStore[V]) MergeMany(ctx context.Context, updates []state.Update[V]) error {
	return f.Store.(batchMethods[V]).MergeMany(withToken(ctx, f.t), updates)
}

// GetRevisions implements state.RevisionStore.
func (f *fencedStore[V]) GetRevisions(ctx context.Context, ks []state.Key) ([]state.Revision[V], error) {
	return f.Store.(revisionMethods[V]).GetRevisions(ctx, ks)
}
