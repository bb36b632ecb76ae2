package storetest

import (
	"github.com/pipestate/pipestate/monoid/sketch/hll"
	"github.com/pipestate/pipestate/state/statetest"
)

// HLLEqual reports whether two HLL sketches hold the same registers; a value that
// does not decode is equal to nothing.
func HLLEqual(a, b []byte) bool {
	ok, err := hll.Equal(a, b)
	return err == nil && ok
}

// HLLSketch describes m's sketches for statetest's sketch accuracy test.
func HLLSketch(m hll.Monoid) *statetest.Sketch[[]byte] {
	return &statetest.Sketch[[]byte]{
		Item: func(id string) []byte { return m.Delta(id) },
		Estimate: func(b []byte) (float64, error) {
			n, err := hll.Estimate(b)
			return float64(n), err
		},
		StdErr: m.StandardError(),
	}
}
