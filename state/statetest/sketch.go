package statetest

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/pipestate/pipestate/state"
)

// Sizes of the sketch accuracy test.
const (
	SketchEvents  = 1500 // distinct events merged into one sketch
	SketchWriters = 4    // goroutines merging them, over two store instances
	SketchBatch   = 50   // updates per MergeMany, where the store has it
)

// RunSketch runs the sketch tests: h.Sketch must be set. RunStore calls it for
// such harnesses; a backend whose main harness uses another monoid runs it on a
// store of the sketch's monoid.
func RunSketch[V any](t *testing.T, h Harness[V]) {
	h.check(t)
	if h.Sketch == nil || h.Sketch.Item == nil || h.Sketch.Estimate == nil || h.Sketch.StdErr <= 0 {
		t.Fatal("statetest: RunSketch needs Harness.Sketch with Item, Estimate and StdErr")
	}
	t.Run("sketch accuracy", func(t *testing.T) { testSketchAccuracy(t, &h) })
}

// testSketchAccuracy merges SketchEvents distinct events (fixed IDs) into one key
// the way a pipeline does: SketchWriters goroutines over two instances, each event
// by MergeUpdate, or by MergeUpdateOnce with its ID (a tenth of those delivered
// twice, the second not applied) when the store is a OnceStore, or in MergeMany
// batches when it is a BatchStore. The value must estimate SketchEvents within 3
// standard errors (Sketch.StdErr) and equal the union of the events' deltas: no
// merge lost, none changed.
func testSketchAccuracy[V any](t *testing.T, h *Harness[V]) {
	stores := []state.Store[V]{h.open(t), h.open(t)}
	k := state.Key{Entity: "distinct visitors", Bucket: 1}
	id := func(i int) string { return fmt.Sprintf("sketch-event-%04d", i) }
	var wg sync.WaitGroup
	errs := make(chan error, SketchWriters)
	for w := range SketchWriters {
		wg.Go(func() {
			if err := sketchWriter(t, stores[w%len(stores)], k, h.Sketch.Item, id, w); err != nil {
				errs <- fmt.Errorf("writer %d: %w", w, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, found := mustGet(t, stores[0], k)
	if !found {
		t.Fatalf("Get(%v): not found after %d merges", k, SketchEvents)
	}
	est, err := h.Sketch.Estimate(got)
	if err != nil {
		t.Fatalf("Estimate of the stored sketch: %v", err)
	}
	bound := 3 * h.Sketch.StdErr * SketchEvents
	t.Logf("%d distinct events estimated as %.0f (bound ± %.0f)", SketchEvents, est, bound)
	if math.Abs(est-SketchEvents) > bound {
		t.Errorf("the stored sketch estimates %.0f distinct events, want %d ± %.0f (3 standard errors of %.2f%%)",
			est, SketchEvents, bound, 100*h.Sketch.StdErr)
	}
	want := h.Monoid.Identity()
	for i := range SketchEvents {
		want = h.Monoid.Combine(want, h.Sketch.Item(id(i)))
	}
	if !h.Equal(got, want) {
		wantEst, _ := h.Sketch.Estimate(want)
		t.Errorf("the stored sketch (estimate %.0f) is not the union of the %d events' deltas (estimate %.0f): merges lost or changed", est, SketchEvents, wantEst)
	}
}

// sketchWriter merges the events i ≡ w (mod SketchWriters) into k through s,
// each by the path its index picks, retrying what lost too many races.
func sketchWriter[V any](t *testing.T, s state.Store[V], k state.Key, item func(string) V, id func(int) string, w int) error {
	ctx := t.Context()
	once, isOnce := s.(state.OnceStore[V])
	batcher, isBatch := s.(state.BatchStore[V])
	var batch []state.Update[V]
	flush := func() error {
		for len(batch) > 0 {
			err := batcher.MergeMany(ctx, batch)
			var me *state.MergeError
			if err == nil || !errors.As(err, &me) || len(me.Errs) != len(batch) {
				return err
			}
			var again []state.Update[V]
			for i, e := range me.Errs {
				switch {
				case errors.Is(e, state.ErrContention):
					again = append(again, batch[i])
				case e != nil:
					return fmt.Errorf("MergeMany update %d: %w", i, e)
				}
			}
			batch = again
		}
		return nil
	}
	for i := w; i < SketchEvents; i += SketchWriters {
		d := item(id(i))
		switch path := i / SketchWriters % 3; {
		case path == 1 && isOnce:
			deliveries := 1
			if i%10 == 1 {
				deliveries = 2
			}
			for n := range deliveries {
				applied, err := once.MergeUpdateOnce(ctx, id(i), k, d, 0)
				for errors.Is(err, state.ErrContention) {
					applied, err = once.MergeUpdateOnce(ctx, id(i), k, d, 0)
				}
				if err != nil {
					return fmt.Errorf("MergeUpdateOnce(%q): %w", id(i), err)
				}
				if applied != (n == 0) {
					return fmt.Errorf("delivery %d of %q: applied = %v", n+1, id(i), applied)
				}
			}
		case path == 2 && isBatch:
			if batch = append(batch, state.Update[V]{Key: k, Delta: d}); len(batch) == SketchBatch {
				if err := flush(); err != nil {
					return err
				}
			}
		default:
			if err := mergeRetrying(ctx, s, k, d); err != nil {
				return fmt.Errorf("MergeUpdate of %q: %w", id(i), err)
			}
		}
	}
	if isBatch {
		return flush()
	}
	return nil
}
