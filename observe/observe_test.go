package observe_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/observe"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/provider/memprovider"
	"github.com/pipestate/pipestate/provider/redisprovider"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/memstate"
	"github.com/pipestate/pipestate/state/redisstate"
	"github.com/pipestate/pipestate/types"
)

// rig is an SDK that keeps every span and metric in memory.
type rig struct {
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	opts   []observe.Option
}

func newRig(t *testing.T) *rig {
	r := &rig{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })
	r.opts = []observe.Option{observe.WithTracerProvider(tp), observe.WithMeterProvider(mp)}
	return r
}

// count sums the data points of the counter name whose attributes include want.
func (r *rig) count(t *testing.T, name string, want ...attribute.KeyValue) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				if hasAll(dp.Attributes, want) {
					n += dp.Value
				}
			}
		}
	}
	return n
}

// durations counts the duration measurements of operation op with attributes want.
func (r *rig) durations(t *testing.T, op string, want ...attribute.KeyValue) uint64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	want = append(want, attribute.String("db.operation.name", op))
	var n uint64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "db.client.operation.duration" {
				continue
			}
			if m.Unit != "s" {
				t.Errorf("duration unit %q, want s", m.Unit)
			}
			for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
				if hasAll(dp.Attributes, want) {
					n += dp.Count
				}
			}
		}
	}
	return n
}

func hasAll(set attribute.Set, want []attribute.KeyValue) bool {
	for _, kv := range want {
		if v, ok := set.Value(kv.Key); !ok || v != kv.Value {
			return false
		}
	}
	return true
}

func outcome(s string) attribute.KeyValue { return observe.AttrOutcome.String(s) }

// backend opens instances of one provider backend over shared storage.
type backend struct {
	name   string
	system string
	open   func(t *testing.T) func(owner string) provider.Provider
}

func backends() []backend {
	redisOn := func(client func(t *testing.T) goredis.UniversalClient) func(t *testing.T) func(string) provider.Provider {
		return func(t *testing.T) func(string) provider.Provider {
			c := client(t)
			prefix := "obs:" + testenv.RedisPrefix(t)
			return func(owner string) provider.Provider {
				p, err := redisprovider.New(c, redisprovider.WithKeyPrefix(prefix), redisprovider.WithOwner(owner))
				if err != nil {
					t.Fatal(err)
				}
				return p
			}
		}
	}
	return []backend{
		{"memory", "memory", func(t *testing.T) func(string) provider.Provider {
			root, err := memprovider.New()
			if err != nil {
				t.Fatal(err)
			}
			return func(owner string) provider.Provider {
				p, err := root.NewHandle(memprovider.WithOwner(owner))
				if err != nil {
					t.Fatal(err)
				}
				return p
			}
		}},
		{"miniredis", "redis", redisOn(func(t *testing.T) goredis.UniversalClient {
			m := miniredis.RunT(t)
			c := goredis.NewClient(&goredis.Options{Addr: m.Addr()})
			t.Cleanup(func() { _ = c.Close() })
			return c
		})},
		{"redis-server", "redis", redisOn(func(t *testing.T) goredis.UniversalClient {
			c := goredis.NewClient(&goredis.Options{Addr: testenv.RedisAddr(t)})
			t.Cleanup(func() { _ = c.Close() })
			return c
		})},
		{"dynamodb-local", "aws.dynamodb", func(t *testing.T) func(string) provider.Provider {
			c := testenv.DynamoDBClient(t)
			table := testenv.UniqueName(t)
			testenv.DynamoDBTable(t, c, table, func(ctx context.Context, name string) error { return ddbprovider.CreateTable(ctx, c, name) })
			return func(owner string) provider.Provider {
				p, err := ddbprovider.New(c, table, ddbprovider.WithOwner(owner))
				if err != nil {
					t.Fatal(err)
				}
				return p
			}
		}},
	}
}

// race runs f(i) for i in [0, n) from a barrier and waits for all.
func race(n int, f func(i int)) {
	var start, done sync.WaitGroup
	start.Add(1)
	for i := range n {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			f(i)
		}()
	}
	start.Done()
	done.Wait()
}

