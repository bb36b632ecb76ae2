package observe_test

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/pipestate/pipestate/observe"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/memprovider"
	"github.com/pipestate/pipestate/types"
)

// BenchmarkCAS measures the decorator around the memory backend's CAS: bare, with
// no SDK installed (the global no-op providers), and with an SDK recording every
// span and metric. The goal: no-SDK within max(2%, 100 ns) of bare.
func BenchmarkCAS(b *testing.B) {
	sdk := func() []observe.Option {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		b.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })
		return []observe.Option{observe.WithTracerProvider(tp), observe.WithMeterProvider(mp)}
	}
	for _, tc := range []struct {
		name string
		wrap func(p provider.Provider) provider.Provider
	}{
		{"bare", func(p provider.Provider) provider.Provider { return p }},
		{"no-sdk", func(p provider.Provider) provider.Provider { return must(observe.Provider(p)) }},
		{"sdk", func(p provider.Provider) provider.Provider { return must(observe.Provider(p, sdk()...)) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			mem, err := memprovider.New()
			if err != nil {
				b.Fatal(err)
			}
			p := tc.wrap(mem)
			ctx := context.Background()
			run := types.RunState{RunID: "run-1", PipelineID: "orders", Status: types.RunPending}
			if err := p.PutRunState(ctx, run); err != nil {
				b.Fatal(err)
			}
			run.Status = types.RunRunning
			b.ReportAllocs()
			v := 0
			for b.Loop() {
				if ok, err := p.CompareAndSwapRunState(ctx, "run-1", v, run); err != nil || !ok {
					b.Fatal(ok, err)
				}
				v++
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
