package signaltest

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pipestate/pipestate/internal/signal"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// corruptListing is one row of the table CheckCorrupt runs: put writes a good
// record of kind (for a log's kind, before and after the corrupt one), args are
// the Harness.Corrupt arguments, and list reads the kind's listing with ctx.
type corruptListing struct {
	kind provider.RecordKind
	put  func(ctx context.Context, p provider.Provider) error
	args []string
	list func(ctx context.Context, p provider.Provider) error
}

// The IDs of the records CheckCorrupt writes.
const (
	sigPipeline = "sig-pipe"
	sigDate     = "2026-01-02"
)

var corruptListings = []corruptListing{
	{provider.KindPipeline, func(ctx context.Context, p provider.Provider) error {
		return p.RegisterPipeline(ctx, types.PipelineConfig{ID: sigPipeline})
	}, []string{sigPipeline}, func(ctx context.Context, p provider.Provider) error {
		_, err := p.ListPipelines(ctx)
		return err
	}},
	{provider.KindTrait, func(ctx context.Context, p provider.Provider) error {
		return p.PutTrait(ctx, sigPipeline, types.TraitEvaluation{TraitType: "fresh", Status: types.TraitPass}, 0)
	}, []string{sigPipeline, "fresh"}, func(ctx context.Context, p provider.Provider) error {
		_, err := p.GetTraits(ctx, sigPipeline)
		return err
	}},
	{provider.KindRunState, func(ctx context.Context, p provider.Provider) error {
		return p.PutRunState(ctx, types.RunState{RunID: "sig-run", PipelineID: sigPipeline, Status: types.RunPending})
	}, []string{"sig-run"}, func(ctx context.Context, p provider.Provider) error {
		_, err := p.ListRuns(ctx, sigPipeline, 10)
		return err
	}},
	{provider.KindEvent, func(ctx context.Context, p provider.Provider) error {
		return p.AppendEvent(ctx, types.Event{Kind: "K", PipelineID: sigPipeline})
	}, []string{sigPipeline}, func(ctx context.Context, p provider.Provider) error {
		_, err := p.ListEvents(ctx, sigPipeline, 10)
		return err
	}},
	{provider.KindRunLog, func(ctx context.Context, p provider.Provider) error {
		return p.PutRunLog(ctx, types.RunLogEntry{PipelineID: sigPipeline, Date: sigDate, Status: types.RunCompleted})
	}, []string{sigPipeline, sigDate, ""}, func(ctx context.Context, p provider.Provider) error {
		_, err := p.ListRunLogs(ctx, sigPipeline, 10)
		return err
	}},
	{provider.KindRerun, func(ctx context.Context, p provider.Provider) error {
		return p.PutRerun(ctx, types.RerunRecord{RerunID: "sig-rerun", PipelineID: sigPipeline, OriginalDate: sigDate, Status: types.RequestPending})
	}, []string{"sig-rerun"}, func(ctx context.Context, p provider.Provider) error {
		_, err := p.ListAllReruns(ctx, 10)
		return err
	}},
	{provider.KindReplay, func(ctx context.Context, p provider.Provider) error {
		return p.PutReplay(ctx, types.ReplayRequest{PipelineID: sigPipeline, Date: sigDate, Status: types.RequestPending})
	}, []string{sigPipeline, sigDate, ""}, func(ctx context.Context, p provider.Provider) error {
		_, err := p.ListReplays(ctx, 10)
		return err
	}},
	{provider.KindLateArrival, func(ctx context.Context, p provider.Provider) error {
		return p.PutLateArrival(ctx, types.LateArrival{PipelineID: sigPipeline, Date: sigDate, TraitType: "volume"})
	}, []string{sigPipeline, sigDate, ""}, func(ctx context.Context, p provider.Provider) error {
		_, err := p.ListLateArrivals(ctx, sigPipeline, sigDate, "")
		return err
	}},
	{provider.KindCascadeMarker, func(ctx context.Context, p provider.Provider) error {
		return p.WriteCascadeMarker(ctx, sigPipeline, "", sigDate, "up")
	}, []string{sigPipeline, sigDate, ""}, func(ctx context.Context, p provider.Provider) error {
		_, err := p.(provider.CascadeReader).ListCascadeMarkers(ctx, sigPipeline, 10)
		return err
	}},
	{provider.KindMarkerWrite, func(ctx context.Context, p provider.Provider) error {
		return p.WriteCascadeMarker(ctx, sigPipeline, "", sigDate, "up")
	}, nil, func(ctx context.Context, p provider.Provider) error {
		// The log holds the cascade_marker row's write, then this row's two
		// good writes around the corrupt one.
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		n := 0
		for _, err := range p.(provider.MarkerWatcher).WatchCascadeMarkers(ctx, "") {
			if err != nil {
				return err
			}
			if n++; n == 3 {
				break
			}
		}
		return nil
	}},
}