// TestOutcomesUnderRaces: a 32-way CAS race records 1 swapped and 31 conflict; 16
// lock (and lease) acquirers record 1 acquired and 15 held; every call records its
// duration with the backend's db.system.name, and spans carry the outcome.
func TestOutcomesUnderRaces(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			r := newRig(t)
			open := b.open(t)
			instances := make([]provider.Provider, 16)
			for i := range instances {
				p, err := observe.Provider(open("worker-"+string(rune('a'+i))), r.opts...)
				if err != nil {
					t.Fatal(err)
				}
				if err := p.Start(t.Context()); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = p.Stop(context.Background()) })
				instances[i] = p
			}
			ctx := t.Context()
			run := types.RunState{RunID: "run-1", PipelineID: "orders", Status: types.RunPending}
			if err := instances[0].PutRunState(ctx, run); err != nil {
				t.Fatal(err)
			}
			run.Status = types.RunRunning
			errs := make(chan error, 64)
			race(32, func(i int) {
				if _, err := instances[i%16].CompareAndSwapRunState(ctx, "run-1", 0, run); err != nil {
					errs <- err
				}
			})
			race(16, func(i int) {
				if _, err := instances[i].AcquireLock(ctx, "eval:orders", 0); err != nil {
					errs <- err
				}
			})
			race(16, func(i int) {
				_, err := instances[i].(provider.Leaser).AcquireLease(ctx, "lease:orders", time.Minute)
				if err != nil && !errors.Is(err, provider.ErrLockHeld) {
					errs <- err
				}
			})
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			system := attribute.String("db.system.name", b.system)
			for _, c := range []struct {
				name string
				want int64
				kv   []attribute.KeyValue
			}{
				{"pipestate.run.cas", 1, []attribute.KeyValue{system, outcome(observe.OutcomeSwapped)}},
				{"pipestate.run.cas", 31, []attribute.KeyValue{system, outcome(observe.OutcomeConflict)}},
				{"pipestate.lock.acquire", 1, []attribute.KeyValue{observe.AttrLockKind.String("lock"), outcome(observe.OutcomeAcquired)}},
				{"pipestate.lock.acquire", 15, []attribute.KeyValue{observe.AttrLockKind.String("lock"), outcome(observe.OutcomeHeld)}},
				{"pipestate.lock.acquire", 1, []attribute.KeyValue{observe.AttrLockKind.String("lease"), outcome(observe.OutcomeAcquired)}},
				{"pipestate.lock.acquire", 15, []attribute.KeyValue{observe.AttrLockKind.String("lease"), outcome(observe.OutcomeHeld)}},
			} {
				if got := r.count(t, c.name, c.kv...); got != c.want {
					t.Errorf("%s %v = %d, want %d", c.name, c.kv, got, c.want)
				}
			}
			if got := r.durations(t, "CompareAndSwapRunState", system); got != 32 {
				t.Errorf("CAS durations = %d, want 32", got)
			}
			if got := r.durations(t, "AcquireLease", attribute.String("error.type", "lock_held")); got != 15 {
				t.Errorf("AcquireLease durations with error.type lock_held = %d, want 15", got)
			}
			var swapped, conflict int
			for _, s := range r.spans.Ended() {
				if s.Name() != "CompareAndSwapRunState" {
					continue
				}
				attrs := attribute.NewSet(s.Attributes()...)
				if !hasAll(attrs, []attribute.KeyValue{system, observe.AttrRun.String("run-1"), observe.AttrPipeline.String("orders")}) {
					t.Errorf("CAS span attributes %v lack the system or IDs", s.Attributes())
				}
				switch v, _ := attrs.Value(observe.AttrOutcome); v.AsString() {
				case observe.OutcomeSwapped:
					swapped++
				case observe.OutcomeConflict:
					conflict++
				}
			}
			if swapped != 1 || conflict != 31 {
				t.Errorf("CAS spans: %d swapped, %d conflict; want 1 and 31", swapped, conflict)
			}
		})
	}
}

// TestRedeliveriesCounted: a redelivered event is a duplicate for a Deduper and for
// MergeUpdateOnce, on memory, miniredis and redis-server.
func TestRedeliveriesCounted(t *testing.T) {
	type stores struct {
		once  state.Store[int64]
		dedup state.Deduper
	}
	redisStores := func(t *testing.T, c goredis.UniversalClient) stores {
		prefix := "obs:" + testenv.RedisPrefix(t)
		s, err := redisstate.NewInt64SumStore(c, prefix)
		if err != nil {
			t.Fatal(err)
		}
		d, err := redisstate.NewDeduper(c, prefix)
		if err != nil {
			t.Fatal(err)
		}
		return stores{s, d}
	}
	for _, tc := range []struct {
		name string
		open func(t *testing.T) stores
	}{
		{"memory", func(t *testing.T) stores {
			s, err := memstate.New[int64](monoid.Sum[int64]{})
			if err != nil {
				t.Fatal(err)
			}
			d, err := memstate.NewDeduper()
			if err != nil {
				t.Fatal(err)
			}
			return stores{s, d}
		}},
		{"miniredis", func(t *testing.T) stores {
			c := goredis.NewClient(&goredis.Options{Addr: miniredis.RunT(t).Addr()})
			t.Cleanup(func() { _ = c.Close() })
			return redisStores(t, c)
		}},
		{"redis-server", func(t *testing.T) stores {
			c := goredis.NewClient(&goredis.Options{Addr: testenv.RedisAddr(t)})
			t.Cleanup(func() { _ = c.Close() })
			return redisStores(t, c)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			raw := tc.open(t)
			s, err := observe.Store(raw.once, r.opts...)
			if err != nil {
				t.Fatal(err)
			}
			d, err := observe.Deduper(raw.dedup, r.opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close(); _ = d.Close() })
			ctx := t.Context()
			once := s.(state.OnceStore[int64])
			k := state.Key{Entity: "orders"}
			for range 2 {
				if _, err := once.MergeUpdateOnce(ctx, "ev-1", k, 5, time.Hour); err != nil {
					t.Fatal(err)
				}
				if _, err := d.MarkSeen(ctx, "ev-1"); err != nil {
					t.Fatal(err)
				}
			}
			if v, _, err := s.Get(ctx, k); err != nil || v != 5 {
				t.Fatalf("Get = %d, %v; want 5", v, err)
			}
			for _, c := range []struct {
				name, outcome string
			}{
				{"pipestate.merge.once", observe.OutcomeApplied}, {"pipestate.merge.once", observe.OutcomeDuplicate},
				{"pipestate.dedup.claims", observe.OutcomeFirst}, {"pipestate.dedup.claims", observe.OutcomeDuplicate},
			} {
				if got := r.count(t, c.name, outcome(c.outcome)); got != 1 {
					t.Errorf("%s %s = %d, want 1", c.name, c.outcome, got)
				}
			}
			if got := r.durations(t, "Get"); got != 1 {
				t.Errorf("Get durations = %d, want 1", got)
			}
		})
	}
}

