package ddbstate

import (
	"context"
	"time"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/internal/storeopt"
)

// WithBatchConcurrency sets how many UpdateItem merges one MergeMany runs at once
// (default state.DefaultMergeConcurrency). n < 1 is an error.
func WithBatchConcurrency(n int) StoreOption {
	return storeopt.Store(func(c *config) error {
		if n < 1 {
			return state.Invalidf("%s: batch concurrency %d is below 1", c.Ctor, n)
		}
		c.batchConc = n
		return nil
	})
}

var (
	_ state.BatchStore[int64]   = (*Int64SumStore)(nil)
	_ state.BatchStore[float64] = (*Float64SumStore)(nil)
	_ state.BatchStore[int64]   = (*Int64MaxStore)(nil)
	_ state.BatchStore[[]byte]  = (*BytesStore)(nil)
)

// mergeFunc is a store's merge: MergeUpdate when once is false.
type mergeFunc[V any] func(ctx context.Context, once bool, eventID string, k state.Key, delta V, ttl time.Duration) (bool, error)

// mergeMany is MergeMany: the batch checked first, then each update through the
// store's own merge (MergeUpdate's requests, retries and signals), at most
// WithBatchConcurrency at once, one key's updates in order (state.MergeEach).
func mergeMany[V any](ctx context.Context, b *base, m monoid.Monoid[V], ups []state.Update[V], merge mergeFunc[V]) error {
	if err := b.life.Enter(ctx, state.CheckUpdates(m, ups)); err != nil {
		return err
	}
	n := b.cfg.batchConc
	if n == 0 {
		n = state.DefaultMergeConcurrency
	}
	return state.MergeEach(ctx, ups, n, func(ctx context.Context, u state.Update[V]) error {
		_, err := merge(ctx, false, "", u.Key, u.Delta, u.TTL)
		return err
	})
}

// MergeMany applies every update as MergeUpdate would (see state.BatchStore): one
// UpdateItem per update (DynamoDB has no batch update), WithBatchConcurrency at once.
// Bad input anywhere is an error wrapping state.ErrInvalidArgument before any
// request; a sum leaving its range fails its update alone.
func (s *Int64SumStore) MergeMany(ctx context.Context, ups []state.Update[int64]) error {
	return mergeMany(ctx, &s.n.base, s.n.m, ups, s.n.merge)
}

// MergeMany applies every update as MergeUpdate would, as Int64SumStore.MergeMany
// does.
func (s *Float64SumStore) MergeMany(ctx context.Context, ups []state.Update[float64]) error {
	return mergeMany(ctx, &s.n.base, s.n.m, ups, s.n.merge)
}

// MergeMany applies every update as MergeUpdate would, as Int64SumStore.MergeMany
// does.
func (s *Int64MaxStore) MergeMany(ctx context.Context, ups []state.Update[int64]) error {
	return mergeMany(ctx, &s.n.base, s.n.m, ups, s.n.merge)
}

// MergeMany applies every update as MergeUpdate would (a compare-and-swap each),
// as Int64SumStore.MergeMany does; a lost race past WithMaxRetries fails its update
// alone with state.ErrContention.
func (s *BytesStore) MergeMany(ctx context.Context, ups []state.Update[[]byte]) error {
	return mergeMany(ctx, &s.base, s.m, ups, s.merge)
}
