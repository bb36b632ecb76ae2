package signal

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pipestate/pipestate/internal/modversion"
	"github.com/pipestate/pipestate/provider"
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
	r.ReportCorrupt(ctx, &provider.CorruptError{Kind: provider.KindRunState, ID: "r-1", Key: "redis key pst:{run:r-1}",
		Err: errors.New("invalid character")})

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != ScopeName || sm.Scope.Version != modversion.Version() {
			t.Errorf("scope %s %q, want %s %q", sm.Scope.Name, sm.Scope.Version, ScopeName, modversion.Version())
		}
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
		"pipestate.redis.index.repairs": 4, "pipestate.batch.size": 7, "pipestate.corrupt.records": 1}
	for name, n := range want {
		if got[name] != n {
			t.Errorf("%s = %d, want %d", name, got[name], n)
		}
	}
	text := logs.String()
	for _, line := range []string{"level=DEBUG msg=\"pipestate: retry\"", "level=WARN msg=\"pipestate: giving up\"", "level=INFO msg=\"pipestate: repaired list entries\"",
		"level=WARN msg=\"pipestate: skipped a corrupt record\" db.system.name=redis record.kind=run_state record.id=r-1 record.key=\"redis key pst:{run:r-1}\" error=\"invalid character\""} {
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
	r.ReportCorrupt(context.Background(), &provider.CorruptError{Kind: provider.KindEvent})
}

// TestReportCorrupt: a corrupt record is counted by system and kind only, and
// its key goes to the span event and the log record, never to the metric.
func TestReportCorrupt(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	r := New(mp, nil, "memory")
	ctx, span := tp.Tracer("t").Start(context.Background(), "ListRuns")
	for range 2 {
		r.ReportCorrupt(ctx, &provider.CorruptError{Kind: provider.KindRunState, ID: "r-1", Key: "memory run r-1", Err: errors.New("x")})
	}
	span.End()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "pipestate.corrupt.records" {
				continue
			}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				found = true
				want := attribute.NewSet(attribute.String("db.system.name", "memory"), AttrRecordKind.String("run_state"))
				if !dp.Attributes.Equals(&want) || dp.Value != 2 {
					t.Errorf("data point %v = %d, want %v = 2", dp.Attributes.ToSlice(), dp.Value, want.ToSlice())
				}
			}
		}
	}
	if !found {
		t.Fatal("no pipestate.corrupt.records recorded")
	}
	ended := spans.Ended()
	if len(ended) != 1 {
		t.Fatalf("%d spans ended, want 1", len(ended))
	}
	events := ended[0].Events()
	if len(events) != 2 || events[0].Name != "pipestate.corrupt" {
		t.Fatalf("span events %v, want 2 pipestate.corrupt", events)
	}
	want := attribute.NewSet(AttrRecordKind.String("run_state"), AttrRecordKey.String("memory run r-1"))
	if got := attribute.NewSet(events[0].Attributes...); !got.Equals(&want) {
		t.Errorf("span event attributes %v, want %v", got.ToSlice(), want.ToSlice())
	}
}
