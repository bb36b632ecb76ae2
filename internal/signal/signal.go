// Package signal records what only a backend knows — retries, give-ups, script
// reloads, index repairs, batch sizes, corrupt records skipped, items left
// without their ttl — as OpenTelemetry metrics, as events on the caller's span
// (the one observe starts, or any in the context), and as slog records: Debug
// for each retry, Warn for each give-up, each corrupt record and each item left
// behind, Info for repairs. Records carry IDs, keys and counts, never
// user values; metric attributes are bounded (no IDs, no keys).
//
// Backends build one Recorder from their WithMeterProvider and WithLogger options.
// The instruments are listed in package observe's doc.
package signal

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/pipestate/pipestate/internal/modversion"
	"github.com/pipestate/pipestate/provider"
)

// ScopeName is the instrumentation scope of the backends' meters; its version is
// the module's (internal/modversion).
const ScopeName = "github.com/pipestate/pipestate"

// Reasons for a retry, the values of AttrReason.
const (
	ReasonCASConflict         = "cas_conflict"         // a compare-and-swap (a merge, a DynamoDB run swap) lost a race
	ReasonTransactionConflict = "transaction_conflict" // DynamoDB TransactionConflict
	ReasonThrottled           = "throttled"            // DynamoDB throttling: an attempt the SDK retried, or a throttled transaction
	ReasonUnprocessed         = "unprocessed"          // DynamoDB batch keys or items left unprocessed
	ReasonSequenceRace        = "sequence_race"        // a DynamoDB event append or marker-log write lost its sequence number
	ReasonIndexRepair         = "index_repair"         // a Redis listing re-read after it repaired its list index
)

// AttrReason is the attribute of a retry's or give-up's reason.
const AttrReason = attribute.Key("pipestate.retry.reason")

// AttrRecordKind is the attribute of a corrupt record's kind (a
// provider.RecordKind), on the pipestate.corrupt.records counter and the
// pipestate.corrupt span event.
const AttrRecordKind = attribute.Key("pipestate.record.kind")

// AttrRecordKey is the attribute of a corrupt record's key (where the backend
// keeps it) on the pipestate.corrupt span event; never on a metric.
const AttrRecordKey = attribute.Key("pipestate.record.key")

// Recorder is a provider.CorruptReporter.
var _ provider.CorruptReporter = (*Recorder)(nil)

// Recorder records the signals of one backend instance. The zero value is not
// usable; a nil *Recorder records nothing.
type Recorder struct {
	system      attribute.KeyValue
	log         *slog.Logger
	retries     metric.Int64Counter
	giveUps     metric.Int64Counter
	scriptLoads metric.Int64Counter
	repairs     metric.Int64Counter
	batchSize   metric.Int64Histogram
	corrupt     metric.Int64Counter
}

// New returns the Recorder of a backend of db.system.name system: metrics through
// mp (nil: otel.GetMeterProvider()), logs through log (nil: none).
func New(mp metric.MeterProvider, log *slog.Logger, system string) *Recorder {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := mp.Meter(ScopeName, metric.WithInstrumentationVersion(modversion.Version()))
	r := &Recorder{system: semconv.DBSystemNameKey.String(system), log: log.With("db.system.name", system)}
	// Instrument creation fails only for invalid names; these are constants.
	r.retries, _ = m.Int64Counter("pipestate.retries", metric.WithUnit("{retry}"),
		metric.WithDescription("Retries inside a backend call, by reason."))
	r.giveUps, _ = m.Int64Counter("pipestate.giveups", metric.WithUnit("{call}"),
		metric.WithDescription("Backend calls that failed after their last retry, by reason."))
	r.scriptLoads, _ = m.Int64Counter("pipestate.redis.script.loads", metric.WithUnit("{load}"),
		metric.WithDescription("Redis scripts sent again after NOSCRIPT."))
	r.repairs, _ = m.Int64Counter("pipestate.redis.index.repairs", metric.WithUnit("{entry}"),
		metric.WithDescription("Redis list index entries repaired by readers."))
	r.batchSize, _ = m.Int64Histogram("pipestate.batch.size", metric.WithUnit("{item}"),
		metric.WithDescription("Items per group commit or batch request."),
		metric.WithExplicitBucketBoundaries(1, 2, 5, 10, 25, 50, 100, 250, 500, 1000))
	r.corrupt, _ = m.Int64Counter("pipestate.corrupt.records", metric.WithUnit("{record}"),
		metric.WithDescription("Stored records that did not decode, skipped by a listing or an iterator."))
	return r
}

