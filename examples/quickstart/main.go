// Command quickstart walks through pipestate on an embedded Redis (miniredis), or a
// real Redis or DynamoDB with -redis / -dynamodb: a pipeline, traits, readiness, a
// lock, a run moved by compare-and-swap, the run log, the event log paged by cursor,
// and clicks and unique users counted exactly once though delivered twice. Each
// call waits at most -timeout (default 5s) for a server that does not answer.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/types"

	"github.com/pipestate/pipestate/examples/internal/exbackend"
)

func main() {
	if err := mainArgs(context.Background(), os.Args[1:], os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// mainArgs runs the quickstart with the command-line arguments args, and on a
// server says at the end what it wrote and removes it (exbackend.Config.Begin).
func mainArgs(ctx context.Context, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("quickstart", flag.ContinueOnError)
	var cfg exbackend.Config
	cfg.Register(fs, "quickstart", false)
	if err := fs.Parse(args); err != nil {
		return err
	}
	end := cfg.Begin(fs)
	b, err := open(ctx, cfg)
	if err == nil {
		err = run(ctx, w, b)
		b.close()
	}
	return errors.Join(err, end(ctx, w))
}

func run(ctx context.Context, w io.Writer, b *backend) error {
	p, now, lock := b.provider, time.Now(), "eval:orders:daily"
	run := types.RunState{RunID: "orders-2026-11-21", PipelineID: "orders", Status: types.RunPending}
	// readRun prints the run as the store has it now, with arrow before the status.
	readRun := func(arrow string) (string, error) {
		got, err := p.GetRunState(ctx, run.RunID)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("run %s%s (version %d)", arrow, got.Status, got.Version), nil
	}
	advance := func(version int, to types.RunStatus) (string, error) {
		run.Status = to
		if ok, err := p.CompareAndSwapRunState(ctx, run.RunID, version, run); err != nil || !ok {
			return "", fmt.Errorf("swapped=%v: %w", ok, err)
		}
		if err := p.AppendEvent(ctx, types.Event{Kind: "RUN_STATE_CHANGED", PipelineID: "orders", RunID: run.RunID, Status: string(to)}); err != nil {
			return "", err
		}
		return readRun("-> ")
	}
	// Each step writes, then prints what it reads back from the store.
	steps := []struct {
		what string
		do   func() (string, error)
	}{
		{"register", func() (string, error) {
			if err := p.RegisterPipeline(ctx, types.PipelineConfig{ID: "orders"}); err != nil {
				return "", err
			}
			cfg, err := p.GetPipeline(ctx, "orders")
			if err != nil {
				return "", err
			}
			return "registered pipeline " + cfg.ID, nil
		}},
		{"trait", func() (string, error) {
			if err := p.PutTrait(ctx, "orders", types.TraitEvaluation{TraitType: "freshness", Status: types.TraitPass, EvaluatedAt: now}, time.Hour); err != nil {
				return "", err
			}
			tr, err := p.GetTrait(ctx, "orders", "freshness")
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("trait %s: %s", tr.TraitType, tr.Status), nil
		}},
		{"readiness", func() (string, error) {
			if err := p.PutReadiness(ctx, types.ReadinessResult{PipelineID: "orders", Status: types.Ready, EvaluatedAt: now}); err != nil {
				return "", err
			}
			r, err := p.GetReadiness(ctx, "orders")
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("readiness: %s", r.Status), nil
		}},
		{"lock", func() (string, error) {
			return "took lock " + lock, acquired(p.AcquireLock(ctx, lock, time.Minute))
		}},
		{"run", func() (string, error) {
			if err := p.PutRunState(ctx, run); err != nil {
				return "", err
			}
			return readRun("")
		}},
		{"trigger", func() (string, error) { return advance(0, types.RunTriggering) }},
		{"start", func() (string, error) { return advance(1, types.RunRunning) }},
		{"complete", func() (string, error) { return advance(2, types.RunCompleted) }},
		{"run log", func() (string, error) {
			err := p.PutRunLog(ctx, types.RunLogEntry{PipelineID: "orders", Date: "2026-11-21", Status: types.RunCompleted, RunID: run.RunID, AttemptNumber: 1, StartedAt: now})
			if err != nil {
				return "", err
			}
			e, err := p.GetRunLog(ctx, "orders", "2026-11-21", "")
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("run log %s: %s", e.Date, e.Status), nil
		}},
		{"unlock", func() (string, error) { return "released lock " + lock, p.ReleaseLock(ctx, lock) }},
	}
	for _, s := range steps {
		said, err := s.do()
		if err != nil {
			return fmt.Errorf("%s: %w", s.what, err)
		}
		fmt.Fprintln(w, said)
	}
	for cursor, more := "", true; more; { // page the event log, two events at a time
		page, err := p.ReadEventsSince(ctx, "orders", cursor, 2)
		if err != nil {
			return err
		}
		more = len(page) > 0
		for _, r := range page {
			fmt.Fprintf(w, "event %s %s\n", r.Event.Kind, r.Event.Status)
			cursor = r.StreamID
		}
	}
	key := state.Key{Entity: "orders-clicks"}
	for i, user := range []string{"alice", "bob", "carol", "alice", "bob", "carol"} {
		click := fmt.Sprintf("click-%d", i%3) // every click is delivered twice
		if _, err := b.clicks.MergeUpdateOnce(ctx, click, key, 1, 0); err != nil {
			return err
		}
		if _, err := b.users.MergeUpdateOnce(ctx, click, key, b.hll.Delta(user), 0); err != nil {
			return err
		}
	}
	clicks, unique, err := b.counts(ctx, key)
	fmt.Fprintf(w, "%d clicks from about %d unique users (6 deliveries)\n", clicks, unique)
	return err
}
