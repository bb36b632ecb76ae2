package observe_test

import (
	"context"
	"fmt"
	"log"
	"slices"

	"go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/pipestate/pipestate/observe"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/memprovider"
	"github.com/pipestate/pipestate/types"
)

// Provider wraps any provider in one line; the result keeps exactly the optional
// interfaces of what it wraps. Here a metric reader collects what one CAS
// recorded; in production, pass nothing and install an OpenTelemetry SDK.
func ExampleProvider() {
	ctx := context.Background()
	reader := metric.NewManualReader()
	mp := metric.NewMeterProvider(metric.WithReader(reader))
	mem, err := memprovider.New()
	if err != nil {
		log.Fatal(err)
	}
	p, err := observe.Provider(mem, observe.WithMeterProvider(mp))
	if err != nil {
		log.Fatal(err)
	}
	_, isLeaser := p.(provider.Leaser)
	fmt.Println("still a Leaser:", isLeaser)

	run := types.RunState{RunID: "r-1", PipelineID: "orders", Status: types.RunPending}
	if err := p.PutRunState(ctx, run); err != nil {
		log.Fatal(err)
	}
	run.Status = types.RunRunning
	swapped, _ := p.CompareAndSwapRunState(ctx, "r-1", 0, run)
	lost, _ := p.CompareAndSwapRunState(ctx, "r-1", 0, run)
	fmt.Println("swapped:", swapped, "lost:", !lost)

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		log.Fatal(err)
	}
	var lines []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "pipestate.run.cas" {
				for _, dp := range sum.DataPoints {
					outcome, _ := dp.Attributes.Value(observe.AttrOutcome)
					lines = append(lines, fmt.Sprintf("%s %s=%s: %d", m.Name, observe.AttrOutcome, outcome.String(), dp.Value))
				}
			}
		}
	}
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// still a Leaser: true
	// swapped: true lost: true
	// pipestate.run.cas pipestate.outcome=conflict: 1
	// pipestate.run.cas pipestate.outcome=swapped: 1
}
