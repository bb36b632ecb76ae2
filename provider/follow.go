package provider

import (
	"context"
	"iter"
	"time"
)

// Poller is one iteration's state of a follow: Read returns the records after
// the last it returned, Wait blocks until something may have been written — a
// wake-up, a blocking read's timeout, or a poll interval such as PollWait's — given
// the number of empty reads in a row (1, 2, ...).
type Poller[R any] struct {
	Read func(ctx context.Context) ([]R, error)
	Wait func(ctx context.Context, idle int) error
}

// Follow is the loop of a FollowEvents or WatchCascadeMarkers implementation. Each
// iteration of the sequence calls open for a fresh Poller (so each starts at the
// caller's cursor), yields the records Read returns, reading again at once while it
// returns some, and calls Wait after an empty read. The sequence ends after yielding
// one error: Read's or Wait's, ctx's error when ctx ends.
func Follow[R any](ctx context.Context, open func() Poller[R]) iter.Seq2[R, error] {
	return func(yield func(R, error) bool) {
		var zero R
		pl := open()
		for idle := 0; ; {
			if err := ctx.Err(); err != nil {
				yield(zero, err)
				return
			}
			recs, err := pl.Read(ctx)
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
			if err := pl.Wait(ctx, idle); err != nil {
				yield(zero, err)
				return
			}
		}
	}
}

// PollDelay is the wait of a poller after idle empty reads in a row: first,
// doubling with each further one, up to most.
func PollDelay(first, most time.Duration, idle int) time.Duration {
	d := first
	for i := 1; i < idle && d < most; i++ {
		d *= 2
	}
	return min(d, most)
}

// PollWait returns a Poller's Wait for a backend that can only poll: it sleeps
// PollDelay(first, most, idle) and returns ctx's error if ctx ends first.
func PollWait(first, most time.Duration) func(ctx context.Context, idle int) error {
	return func(ctx context.Context, idle int) error {
		t := time.NewTimer(PollDelay(first, most, idle))
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
