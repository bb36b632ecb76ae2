package observe

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/pipestate/pipestate"
	"github.com/pipestate/pipestate/internal/nilcheck"
)

// ScopeName is the instrumentation scope of every tracer and meter of this package.
const ScopeName = "github.com/pipestate/pipestate/observe"

// Attribute keys of the pipestate namespace (the db.* and error.type keys are the
// OpenTelemetry semantic conventions').
const (
	AttrOutcome  = attribute.Key("pipestate.outcome")   // metrics and spans; see the package doc
	AttrLockKind = attribute.Key("pipestate.lock.kind") // "lock" or "lease"
	AttrPipeline = attribute.Key("pipestate.pipeline.id")
	AttrRun      = attribute.Key("pipestate.run.id")
	AttrLockKey  = attribute.Key("pipestate.lock.key")
	AttrEntity   = attribute.Key("pipestate.entity")
	AttrEventID  = attribute.Key("pipestate.event.id")
	AttrKeys     = attribute.Key("pipestate.keys")    // number of keys of a GetMany, or of updates of a MergeMany
	AttrRecords  = attribute.Key("pipestate.records") // records a follow or watch yielded
)

// Option configures a decorator.
type Option func(*config) error

type config struct {
	tp     trace.TracerProvider
	mp     metric.MeterProvider
	system string
}

// WithTracerProvider sets the tracer provider (default: otel.GetTracerProvider()
// when the decorator is built). tp must not be nil (also not a typed nil).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) error {
		if nilcheck.IsNil(tp) {
			return invalidf("WithTracerProvider: nil provider")
		}
		c.tp = tp
		return nil
	}
}

// WithMeterProvider sets the meter provider (default: otel.GetMeterProvider() when
// the decorator is built). mp must not be nil (also not a typed nil).
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) error {
		if nilcheck.IsNil(mp) {
			return invalidf("WithMeterProvider: nil provider")
		}
		c.mp = mp
		return nil
	}
}

// WithSystem sets the db.system.name attribute (default: "redis" for the Redis
// backends, "aws.dynamodb" for the DynamoDB ones, "memory" for the memory ones, and
// the last element of the package path of any other backend's type).
func WithSystem(name string) Option {
	return func(c *config) error {
		if name == "" {
			return invalidf("WithSystem: empty name")
		}
		c.system = name
		return nil
	}
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("observe: %w: "+format, append([]any{pipestate.ErrInvalidArgument}, args...)...)
}

// systemOf names the backend behind v for db.system.name.
func systemOf(v any) string {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	pkg := t.PkgPath()
	name := pkg[strings.LastIndex(pkg, "/")+1:]
	switch name {
	case "dynamodb":
		return "aws.dynamodb"
	case "":
		return "_OTHER"
	}
	return name
}

// errKind is a bounded classification of errors, the error.type values.
type errKind int

const (
	errNone errKind = iota
	errInvalidArgument
	errTooLarge
	errClosed
	errContention
	errLockHeld
	errLockNotHeld
	errCorrupt
	errCanceled
	errDeadline
	errOther
	numErrKinds
)

var errKindNames = [numErrKinds]string{"", "invalid_argument", "too_large", "closed", "contention",
	"lock_held", "lock_not_held", "corrupt", "canceled", "deadline_exceeded", "_OTHER"}

var errKindSentinels = [numErrKinds]error{nil, pipestate.ErrInvalidArgument, pipestate.ErrTooLarge,
	pipestate.ErrClosed, pipestate.ErrContention, pipestate.ErrLockHeld, pipestate.ErrLockNotHeld,
	pipestate.ErrCorrupt, context.Canceled, context.DeadlineExceeded, nil}

func kindOf(err error) errKind {
	if err == nil {
		return errNone
	}
	for k := errInvalidArgument; k < errOther; k++ {
		if errors.Is(err, errKindSentinels[k]) {
			return k
		}
	}
	return errOther
}

