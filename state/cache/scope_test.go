package cache_test

import (
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/pipestate/pipestate/internal/modversion"
	"github.com/pipestate/pipestate/internal/signal"
	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/cache"
	"github.com/pipestate/pipestate/state/memory"
)

// TestMeterScope: the cache's metrics carry the library's instrumentation scope,
// its name and the module version, as every other meter of the library does.
func TestMeterScope(t *testing.T) {
	src, err := memory.New[int64](monoid.Sum[int64]{})
	if err != nil {
		t.Fatal(err)
	}
	reader := sdkmetric.NewManualReader()
	s, err := cache.New[int64](src, cache.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for range 2 { // a miss, then a hit
		if _, _, err := s.Get(t.Context(), state.Key{Entity: "a"}); err != nil {
			t.Fatal(err)
		}
	}
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
