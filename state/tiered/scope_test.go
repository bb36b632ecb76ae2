package tiered_test

import (
	"context"
	"testing"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/pipestate/pipestate/internal/signal/signaltest"
	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/memstate"
	"github.com/pipestate/pipestate/state/tiered"
)

// memorySource is an in-memory source of truth whose every key is at revision 1
// once written: enough for reads of keys written once, without DynamoDB.
type memorySource struct{ state.Store[int64] }

func (m memorySource) GetRevisions(ctx context.Context, ks []state.Key) ([]state.Revision[int64], error) {
	vs, oks, err := m.GetMany(ctx, ks)
	if err != nil {
		return nil, err
	}
	revs := make([]state.Revision[int64], len(ks))
	for i := range ks {
		revs[i] = state.Revision[int64]{Value: vs[i], Found: oks[i]}
		if oks[i] {
			revs[i].Rev = 1
		}
	}
	return revs, nil
}

// TestMeterScope: the tiered store's metrics carry the library's instrumentation
// scope, its name and the module version, as every other meter of the library does.
func TestMeterScope(t *testing.T) {
	src, err := memstate.New[int64](monoid.Sum[int64]{})
	if err != nil {
		t.Fatal(err)
	}
	rc := goredis.NewClient(&goredis.Options{Addr: miniredis.RunT(t).Addr()})
	defer rc.Close()
	reader := sdkmetric.NewManualReader()
	s, err := tiered.New[int64](memorySource{src}, rc, "scope",
		tiered.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, _, err := s.Get(t.Context(), state.Key{Entity: "a"}); err != nil { // a miss
		t.Fatal(err)
	}
	signaltest.WantScope(t, reader)
}
