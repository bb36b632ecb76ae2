package provider

import (
	"context"
	"iter"
	"time"
)

// Follow is the loop of a FollowEvents or WatchCascadeMarkers implementation. It
// yields the records read returns, reading again at once while read returns some;
// after an empty read it calls wait with the number of empty reads in a row
// (1, 2, ...), which blocks until something may have been written — a wake-up, a
// blocking read's timeout, or a poll interval such as PollWait's — and reads again.
// The sequence ends after yielding one error: read's or wait's, ctx's error when ctx
// ends. read must advance its own cursor past what it returned.
func Follow[R any](ctx context.Context, read func(ctx context.Context) ([]R, error), wait func(ctx context.Context, idle int) error) iter.Seq2[R, error] {
	return func(yield func(R, error) bool) {
		var zero R
		for idle := 0; ; {
			if err := ctx.Err(); err != nil {
				yield(zero, err)
				return
			}
			recs, err := read(ctx)
			if err != nil {
				yield(zero, err)
				return
			}
			for _, r := range recs {
				if !yield(r, nil) {
					return
				}
			}
			if len(recs) > 0 {
				idle = 0
				continue
			}
			idle++
			if err := wait(ctx, idle); err != nil {
				yield(zero, err)
				return
			}
		}
	}
}

// PollWait returns a Follow wait function for a backend that can only poll: it
// sleeps first after the first empty read, doubling with each further one up to
// most, and returns ctx's error if ctx ends first.
func PollWait(first, most time.Duration) func(ctx context.Context, idle int) error {
	return func(ctx context.Context, idle int) error {
		d := first
		for i := 1; i < idle && d < most; i++ {
			d *= 2
		}
		t := time.NewTimer(min(d, most))
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Fail is the sequence that yields err and ends: what FollowEvents and
// WatchCascadeMarkers return for bad input.
func Fail[R any](err error) iter.Seq2[R, error] {
	return func(yield func(R, error) bool) {
		var zero R
		yield(zero, err)
	}
}
