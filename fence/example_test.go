package fence_test

import (
	"errors"
	"fmt"

	"github.com/pipestate/pipestate/fence"
	"github.com/pipestate/pipestate/types"
)

// The rule a backend applies atomically with each fenced write: a record
// remembers, per lease key, the highest fence that wrote it (a Set), and refuses
// a write with a lower one.
func ExampleSet_Check() {
	old, _ := fence.Of(types.Lease{Key: "ingest/orders", Token: "t-1", Fence: 1})
	next, _ := fence.Of(types.Lease{Key: "ingest/orders", Token: "t-2", Fence: 2})

	remembered := fence.Set{} // what run orders-2026-11-21 remembers
	for _, t := range []fence.Token{old, next, old} {
		err := remembered.Check(t, "run orders-2026-11-21")
		if err == nil {
			remembered.Remember(t) // the write went through
		}
		fmt.Println(t.Fence, err == nil, errors.Is(err, fence.ErrFenced))
	}
	// Output:
	// 1 true false
	// 2 true false
	// 1 false true
}
