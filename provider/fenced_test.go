package provider_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/pipestate/pipestate/fence"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/memprovider"
	"github.com/pipestate/pipestate/types"
)

// recorder is the memory provider, recording the token each call's context
// carried (Fence 0: none) by method.
type recorder struct {
	*memprovider.Provider
	seen map[string]int64
}

func (r *recorder) note(ctx context.Context, method string) {
	t, _ := fence.FromContext(ctx)
	r.seen[method] = t.Fence
}

func (r *recorder) PutRunState(ctx context.Context, run types.RunState) error {
	r.note(ctx, "PutRunState")
	return r.Provider.PutRunState(ctx, run)
}

func (r *recorder) CompareAndSwapRunState(ctx context.Context, id string, v int, s types.RunState) (bool, error) {
	r.note(ctx, "CompareAndSwapRunState")
	return r.Provider.CompareAndSwapRunState(ctx, id, v, s)
}

func (r *recorder) CreateRunState(ctx context.Context, run types.RunState) (bool, error) {
	r.note(ctx, "CreateRunState")
	return r.Provider.CreateRunState(ctx, run)
}

func (r *recorder) AppendEvent(ctx context.Context, ev types.Event) error {
	r.note(ctx, "AppendEvent")
	return r.Provider.AppendEvent(ctx, ev)
}

func (r *recorder) PutRunLog(ctx context.Context, e types.RunLogEntry) error {
	r.note(ctx, "PutRunLog")
	return r.Provider.PutRunLog(ctx, e)
}

func (r *recorder) PutRerun(ctx context.Context, x types.RerunRecord) error {
	r.note(ctx, "PutRerun")
	return r.Provider.PutRerun(ctx, x)
}

func (r *recorder) PutReplay(ctx context.Context, x types.ReplayRequest) error {
	r.note(ctx, "PutReplay")
	return r.Provider.PutReplay(ctx, x)
}

func (r *recorder) PutLateArrival(ctx context.Context, la types.LateArrival) error {
	r.note(ctx, "PutLateArrival")
	return r.Provider.PutLateArrival(ctx, la)
}

func (r *recorder) WriteCascadeMarker(ctx context.Context, p, s, d, src string) error {
	r.note(ctx, "WriteCascadeMarker")
	return r.Provider.WriteCascadeMarker(ctx, p, s, d, src)
}

func (r *recorder) PutTrait(ctx context.Context, p string, tr types.TraitEvaluation, ttl time.Duration) error {
	r.note(ctx, "PutTrait")
	return r.Provider.PutTrait(ctx, p, tr, ttl)
}

func (r *recorder) RegisterPipeline(ctx context.Context, cfg types.PipelineConfig) error {
	r.note(ctx, "RegisterPipeline")
	return r.Provider.RegisterPipeline(ctx, cfg)
}

func (r *recorder) AcquireLock(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	r.note(ctx, "AcquireLock")
	return r.Provider.AcquireLock(ctx, key, ttl)
}

func (r *recorder) GetRunState(ctx context.Context, id string) (*types.RunState, error) {
	r.note(ctx, "GetRunState")
	return r.Provider.GetRunState(ctx, id)
}

