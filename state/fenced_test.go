package state_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/pipestate/pipestate/fence"
	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/memstate"
	"github.com/pipestate/pipestate/types"
)

// fenceRecorder is a memory store recording the fence each call's context
// carried (0: none) by method.
type fenceRecorder struct {
	*memstate.Store[int64]
	seen map[string]int64
}

func (r *fenceRecorder) note(ctx context.Context, method string) {
	t, _ := fence.FromContext(ctx)
	r.seen[method] = t.Fence
}

func (r *fenceRecorder) Get(ctx context.Context, k state.Key) (int64, bool, error) {
	r.note(ctx, "Get")
	return r.Store.Get(ctx, k)
}

func (r *fenceRecorder) MergeUpdate(ctx context.Context, k state.Key, d int64, ttl time.Duration) error {
	r.note(ctx, "MergeUpdate")
	return r.Store.MergeUpdate(ctx, k, d, ttl)
}

func (r *fenceRecorder) MergeUpdateOnce(ctx context.Context, id string, k state.Key, d int64, ttl time.Duration) (bool, error) {
	r.note(ctx, "MergeUpdateOnce")
	return r.Store.MergeUpdateOnce(ctx, id, k, d, ttl)
}

func (r *fenceRecorder) MergeMany(ctx context.Context, ups []state.Update[int64]) error {
	r.note(ctx, "MergeMany")
	return r.Store.MergeMany(ctx, ups)
}

// TestFencedStore: the view fences the three merges and nothing else, keeps
// exactly the optional interfaces of what it wraps, and refuses bad input.
func TestFencedStore(t *testing.T) {
	mem, err := memstate.New[int64](monoid.Sum[int64]{})
	if err != nil {
		t.Fatal(err)
	}
	lease := types.Lease{Key: "job", Token: "tok", Fence: 3}
	r := &fenceRecorder{Store: mem, seen: map[string]int64{}}
	fs, err := state.Fenced[int64](r, lease)
	if err != nil {
		t.Fatal(err)
	}
	k := state.Key{Entity: "e"}
	ctx := t.Context()
	if err := fs.MergeUpdate(ctx, k, 1, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.(state.OnceStore[int64]).MergeUpdateOnce(ctx, "ev", k, 1, 0); err != nil {
		t.Fatal(err)
	}
	if err := fs.(state.BatchStore[int64]).MergeMany(ctx, []state.Update[int64]{{Key: k, Delta: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := fs.Get(ctx, k); err != nil {
		t.Fatal(err)
	}
	if want := map[string]int64{"MergeUpdate": 3, "MergeUpdateOnce": 3, "MergeMany": 3, "Get": 0}; !reflect.DeepEqual(r.seen, want) {
		t.Errorf("fences seen = %v, want %v", r.seen, want)
	}

	plain, err := state.Fenced[int64](struct{ state.Store[int64] }{mem}, lease)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := plain.(state.OnceStore[int64]); ok {
		t.Error("Fenced of a plain Store is a OnceStore")
	}
	if _, ok := plain.(state.BatchStore[int64]); ok {
		t.Error("Fenced of a plain Store is a BatchStore")
	}

	for _, l := range []types.Lease{{Key: "k", Token: "t"}, {Token: "t", Fence: 1}} {
		if _, err := state.Fenced[int64](mem, l); !errors.Is(err, state.ErrInvalidArgument) {
			t.Errorf("Fenced(%+v) = %v, want ErrInvalidArgument", l, err)
		}
	}
	if _, err := state.Fenced[int64](nil, lease); !errors.Is(err, state.ErrInvalidArgument) {
		t.Errorf("Fenced(nil) = %v, want ErrInvalidArgument", err)
	}
}
