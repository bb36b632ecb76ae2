package observe_test

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	goredis "github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pipestate/pipestate/internal/modversion"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/observe"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/provider/redisprovider"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/redisstate"
)

// spanAttrs returns the attributes of the last span named name.
func spanAttrs(t *testing.T, spans *tracetest.SpanRecorder, name string) attribute.Set {
	t.Helper()
	ended := spans.Ended()
	for i := len(ended) - 1; i >= 0; i-- {
		if ended[i].Name() == name {
			return attribute.NewSet(ended[i].Attributes()...)
		}
	}
	t.Fatalf("no span %s among %d", name, len(ended))
	return attribute.Set{}
}

// durationAttrs returns the attribute sets of the duration measurements of op.
func durationAttrs(t *testing.T, reader *sdkmetric.ManualReader, op string) []attribute.Set {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var out []attribute.Set
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "db.client.operation.duration" {
				continue
			}
			for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
				if v, _ := dp.Attributes.Value("db.operation.name"); v.AsString() == op {
					out = append(out, dp.Attributes)
				}
			}
		}
	}
	return out
}

func wantAttrs(t *testing.T, what string, set attribute.Set, want map[string]attribute.Value, absent ...string) {
	t.Helper()
	for k, v := range want {
		got, ok := set.Value(attribute.Key(k))
		if !ok || got != v {
			t.Errorf("%s: %s = %v (present %v), want %v", what, k, got.String(), ok, v.String())
		}
	}
	for _, k := range absent {
		if v, ok := set.Value(attribute.Key(k)); ok {
			t.Errorf("%s: %s = %v, want none", what, k, v.String())
		}
	}
}

// TestServerAndNamespace: the database-client conventions' attributes. A Redis
// provider's spans carry server.address, server.port and db.namespace (the
// database index) from WithEndpoint and WithNamespace and its key prefix, read
// from the provider, as pipestate.key_prefix; a DynamoDB provider's carry its
// table as db.collection.name and aws.dynamodb.table_names. The duration
// measurements carry the bounded ones (server.*, db.namespace, db.collection.name)
// and never the key prefix.
func TestServerAndNamespace(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		m := miniredis.RunT(t)
		c := goredis.NewClient(&goredis.Options{Addr: m.Addr()})
		t.Cleanup(func() { _ = c.Close() })
		prefix := "obs:" + testenv.RedisPrefix(t)
		rp, err := redisprovider.New(c, redisprovider.WithKeyPrefix(prefix))
		if err != nil {
			t.Fatal(err)
		}
		spans, reader, opts := sdk(t)
		p, err := observe.Provider(rp, append(opts, observe.WithEndpoint(m.Addr()), observe.WithNamespace("0"))...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.GetRunState(t.Context(), "r1"); err != nil {
			t.Fatal(err)
		}
		want := map[string]attribute.Value{
			"db.system.name":   attribute.StringValue("redis"),
			"server.address":   attribute.StringValue("127.0.0.1"),
			"server.port":      attribute.IntValue(m.Server().Addr().Port),
			"db.namespace":     attribute.StringValue("0"),
			"pipestate.run.id": attribute.StringValue("r1"),
		}
		wantAttrs(t, "span", spanAttrs(t, spans, "GetRunState"), merge(want, "pipestate.key_prefix", attribute.StringValue(prefix)),
			"aws.dynamodb.table_names", "db.collection.name")
		delete(want, "pipestate.run.id")
		for _, set := range durationAttrs(t, reader, "GetRunState") {
			wantAttrs(t, "duration", set, want, "pipestate.key_prefix", "pipestate.run.id")
		}
	})
	t.Run("dynamodb", func(t *testing.T) {
		// No server needed: the attributes are the decorator's, whatever the call returns.
		c := ddb.New(ddb.Options{Region: "eu-west-1", BaseEndpoint: aws.String("http://127.0.0.1:1"), RetryMaxAttempts: 1,
			Credentials: credentials.NewStaticCredentialsProvider("k", "s", "")})
		table := "orders-state"
		dp, err := ddbprovider.New(c, table)
		if err != nil {
			t.Fatal(err)
		}
		spans, reader, opts := sdk(t)
		p, err := observe.Provider(dp, append(opts, observe.WithEndpoint("https://dynamodb.eu-west-1.amazonaws.com"))...)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		_, _ = p.ListPipelines(ctx) // connection refused
		attrs := spanAttrs(t, spans, "ListPipelines")
		want := map[string]attribute.Value{
			"db.system.name":     attribute.StringValue("aws.dynamodb"),
			"server.address":     attribute.StringValue("dynamodb.eu-west-1.amazonaws.com"),
			"server.port":        attribute.IntValue(443),
			"db.collection.name": attribute.StringValue(table),
		}
		wantAttrs(t, "span", attrs, want, "db.namespace", "pipestate.key_prefix")
		if v, _ := attrs.Value("aws.dynamodb.table_names"); len(v.AsStringSlice()) != 1 || v.AsStringSlice()[0] != table {
			t.Errorf("aws.dynamodb.table_names = %v, want [%s]", v.String(), table)
		}
		for _, set := range durationAttrs(t, reader, "ListPipelines") {
			wantAttrs(t, "duration", set, want, "aws.dynamodb.table_names")
		}
	})
	t.Run("store options", func(t *testing.T) {
		m := miniredis.RunT(t)
		c := goredis.NewClient(&goredis.Options{Addr: m.Addr()})
		t.Cleanup(func() { _ = c.Close() })
		s, err := redisstate.NewInt64SumStore(c, "obs:"+testenv.RedisPrefix(t))
		if err != nil {
			t.Fatal(err)
		}
		spans, _, opts := sdk(t)
		o, err := observe.Store[int64](s, append(opts, observe.WithServer("cache.internal", 6380), observe.WithKeyPrefix("app:views"))...)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.MergeUpdate(t.Context(), state.Key{Entity: "e"}, 1, 0); err != nil {
			t.Fatal(err)
		}
		wantAttrs(t, "span", spanAttrs(t, spans, "MergeUpdate"), map[string]attribute.Value{
			"server.address":       attribute.StringValue("cache.internal"),
			"server.port":          attribute.IntValue(6380),
			"pipestate.key_prefix": attribute.StringValue("app:views"),
		}, "db.namespace")
	})
}