// expected reports whether an error is an outcome the caller asked about (a held
// lock, a lease that is no longer held) rather than a failure of the call: its span
// keeps status Unset.
func (k errKind) expected() bool { return k == errLockHeld || k == errLockNotHeld }

// globalTracerProvider is the type of the tracer provider otel.GetTracerProvider
// returns until an application installs one: it records nothing until then.
var globalTracerProvider = func() reflect.Type {
	t := reflect.TypeOf(otel.GetTracerProvider())
	if t.Kind() == reflect.Pointer && t.Elem().PkgPath() == "go.opentelemetry.io/otel/internal/global" {
		return t
	}
	return nil // an SDK was installed before this package's init
}()

// noSpan is the span of a call while nothing records: it records nothing.
var noSpan = trace.SpanFromContext(context.Background())

// telemetry holds the instruments of one decorator.
type telemetry struct {
	// global: the tracer came from the global provider, so a call skips the span
	// while no SDK is installed (the global tracer's no-op Start costs a few
	// hundred nanoseconds and two allocations).
	global   bool
	tracer   trace.Tracer
	system   attribute.KeyValue
	duration metric.Float64Histogram
	counters map[string]metric.Int64Counter
	ops      map[string]*operation
}

// operation is what one method records, with its attribute sets built once.
type operation struct {
	name      string
	spanOpts  []trace.SpanStartOption
	durations [numErrKinds]metric.MeasurementOption // by errKind
	counter   metric.Int64Counter                   // nil: none
	outcomes  map[string]metric.MeasurementOption   // counter attributes by outcome
}

// instrument describes one outcome counter.
type instrument struct {
	name, unit, desc string
	extra            []attribute.KeyValue // constant attributes of one operation
	outcomes         []string
}

// durationBuckets are the boundaries the database-client conventions recommend.
var durationBuckets = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10}

// newTelemetry builds the instruments of a decorator of backend whose methods are
// those of the interface type api.
func newTelemetry(backend any, api reflect.Type, opts []Option, counters map[string]instrument) (*telemetry, error) {
	c := config{}
	for _, o := range opts {
		if o == nil {
			return nil, invalidf("nil option")
		}
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	global := c.tp == nil
	if global {
		c.tp = otel.GetTracerProvider()
	}
	if c.mp == nil {
		c.mp = otel.GetMeterProvider()
	}
	if c.system == "" {
		c.system = systemOf(backend)
	}
	meter := c.mp.Meter(ScopeName)
	t := &telemetry{global: global, tracer: c.tp.Tracer(ScopeName), system: semconv.DBSystemNameKey.String(c.system),
		counters: map[string]metric.Int64Counter{}, ops: map[string]*operation{}}
	var err error
	t.duration, err = meter.Float64Histogram("db.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of pipestate calls."), metric.WithExplicitBucketBoundaries(durationBuckets...))
	if err != nil {
		return nil, err
	}
	for i := range api.NumMethod() {
		t.newOp(api.Method(i).Name)
	}
	for op, in := range counters {
		ctr, ok := t.counters[in.name]
		if !ok {
			if ctr, err = meter.Int64Counter(in.name, metric.WithUnit(in.unit), metric.WithDescription(in.desc)); err != nil {
				return nil, err
			}
			t.counters[in.name] = ctr
		}
		o := t.ops[op]
		o.counter = ctr
		o.outcomes = map[string]metric.MeasurementOption{}
		for _, out := range in.outcomes {
			attrs := append([]attribute.KeyValue{t.system, AttrOutcome.String(out)}, in.extra...)
			o.outcomes[out] = metric.WithAttributeSet(attribute.NewSet(attrs...))
		}
	}
	return t, nil
}

