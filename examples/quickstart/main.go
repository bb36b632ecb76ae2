// Command quickstart walks through pipestate's Provider on an embedded backend:
// register a pipeline, record traits, move a run through its states with
// compare-and-swap under a lock, and page the event log with a cursor.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/memory"
	"github.com/pipestate/pipestate/types"
)

func main() {
	p, err := memory.New(memory.NewStore())
	if err != nil {
		log.Fatal(err)
	}
	if err := run(context.Background(), os.Stdout, p); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, w io.Writer, p provider.Provider) error {
	cfg := types.PipelineConfig{ID: "orders", Traits: map[string]types.TraitConfig{
		"freshness": {Required: true}, "row-count": {Required: true}}}
	if err := p.RegisterPipeline(ctx, cfg); err != nil {
		return err
	}
	fmt.Fprintln(w, "registered pipeline orders")

	for _, tt := range []string{"freshness", "row-count"} {
		tr := types.TraitEvaluation{TraitType: tt, Status: types.TraitPass, EvaluatedAt: time.Now()}
		if err := p.PutTrait(ctx, "orders", tr, time.Hour); err != nil {
			return err
		}
	}
	traits, err := p.GetTraits(ctx, "orders")
	if err != nil {
		return err
	}
	for _, t := range traits {
		fmt.Fprintf(w, "trait %s: %s\n", t.TraitType, t.Status)
	}

	lockKey := "eval:orders:daily"
	if ok, err := p.AcquireLock(ctx, lockKey, time.Minute); err != nil || !ok {
		return fmt.Errorf("lock %s: held=%v err=%v", lockKey, !ok, err)
	}
	fmt.Fprintln(w, "took lock", lockKey)

	run := types.RunState{RunID: "orders-2026-11-21", PipelineID: "orders", Status: types.RunPending}
	if err := p.PutRunState(ctx, run); err != nil {
		return err
	}
	for version, next := range []types.RunStatus{types.RunRunning, types.RunCompleted} {
		run.Status = next
		ok, err := p.CompareAndSwapRunState(ctx, run.RunID, version, run)
		if err != nil || !ok {
			return fmt.Errorf("cas to %s: swapped=%v err=%v", next, ok, err)
		}
		ev := types.Event{Kind: "RUN_STATE_CHANGED", PipelineID: "orders", RunID: run.RunID, Status: string(next)}
		if err := p.AppendEvent(ctx, ev); err != nil {
			return err
		}
		fmt.Fprintf(w, "run %s -> %s (version %d)\n", run.RunID, next, version+1)
	}
	// A writer still holding version 0 loses.
	if ok, _ := p.CompareAndSwapRunState(ctx, run.RunID, 0, run); !ok {
		fmt.Fprintln(w, "stale compare-and-swap from version 0 rejected")
	}

	if err := p.ReleaseLock(ctx, lockKey); err != nil {
		return err
	}
	fmt.Fprintln(w, "released lock", lockKey)

	cursor := ""
	for {
		page, err := p.ReadEventsSince(ctx, "orders", cursor, 1)
		if err != nil {
			return err
		}
		if len(page) == 0 {
			break
		}
		fmt.Fprintf(w, "event %s %s\n", page[0].Event.Kind, page[0].Event.Status)
		cursor = page[0].StreamID
	}
	return nil
}
