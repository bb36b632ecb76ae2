package provider_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/memprovider"
	"github.com/pipestate/pipestate/types"
)

// KeepAlive renews a lease while work runs under its context, and cancels that
// context the moment the lease is lost; stop ends the renewals and releases it.
func ExampleKeepAlive() {
	ctx := context.Background()
	p, err := memprovider.New() // or provider/redisprovider, provider/ddbprovider: each is a provider.Leaser
	if err != nil {
		log.Fatal(err)
	}
	lease, err := p.AcquireLease(ctx, "ingest/orders", time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	work, stop, err := provider.KeepAlive(ctx, p, *lease, time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	// Do the work under work: every call made with it stops when the lease is lost.
	fmt.Println("working:", work.Err() == nil)
	fmt.Println("stop:", stop()) // nil: held to the end, and released
	next, err := p.AcquireLease(ctx, "ingest/orders", time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("next fence is higher:", next.Fence > lease.Fence)
	// Output:
	// working: true
	// stop: <nil>
	// next fence is higher: true
}

// A holder writes through the fenced view of its lease; once a newer lease of
// the same key has written the run, the old holder's late write is refused by
// the storage, with nothing written.
func ExampleFenced() {
	ctx := context.Background()
	p, err := memprovider.New()
	if err != nil {
		log.Fatal(err)
	}
	run := types.RunState{RunID: "orders-2026-11-21", PipelineID: "orders", Status: types.RunRunning}

	old, _ := p.AcquireLease(ctx, "ingest/orders", time.Minute)
	oldView, err := provider.Fenced(p, *old)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("old holder writes:", oldView.PutRunState(ctx, run))

	// The old holder pauses; its lease goes (here: released) and another takes it.
	_ = p.ReleaseLease(ctx, *old)
	next, _ := p.AcquireLease(ctx, "ingest/orders", time.Minute)
	nextView, _ := provider.Fenced(p, *next)
	run.Status = types.RunCompleted
	fmt.Println("new holder writes:", nextView.PutRunState(ctx, run))

	run.Status = types.RunFailed
	err = oldView.PutRunState(ctx, run) // the old holder wakes up
	fmt.Println("old holder refused:", errors.Is(err, provider.ErrFenced))
	got, _ := p.GetRunState(ctx, run.RunID)
	fmt.Println("stored:", got.Status)
	// Output:
	// old holder writes: <nil>
	// new holder writes: <nil>
	// old holder refused: true
	// stored: COMPLETED
}

// CreateRunState stores a run only if its RunID is new: of two schedulers that
// start the same run, one creates it. Metadata is free-form JSON
// (map[string]any): numbers come back as float64 from the JSON backends.
func ExampleRunCreator() {
	ctx := context.Background()
	p, err := memprovider.New()
	if err != nil {
		log.Fatal(err)
	}
	var rc provider.RunCreator = p // every built-in backend is one
	run := types.RunState{RunID: "orders-2026-11-21", PipelineID: "orders", Status: types.RunPending,
		Metadata: map[string]any{"host": "worker-7"}}
	first, err := rc.CreateRunState(ctx, run)
	if err != nil {
		log.Fatal(err)
	}
	second, err := rc.CreateRunState(ctx, run)
	if err != nil {
		log.Fatal(err)
	}
	got, _ := p.GetRunState(ctx, run.RunID)
	fmt.Println(first, second, got.Version, got.Metadata["host"])
	// Output: true false 0 worker-7
}

// FollowEvents yields a pipeline's events after a cursor, then each new one as
// it is committed, until ctx ends. Each record is the event (rec.Event) and its
// cursor (rec.StreamID): save the cursor to resume after it.
func ExampleEventFollower() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := memprovider.New()
	if err != nil {
		log.Fatal(err)
	}
	for _, status := range []string{"RUNNING", "COMPLETED"} {
		ev := types.Event{PipelineID: "orders", Kind: "RUN_STATE_CHANGED", RunID: "orders-2026-11-21", Status: status}
		if err := p.AppendEvent(ctx, ev); err != nil {
			log.Fatal(err)
		}
	}
	var f provider.EventFollower = p
	seen := 0
	for rec, err := range f.FollowEvents(ctx, "orders", "") { // "": from the oldest kept
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(rec.Event.Kind, rec.Event.Status, rec.StreamID != "")
		if seen++; seen == 2 {
			break // or cancel ctx; a real follower keeps going
		}
	}
	// Output:
	// RUN_STATE_CHANGED RUNNING true
	// RUN_STATE_CHANGED COMPLETED true
}

// WatchCascadeMarkers yields every cascade marker write of every pipeline, in
// commit order: a downstream scheduler evaluates the pipeline each one names.
func ExampleMarkerWatcher() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := memprovider.New()
	if err != nil {
		log.Fatal(err)
	}
	if err := p.WriteCascadeMarker(ctx, "orders-daily", "", "2026-11-21", "orders-raw"); err != nil {
		log.Fatal(err)
	}
	var w provider.MarkerWatcher = p
	for rec, err := range w.WatchCascadeMarkers(ctx, "") {
		if err != nil {
			log.Fatal(err)
		}
		m := rec.Marker
		fmt.Printf("evaluate %s for %s (upstream %s done)\n", m.PipelineID, m.Date, m.Source)
		break // a real watcher keeps going, and saves rec.Cursor to resume
	}
	// Output: evaluate orders-daily for 2026-11-21 (upstream orders-raw done)
}