// TestFencedCarriesTokenOnFencedWritesOnly: the view puts the lease's token on
// the context of exactly the writes the fence package doc lists.
func TestFencedCarriesTokenOnFencedWritesOnly(t *testing.T) {
	mem, err := memprovider.New()
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{Provider: mem, seen: map[string]int64{}}
	fp, err := provider.Fenced(r, types.Lease{Key: "job", Token: "tok", Fence: 7})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	run := types.RunState{RunID: "r1", PipelineID: "p1", Status: types.RunPending}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(fp.RegisterPipeline(ctx, types.PipelineConfig{ID: "p1"}))
	must(fp.PutTrait(ctx, "p1", types.TraitEvaluation{TraitType: "fresh", Status: types.TraitPass}, 0))
	_, err = fp.AcquireLock(ctx, "l", time.Minute)
	must(err)
	must(fp.PutRunState(ctx, run))
	_, err = fp.GetRunState(ctx, "r1")
	must(err)
	_, err = fp.CompareAndSwapRunState(ctx, "r1", 0, run)
	must(err)
	_, err = fp.(provider.RunCreator).CreateRunState(ctx, types.RunState{RunID: "r2", PipelineID: "p1", Status: types.RunPending})
	must(err)
	must(fp.AppendEvent(ctx, types.Event{Kind: "K", PipelineID: "p1"}))
	must(fp.PutRunLog(ctx, types.RunLogEntry{PipelineID: "p1", Date: "2026-01-02", Status: types.RunRunning}))
	must(fp.PutRerun(ctx, types.RerunRecord{RerunID: "x", PipelineID: "p1", OriginalDate: "2026-01-02", Status: types.RequestPending}))
	must(fp.PutReplay(ctx, types.ReplayRequest{PipelineID: "p1", Date: "2026-01-02", Status: types.RequestPending}))
	must(fp.PutLateArrival(ctx, types.LateArrival{PipelineID: "p1", Date: "2026-01-02"}))
	must(fp.WriteCascadeMarker(ctx, "p1", "", "2026-01-02", "src"))
	want := map[string]int64{
		"RegisterPipeline": 0, "PutTrait": 0, "AcquireLock": 0, "GetRunState": 0,
		"PutRunState": 7, "CompareAndSwapRunState": 7, "CreateRunState": 7, "AppendEvent": 7, "PutRunLog": 7,
		"PutRerun": 7, "PutReplay": 7, "PutLateArrival": 7, "WriteCascadeMarker": 7,
	}
	if !reflect.DeepEqual(r.seen, want) {
		t.Errorf("fences seen by method = %v, want %v", r.seen, want)
	}
}

// TestFencedKeepsCapabilities: the view implements exactly the optional
// interfaces of what it wraps.
func TestFencedKeepsCapabilities(t *testing.T) {
	mem, err := memprovider.New()
	if err != nil {
		t.Fatal(err)
	}
	lease := types.Lease{Key: "job", Token: "tok", Fence: 1}
	caps := func(p provider.Provider) []string {
		var out []string
		for name, ok := range map[string]bool{
			"Leaser":        is[provider.Leaser](p),
			"CascadeReader": is[provider.CascadeReader](p),
			"RunCreator":    is[provider.RunCreator](p),
			"EventFollower": is[provider.EventFollower](p),
			"MarkerWatcher": is[provider.MarkerWatcher](p),
			"LockInspector": is[provider.LockInspector](p),
			"LockLister":    is[provider.LockLister](p),
		} {
			if ok {
				out = append(out, name)
			}
		}
		slices.Sort(out)
		return out
	}
	for _, inner := range []provider.Provider{
		mem,
		struct{ provider.Provider }{mem},
		struct {
			provider.Provider
			provider.Leaser
		}{mem, mem},
		struct {
			provider.Provider
			provider.RunCreator
			provider.LockLister
		}{mem, mem, mem},
	} {
		fp, err := provider.Fenced(inner, lease)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := caps(fp), caps(inner); !slices.Equal(got, want) {
			t.Errorf("Fenced(%T) implements %v, want %v", inner, got, want)
		}
	}
}

func is[I any](p provider.Provider) bool { _, ok := p.(I); return ok }

// TestFencedBadInput: a nil provider and an invalid lease are ErrInvalidArgument.
func TestFencedBadInput(t *testing.T) {
	mem, err := memprovider.New()
	if err != nil {
		t.Fatal(err)
	}
	var nilMem *memprovider.Provider
	for _, tc := range []struct {
		p     provider.Provider
		lease types.Lease
	}{
		{nil, types.Lease{Key: "k", Token: "t", Fence: 1}},
		{nilMem, types.Lease{Key: "k", Token: "t", Fence: 1}},
		{mem, types.Lease{Key: "k", Token: "t", Fence: -1}},
		{mem, types.Lease{Key: "bad\x00key", Token: "t", Fence: 1}},
		{mem, types.Lease{Key: string(make([]byte, types.MaxLockKeyLen+1)), Token: "t", Fence: 1}},
	} {
		if _, err := provider.Fenced(tc.p, tc.lease); !errors.Is(err, provider.ErrInvalidArgument) {
			t.Errorf("Fenced(%T, %+v) = %v, want ErrInvalidArgument", tc.p, tc.lease, err)
		}
	}
}