// Retry records one retry of operation op for reason (attempt counts from 1).
func (r *Recorder) Retry(ctx context.Context, op, reason string, attempt int) {
	if r == nil {
		return
	}
	r.retries.Add(ctx, 1, metric.WithAttributes(r.system, semconv.DBOperationNameKey.String(op), AttrReason.String(reason)))
	trace.SpanFromContext(ctx).AddEvent("pipestate.retry", trace.WithAttributes(AttrReason.String(reason), attribute.Int("pipestate.retry.attempt", attempt)))
	r.log.DebugContext(ctx, "pipestate: retry", "db.operation.name", op, "reason", reason, "attempt", attempt)
}

// GiveUp records that operation op failed with err after attempts attempts.
func (r *Recorder) GiveUp(ctx context.Context, op, reason string, attempts int, err error) {
	if r == nil {
		return
	}
	r.giveUps.Add(ctx, 1, metric.WithAttributes(r.system, semconv.DBOperationNameKey.String(op), AttrReason.String(reason)))
	trace.SpanFromContext(ctx).AddEvent("pipestate.giveup", trace.WithAttributes(AttrReason.String(reason), attribute.Int("pipestate.retry.attempts", attempts)))
	r.log.WarnContext(ctx, "pipestate: giving up", "db.operation.name", op, "reason", reason, "attempts", attempts, "error", err)
}

// ScriptLoad records that script (its name) was sent again after NOSCRIPT.
func (r *Recorder) ScriptLoad(ctx context.Context, script string) {
	if r == nil {
		return
	}
	r.scriptLoads.Add(ctx, 1, metric.WithAttributes(r.system))
	r.log.DebugContext(ctx, "pipestate: script reloaded after NOSCRIPT", "script", script)
}

// Repair records n index entries of list repaired by a reader.
func (r *Recorder) Repair(ctx context.Context, list string, n int) {
	if r == nil || n == 0 {
		return
	}
	r.repairs.Add(ctx, int64(n), metric.WithAttributes(r.system))
	trace.SpanFromContext(ctx).AddEvent("pipestate.repair", trace.WithAttributes(attribute.Int("pipestate.repair.entries", n)))
	r.log.InfoContext(ctx, "pipestate: repaired list entries", "list", list, "entries", n)
}

// Batch records the size of one group commit or batch request of operation op.
func (r *Recorder) Batch(ctx context.Context, op string, size int) {
	if r == nil {
		return
	}
	r.batchSize.Record(ctx, int64(size), metric.WithAttributes(r.system, semconv.DBOperationNameKey.String(op)))
}

// ReportCorrupt implements provider.CorruptReporter: it records one corrupt
// record a listing or an iterator skipped — the pipestate.corrupt.records
// counter (by db.system.name and record kind, never the key), an event
// pipestate.corrupt on the span in ctx (kind and key), and a Warn log record
// with the kind, ID, key and cause.
func (r *Recorder) ReportCorrupt(ctx context.Context, err *provider.CorruptError) {
	if r == nil || err == nil {
		return
	}
	kind := AttrRecordKind.String(string(err.Kind))
	r.corrupt.Add(ctx, 1, metric.WithAttributes(r.system, kind))
	trace.SpanFromContext(ctx).AddEvent("pipestate.corrupt", trace.WithAttributes(kind, AttrRecordKey.String(err.Key)))
	var cause any
	if err.Err != nil {
		cause = err.Err.Error()
	}
	r.log.WarnContext(ctx, "pipestate: skipped a corrupt record", "record.kind", string(err.Kind),
		"record.id", err.ID, "record.key", err.Key, "error", cause)
}
