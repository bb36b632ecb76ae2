package state_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/memstate"
)

// concat is a non-commutative monoid (string concatenation), to check that order
// is kept where it must be.
type concat struct{}

func (concat) Identity() string           { return "" }
func (concat) Combine(a, b string) string { return a + b }
func (concat) Kind() monoid.Kind          { return monoid.KindCustom }

var _ monoid.Monoid[string] = concat{}

// spy wraps a store, counting calls and optionally failing merges.
type spy[V any] struct {
	state.Store[V]
	getMany, merges atomic.Int64
	mu              sync.Mutex
	fail            func(k state.Key) error // nil: no failures
	merged          chan state.Key          // receives every successful merge's key, if set
}

func (s *spy[V]) GetMany(ctx context.Context, ks []state.Key) ([]V, []bool, error) {
	s.getMany.Add(1)
	return s.Store.GetMany(ctx, ks)
}

func (s *spy[V]) MergeUpdate(ctx context.Context, k state.Key, delta V, ttl time.Duration) error {
	s.merges.Add(1)
	s.mu.Lock()
	fail := s.fail
	s.mu.Unlock()
	if fail != nil {
		if err := fail(k); err != nil {
			return err
		}
	}
	err := s.Store.MergeUpdate(ctx, k, delta, ttl)
	if err == nil && s.merged != nil {
		s.merged <- k
	}
	return err
}

func (s *spy[V]) setFail(f func(k state.Key) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = f
}

func newSpy[V any](t *testing.T, m monoid.Monoid[V]) *spy[V] {
	t.Helper()
	st, err := memstate.New(m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return &spy[V]{Store: st}
}