func merge(m map[string]attribute.Value, k string, v attribute.Value) map[string]attribute.Value {
	out := map[string]attribute.Value{k: v}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func sdk(t *testing.T) (*tracetest.SpanRecorder, *sdkmetric.ManualReader, []observe.Option) {
	r := newRig(t)
	return r.spans, r.reader, r.opts
}

// TestScopeVersion: every tracer and meter of the decorators names its
// instrumentation scope with the module version from the build information.
func TestScopeVersion(t *testing.T) {
	if observe.ScopeVersion() != modversion.Version() || observe.ScopeVersion() == "" {
		t.Fatalf("ScopeVersion() = %q, want the build's %q", observe.ScopeVersion(), modversion.Version())
	}
	r := newRig(t)
	p, err := observe.Provider(mustMemory(t), r.opts...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.ListPipelines(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, s := range r.spans.Ended() {
		if sc := s.InstrumentationScope(); sc.Name != observe.ScopeName || sc.Version != observe.ScopeVersion() {
			t.Errorf("span scope %s %q, want %s %q", sc.Name, sc.Version, observe.ScopeName, observe.ScopeVersion())
		}
	}
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	if len(rm.ScopeMetrics) == 0 {
		t.Fatal("no metrics")
	}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name == observe.ScopeName && sm.Scope.Version != observe.ScopeVersion() {
			t.Errorf("meter scope version %q, want %q", sm.Scope.Version, observe.ScopeVersion())
		}
	}
}

func TestEndpointOptions(t *testing.T) {
	for _, tc := range []struct {
		in   string
		addr string
		port int
	}{
		{"localhost:6379", "localhost", 6379},
		{"10.0.0.7", "10.0.0.7", 0},
		{"[::1]:7000", "::1", 7000},
		{"http://127.0.0.1:8000", "127.0.0.1", 8000},
		{"https://dynamodb.us-east-1.amazonaws.com", "dynamodb.us-east-1.amazonaws.com", 443},
		{"redis://cache:6380/2", "cache", 6380},
		{"rediss://cache", "cache", 6379},
	} {
		spans := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
		p, err := observe.Provider(mustMemory(t), observe.WithTracerProvider(tp), observe.WithEndpoint(tc.in))
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		_ = p.Ping(t.Context())
		want := map[string]attribute.Value{"server.address": attribute.StringValue(tc.addr)}
		var absent []string
		if tc.port > 0 {
			want["server.port"] = attribute.IntValue(tc.port)
		} else {
			absent = append(absent, "server.port")
		}
		wantAttrs(t, tc.in, spanAttrs(t, spans, "Ping"), want, absent...)
	}
	for _, bad := range []observe.Option{observe.WithEndpoint(""), observe.WithEndpoint("http://"), observe.WithEndpoint("host:port"),
		observe.WithEndpoint("::1"), observe.WithServer("", 1), observe.WithServer("h", 70000), observe.WithNamespace(""),
		observe.WithKeyPrefix(""), observe.WithTable("")} {
		if _, err := observe.Provider(mustMemory(t), bad); err == nil {
			t.Errorf("a bad option was accepted")
		}
	}
}

func mustMemory(t *testing.T) provider.Provider {
	t.Helper()
	return backends()[0].open(t)("o")
}
