package state_test

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/pipestate/pipestate/internal/signal/signaltest"
	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
)

// TestCoalescerSignals: two Coalescers on one meter provider report their pending
// keys summed, each flush's size and duration, and a flush that fails; the log has
// a Debug record per flush that succeeded and a Warn record per flush that failed.
func TestCoalescerSignals(t *testing.T) {
	ctx := t.Context()
	sig := signaltest.NewSignals()
	var sum monoid.Sum[int64]
	st := newSpy[int64](t, sum)
	opts := []state.CoalescerOption{state.WithFlushInterval(0), state.WithMeterProvider(sig.Meter), state.WithLogger(sig.Log)}
	a := newCoalescer[int64](t, st, sum, opts...)
	b := newCoalescer[int64](t, st, sum, opts...)
	add := func(c *state.Coalescer[int64], prefix string, n int) {
		t.Helper()
		for i := range n {
			for range 3 { // deltas to one key coalesce
				if err := c.Add(ctx, state.Key{Entity: fmt.Sprint(prefix, i)}, 1); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	type want struct {
		pending                 int64
		flushes, keys, failures int64
		debugLogs, warnLogs     int
	}
	check := func(step string, w want) {
		t.Helper()
		if p := sig.Collect(t, "pipestate.coalescer.pending"); p.Value != w.pending {
			t.Errorf("%s: pending %d, want %d", step, p.Value, w.pending)
		}
		if p := sig.Collect(t, "pipestate.coalescer.flush.size"); int64(p.Count) != w.flushes || int64(p.Sum) != w.keys {
			t.Errorf("%s: flush sizes: %d flushes of %v keys, want %d of %d", step, p.Count, p.Sum, w.flushes, w.keys)
		}
		if p := sig.Collect(t, "pipestate.coalescer.flush.duration"); int64(p.Count) != w.flushes || p.Sum < 0 {
			t.Errorf("%s: flush durations: %d summing %vs, want %d", step, p.Count, p.Sum, w.flushes)
		}
		if p := sig.Collect(t, "pipestate.coalescer.flush.failures"); p.Value != w.failures {
			t.Errorf("%s: %d failed flushes, want %d", step, p.Value, w.failures)
		}
		if n := sig.Logs(slog.LevelDebug, "pipestate: coalescer flushed"); n != w.debugLogs {
			t.Errorf("%s: %d Debug flush records, want %d", step, n, w.debugLogs)
		}
		if n := sig.Logs(slog.LevelWarn, "pipestate: coalescer flush failed"); n != w.warnLogs {
			t.Errorf("%s: %d Warn flush records, want %d:\n%s", step, n, w.warnLogs, sig.LogText())
		}
	}

	add(a, "a", 3)
	add(b, "b", 2)
	check("after adds", want{pending: 5})
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	check("after a's flush", want{pending: 2, flushes: 1, keys: 3, debugLogs: 1})
	if err := a.Flush(ctx); err != nil { // nothing buffered: no flush
		t.Fatal(err)
	}
	check("after an empty flush", want{pending: 2, flushes: 1, keys: 3, debugLogs: 1})

	boom := errors.New("boom")
	st.setFail(func(k state.Key) error {
		if k.Entity == "b0" {
			return boom
		}
		return nil
	})
	if err := b.Flush(ctx); !errors.Is(err, boom) {
		t.Fatalf("b's flush: %v, want boom", err)
	}
	check("after b's failed flush", want{pending: 1, flushes: 2, keys: 5, failures: 1, debugLogs: 1, warnLogs: 1})

	st.setFail(nil)
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	check("after a's Close", want{pending: 1, flushes: 2, keys: 5, failures: 1, debugLogs: 1, warnLogs: 1})
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	check("after b's Close", want{pending: 0, flushes: 3, keys: 6, failures: 1, debugLogs: 2, warnLogs: 1})
	if p := sig.Collect(t, "pipestate.coalescer.pending"); p.Found {
		t.Errorf("pending still observed after both Close: %d", p.Value)
	}
	if s := b.Stats(); s.Flushes != 2 || s.Failures != 1 || s.Writes != 2 {
		t.Errorf("b's Stats = %+v", s)
	}
}
