// Package globaltest checks the decorators on the global OpenTelemetry providers,
// in a test binary of its own because installing a global SDK cannot be undone.
package globaltest

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pipestate/pipestate/observe"
	"github.com/pipestate/pipestate/provider/memprovider"
	"github.com/pipestate/pipestate/types"
)

// TestSDKInstalledLater: a decorator built before the application installs its SDK
// (the usual order: packages build decorators, main installs the SDK) records
// nothing before and everything after.
func TestSDKInstalledLater(t *testing.T) {
	mem, err := memprovider.New()
	if err != nil {
		t.Fatal(err)
	}
	p, err := observe.Provider(mem)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	run := types.RunState{RunID: "r1", PipelineID: "orders", Status: types.RunPending}
	if err := p.PutRunState(ctx, run); err != nil {
		t.Fatal(err)
	}
	spans := tracetest.NewSpanRecorder()
	reader := sdkmetric.NewManualReader()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)))
	otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if _, err := p.CompareAndSwapRunState(ctx, "r1", 0, run); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range spans.Ended() {
		names = append(names, s.Name())
	}
	if len(names) != 1 || names[0] != "CompareAndSwapRunState" {
		t.Errorf("spans after the SDK was installed: %v, want only the CAS", names)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	var cas int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == "pipestate.run.cas" {
				for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
					cas += dp.Value
				}
			}
		}
	}
	if cas != 1 {
		t.Errorf("pipestate.run.cas = %d after the SDK was installed, want 1 (the put before it is not a CAS)", cas)
	}
}
