package cache_test

import (
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/pipestate/pipestate/internal/signal/signaltest"
	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/cache"
	"github.com/pipestate/pipestate/state/memstate"
)

// TestMeterScope: the cache's metrics carry the library's instrumentation scope,
// its name and the module version, as every other meter of the library does.
func TestMeterScope(t *testing.T) {
	src, err := memstate.New[int64](monoid.Sum[int64]{})
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
	signaltest.WantScope(t, reader)
}