// newOp adds the operation named name with its attribute sets.
func (t *telemetry) newOp(name string) {
	opAttr := semconv.DBOperationNameKey.String(name)
	o := &operation{name: name, spanOpts: []trace.SpanStartOption{
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(t.system, opAttr)}}
	for k := errNone; k < numErrKinds; k++ {
		attrs := []attribute.KeyValue{t.system, opAttr}
		if k != errNone {
			attrs = append(attrs, semconv.ErrorTypeKey.String(errKindNames[k]))
		}
		o.durations[k] = metric.WithAttributeSet(attribute.NewSet(attrs...))
	}
	t.ops[name] = o
}

// ids are the identifiers a span carries; empty ones are left out. They never go on
// metrics (unbounded values).
type ids struct {
	pipeline, run, lockKey, entity, eventID string
	keys                                    int
}

func (i ids) attrs() []attribute.KeyValue {
	var out []attribute.KeyValue
	for _, a := range []struct {
		k attribute.Key
		v string
	}{{AttrPipeline, i.pipeline}, {AttrRun, i.run}, {AttrLockKey, i.lockKey}, {AttrEntity, i.entity}, {AttrEventID, i.eventID}} {
		if a.v != "" {
			out = append(out, a.k.String(a.v))
		}
	}
	if i.keys > 0 {
		out = append(out, AttrKeys.Int(i.keys))
	}
	return out
}

// call is one observed call in flight.
type call struct {
	ctx   context.Context
	op    *operation
	t     *telemetry
	span  trace.Span
	begin time.Time // zero when the duration is not recorded
}

// start begins the span of the operation named name (IDs are set only on a
// recording span) and times the call when the duration histogram is enabled.
func (t *telemetry) start(ctx context.Context, name string, id ids) (context.Context, call) {
	op := t.ops[name]
	span := noSpan
	if !t.global || reflect.TypeOf(otel.GetTracerProvider()) != globalTracerProvider {
		ctx, span = t.tracer.Start(ctx, op.name, op.spanOpts...)
		if span.IsRecording() {
			span.SetAttributes(id.attrs()...)
		}
	}
	c := call{ctx: ctx, op: op, t: t, span: span}
	if t.duration.Enabled(ctx) {
		c.begin = time.Now()
	}
	return ctx, c
}

// end records the call's outcome ("" for none) and error, and returns err.
func (c call) end(outcome string, err error) error {
	k := kindOf(err)
	if c.span.IsRecording() {
		if outcome != "" {
			c.span.SetAttributes(AttrOutcome.String(outcome))
		}
		if k != errNone {
			c.span.SetAttributes(semconv.ErrorTypeKey.String(errKindNames[k]))
			if !k.expected() {
				c.span.RecordError(err)
				c.span.SetStatus(codes.Error, err.Error())
			}
		}
	}
	c.span.End()
	if !c.begin.IsZero() {
		c.t.duration.Record(c.ctx, time.Since(c.begin).Seconds(), c.op.durations[k])
	}
	if outcome != "" && c.op.counter != nil && c.op.counter.Enabled(c.ctx) {
		if m, ok := c.op.outcomes[outcome]; ok {
			c.op.counter.Add(c.ctx, 1, m)
		}
	}
	return err
}

// done ends a call that has no outcome beyond its error.
func (c call) done(err error) error { return c.end("", err) }

// stream passes the records of seq to yield and ends the call when the sequence
// ends: a long-lived call, so its span carries the number of records
// (pipestate.records) and no duration is recorded; the error that ends a sequence
// is recorded unless it is the context's own end.
func stream[R any](c call, seq iter.Seq2[R, error], yield func(R, error) bool) {
	n := 0
	var last error
	for r, err := range seq {
		if err != nil {
			last = err
		} else {
			n++
		}
		if !yield(r, err) {
			break
		}
	}
	c.begin = time.Time{}
	if c.span.IsRecording() {
		c.span.SetAttributes(AttrRecords.Int(n))
	}
	if errors.Is(last, context.Canceled) || errors.Is(last, context.DeadlineExceeded) {
		last = nil
	}
	_ = c.done(last)
}
