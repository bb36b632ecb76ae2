package memorytest

import (
	"fmt"
	"testing"

	"github.com/pipestate/pipestate/types"
)

// TestDataGoesWithItsTest: a test's data is dropped when the test ends, so a
// long run of many subtests (make sim) does not keep every run's data.
func TestDataGoesWithItsTest(t *testing.T) {
	b := New()
	for i := range 20 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			if err := b.Open(t).RegisterPipeline(t.Context(), types.PipelineConfig{ID: "p"}); err != nil {
				t.Fatal(err)
			}
		})
	}
	n := 0
	b.tests.Range(func(any, any) bool { n++; return true })
	if n != 0 {
		t.Errorf("%d tests' data kept after the tests ended, want 0", n)
	}
}
