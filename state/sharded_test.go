package state_test

import (
	"errors"
	"testing"
	"time"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/memstate"
	"github.com/pipestate/pipestate/state/statetest"
)

func TestShardedConformance(t *testing.T) {
	var sum monoid.Sum[int64]
	roots := map[string]*memstate.Store[int64]{}
	clocks := map[string]*time.Time{}
	statetest.RunStore(t, statetest.Harness[int64]{
		Open: func(t *testing.T) state.Store[int64] {
			root, ok := roots[t.Name()]
			if !ok {
				now := time.Unix(1_000_000, 0)
				clocks[t.Name()] = &now
				var err error
				root, err = memstate.New[int64](sum, memstate.WithClock(func() time.Time { return *clocks[t.Name()] }))
				if err != nil {
					t.Fatal(err)
				}
				roots[t.Name()] = root
			}
			s, err := state.NewSharded[int64](root.NewHandle(), sum, 7)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		Sleep:         func(t *testing.T, d time.Duration) { *clocks[t.Name()] = clocks[t.Name()].Add(d) },
		Monoid:        sum,
		Delta:         func(i int) int64 { return int64(i) + 1 },
		Equal:         func(a, b int64) bool { return a == b },
		MaxEntityLen:  state.MaxShardedEntityLen,
		SkipTTL:       true, // documented: shards expire independently
		SkipSumLimits: true, // no single write sees the total of the shards
	})
}

func TestShardedSpreadsAndReadsOnce(t *testing.T) {
	ctx := t.Context()
	var sum monoid.Sum[int64]
	st := newSpy[int64](t, sum)
	s, err := state.NewSharded[int64](st, sum, 4)
	if err != nil {
		t.Fatal(err)
	}
	k := state.Key{Entity: "hot", Bucket: 3}
	for range 200 {
		if err := s.MergeUpdate(ctx, k, 1, 0); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 4 {
		if v, found, _ := st.Get(ctx, state.ShardKey(k, i)); !found || v == 0 {
			t.Errorf("shard %d got no writes of 200", i)
		}
	}
	st.getMany.Store(0)
	vs, found, err := s.GetMany(ctx, []state.Key{k, {Entity: "cold"}, k})
	if err != nil || vs[0] != 200 || vs[2] != 200 || !found[0] || found[1] {
		t.Errorf("GetMany = %v, %v, %v", vs, found, err)
	}
	if n := st.getMany.Load(); n != 1 {
		t.Errorf("%d GetMany calls for 3 keys x 4 shards, want 1", n)
	}
}

func TestShardedRefuses(t *testing.T) {
	st := newSpy[string](t, concat{})
	if _, err := state.NewSharded[string](st, concat{}, 4); !errors.Is(err, state.ErrInvalidArgument) {
		t.Errorf("non-commutative monoid: %v", err)
	}
	sum := newSpy[int64](t, monoid.Sum[int64]{})
	for _, n := range []int{0, -1, state.MaxShards + 1} {
		if _, err := state.NewSharded[int64](sum, monoid.Sum[int64]{}, n); !errors.Is(err, state.ErrInvalidArgument) {
			t.Errorf("%d shards: %v", n, err)
		}
	}
	s, _ := state.NewSharded[int64](sum, monoid.Sum[int64]{}, 2)
	if _, err := s.MergeUpdateOnce(t.Context(), "e", state.Key{Entity: "x"}, 1, 0); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("MergeUpdateOnce over a plain Store: %v", err)
	}
}
