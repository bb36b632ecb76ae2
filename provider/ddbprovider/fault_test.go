package ddbprovider_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"

	"github.com/pipestate/pipestate/internal/testkit/faults"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// TestFaults runs a concurrent workload of two providers through a transport that
// throttles, fails and drops 15% of requests (faults.Transport.SetRandom), with the SDK allowed only one retry so
// that errors reach the provider and the caller. Calls must succeed or fail cleanly;
// no lease fence may be handed out twice; afterwards every list copy must equal its
// truth item and the event log must be gapless and hold every event whose append
// succeeded, exactly once.
func TestFaults(t *testing.T) {
	ft := faults.NewTransport()
	e := faultEnv(t, ft, 2)
	ft.SetRandom(0.15)
	insts := []provider.Provider{open(t), open(t)}
	ctx := context.Background()

	const workers, opsPerWorker, runsN = 8, 25, 6
	pipelines := []string{"pa", "pb"}
	var (
		mu       sync.Mutex
		appended = map[string]bool{} // messages whose AppendEvent succeeded
		fences   = map[int64]bool{}  // fences of leases acquired
		okCalls  atomic.Int64
		errCalls atomic.Int64
		wg       sync.WaitGroup
	)
	note := func(err error) {
		switch {
		case err == nil:
			okCalls.Add(1)
		case errors.Is(err, provider.ErrInvalidArgument):
			t.Errorf("faults must not look like bad input: %v", err)
		default:
			errCalls.Add(1)
			var opErr *smithy.OperationError
			if !errors.As(err, &opErr) && !errors.Is(err, provider.ErrContention) {
				t.Errorf("error does not wrap the SDK's error: %v", err)
			}
		}
	}
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := insts[w%2]
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := range opsPerWorker {
				run := fmt.Sprintf("run-%d", rng.IntN(runsN))
				pipe := pipelines[rng.IntN(runsN)%2]
				switch op := rng.IntN(7); op {
				case 0: // re-put a run, sometimes with a new CreatedAt
					r := types.RunState{RunID: run, PipelineID: "p-" + run, Status: types.RunPending,
						CreatedAt: e.clock.Now().Add(time.Duration(rng.IntN(3)) * time.Second), Version: rng.IntN(3)}
					note(p.PutRunState(ctx, r))
				case 1: // read-modify-CAS
					cur, err := p.GetRunState(ctx, run)
					note(err)
					if err == nil && cur != nil {
						next := *cur
						next.Status = types.RunRunning
						next.Metadata = map[string]any{"by": w, "i": i}
						if rng.IntN(2) == 0 {
							next.CreatedAt = time.Time{}
						}
						_, err := p.CompareAndSwapRunState(ctx, run, cur.Version, next)
						note(err)
					}
				case 2: // rerun that moves between pipelines
					note(p.PutRerun(ctx, types.RerunRecord{RerunID: "rr-" + run, PipelineID: pipe, OriginalDate: "2026-01-01",
						Status: types.RequestPending, RequestedAt: e.clock.Now().Add(time.Duration(rng.IntN(3)) * time.Second)}))
				case 3: // cascade marker rewrite
					e.clock.Advance(time.Millisecond)
					note(p.WriteCascadeMarker(ctx, pipe, "", "2026-01-0"+strconv.Itoa(1+rng.IntN(3)), "up"))
				case 4: // a lease, with a fence that must never be handed out twice
					lease, err := p.(provider.Leaser).AcquireLease(ctx, "fault-lease", time.Minute)
					if errors.Is(err, provider.ErrLockHeld) {
						break
					}
					note(err)
					if err != nil {
						break
					}
					mu.Lock()
					if fences[lease.Fence] {
						t.Errorf("fence %d handed out twice", lease.Fence)
					}
					fences[lease.Fence] = true
					mu.Unlock()
					if _, err := p.(provider.Leaser).RenewLease(ctx, *lease, time.Minute); err != nil && !errors.Is(err, provider.ErrLockNotHeld) {
						note(err)
					}
					if err := p.(provider.Leaser).ReleaseLease(ctx, *lease); err != nil && !errors.Is(err, provider.ErrLockNotHeld) {
						note(err)
					}
				default: // events
					msg := fmt.Sprintf("w%d-%d", w, i)
					err := p.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: pipe, Message: msg})
					note(err)
					if err == nil {
						mu.Lock()
						appended[pipe+"/"+msg] = true
						mu.Unlock()
					}
				}
			}
		}()
	}
	wg.Wait()
	ft.SetRandom(0)
	if ft.Dropped() == 0 || ft.Rejected() == 0 {
		t.Errorf("faults injected: %d replies dropped, %d requests rejected; want both", ft.Dropped(), ft.Rejected())
	}
	t.Logf("calls: %d ok, %d failed; %d replies dropped, %d requests rejected",
		okCalls.Load(), errCalls.Load(), ft.Dropped(), ft.Rejected())
	if okCalls.Load() == 0 || errCalls.Load() == 0 {
		t.Errorf("want both successes and failures under faults")
	}

	p := open(t) // the client's faults are off now
	// Runs: each run is listed exactly once, in its pipeline, equal to its truth.
	for i := range runsN {
		run := fmt.Sprintf("run-%d", i)
		truth, err := p.GetRunState(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		list, err := p.ListRuns(ctx, "p-"+run, 100)
		if err != nil {
			t.Fatal(err)
		}
		if truth == nil {
			if len(list) != 0 {
				t.Errorf("%s: no truth item but listed %d times", run, len(list))
			}
			continue
		}
		if len(list) != 1 {
			t.Errorf("%s: listed %d times, want once", run, len(list))
			continue
		}
		if d := cmp.Diff(*truth, list[0]); d != "" {
			t.Errorf("%s: list copy differs from truth (-truth +list):\n%s", run, d)
		}
	}
	// Reruns: listed once, under the pipeline of the record.
	listed := map[string]int{}
	for _, pipe := range pipelines {
		rs, err := p.ListReruns(ctx, pipe, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			listed[r.RerunID]++
			truth, err := p.GetRerun(ctx, r.RerunID)
			if err != nil || truth == nil {
				t.Fatalf("rerun %s listed without a record: %v", r.RerunID, err)
			}
			if d := cmp.Diff(*truth, r); d != "" {
				t.Errorf("rerun %s: list copy differs from record (-record +list):\n%s", r.RerunID, d)
			}
		}
	}
	for id, n := range listed {
		if n != 1 {
			t.Errorf("rerun %s listed %d times", id, n)
		}
	}
	for _, pipe := range pipelines {
		// Markers: one list entry per (date, schedule).
		ms, err := p.ListCascadeMarkers(ctx, pipe, 100)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, m := range ms {
			if seen[m.Date] {
				t.Errorf("%s: marker %s listed twice", pipe, m.Date)
			}
			seen[m.Date] = true
		}
		// Events: numbers 1..n without gaps, each message once, every success present.
		var cursor string
		msgs := map[string]bool{}
		for want := 1; ; {
			page, err := p.ReadEventsSince(ctx, pipe, cursor, 7)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			for _, rec := range page {
				if rec.StreamID != strconv.Itoa(want) {
					t.Fatalf("%s: event number %s, want %d (a gap)", pipe, rec.StreamID, want)
				}
				want++
				if msgs[rec.Event.Message] {
					t.Errorf("%s: event %s appended twice", pipe, rec.Event.Message)
				}
				msgs[rec.Event.Message] = true
				cursor = rec.StreamID
			}
		}
		mu.Lock()
		for k := range appended {
			if pipeOf, msg, _ := strings.Cut(k, "/"); pipeOf == pipe && !msgs[msg] {
				t.Errorf("%s: event %s was appended successfully but is missing", pipe, msg)
			}
		}
		mu.Unlock()
	}
}
