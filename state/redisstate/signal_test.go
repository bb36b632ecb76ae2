package redisstate_test

import (
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/pipestate/pipestate/internal/signal"
	"github.com/pipestate/pipestate/internal/signal/signaltest"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/internal/storetest"
	"github.com/pipestate/pipestate/state/redisstate"
)

// slowCounter is storetest.Counter with a slow combine, which widens the window
// between a merge's read and its compare-and-swap, so concurrent writers lose races.
type slowCounter struct{ storetest.Counter }

func (c slowCounter) TryCombine(a, b []byte) ([]byte, error) {
	time.Sleep(100 * time.Microsecond)
	return c.Counter.TryCombine(a, b)
}

// casAttrs are the attributes of a BytesStore's retries and give-ups in op.
func casAttrs(op string) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.String("db.system.name", "redis"), attribute.String("db.operation.name", op),
		signal.AttrReason.String(signal.ReasonCASConflict),
	}
}

// TestSignalsUnderContention: 16 writers on one hot key, one retry each at most, so
// many merges give up. Every lost race the store counts is a recorded retry or a
// recorded give-up, and every ErrContention returned is a recorded give-up, in the
// metrics and in the log.
func TestSignalsUnderContention(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		sig := signaltest.NewSignals()
		var m slowCounter
		s, err := redisstate.NewBytesStore(b.client(t), prefixFor(t), m, redisstate.WithMaxRetries(1),
			redisstate.WithBackoff(time.Microsecond, 50*time.Microsecond), redisstate.WithMeterProvider(sig.Meter), redisstate.WithLogger(sig.Log))
		if err != nil {
			t.Fatal(err)
		}
		k := state.Key{Entity: "hot"}
		value := func() int64 { // the prefix outlives one run of the test on a real server
			t.Helper()
			got, _, err := s.Get(t.Context(), k)
			if err != nil {
				t.Fatal(err)
			}
			n, err := m.Decode(got)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		before := value()
		const writers, merges = 16, 20
		var applied, contention atomic.Int64
		var wg sync.WaitGroup
		for range writers {
			wg.Go(func() {
				for range merges {
					switch err := s.MergeUpdate(t.Context(), k, m.Of(1), 0); {
					case err == nil:
						applied.Add(1)
					case errors.Is(err, state.ErrContention):
						contention.Add(1)
					default:
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		lost := redisstate.LostRaces(s)
		retries := sig.Collect(t, "pipestate.retries", casAttrs("MergeUpdate")...).Value
		giveUps := sig.Collect(t, "pipestate.giveups", casAttrs("MergeUpdate")...).Value
		t.Logf("%d applied, %d ErrContention, %d lost races, %d retries recorded, %d give-ups recorded", applied.Load(), contention.Load(), lost, retries, giveUps)
		if contention.Load() == 0 {
			t.Fatalf("no merge gave up (%d lost races): the test forced no contention", lost)
		}
		if giveUps != contention.Load() {
			t.Errorf("give-ups recorded %d, want %d (the ErrContention returns)", giveUps, contention.Load())
		}
		if retries+giveUps != lost {
			t.Errorf("retries %d + give-ups %d recorded, want the %d lost races", retries, giveUps, lost)
		}
		if n := sig.Logs(slog.LevelDebug, "pipestate: retry"); int64(n) != retries {
			t.Errorf("%d retry records logged, want %d", n, retries)
		}
		if n := sig.Logs(slog.LevelWarn, "pipestate: giving up"); int64(n) != giveUps {
			t.Errorf("%d give-up records logged, want %d", n, giveUps)
		}
		if n := value() - before; n != applied.Load() {
			t.Errorf("value grew by %d, want the %d applied merges", n, applied.Load())
		}
	})
}

// TestSignalsOnce: a MergeUpdateOnce that loses every race records its two retries
// and its give-up under its own operation name.
func TestSignalsOnce(t *testing.T) {
	c := miniBackend.client(t)
	sig := signaltest.NewSignals()
	k := state.Key{Entity: "contended"}
	m := &meddler{t: t}
	s, err := redisstate.NewBytesStore(c, prefixFor(t), m, redisstate.WithMaxRetries(2), redisstate.WithBackoff(time.Microsecond, time.Microsecond),
		redisstate.WithMeterProvider(sig.Meter), redisstate.WithLogger(sig.Log))
	if err != nil {
		t.Fatal(err)
	}
	if m.other, err = redisstate.NewBytesStore(c, prefixFor(t), concat{}); err != nil {
		t.Fatal(err)
	}
	m.key = k
	if _, err := s.MergeUpdateOnce(t.Context(), "ev", k, []byte("x"), 0); !errors.Is(err, state.ErrContention) {
		t.Fatalf("err = %v, want ErrContention", err)
	}
	retries := sig.Collect(t, "pipestate.retries", casAttrs("MergeUpdateOnce")...)
	giveUps := sig.Collect(t, "pipestate.giveups", casAttrs("MergeUpdateOnce")...)
	if retries.Value != 2 || giveUps.Value != 1 || redisstate.LostRaces(s) != 3 {
		t.Errorf("retries %d, give-ups %d, lost races %d; want 2, 1, 3", retries.Value, giveUps.Value, redisstate.LostRaces(s))
	}
}

// TestSignalsScriptLoad: a script the server does not hold (the first run, and the
// first after SCRIPT FLUSH) is sent again with EVAL and recorded. Only on miniredis:
// flushing a shared server's scripts would add round trips to other tests.
func TestSignalsScriptLoad(t *testing.T) {
	c := miniBackend.client(t)
	sig := signaltest.NewSignals()
	s, err1 := redisstate.NewInt64SumStore(c, prefixFor(t), redisstate.WithMeterProvider(sig.Meter), redisstate.WithLogger(sig.Log))
	d, err2 := redisstate.NewDeduper(c, prefixFor(t), redisstate.WithMeterProvider(sig.Meter), redisstate.WithLogger(sig.Log))
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	k := state.Key{Entity: "e"}
	steps := []struct {
		name  string
		do    func() error
		loads int64
	}{
		{"first merge", func() error { return s.MergeUpdate(t.Context(), k, 1, 0) }, 1},
		{"second merge", func() error { return s.MergeUpdate(t.Context(), k, 1, 0) }, 1},
		{"flush", func() error { return c.ScriptFlush(t.Context()).Err() }, 1},
		{"merge after flush", func() error { return s.MergeUpdate(t.Context(), k, 1, 0) }, 2},
		{"first claim", func() error { _, err := d.MarkSeen(t.Context(), "ev"); return err }, 3},
		{"second claim", func() error { _, err := d.MarkSeen(t.Context(), "ev"); return err }, 3},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got := sig.Collect(t, "pipestate.redis.script.loads", attribute.String("db.system.name", "redis")).Value; got != st.loads {
			t.Errorf("after %s: %d script loads recorded, want %d", st.name, got, st.loads)
		}
	}
	if n := sig.Logs(slog.LevelDebug, "pipestate: script reloaded after NOSCRIPT"); n != 3 {
		t.Errorf("%d reload records logged, want 3:\n%s", n, sig.LogText())
	}
	if v, _, err := s.Get(t.Context(), k); err != nil || v != 3 {
		t.Errorf("value %d (%v), want 3: a reloaded merge is applied once", v, err)
	}
}
