package state

import (
	"context"
	"fmt"
	"time"

	"github.com/pipestate/pipestate/fence"
	"github.com/pipestate/pipestate/internal/fencectx"
	"github.com/pipestate/pipestate/internal/nilcheck"
	"github.com/pipestate/pipestate/types"
)

//go:generate go run github.com/pipestate/pipestate/internal/capwrap -pkg state -out restrict_fenced.go -func restrictFenced -base Store[V] -opt onceMethods[V],batchMethods[V],revisionMethods[V] -tparams "V any" -targs V

// onceMethods is what OnceStore adds to Store.
type onceMethods[V any] interface {
	MergeUpdateOnce(ctx context.Context, eventID string, k Key, delta V, ttl time.Duration) (applied bool, err error)
}

// batchMethods is what BatchStore adds to Store.
type batchMethods[V any] interface {
	MergeMany(ctx context.Context, updates []Update[V]) error
}

// revisionMethods is what RevisionStore adds to Store.
type revisionMethods[V any] interface {
	GetRevisions(ctx context.Context, ks []Key) ([]Revision[V], error)
}

// Fenced returns s seen by the holder of lease: MergeUpdate, MergeUpdateOnce and
// MergeMany carry the lease's token, and the store refuses a merge into a key that
// a newer lease of lease.Key has merged into, with an error wrapping ErrFenced and
// nothing written (MergeMany: that update's entry of the *MergeError).
// Reads go to s unchanged. The view implements exactly the optional interfaces
// (OnceStore, BatchStore, RevisionStore) s implements. Close
// through the view closes s.
//
// It fails with an error wrapping ErrInvalidArgument for a nil s or an
// invalid lease (see fence.Of).
func Fenced[V any](s Store[V], lease types.Lease) (Store[V], error) {
	if nilcheck.IsNil(s) {
		return nil, fmt.Errorf("%w: state.Fenced: nil store", ErrInvalidArgument)
	}
	t, err := fence.Of(lease)
	if err != nil {
		return nil, err
	}
	return restrictFenced(s, &fencedStore[V]{s, t}), nil
}

// fencedStore implements Store and every optional interface;
// restrictFenced hides the ones s lacks.
type fencedStore[V any] struct {
	Store[V]
	t fence.Token
}

// MergeUpdate implements Store; fenced.
func (f *fencedStore[V]) MergeUpdate(ctx context.Context, k Key, delta V, ttl time.Duration) error {
	return f.Store.MergeUpdate(fencectx.With(ctx, f.t), k, delta, ttl)
}

// MergeUpdateOnce implements OnceStore; fenced.
func (f *fencedStore[V]) MergeUpdateOnce(ctx context.Context, eventID string, k Key, delta V, ttl time.Duration) (bool, error) {
	return f.Store.(onceMethods[V]).MergeUpdateOnce(fencectx.With(ctx, f.t), eventID, k, delta, ttl)
}

// MergeMany implements BatchStore; fenced.
func (f *fencedStore[V]) MergeMany(ctx context.Context, updates []Update[V]) error {
	return f.Store.(batchMethods[V]).MergeMany(fencectx.With(ctx, f.t), updates)
}

// GetRevisions implements RevisionStore.
func (f *fencedStore[V]) GetRevisions(ctx context.Context, ks []Key) ([]Revision[V], error) {
	return f.Store.(revisionMethods[V]).GetRevisions(ctx, ks)
}
