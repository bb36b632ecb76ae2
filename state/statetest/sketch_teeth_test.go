package statetest_test

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/pipestate/pipestate/monoid/sketch/hll"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/statetest"
)

// sketchCap is the value size above which a toy with flaw sketchCapped drops a
// merge: far above what the suite's other tests store with sketchToyHarness's
// deltas (16 items), below a dense sketch of precision sketchPrecision.
const (
	sketchCap       = 512
	sketchPrecision = 10
)

// sketchToy is a BytesStore of HyperLogLog sketches without expiry; its flaws
// (flaws.sketch*) are those of a backend that loses or drops sketch merges.
type sketchToy struct {
	mu     *sync.Mutex
	values map[state.Key][]byte
	fences toyFences
	m      hll.Monoid
	f      flaws
	closed bool
}

func (s *sketchToy) enter(ctx context.Context) error {
	if s.closed {
		return state.ErrClosed
	}
	return ctx.Err()
}

func (s *sketchToy) Get(ctx context.Context, k state.Key) ([]byte, bool, error) {
	vs, found, err := s.GetMany(ctx, []state.Key{k})
	if err != nil {
		return nil, false, err
	}
	return vs[0], found[0], nil
}

func (s *sketchToy) GetMany(ctx context.Context, ks []state.Key) ([][]byte, []bool, error) {
	if err := s.enter(ctx); err != nil {
		return nil, nil, err
	}
	if err := state.CheckKeys(ks); err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	vs, found := make([][]byte, len(ks)), make([]bool, len(ks))
	for i, k := range ks {
		vs[i], found[i] = s.values[k]
	}
	return vs, found, nil
}

func (s *sketchToy) MergeUpdate(ctx context.Context, k state.Key, delta []byte, ttl time.Duration) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	if err := state.CheckMerge[[]byte](s.m, k, delta, ttl); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	remember, err := s.fences.admit(ctx, fmt.Sprint(k), s.f)
	if err != nil {
		return err
	}
	old := s.values[k]
	if s.f.sketchLost {
		s.mu.Unlock() // no I/O between the read and the write, only a preemption point
		runtime.Gosched()
		s.mu.Lock()
	}
	v, err := state.Combine[[]byte](s.m, old, delta)
	if err != nil {
		return err
	}
	if s.f.sketchCapped && len(v) > sketchCap {
		return nil
	}
	s.values[k] = v
	remember()
	return nil
}

func (s *sketchToy) Close() error { s.closed = true; return nil }

// sketchToyHarness runs the suite on sketch toys with flaws f. Its deltas cycle
// through 16 items, so only the sketch accuracy test, with its distinct events,
// grows a sketch large.
func sketchToyHarness(f flaws) statetest.Harness[[]byte] {
	m, err := hll.New(sketchPrecision)
	if err != nil {
		panic(err)
	}
	var mu sync.Mutex
	byTest := map[string]map[state.Key][]byte{}
	fences := map[string]toyFences{}
	equal := func(a, b []byte) bool {
		ok, err := hll.Equal(a, b)
		return err == nil && ok
	}
	return statetest.Harness[[]byte]{
		Open: func(t *testing.T) state.Store[[]byte] {
			mu.Lock()
			defer mu.Unlock()
			if byTest[t.Name()] == nil {
				byTest[t.Name()], fences[t.Name()] = map[state.Key][]byte{}, toyFences{}
			}
			return &sketchToy{mu: &mu, values: byTest[t.Name()], fences: fences[t.Name()], m: m, f: f}
		},
		SkipTTL: true, Monoid: m,
		Delta:     func(i int) []byte { return m.Delta(fmt.Sprint("item-", i%16)) },
		Equal:     equal,
		BadDeltas: [][]byte{[]byte("garbage")},
		Sketch: &statetest.Sketch[[]byte]{
			Item: func(id string) []byte { return m.Delta(id) },
			Estimate: func(b []byte) (float64, error) {
				n, err := hll.Estimate(b)
				return float64(n), err
			},
			StdErr: 1.04 / math.Sqrt(1<<sketchPrecision),
		},
	}
}
