package state_test

// Tests from an adversarial review of the Coalescer. Those whose comment names a
// fix failed on the code before it; the stress tests held, and stay as guards.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/memstate"
)

// blockStore blocks every MergeUpdate until release is closed (ignoring ctx, as a
// hung network call without a client timeout does).
type blockStore struct {
	state.Store[int64]
	entered chan struct{}
	once    sync.Once
	release chan struct{}
}

func (b *blockStore) MergeUpdate(ctx context.Context, k state.Key, d int64, ttl time.Duration) error {
	b.once.Do(func() { close(b.entered) })
	<-b.release
	return errors.New("store hung")
}

// TestCoalescerCloseHonoursCtx: Close(ctx) waits for a background flush in flight
// no longer than ctx allows, even when the store write hangs (it once waited on
// the background loop unconditionally, past the caller's shutdown deadline).
func TestCoalescerCloseHonoursCtx(t *testing.T) {
	mem, _ := memstate.New[int64](monoid.Sum[int64]{})
	st := &blockStore{Store: mem, entered: make(chan struct{}), release: make(chan struct{})}
	defer close(st.release)
	c, err := state.NewCoalescer[int64](st, monoid.Sum[int64]{}, state.WithFlushInterval(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Add(t.Context(), state.Key{Entity: "k"}, 1); err != nil {
		t.Fatal(err)
	}
	<-st.entered // the background flush is in flight
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Close(ctx) }()
	select {
	case err := <-done:
		t.Logf("Close returned %v", err)
	case <-time.After(2 * time.Second):
		t.Fatal("Close(ctx with a 100ms deadline) still blocked after 2s: it ignores ctx while a background flush is in flight")
	}
}

// TestCoalescerOutageRefusesWithoutFlushing: while the store is down and the
// buffer is full, a refused Add does not send the whole buffer again (it once
// ran a flush of MaxKeys failing writes per refused Add).
func TestCoalescerOutageRefusesWithoutFlushing(t *testing.T) {
	const maxKeys, adds = 200, 50
	st := newSpy[int64](t, monoid.Sum[int64]{})
	c := newCoalescer[int64](t, st, monoid.Sum[int64]{}, state.WithFlushInterval(0), state.WithMaxKeys(maxKeys))
	for i := range maxKeys {
		if err := c.Add(t.Context(), state.Key{Entity: fmt.Sprint("k", i)}, 1); err != nil {
			t.Fatal(err)
		}
	}
	st.setFail(func(state.Key) error { return errors.New("down") })
	refused := 0
	for i := range adds {
		if err := c.Add(t.Context(), state.Key{Entity: fmt.Sprint("new", i)}, 1); errors.Is(err, state.ErrBufferFull) {
			refused++
		}
	}
	calls := st.merges.Load()
	t.Logf("%d refused Adds made %d store writes (%.0f per refused Add)", refused, calls, float64(calls)/float64(refused))
	if calls > int64(2*maxKeys) {
		t.Errorf("outage amplification: %d refused Adds of new keys made %d failing store writes", refused, calls)
	}
	st.setFail(nil)
}

// panicky is Sum, except that Combine(1000, 1) panics (a caller's monoid with a
// bug); only the restore of a failed flush makes that call in this test.
type panicky struct{ monoid.Sum[int64] }

func (panicky) Combine(a, b int64) int64 {
	if a == 1000 && b == 1 {
		panic("monoid bug")
	}
	return a + b
}
func (panicky) Kind() monoid.Kind { return monoid.KindCustom }

// TestCoalescerPanicInAddFlushReleasesToken: a panic inside the flush an Add runs
// (here the caller's monoid, in restore) releases the flush token, so a caller
// that recovers (an HTTP server does) can still Flush and Close (the token once
// stayed held, blocking them and the background loop forever).
func TestCoalescerPanicInAddFlushReleasesToken(t *testing.T) {
	st := newSpy[int64](t, monoid.Sum[int64]{})
	c, err := state.NewCoalescer[int64](st, panicky{}, state.WithFlushInterval(0), state.WithMaxKeys(1))
	if err != nil {
		t.Fatal(err)
	}
	k := state.Key{Entity: "k"}
	if err := c.Add(t.Context(), k, 1000); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	st.setFail(func(state.Key) error {
		once.Do(func() { _ = c.Add(context.Background(), k, 1) }) // a key in flight: accepted
		return errors.New("down")
	})
	func() {
		defer func() { t.Logf("recovered: %v", recover()) }()
		_ = c.Add(t.Context(), state.Key{Entity: "other"}, 5)
	}()
	st.setFail(nil)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if err := c.Flush(ctx); err != nil {
		t.Errorf("Flush after a recovered panic: %v (the flush token was never released); Pending=%d", err, c.Pending())
	}
}

// TestCoalescerNonCommutativeStress: concurrent writers append their own sequence to
// their own key of a concat monoid, with random store failures, a tiny MaxKeys,
// a fast background flush and concurrent Flushes. A refused Add is retried. At
// the end each key must hold exactly its writer's sequence, in order, and
// Pending must never have exceeded MaxKeys.
func TestCoalescerNonCommutativeStress(t *testing.T) {
	t.Run("store", func(t *testing.T) { advStress(t, false) })
	t.Run("batchstore", func(t *testing.T) { advStress(t, true) })
}

func advStress(t *testing.T, batch bool) {
	const writers, perWriter, keysPer, maxKeys = 6, 1500, 3, 4
	var fails atomic.Int64
	flaky := func() error {
		if rand.IntN(3) == 0 {
			fails.Add(1)
			return errors.New("flaky")
		}
		return nil
	}
	var st state.Store[string]
	var setFail func(bool)
	var mem state.Store[string]
	if batch {
		b := newBatchSpy[string](t, concat{})
		mem = b.spy.Store
		st = b
		setFail = func(on bool) {
			if on {
				b.set(func(state.Update[string]) error { return flaky() }, func([]state.Update[string]) error {
					if rand.IntN(10) == 0 {
						return errors.New("whole batch down")
					}
					return nil
				})
			} else {
				b.set(nil, nil)
			}
		}
	} else {
		sp := newSpy[string](t, concat{})
		mem, st = sp.Store, sp
		setFail = func(on bool) {
			if on {
				sp.setFail(func(state.Key) error { return flaky() })
			} else {
				sp.setFail(nil)
			}
		}
	}
	setFail(true)
	var handled atomic.Int64
	c, err := state.NewCoalescer[string](st, concat{}, state.WithFlushInterval(time.Millisecond),
		state.WithMaxKeys(maxKeys), state.WithFlushConcurrency(2),
		state.WithErrorHandler(func(error) { handled.Add(1) }))
	if err != nil {
		t.Fatal(err)
	}
	var over atomic.Int64
	stop := make(chan struct{})
	var bg sync.WaitGroup
	bg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if p := c.Pending(); p > maxKeys {
				over.Store(int64(p))
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rand.IntN(200))*time.Microsecond)
			_ = c.Flush(ctx)
			cancel()
		}
	})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := 0; i < perWriter; {
				k := state.Key{Entity: fmt.Sprint("w", w, "-", i%keysPer)}
				if rand.IntN(50) == 0 {
					time.Sleep(50 * time.Microsecond)
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rand.IntN(500))*time.Microsecond)
				err := c.Add(ctx, k, fmt.Sprintf("%d,", i))
				cancel()
				switch {
				case err == nil:
					i++
				case errors.Is(err, state.ErrBufferFull), errors.Is(err, context.DeadlineExceeded):
				default:
					t.Errorf("Add: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	bg.Wait()
	setFail(false)
	if err := c.Close(context.Background()); err != nil {
		t.Logf("Close: %v", err)
		if err := c.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if over.Load() > 0 {
		t.Errorf("Pending reached %d > MaxKeys %d", over.Load(), maxKeys)
	}
	if p := c.Pending(); p != 0 {
		t.Errorf("Pending = %d after a clean Flush", p)
	}
	for w := range writers {
		for j := range keysPer {
			got := get[string](t, mem, fmt.Sprint("w", w, "-", j))
			var want strings.Builder
			for i := j; i < perWriter; i += keysPer {
				fmt.Fprintf(&want, "%d,", i)
			}
			if got != want.String() {
				t.Errorf("w%d-%d: got %q\nwant %q", w, j, got, want.String())
			}
		}
	}
	t.Logf("failures injected %d, handler calls %d, stats %+v", fails.Load(), handled.Load(), c.Stats())
}

// TestCoalescerCloseDuringAdds: Close while Adds wait on a full buffer and a slow,
// flaky store: every call returns, every accepted delta is written exactly
// once, and no goroutine is left behind.
func TestCoalescerCloseDuringAdds(t *testing.T) {
	before := runtime.NumGoroutine()
	for round := range 20 {
		st := newSpy[int64](t, monoid.Sum[int64]{})
		st.setFail(func(state.Key) error {
			time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
			if rand.IntN(4) == 0 {
				return errors.New("flaky")
			}
			return nil
		})
		c, err := state.NewCoalescer[int64](st, monoid.Sum[int64]{}, state.WithFlushInterval(time.Millisecond), state.WithMaxKeys(3))
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		accepted := map[string]int64{}
		var wg sync.WaitGroup
		for g := range 6 {
			wg.Go(func() {
				for i := range 300 {
					e := fmt.Sprint("k", (g+i)%5)
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rand.IntN(2000))*time.Microsecond)
					err := c.Add(ctx, state.Key{Entity: e}, 1)
					cancel()
					if err == nil {
						mu.Lock()
						accepted[e]++
						mu.Unlock()
					} else if errors.Is(err, state.ErrClosed) {
						return
					}
				}
			})
		}
		time.Sleep(time.Duration(rand.IntN(5)) * time.Millisecond)
		cerr := make(chan error, 1)
		go func() { cerr <- c.Close(context.Background()) }()
		wg.Wait()
		select {
		case <-cerr:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: Close hung", round)
		}
		st.setFail(nil)
		if err := c.Flush(context.Background()); err != nil {
			t.Fatalf("round %d: Flush after Close: %v", round, err)
		}
		if p := c.Pending(); p != 0 {
			t.Fatalf("round %d: Pending %d", round, p)
		}
		for e, n := range accepted {
			if got := get[int64](t, st.Store, e); got != n {
				t.Errorf("round %d: %s = %d, accepted %d", round, e, got, n)
			}
		}
	}
	time.Sleep(50 * time.Millisecond)
	if after := runtime.NumGoroutine(); after > before+2 {
		buf := make([]byte, 1<<16)
		t.Errorf("goroutines %d -> %d\n%s", before, after, buf[:runtime.Stack(buf, true)])
	}
}

