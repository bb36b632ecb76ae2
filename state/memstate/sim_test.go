package memstate_test

import (
	"testing"
	"time"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state/statetest/statesim"
)

// TestSim simulates the memory stores and a Deduper on their clock (package
// state/statetest/statesim). Handles share their data's options, so there are
// no variants.
func TestSim(t *testing.T) {
	statesim.Run(t, statesim.Harness{
		Harness:     storeHarness[int64](monoid.Sum[int64]{}, signed[int64](1), eq),
		OpenDeduper: deduperHarness(dedupTTL).Open,
		Corpus:      "testdata/sim.seeds",
		Budget:      5 * time.Second,
	})
}

// TestSimMax simulates the memory stores with monoid.Max[int64].
func TestSimMax(t *testing.T) {
	statesim.Run(t, statesim.Harness{
		Harness:     storeHarness[int64](monoid.Max[int64]{}, signed[int64](1), eq),
		OpenDeduper: deduperHarness(dedupTTL).Open,
		Corpus:      "testdata/sim-max.seeds",
		Budget:      2 * time.Second,
	})
}
