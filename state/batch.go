package state

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/pipestate/pipestate/monoid"
)

// Update is one merge of a MergeMany batch: what MergeUpdate(ctx, Key, Delta, TTL)
// would do.
type Update[V any] struct {
	Key   Key
	Delta V
	TTL   time.Duration // 0: no expiry (clears an earlier one)
}

// MergeBatchSize is the most updates a backend sends in one round trip of
// MergeMany (the Redis stores: one pipeline per 1,000 updates); a larger batch is
// split, and the Coalescer hands MergeMany batches of this size.
const MergeBatchSize = 1000

// BatchStore is an optional interface for stores that merge many keys in few round
// trips. The Coalescer uses it when its store has it.
type BatchStore[V any] interface {
	Store[V]
	// MergeMany applies every update as MergeUpdate(ctx, u.Key, u.Delta, u.TTL)
	// would, in as few round trips as the backend allows (see MergeBatchSize):
	//
	//   - Each update is atomic on its own key, with MergeUpdate's rules: expiry,
	//     refusals (an int64 overflow refuses that update only, with an error
	//     wrapping ErrInvalidArgument), and lost replies (a plain Sum update is
	//     at-least-once when the client library retries a round trip whose reply
	//     was lost; Max and Bytes updates are idempotent).
	//   - Updates of the same key combine in the order of updates, as consecutive
	//     MergeUpdates would.
	//   - Bad input anywhere in the batch (CheckUpdates) returns an error wrapping
	//     ErrInvalidArgument, naming the update, before any I/O: nothing is written.
	//     After Close: ErrClosed; a ctx done before the call: ctx.Err(); an empty
	//     batch: nil. These errors are never a *MergeError, and mean that nothing was
	//     written.
	//   - The batch as a whole is not atomic: while it runs, and after it failed, a
	//     reader may see some updates applied and others not. Any failure after the
	//     first write is a *MergeError telling each update's outcome. Retry only its
	//     failed updates (the applied ones would apply twice), knowing that one
	//     failed with a transport error may have been applied, as a MergeUpdate
	//     whose reply was lost may; MergeUpdateOnce is the exactly-once path.
	MergeMany(ctx context.Context, updates []Update[V]) error
}

// MergeError is the error of a MergeMany that may have written part of its batch.
// Errs holds one entry per update, in the order of the batch: nil for an update
// that was applied (as a MergeUpdate returning nil is), otherwise the error its
// MergeUpdate would have returned — a refusal that wrote nothing for that key (an
// overflow: ErrInvalidArgument; ErrContention), ctx's error (not applied when the
// update was never sent, unknown when ctx ended while it was in flight), or a
// transport error, after which the update may or may not have been applied.
type MergeError struct {
	Errs []error
}

// Error names how many updates failed and the first failure.
func (e *MergeError) Error() string {
	failed, first := 0, -1
	for i, err := range e.Errs {
		if err != nil {
			failed++
			if first < 0 {
				first = i
			}
		}
	}
	if first < 0 {
		return "state: merge many: no update failed"
	}
	return fmt.Sprintf("state: merge many: %d of %d updates failed; update %d: %v", failed, len(e.Errs), first, e.Errs[first])
}

// Unwrap returns the errors of the failed updates, so that errors.Is and errors.As
// see them (ErrInvalidArgument when an update was refused, a ctx error...).
func (e *MergeError) Unwrap() []error {
	var out []error
	for _, err := range e.Errs {
		if err != nil {
			out = append(out, err)
		}
	}
	return out
}

// MergeErrors returns nil when every entry of errs is nil, else a *MergeError
// holding errs. Backends build MergeMany's error with it.
func MergeErrors(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return &MergeError{Errs: errs}
		}
	}
	return nil
}

// CheckUpdates runs CheckMerge on every update and returns the first error, naming
// its index. Every backend's MergeMany calls it before any I/O, so that bad input
// anywhere in a batch writes nothing.
func CheckUpdates[V any](m monoid.Monoid[V], ups []Update[V]) error {
	for i, u := range ups {
		if err := CheckMerge(m, u.Key, u.Delta, u.TTL); err != nil {
			return fmt.Errorf("update %d: %w", i, err)
		}
	}
	return nil
}

// DefaultMergeConcurrency is how many single-key merges MergeEach runs at once by
// default (the DynamoDB stores' WithBatchConcurrency).
const DefaultMergeConcurrency = 16

// MergeEach is MergeMany for a backend without a batch write: it runs merge once
// per update, at most concurrency at once, the updates of one key one after
// another in the order of ups, and returns MergeErrors of the results. Updates not
// started when ctx is done get ctx's error (not applied). The caller checks the
// batch (CheckUpdates) first. concurrency < 1 is ErrInvalidArgument.
func MergeEach[V any](ctx context.Context, ups []Update[V], concurrency int, merge func(ctx context.Context, u Update[V]) error) error {
	if concurrency < 1 {
		return Invalidf("MergeEach: concurrency %d is below 1", concurrency)
	}
	// Group the updates per key, in order: a key's updates run in one goroutine.
	groups := make([][]int, 0, len(ups))
	index := make(map[Key]int, len(ups))
	for i, u := range ups {
		g, ok := index[u.Key]
		if !ok {
			g = len(groups)
			index[u.Key] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	errs := make([]error, len(ups))
	jobs := make(chan []int)
	var wg sync.WaitGroup
	for range min(concurrency, len(groups)) {
		wg.Go(func() {
			for g := range jobs {
				for _, i := range g {
					if errs[i] = ctx.Err(); errs[i] == nil {
						errs[i] = merge(ctx, ups[i])
					}
				}
			}
		})
	}
	for _, g := range groups {
		jobs <- g
	}
	close(jobs)
	wg.Wait()
	return MergeErrors(errs)
}

// mergeAll writes ups to s: with MergeMany when s is a BatchStore, else one
// MergeUpdate per update. It returns one error per update (nil: all applied).
// A whole-batch ErrInvalidArgument from MergeMany (its checks refused one update,
// writing nothing) falls back to one MergeUpdate per update, so that only the bad
// updates fail.
func mergeAll[V any](ctx context.Context, s Store[V], ups []Update[V]) []error {
	if b, ok := s.(BatchStore[V]); ok {
		err := b.MergeMany(ctx, ups)
		if err == nil {
			return nil
		}
		var me *MergeError
		if errors.As(err, &me) && len(me.Errs) == len(ups) {
			return me.Errs
		}
		if me != nil || !errors.Is(err, ErrInvalidArgument) {
			errs := make([]error, len(ups))
			for i := range errs {
				errs[i] = err
			}
			return errs
		}
	}
	var errs []error
	for i, u := range ups {
		if err := s.MergeUpdate(ctx, u.Key, u.Delta, u.TTL); err != nil {
			if errs == nil {
				errs = make([]error, len(ups))
			}
			errs[i] = err
		}
	}
	return errs
}