// CheckCorrupt checks the signals of the corrupt records a backend's listings
// skip, for every kind with a listing, on p (opened with s's meter provider and
// logger, on storage of its own) and corrupt (its Harness.Corrupt on that
// storage): each skipped record adds one to pipestate.corrupt.records with
// db.system.name system and pipestate.record.kind, and no other attribute; it
// logs one Warn record naming the record's key; and it adds a pipestate.corrupt
// event, with the kind and the key, to the span in the listing's context. The
// key is the one the backend reported through provider.OnCorrupt.
func (s *Signals) CheckCorrupt(t *testing.T, system string, p provider.Provider, corrupt func(kind provider.RecordKind, id ...string)) {
	t.Helper()
	spans := tracetest.NewSpanRecorder()
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)).Tracer("signaltest")
	for _, l := range corruptListings {
		t.Run(string(l.kind), func(t *testing.T) {
			ctx := t.Context()
			if err := l.put(ctx, p); err != nil {
				t.Fatalf("put: %v", err)
			}
			corrupt(l.kind, l.args...)
			if l.args == nil || l.kind == provider.KindEvent || l.kind == provider.KindLateArrival {
				if err := l.put(ctx, p); err != nil { // a good record after the corrupt one
					t.Fatalf("put after: %v", err)
				}
			}
			kind := signal.AttrRecordKind.String(string(l.kind))
			system := attribute.String("db.system.name", system)
			before := s.Collect(t, "pipestate.corrupt.records", system, kind).Value
			warns := s.Logs(slog.LevelWarn, "pipestate: skipped a corrupt record")

			var reported []*provider.CorruptError
			ctx = provider.OnCorrupt(ctx, func(err *provider.CorruptError) { reported = append(reported, err) })
			ctx, span := tracer.Start(ctx, "list "+string(l.kind))
			err := l.list(ctx, p)
			span.End()
			if err != nil {
				t.Fatalf("listing beside a corrupt %s: %v", l.kind, err)
			}
			if len(reported) != 1 {
				t.Fatalf("%d corrupt records reported to provider.OnCorrupt, want 1", len(reported))
			}
			key := reported[0].Key
			if got := s.Collect(t, "pipestate.corrupt.records", system, kind); got.Value-before != 1 {
				t.Errorf("pipestate.corrupt.records{%s, %s} grew by %d, want 1", system.Value.AsString(), kind.Value.AsString(), got.Value-before)
			}
			if n := s.Logs(slog.LevelWarn, "pipestate: skipped a corrupt record") - warns; n != 1 {
				t.Errorf("%d Warn records of the corrupt %s logged, want 1:\n%s", n, l.kind, s.LogText())
			}
			if key == "" || !strings.Contains(s.LogText(), jsonString(key)) {
				t.Errorf("the log does not name the key %q:\n%s", key, s.LogText())
			}
			ended := spans.Ended()
			events := ended[len(ended)-1].Events()
			found := false
			for _, e := range events {
				set := attribute.NewSet(e.Attributes...)
				k, _ := set.Value(signal.AttrRecordKind)
				at, _ := set.Value(signal.AttrRecordKey)
				found = found || (e.Name == "pipestate.corrupt" && k.AsString() == string(l.kind) && at.AsString() == key)
			}
			if !found {
				t.Errorf("the listing's span has no pipestate.corrupt event of kind %s and key %q: %v", l.kind, key, events)
			}
		})
	}
	// No metric data point may carry more than the system and the kind.
	for _, l := range corruptListings {
		p := s.Collect(t, "pipestate.corrupt.records", signal.AttrRecordKind.String(string(l.kind)))
		all := s.Collect(t, "pipestate.corrupt.records", attribute.String("db.system.name", system), signal.AttrRecordKind.String(string(l.kind)))
		if p != all {
			t.Errorf("pipestate.corrupt.records of %s has data points without db.system.name %s", l.kind, system)
		}
	}
	if s.attrKeys(t, "pipestate.corrupt.records") != fmt.Sprint([]attribute.Key{"db.system.name", signal.AttrRecordKind}) {
		t.Errorf("pipestate.corrupt.records carries attributes %s, want only db.system.name and %s", s.attrKeys(t, "pipestate.corrupt.records"), signal.AttrRecordKind)
	}
}

// jsonString is s as the JSON log handler writes it, without the quotes.
func jsonString(s string) string {
	b := strings.Builder{}
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
