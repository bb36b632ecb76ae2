package state_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pipestate/pipestate/state"
)

// TestMergeEach: every update runs once, those of one key in batch order, at most
// concurrency at once; updates not started after ctx is done get its error.
func TestMergeEach(t *testing.T) {
	var ups []state.Update[string]
	for i := range 200 {
		ups = append(ups, state.Update[string]{Key: state.Key{Entity: fmt.Sprint("k", i%7)}, Delta: fmt.Sprint(i, ",")})
	}
	var mu sync.Mutex
	got := map[state.Key]string{}
	var running, peak atomic.Int64
	err := state.MergeEach(t.Context(), ups, 4, func(_ context.Context, u state.Update[string]) error {
		if n := running.Add(1); n > peak.Load() {
			peak.Store(n)
		}
		defer running.Add(-1)
		mu.Lock()
		defer mu.Unlock()
		got[u.Key] += u.Delta
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[state.Key]string{}
	for _, u := range ups {
		want[u.Key] += u.Delta
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%v = %q, want %q", k, got[k], w)
		}
	}
	if peak.Load() > 4 {
		t.Errorf("%d merges at once, want at most 4", peak.Load())
	}

	ctx, cancel := context.WithCancel(t.Context())
	boom := errors.New("boom")
	err = state.MergeEach(ctx, ups[:3], 1, func(context.Context, state.Update[string]) error {
		cancel()
		return boom
	})
	var me *state.MergeError
	if !errors.As(err, &me) || !errors.Is(me.Errs[0], boom) || !errors.Is(me.Errs[1], context.Canceled) || !errors.Is(me.Errs[2], context.Canceled) {
		t.Errorf("MergeEach after cancel = %v, want [boom canceled canceled]", err)
	}
	if err := state.MergeEach(t.Context(), ups, 0, nil); !errors.Is(err, state.ErrInvalidArgument) {
		t.Errorf("concurrency 0: %v", err)
	}
}
