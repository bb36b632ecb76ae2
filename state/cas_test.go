package state_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/monoid/sketch/hll"
	"github.com/pipestate/pipestate/state"
)

// casCell is a versioned value with a conditional write that loses the first
// `lose` races.
type casCell struct {
	v      int64
	ver    int
	found  bool
	lose   int
	writes int
}

func (c *casCell) read(context.Context) (int64, bool, int, error) { return c.v, c.found, c.ver, nil }

func (c *casCell) write(_ context.Context, next int64, found bool, ver int) (bool, error) {
	c.writes++
	if c.lose > 0 {
		c.lose--
		c.ver++ // someone else wrote
		return false, nil
	}
	if found != c.found || ver != c.ver {
		return false, nil
	}
	c.v, c.found, c.ver = next, true, c.ver+1
	return true, nil
}

func TestRetryCAS(t *testing.T) {
	ctx := context.Background()
	var sum monoid.Sum[int64]
	t.Run("first try", func(t *testing.T) {
		c := &casCell{v: 5, found: true}
		retries, err := state.RetryCAS(ctx, sum, 3, 10, c.read, c.write)
		if err != nil || retries != 0 || c.v != 8 {
			t.Errorf("retries %d, err %v, v %d; want 0, nil, 8", retries, err, c.v)
		}
	})
	t.Run("missing starts from identity", func(t *testing.T) {
		c := &casCell{v: 99} // stale bytes of an expired item
		if _, err := state.RetryCAS(ctx, sum, 3, 0, c.read, c.write); err != nil || c.v != 3 {
			t.Errorf("err %v, v %d; want nil, 3", err, c.v)
		}
	})
	t.Run("lost races", func(t *testing.T) {
		c := &casCell{found: true, lose: 3}
		retries, err := state.RetryCAS(ctx, sum, 1, 3, c.read, c.write)
		if err != nil || retries != 3 || c.v != 1 {
			t.Errorf("retries %d, err %v, v %d; want 3, nil, 1", retries, err, c.v)
		}
	})
	t.Run("max retries", func(t *testing.T) {
		c := &casCell{found: true, lose: 100}
		retries, err := state.RetryCAS(ctx, sum, 1, 2, c.read, c.write)
		if !errors.Is(err, state.ErrContention) || retries != 3 || c.writes != 3 || c.v != 0 {
			t.Errorf("retries %d, writes %d, err %v, v %d; want 3 attempts and ErrContention", retries, c.writes, err, c.v)
		}
	})
	t.Run("negative max retries", func(t *testing.T) {
		c := &casCell{}
		if _, err := state.RetryCAS(ctx, sum, 1, -1, c.read, c.write); !errors.Is(err, state.ErrInvalidArgument) || c.writes != 0 {
			t.Errorf("err %v, writes %d", err, c.writes)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		c := &casCell{}
		if _, err := state.RetryCAS(cctx, sum, 1, 5, c.read, c.write); !errors.Is(err, context.Canceled) || c.writes != 0 {
			t.Errorf("err %v, writes %d", err, c.writes)
		}
	})
	t.Run("read error", func(t *testing.T) {
		boom := errors.New("boom")
		read := func(context.Context) (int64, bool, int, error) { return 0, false, 0, boom }
		c := &casCell{}
		if _, err := state.RetryCAS(ctx, sum, 1, 5, read, c.write); !errors.Is(err, boom) || c.writes != 0 {
			t.Errorf("err %v, writes %d", err, c.writes)
		}
	})
	t.Run("incompatible stored value", func(t *testing.T) {
		m, _ := hll.New(10)
		writes := 0
		read := func(context.Context) ([]byte, bool, int, error) { return []byte("corrupt"), true, 1, nil }
		write := func(context.Context, []byte, bool, int) (bool, error) { writes++; return true, nil }
		_, err := state.RetryCAS[[]byte](ctx, m, m.Delta("a"), 5, read, write)
		if !errors.Is(err, monoid.ErrIncompatible) || !errors.Is(err, state.ErrInvalidArgument) || writes != 0 {
			t.Errorf("err %v, writes %d", err, writes)
		}
	})
	t.Run("policy", func(t *testing.T) {
		c := &casCell{found: true, lose: 100}
		p := state.CASPolicy{MaxRetries: 4, Base: time.Microsecond, Max: time.Microsecond}
		retries, err := state.RetryCASPolicy(ctx, sum, 1, p, c.read, c.write)
		if !errors.Is(err, state.ErrContention) || retries != 5 || c.writes != 5 {
			t.Errorf("retries %d, writes %d, err %v; want 5 attempts", retries, c.writes, err)
		}
		for _, bad := range []state.CASPolicy{{MaxRetries: -1, Base: 1, Max: 1}, {Base: 0, Max: 1}, {Base: 2, Max: 1}} {
			if _, err := state.RetryCASPolicy(ctx, sum, 1, bad, c.read, c.write); !errors.Is(err, state.ErrInvalidArgument) {
				t.Errorf("policy %+v: %v", bad, err)
			}
		}
		if err := state.DefaultCASPolicy().Check(); err != nil {
			t.Error(err)
		}
	})
	t.Run("on retry", func(t *testing.T) {
		for _, lose := range []int{0, 2, 100} {
			var got []int
			p := state.CASPolicy{MaxRetries: 4, Base: time.Microsecond, Max: time.Microsecond,
				OnRetry: func(_ context.Context, retry int) { got = append(got, retry) }}
			c := &casCell{found: true, lose: lose}
			lost, err := state.RetryCASPolicy(ctx, sum, 1, p, c.read, c.write)
			want := min(lose, p.MaxRetries) // retried races; the fifth lost one gives up
			if len(got) != want || lost != len(got)+btoi(errors.Is(err, state.ErrContention)) {
				t.Errorf("lose %d: OnRetry calls %v, lost %d, err %v; want %d calls, lost = calls + give-ups", lose, got, lost, err, want)
			}
			for i, n := range got {
				if n != i+1 {
					t.Errorf("lose %d: OnRetry numbers %v, want 1, 2, ...", lose, got)
					break
				}
			}
		}
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