// TestCoalescerAddReportsBeforeClose: without an error handler, an Add whose own
// flush made room but dropped a key (ErrInvalidArgument) keeps that error for the
// next Flush or Close before it releases the flush token, so a Close racing it
// returns the error (it once kept it after, and a Close in the gap returned nil:
// the drop was silent in about 1 of 20,000 races).
func TestCoalescerAddReportsBeforeClose(t *testing.T) {
	const iterations = 2000
	lost := 0
	for range iterations {
		st := newSpy[int64](t, monoid.Sum[int64]{})
		st.setFail(func(k state.Key) error {
			if k.Entity == "bad" {
				return state.Invalidf("refused")
			}
			return nil
		})
		c, err := state.NewCoalescer[int64](st, monoid.Sum[int64]{}, state.WithFlushInterval(0), state.WithMaxKeys(1))
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if err := c.Add(ctx, state.Key{Entity: "bad"}, 1); err != nil {
			t.Fatal(err)
		}
		var addErr, closeErr error
		var wg sync.WaitGroup
		wg.Go(func() { addErr = c.Add(ctx, state.Key{Entity: "new"}, 1) })
		wg.Go(func() { closeErr = c.Close(ctx) })
		wg.Wait()
		seen := func(err error) bool { return err != nil && strings.Contains(err.Error(), `dropped key "bad"`) }
		if !seen(addErr) && !seen(closeErr) {
			lost++
			if later := c.Flush(ctx); !seen(later) {
				t.Fatalf("drop reported nowhere, not even by a Flush after Close: add %v, close %v, flush %v", addErr, closeErr, later)
			}
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d iterations: the error of the dropped key reached neither Add nor Close (only a Flush after Close would see it)", lost, iterations)
	}
}
