package signal

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

func TestRecorder(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	var logs bytes.Buffer
	r := New(mp, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})), "redis")
	ctx := context.Background()
	r.Retry(ctx, "MergeUpdate", ReasonCASConflict, 1)
	r.Retry(ctx, "MergeUpdate", ReasonCASConflict, 2)
	r.GiveUp(ctx, "MergeUpdate", ReasonCASConflict, 3, errors.New("lost"))
	r.ScriptLoad(ctx, "cas")
	r.Repair(ctx, "runs", 4)
	r.Repair(ctx, "runs", 0)
	r.Batch(ctx, "AppendEvent", 7)

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					got[m.Name] += dp.Value
				}
			case metricdata.Histogram[int64]:
				for _, dp := range d.DataPoints {
					got[m.Name] += dp.Sum
				}
			}
		}
	}
	want := map[string]int64{"pipestate.retries": 2, "pipestate.giveups": 1, "pipestate.redis.script.loads": 1,
		"pipestate.redis.index.repairs": 4, "pipestate.batch.size": 7}
	for name, n := range want {
		if got[name] != n {
			t.Errorf("%s = %d, want %d", name, got[name], n)
		}
	}
	text := logs.String()
	for _, line := range []string{"level=DEBUG msg=\"pipestate: retry\"", "level=WARN msg=\"pipestate: giving up\"", "level=INFO msg=\"pipestate: repaired list entries\""} {
		if !strings.Contains(text, line) {
			t.Errorf("log lacks %q:\n%s", line, text)
		}
	}
	if strings.Count(text, "repaired") != 1 {
		t.Errorf("a repair of 0 entries was logged:\n%s", text)
	}
}

func TestNilRecorderIsSilent(t *testing.T) {
	var r *Recorder
	r.Retry(context.Background(), "x", ReasonThrottled, 1)
	r.GiveUp(context.Background(), "x", ReasonThrottled, 1, nil)
	r.ScriptLoad(context.Background(), "x")
	r.Repair(context.Background(), "x", 1)
	r.Batch(context.Background(), "x", 1)
}
