// Command custombackend demonstrates a third-party pipestate backend: package
// sqlite (./sqlite), a provider.Provider, provider.Leaser, provider.CascadeReader
// and the optional provider.RunCreator, provider.EventFollower and
// provider.MarkerWatcher over SQLite (modernc.org/sqlite, pure Go, no cgo) that
// passes the providertest conformance suite in its own test. README.md says how to
// write one for another database.
//
// This main opens one database file twice, as two orchestrator processes would,
// and shows that locks, compare-and-swap, event cursors and leases hold across them:
//
//	go run ./examples/custombackend            # a fresh temporary file
//	go run ./examples/custombackend -db my.db  # a file that persists
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/pipestate/pipestate/examples/custombackend/sqlite"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

func main() {
	dbPath := flag.String("db", "", "SQLite database file (default: a new temporary file)")
	flag.Parse()
	if *dbPath == "" {
		dir, err := os.MkdirTemp("", "custombackend")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(dir)
		*dbPath = filepath.Join(dir, "pipestate.db")
	}
	if err := run(context.Background(), os.Stdout, *dbPath); err != nil {
		log.Fatal(err)
	}
}

// run is the demo. Two Providers on one file stand for two processes.
func run(ctx context.Context, w io.Writer, dbPath string) error {
	a, err := sqlite.New(ctx, dbPath, sqlite.WithOwner("instance-a"))
	if err != nil {
		return err
	}
	defer a.Stop(ctx)
	b, err := sqlite.New(ctx, dbPath, sqlite.WithOwner("instance-b"))
	if err != nil {
		return err
	}
	defer b.Stop(ctx)
	fmt.Fprintf(w, "opened %s twice: instances A and B share it\n", filepath.Base(dbPath))

	// A pipeline registered through A is visible through B.
	if err := a.RegisterPipeline(ctx, types.PipelineConfig{ID: "orders", Tier: 1}); err != nil {
		return err
	}
	pipelines, err := b.ListPipelines(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "A registered a pipeline; B lists %d: %s\n", len(pipelines), pipelines[0].ID)

	// A lock is exclusive across instances and released only by its holder.
	const lockKey = "eval:orders:daily"
	gotA, err := a.AcquireLock(ctx, lockKey, time.Minute)
	if err != nil {
		return err
	}
	gotB, err := b.AcquireLock(ctx, lockKey, time.Minute)
	if err != nil {
		return err
	}
	errB := b.ReleaseLock(ctx, lockKey)
	fmt.Fprintf(w, "lock %s: A acquires=%v, B acquires=%v, B release: %v\n", lockKey, gotA, gotB, errB)
	if err := a.ReleaseLock(ctx, lockKey); err != nil {
		return err
	}

	// Compare-and-swap: A and B race to move the run from version 0; one wins.
	run := types.RunState{RunID: "orders-2026-11-21", PipelineID: "orders", Status: types.RunPending}
	if err := a.PutRunState(ctx, run); err != nil {
		return err
	}
	wins, err := race(ctx, run, a, b)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "run %s: A and B both CAS from version 0, %d wins\n", run.RunID, wins)
	for version, status := range []types.RunStatus{types.RunRunning, types.RunCompleted} {
		run.Status = status
		if _, err := b.CompareAndSwapRunState(ctx, run.RunID, version+1, run); err != nil {
			return err
		}
		if err := b.AppendEvent(ctx, types.Event{Kind: "RUN_STATE_CHANGED", PipelineID: "orders",
			RunID: run.RunID, Status: string(status)}); err != nil {
			return err
		}
	}
	got, err := a.GetRunState(ctx, run.RunID)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "run %s: A reads %s at version %d\n", got.RunID, got.Status, got.Version)

	// Events: page through the log with the cursor, one event per page.
	cursor := ""
	for page := 1; ; page++ {
		recs, err := a.ReadEventsSince(ctx, "orders", cursor, 1)
		if err != nil {
			return err
		}
		if len(recs) == 0 {
			break
		}
		cursor = recs[0].StreamID
		fmt.Fprintf(w, "events page %d: %s %s\n", page, recs[0].Event.Kind, recs[0].Event.Status)
	}

	// Leases carry a fencing token that keeps growing across holders.
	lease, err := a.AcquireLease(ctx, "orders/writer", time.Minute)
	if err != nil {
		return err
	}
	_, errHeld := b.AcquireLease(ctx, "orders/writer", time.Minute)
	if err := a.ReleaseLease(ctx, *lease); err != nil {
		return err
	}
	next, err := b.AcquireLease(ctx, "orders/writer", time.Minute)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "lease orders/writer: A fence=%d; B while A holds it: held=%v; B after release: fence=%d\n",
		lease.Fence, errors.Is(errHeld, provider.ErrLockHeld), next.Fence)

	return nil
}

// race has every provider try CompareAndSwapRunState(version 0 -> TRIGGERING) at
// once and returns how many succeeded.
func race(ctx context.Context, run types.RunState, ps ...provider.Provider) (int, error) {
	var wg sync.WaitGroup
	won := make([]bool, len(ps))
	errs := make([]error, len(ps))
	run.Status = types.RunTriggering
	for i, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			won[i], errs[i] = p.CompareAndSwapRunState(ctx, run.RunID, 0, run)
		}()
	}
	wg.Wait()
	wins := 0
	for _, w := range won {
		if w {
			wins++
		}
	}
	return wins, errors.Join(errs...)
}
