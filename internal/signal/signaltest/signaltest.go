// Package signaltest reads what a backend records through internal/signal in
// tests: an OpenTelemetry SDK meter provider with a manual reader and a Debug-level
// JSON logger into a buffer, for the backend's WithMeterProvider and WithLogger.
package signaltest

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/pipestate/pipestate/internal/modversion"
	"github.com/pipestate/pipestate/internal/signal"
)

// Signals is an OpenTelemetry SDK meter provider read by a manual reader and a
// Debug-level slog logger writing JSON records to a buffer: what a test gives a
// backend's WithMeterProvider and WithLogger to check what it records.
type Signals struct {
	Meter  *sdkmetric.MeterProvider
	Log    *slog.Logger
	reader *sdkmetric.ManualReader
	logs   lockedBuffer
}

// lockedBuffer is a bytes.Buffer safe for concurrent writers and readers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// NewSignals returns an empty Signals.
func NewSignals() *Signals {
	s := &Signals{reader: sdkmetric.NewManualReader()}
	s.Meter = sdkmetric.NewMeterProvider(sdkmetric.WithReader(s.reader))
	s.Log = slog.New(slog.NewJSONHandler(&s.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return s
}

// Point is what a collection holds for one instrument, summed over the data points
// whose attributes include those asked for: Value for counters and gauges, Count and
// Sum for histograms. Found is false when no such data point was recorded.
type Point struct {
	Found bool
	Value int64
	Count uint64
	Sum   float64
}

// Collect collects now and returns instrument name's Point over the data points
// that carry every attribute of attrs.
func (s *Signals) Collect(t testing.TB, name string, attrs ...attribute.KeyValue) Point {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := s.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	has := func(set attribute.Set) bool {
		for _, a := range attrs {
			if v, ok := set.Value(a.Key); !ok || v != a.Value {
				return false
			}
		}
		return true
	}
	var p Point
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					if has(dp.Attributes) {
						p.Found, p.Value = true, p.Value+dp.Value
					}
				}
			case metricdata.Gauge[int64]:
				for _, dp := range d.DataPoints {
					if has(dp.Attributes) {
						p.Found, p.Value = true, p.Value+dp.Value
					}
				}
			case metricdata.Histogram[int64]:
				for _, dp := range d.DataPoints {
					if has(dp.Attributes) {
						p.Found, p.Count, p.Sum = true, p.Count+dp.Count, p.Sum+float64(dp.Sum)
					}
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					if has(dp.Attributes) {
						p.Found, p.Count, p.Sum = true, p.Count+dp.Count, p.Sum+dp.Sum
					}
				}
			default:
				t.Fatalf("%s: unexpected data %T", name, m.Data)
			}
		}
	}
	return p
}

// Logs returns how many records of level carry message msg.
func (s *Signals) Logs(level slog.Level, msg string) int {
	return strings.Count(s.logs.String(), `"level":"`+level.String()+`","msg":"`+msg+`"`)
}

// LogText returns every record written so far, for failure messages.
func (s *Signals) LogText() string { return s.logs.String() }

// RetryStep is one call of CheckRetries: Do makes it, and it must record Retries
// retries and GiveUps give-ups of operation Op for Reason.
type RetryStep struct {
	Name             string
	Op, Reason       string
	Do               func() error
	Retries, GiveUps int64
}

// Retry is the RetryStep of these fields.
func Retry(name, op, reason string, do func() error, retries, giveUps int64) RetryStep {
	return RetryStep{Name: name, Op: op, Reason: reason, Do: do, Retries: retries, GiveUps: giveUps}
}

// CheckRetries runs steps in order against a backend of db.system.name system
// recording into s, checking the retries and give-ups each records (by operation
// and reason) and that the log holds one Debug record per retry and one Warn
// record per give-up in all.
func (s *Signals) CheckRetries(t testing.TB, system string, steps []RetryStep) {
	t.Helper()
	count := func(name string, st RetryStep) int64 {
		t.Helper()
		return s.Collect(t, name, attribute.String("db.system.name", system),
			attribute.String("db.operation.name", st.Op), signal.AttrReason.String(st.Reason)).Value
	}
	var retries, giveUps int64
	for _, st := range steps {
		r0, g0 := count("pipestate.retries", st), count("pipestate.giveups", st)
		if err := st.Do(); err != nil {
			t.Fatalf("%s: %v", st.Name, err)
		}
		if got := count("pipestate.retries", st) - r0; got != st.Retries {
			t.Errorf("%s: %d retries recorded (%s, %s), want %d", st.Name, got, st.Op, st.Reason, st.Retries)
		}
		if got := count("pipestate.giveups", st) - g0; got != st.GiveUps {
			t.Errorf("%s: %d give-ups recorded (%s, %s), want %d", st.Name, got, st.Op, st.Reason, st.GiveUps)
		}
		retries, giveUps = retries+st.Retries, giveUps+st.GiveUps
	}
	if n := s.Logs(slog.LevelDebug, "pipestate: retry"); int64(n) != retries {
		t.Errorf("%d retry records logged, want %d:\n%s", n, retries, s.LogText())
	}
	if n := s.Logs(slog.LevelWarn, "pipestate: giving up"); int64(n) != giveUps {
		t.Errorf("%d give-up records logged, want %d:\n%s", n, giveUps, s.LogText())
	}
}

// attrKeys returns the attribute keys of every data point of instrument name
// (a counter), sorted and deduplicated, as fmt.Sprint prints a []attribute.Key.
func (s *Signals) attrKeys(t testing.TB, name string) string {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := s.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	seen := map[attribute.Key]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if d, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == name {
				for _, dp := range d.DataPoints {
					for _, kv := range dp.Attributes.ToSlice() {
						seen[kv.Key] = true
					}
				}
			}
		}
	}
	keys := slices.Sorted(maps.Keys(seen))
	return fmt.Sprint(keys)
}

// WantScope collects reader and fails t unless it recorded metrics and every
// metric's instrumentation scope is signal.ScopeName at this module's version.
func WantScope(t testing.TB, reader *sdkmetric.ManualReader) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	if len(rm.ScopeMetrics) == 0 {
		t.Fatal("no metrics recorded")
	}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != signal.ScopeName || sm.Scope.Version != modversion.Version() {
			t.Errorf("scope %s %q, want %s %q", sm.Scope.Name, sm.Scope.Version, signal.ScopeName, modversion.Version())
		}
	}
}
