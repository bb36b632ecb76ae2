package lincheck_test

import (
	"testing"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/provider/memprovider"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/memstate"
)

// memoryTarget is a fresh provider/memprovider Store and state/memstate store, without
// faults.
func memoryTarget(t *testing.T) target {
	return target{
		providers: func(t *testing.T, n int) []fullProvider { return memoryProviders(t, n) },
		counters: func(t *testing.T, n int) []state.OnceStore[int64] {
			s, err := memstate.New[int64](monoid.Sum[int64]{})
			if err != nil {
				t.Fatal(err)
			}
			out := []state.OnceStore[int64]{s}
			for len(out) < n {
				out = append(out, s.NewHandle())
			}
			return out
		},
	}
}

func memoryProviders(t *testing.T, n int) []fullProvider {
	t.Helper()
	root, err := memprovider.New()
	if err != nil {
		t.Fatal(err)
	}
	var out []fullProvider
	for i := range n {
		p, err := root.NewHandle(memprovider.WithOwner(owner(i)))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

func TestMemory(t *testing.T) {
	t.Parallel()
	checkBackend(t, memoryTarget)
}