// TestErrorsRecorded: a failed call's span has status Error and error.type names the
// library's sentinel; an expected "held" outcome does not set status Error.
func TestErrorsRecorded(t *testing.T) {
	r := newRig(t)
	mem, err := memprovider.New()
	if err != nil {
		t.Fatal(err)
	}
	p, err := observe.Provider(mem, r.opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendEvent(t.Context(), types.Event{}); !errors.Is(err, provider.ErrInvalidArgument) {
		t.Fatalf("AppendEvent of an invalid event: %v", err)
	}
	spans := r.spans.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	s := spans[0]
	if s.Status().Code != codes.Error {
		t.Errorf("status %v, want Error", s.Status())
	}
	set := attribute.NewSet(s.Attributes()...)
	if v, _ := set.Value("error.type"); v.AsString() != "invalid_argument" {
		t.Errorf("error.type = %q, want invalid_argument", v.AsString())
	}
	if got := r.durations(t, "AppendEvent", attribute.String("error.type", "invalid_argument")); got != 1 {
		t.Errorf("AppendEvent durations with error.type = %d, want 1", got)
	}
}

func TestBadOptions(t *testing.T) {
	mem, err := memprovider.New()
	if err != nil {
		t.Fatal(err)
	}
	for name, opts := range map[string][]observe.Option{
		"nil option":          {nil},
		"nil tracer provider": {observe.WithTracerProvider(nil)},
		"nil meter provider":  {observe.WithMeterProvider(nil)},
		"empty system":        {observe.WithSystem("")},
	} {
		if _, err := observe.Provider(mem, opts...); !errors.Is(err, provider.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
	var typedNil *memprovider.Provider
	if _, err := observe.Provider(typedNil); !errors.Is(err, provider.ErrInvalidArgument) {
		t.Errorf("typed nil provider: %v, want ErrInvalidArgument", err)
	}
}

// TestStreamsAndCreates: a follow is one span carrying the number of records it
// yielded, ended without an error by the caller's cancel; creates count created
// and exists.
func TestStreamsAndCreates(t *testing.T) {
	r := newRig(t)
	mem, err := memprovider.New()
	if err != nil {
		t.Fatal(err)
	}
	p, err := observe.Provider(mem, r.opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for range 3 {
		if err := p.AppendEvent(ctx, types.Event{Kind: "K", PipelineID: "orders"}); err != nil {
			t.Fatal(err)
		}
	}
	followCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := 0
	for _, err := range p.(provider.EventFollower).FollowEvents(followCtx, "orders", "") {
		if err != nil {
			break
		}
		if n++; n == 3 {
			cancel()
		}
	}
	var follows int
	for _, s := range r.spans.Ended() {
		if s.Name() != "FollowEvents" {
			continue
		}
		follows++
		set := attribute.NewSet(s.Attributes()...)
		if v, _ := set.Value(observe.AttrRecords); v.AsInt64() != 3 {
			t.Errorf("FollowEvents span records = %d, want 3", v.AsInt64())
		}
		if s.Status().Code == codes.Error {
			t.Errorf("a follow ended by the caller's cancel has status Error: %v", s.Status())
		}
	}
	if follows != 1 {
		t.Errorf("%d FollowEvents spans, want 1", follows)
	}
	c := p.(provider.RunCreator)
	run := types.RunState{RunID: "r1", PipelineID: "orders", Status: types.RunPending}
	for range 2 {
		if _, err := c.CreateRunState(ctx, run); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range []string{observe.OutcomeCreated, observe.OutcomeExists} {
		if got := r.count(t, "pipestate.run.create", outcome(o)); got != 1 {
			t.Errorf("pipestate.run.create %s = %d, want 1", o, got)
		}
	}
}
