package provider_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
)

// TestFollow drives Follow with scripted reads: records are yielded in order, an
// empty read waits with the count of empty reads in a row (reset by records), and a
// wait's error ends the sequence after being yielded.
func TestFollow(t *testing.T) {
	reads := [][]int{{1, 2}, nil, nil, {3}, nil}
	var idles []int
	stop := errors.New("stop")
	var got []int
	var end error
	for r, err := range provider.Follow(t.Context(), func() provider.Poller[int] {
		return provider.Poller[int]{
			Read: func(context.Context) ([]int, error) {
				next := reads[0]
				reads = reads[1:]
				return next, nil
			},
			Wait: func(_ context.Context, idle int) error {
				idles = append(idles, idle)
				if len(reads) == 0 {
					return stop
				}
				return nil
			},
		}
	}) {
		if err != nil {
			end = err
			continue
		}
		got = append(got, r)
	}
	if !slices.Equal(got, []int{1, 2, 3}) || !slices.Equal(idles, []int{1, 2, 1}) || end != stop {
		t.Errorf("records %v, idles %v, end %v; want [1 2 3], [1 2 1], stop", got, idles, end)
	}
}

func TestFollowEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(20*time.Millisecond, cancel)
	var last error
	n := 0
	for _, err := range provider.Follow(ctx, idlePoller(provider.PollWait(time.Millisecond, 4*time.Millisecond))) {
		last = err
		if n++; n > 1 {
			t.Fatal("the sequence went on after yielding an error")
		}
	}
	if !errors.Is(last, context.Canceled) {
		t.Fatalf("ended with %v, want context.Canceled", last)
	}
	ctx2, cancel2 := context.WithCancel(t.Context())
	cancel2()
	for _, err := range provider.Follow(ctx2, idlePoller(provider.PollWait(time.Hour, time.Hour))) {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("after cancel: %v, want context.Canceled", err)
		}
	}
}

// idlePoller never finds a record.
func idlePoller(wait func(context.Context, int) error) func() provider.Poller[int] {
	return func() provider.Poller[int] {
		return provider.Poller[int]{Read: func(context.Context) ([]int, error) { return nil, nil }, Wait: wait}
	}
}

// TestFollowRestartsPerIteration: ranging twice over one sequence starts twice at
// the caller's cursor.
func TestFollowRestartsPerIteration(t *testing.T) {
	seq := provider.Follow(t.Context(), func() provider.Poller[int] {
		next := 0
		return provider.Poller[int]{
			Read: func(context.Context) ([]int, error) { next++; return []int{next}, nil },
			Wait: func(context.Context, int) error { return nil },
		}
	})
	for range 2 {
		for r := range seq {
			if r != 1 {
				t.Errorf("first record of an iteration = %d, want 1", r)
			}
			break
		}
	}
}

// TestPollWaitBacksOff: waits double from first up to most, and a canceled context
// ends a wait at once.
func TestPollWaitBacksOff(t *testing.T) {
	wait := provider.PollWait(20*time.Millisecond, 80*time.Millisecond)
	for _, c := range []struct {
		idle     int
		min, max time.Duration
	}{{1, 20 * time.Millisecond, time.Second}, {3, 80 * time.Millisecond, time.Second}, {50, 80 * time.Millisecond, time.Second}} {
		start := time.Now()
		if err := wait(t.Context(), c.idle); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < c.min || d > c.max {
			t.Errorf("idle %d waited %v, want in [%v, %v]", c.idle, d, c.min, c.max)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := provider.PollWait(time.Hour, time.Hour)(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled wait = %v", err)
	}
}
