package memprovider_test

import (
	"context"
	"fmt"

	"github.com/pipestate/pipestate/provider/memprovider"
	"github.com/pipestate/pipestate/types"
)

// A run moves from PENDING to RUNNING with compare-and-swap; a second writer holding
// the old version loses.
func Example() {
	ctx := context.Background()
	p, err := memprovider.New()
	if err != nil {
		panic(err)
	}
	run := types.RunState{RunID: "run-1", PipelineID: "orders", Status: types.RunPending}
	if err := p.PutRunState(ctx, run); err != nil {
		panic(err)
	}
	run.Status = types.RunRunning
	won, _ := p.CompareAndSwapRunState(ctx, "run-1", 0, run)
	lateWriter, _ := p.CompareAndSwapRunState(ctx, "run-1", 0, run)
	got, _ := p.GetRunState(ctx, "run-1")
	fmt.Println(won, lateWriter, got.Status, got.Version)
	// Output: true false RUNNING 1
}

// Two handles on one memory backend are two lock owners.
func Example_locks() {
	ctx := context.Background()
	a, _ := memprovider.New()
	b, _ := a.NewHandle()
	gotA, _ := a.AcquireLock(ctx, "eval:orders:daily", 0)
	gotB, _ := b.AcquireLock(ctx, "eval:orders:daily", 0)
	fmt.Println(gotA, gotB, b.ReleaseLock(ctx, "eval:orders:daily") != nil)
	// Output: true false true
}
