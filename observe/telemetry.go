package observe

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/pipestate/pipestate"
	"github.com/pipestate/pipestate/internal/modversion"
	"github.com/pipestate/pipestate/internal/nilcheck"
)

// ScopeName is the instrumentation scope of every tracer and meter of this package.
// The scope's version is ScopeVersion().
const ScopeName = "github.com/pipestate/pipestate/observe"

// ScopeVersion returns the version of the instrumentation scope of every tracer and
// meter of this package: the version of the github.com/pipestate/pipestate module
// the program was built with, from its build information (v0.1.0 in a program that
// requires v0.1.0; "(devel)" when the build recorded none, as in this repository's
// own tests).
func ScopeVersion() string { return modversion.Version() }

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
	// AttrKeyPrefix is the key prefix of a Redis backend (spans only): the Redis
	// conventions reserve db.namespace for the database index.
	AttrKeyPrefix = attribute.Key("pipestate.key_prefix")
)

// Option configures a decorator.
type Option func(*config) error

type config struct {
	tp     trace.TracerProvider
	mp     metric.MeterProvider
	system string
	// Where the backend is, for the server.*, db.* and aws.dynamodb.* attributes.
	address   string
	port      int
	namespace string
	keyPrefix string
	table     string
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

// WithServer sets server.address and server.port, the server the backend talks to
// (a host name or IP address; port 0 leaves server.port out). A decorator cannot
// see the backend's client, so without this option (or WithEndpoint) its spans
// and duration measurements carry no server.address.
func WithServer(address string, port int) Option {
	return func(c *config) error {
		if address == "" || port < 0 || port > 65535 {
			return invalidf("WithServer: address %q, port %d", address, port)
		}
		c.address, c.port = address, port
		return nil
	}
}

// WithEndpoint is WithServer for an address as clients take it: "host:port" (a
// go-redis Addr), "host", or a URL ("http://127.0.0.1:8000", a DynamoDB endpoint;
// "redis://host:6379/0"), whose port defaults to its scheme's (443 for https, 80
// for http, 6379 for redis and rediss).
func WithEndpoint(endpoint string) Option {
	return func(c *config) error {
		host, port, err := parseEndpoint(endpoint)
		if err != nil {
			return invalidf("WithEndpoint: %q: %v", endpoint, err)
		}
		c.address, c.port = host, port
		return nil
	}
}

// defaultPorts are the ports of the URL schemes WithEndpoint knows.
var defaultPorts = map[string]int{"http": 80, "https": 443, "redis": 6379, "rediss": 6379}

func parseEndpoint(endpoint string) (string, int, error) {
	hostport := endpoint
	port := 0
	if strings.Contains(endpoint, "://") {
		u, err := url.Parse(endpoint)
		if err != nil {
			return "", 0, err
		}
		hostport, port = u.Host, defaultPorts[u.Scheme]
		if u.Port() == "" {
			if h := u.Hostname(); h != "" {
				return h, port, nil
			}
			return "", 0, errors.New("no host")
		}
	}
	host, p, err := net.SplitHostPort(hostport)
	if err != nil {
		if strings.Contains(hostport, ":") && !strings.HasPrefix(hostport, "[") {
			return "", 0, err // an IPv6 address needs brackets, or a bad port
		}
		host, p = strings.Trim(hostport, "[]"), ""
	}
	if p != "" {
		if port, err = strconv.Atoi(p); err != nil || port < 0 || port > 65535 {
			return "", 0, fmt.Errorf("bad port %q", p)
		}
	}
	if host == "" {
		return "", 0, errors.New("no host")
	}
	return host, port, nil
}

// WithNamespace sets db.namespace, the database within the server: for Redis the
// database index the client selects ("0"), as the Redis conventions define it
// (the key prefix goes on pipestate.key_prefix); for any other backend what its
// conventions name. Without it, db.namespace is left out.
func WithNamespace(namespace string) Option {
	return func(c *config) error {
		if namespace == "" {
			return invalidf("WithNamespace: empty namespace")
		}
		c.namespace = namespace
		return nil
	}
}

// WithKeyPrefix sets pipestate.key_prefix, the key prefix of a Redis backend, for a
// value that does not report one (a state store; a Redis provider has a KeyPrefix
// method, which the decorator reads).
func WithKeyPrefix(prefix string) Option {
	return func(c *config) error {
		if prefix == "" {
			return invalidf("WithKeyPrefix: empty prefix")
		}
		c.keyPrefix = prefix
		return nil
	}
}

// WithTable sets the DynamoDB table of the backend (db.collection.name and
// aws.dynamodb.table_names), for a value that does not report one (a state store;
// a DynamoDB provider has a Table method, which the decorator reads).
func WithTable(table string) Option {
	return func(c *config) error {
		if table == "" {
			return invalidf("WithTable: empty table")
		}
		c.table = table
		return nil
	}
}

// describe fills what the options left unset from what backend reports about
// itself: KeyPrefix() string (the Redis provider), Table() string (the DynamoDB
// provider).
func (c *config) describe(backend any) {
	if p, ok := backend.(interface{ KeyPrefix() string }); ok && c.keyPrefix == "" {
		c.keyPrefix = p.KeyPrefix()
	}
	if p, ok := backend.(interface{ Table() string }); ok && c.table == "" {
		c.table = p.Table()
	}
}

// attrs returns the attributes of every span (span) and every duration
// measurement (metric, bounded: one value per decorator) of the decorator.
func (c *config) attrs() (span, measure []attribute.KeyValue) {
	if c.address != "" {
		measure = append(measure, semconv.ServerAddressKey.String(c.address))
		if c.port > 0 {
			measure = append(measure, semconv.ServerPortKey.Int(c.port))
		}
	}
	if c.namespace != "" {
		measure = append(measure, semconv.DBNamespaceKey.String(c.namespace))
	}
	if c.table != "" {
		measure = append(measure, semconv.DBCollectionNameKey.String(c.table))
	}
	span = slices.Clone(measure)
	if c.table != "" {
		span = append(span, semconv.AWSDynamoDBTableNamesKey.StringSlice([]string{c.table}))
	}
	if c.keyPrefix != "" {
		span = append(span, AttrKeyPrefix.String(c.keyPrefix))
	}
	return span, measure
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
	if s, ok := builtinSystems[name]; ok {
		return s
	}
	if name == "" {
		return "_OTHER"
	}
	return name
}

// builtinSystems is the db.system.name of each built-in backend package (the
// semantic conventions' names, unchanged by the v0.2.0 package renames, so
// dashboards keep working); any other package is named by its package name.
var builtinSystems = map[string]string{
	"memprovider": "memory", "memstate": "memory",
	"redisprovider": "redis", "redisstate": "redis",
	"ddbprovider": "aws.dynamodb", "ddbstate": "aws.dynamodb",
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
	global                 bool
	tracer                 trace.Tracer
	system                 attribute.KeyValue
	spanAttrs, metricAttrs []attribute.KeyValue // where the backend is; see config.attrs
	duration               metric.Float64Histogram
	counters               map[string]metric.Int64Counter
	ops                    map[string]*operation
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
	c.describe(backend)
	version := ScopeVersion()
	meter := c.mp.Meter(ScopeName, metric.WithInstrumentationVersion(version))
	t := &telemetry{global: global, tracer: c.tp.Tracer(ScopeName, trace.WithInstrumentationVersion(version)),
		system: semconv.DBSystemNameKey.String(c.system), counters: map[string]metric.Int64Counter{}, ops: map[string]*operation{}}
	t.spanAttrs, t.metricAttrs = c.attrs()
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
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(append([]attribute.KeyValue{t.system, opAttr}, t.spanAttrs...)...)}}
	for k := errNone; k < numErrKinds; k++ {
		attrs := append([]attribute.KeyValue{t.system, opAttr}, t.metricAttrs...)
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
