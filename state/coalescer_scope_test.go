package state_test

import (
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/pipestate/pipestate/internal/signal/signaltest"
	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
)

// TestCoalescerMeterScope: the Coalescer's metrics carry the library's
// instrumentation scope, its name and the module version, as every other meter of
// the library does.
func TestCoalescerMeterScope(t *testing.T) {
	var sum monoid.Sum[int64]
	reader := sdkmetric.NewManualReader()
	c := newCoalescer[int64](t, newSpy[int64](t, sum), sum, state.WithFlushInterval(0),
		state.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	if err := c.Add(t.Context(), state.Key{Entity: "a"}, 1); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	signaltest.WantScope(t, reader)
}
