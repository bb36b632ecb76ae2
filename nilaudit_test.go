package pipestate_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	goredis "github.com/redis/go-redis/v9"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/pipestate/pipestate"
	"github.com/pipestate/pipestate/breaker"
	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/monoid/sketch/hll"
	"github.com/pipestate/pipestate/observe"
	"github.com/pipestate/pipestate/provider"
	pdynamodb "github.com/pipestate/pipestate/provider/dynamodb"
	pmemory "github.com/pipestate/pipestate/provider/memory"
	predis "github.com/pipestate/pipestate/provider/redis"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/cache"
	sdynamodb "github.com/pipestate/pipestate/state/dynamodb"
	smemory "github.com/pipestate/pipestate/state/memory"
	sredis "github.com/pipestate/pipestate/state/redis"
	"github.com/pipestate/pipestate/state/tiered"
	"github.com/pipestate/pipestate/types"
)

// TestConstructorsRefuseNils is the audit of every exported constructor and option
// that takes an interface or a pointer (clients, stores, monoids, providers,
// leasers, loggers, meter and tracer providers, clocks): given nil, or a typed nil
// (an interface holding a nil pointer, which would panic on first use, often in a
// goroutine), each returns an error wrapping ErrInvalidArgument. A new constructor
// of that kind belongs in this table.
func TestConstructorsRefuseNils(t *testing.T) {
	ctx := context.Background()
	var (
		redisClient *goredis.Client
		ddbClient   *ddb.Client
		mp          *sdkmetric.MeterProvider
		tp          *sdktrace.TracerProvider
		log         *slog.Logger
		clock       func() time.Time
		memProvider *pmemory.Provider
		memStore    *smemory.Store[int64]
		memDeduper  *smemory.Deduper
		sumMonoid   *monoid.Sum[int64]
		bytesMonoid *hll.Monoid
	)
	mini := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1"}) // never dialled
	var sdynNil *sdynamodb.Int64SumStore
	sdynGood, err := sdynamodb.NewInt64SumStore(ddb.New(ddb.Options{Region: "us-east-1"}), "t")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mini.Close() })
	dyn := ddb.New(ddb.Options{Region: "us-east-1"})
	sum := monoid.Sum[int64]{}
	goodStore, err := smemory.New[int64](sum)
	if err != nil {
		t.Fatal(err)
	}
	sketch, err := hll.New(14)
	if err != nil {
		t.Fatal(err)
	}
	lease := types.Lease{Key: "k", Token: "t", Fence: 1, ExpiresAt: time.Now().Add(time.Minute)}
	err2 := func(_ any, err error) error { return err }
	err3 := func(_, _ any, err error) error { return err }
	for name, call := range map[string]func() error{
		"provider/redis.New client":                func() error { return err2(predis.New(redisClient)) },
		"provider/redis.WithMeterProvider":         func() error { return err2(predis.New(mini, predis.WithMeterProvider(mp))) },
		"provider/redis.WithLogger":                func() error { return err2(predis.New(mini, predis.WithLogger(log))) },
		"provider/redis.WithClock":                 func() error { return err2(predis.New(mini, predis.WithClock(clock))) },
		"provider/dynamodb.New client":             func() error { return err2(pdynamodb.New(ddbClient, "t")) },
		"provider/dynamodb.CreateTable":            func() error { return pdynamodb.CreateTable(ctx, ddbClient, "t") },
		"provider/dynamodb.WithMeterProvider":      func() error { return err2(pdynamodb.New(dyn, "t", pdynamodb.WithMeterProvider(mp))) },
		"provider/dynamodb.WithLogger":             func() error { return err2(pdynamodb.New(dyn, "t", pdynamodb.WithLogger(log))) },
		"provider/dynamodb.WithClock":              func() error { return err2(pdynamodb.New(dyn, "t", pdynamodb.WithClock(clock))) },
		"provider/memory.WithClock":                func() error { return err2(pmemory.New(pmemory.WithClock(clock))) },
		"provider/memory.WithMeterProvider":        func() error { return err2(pmemory.New(pmemory.WithMeterProvider(mp))) },
		"provider/memory.WithLogger":               func() error { return err2(pmemory.New(pmemory.WithLogger(log))) },
		"provider.KeepAlive":                       func() error { return err3(provider.KeepAlive(ctx, memProvider, lease, time.Minute)) },
		"observe.Provider":                         func() error { return err2(observe.Provider(memProvider)) },
		"observe.Store":                            func() error { return err2(observe.Store[int64](memStore)) },
		"observe.Deduper":                          func() error { return err2(observe.Deduper(memDeduper)) },
		"observe.WithTracerProvider":               func() error { return err2(observe.Store[int64](goodStore, observe.WithTracerProvider(tp))) },
		"observe.WithMeterProvider":                func() error { return err2(observe.Store[int64](goodStore, observe.WithMeterProvider(mp))) },
		"state.NewCoalescer store":                 func() error { return err2(state.NewCoalescer[int64](memStore, sum)) },
		"state.NewCoalescer monoid":                func() error { return err2(state.NewCoalescer[int64](goodStore, sumMonoid)) },
		"state.WithMeterProvider":                  func() error { return err2(state.NewCoalescer[int64](goodStore, sum, state.WithMeterProvider(mp))) },
		"state.WithLogger":                         func() error { return err2(state.NewCoalescer[int64](goodStore, sum, state.WithLogger(log))) },
		"breaker.WithMeterProvider":                func() error { return err2(breaker.New("b", breaker.WithMeterProvider(mp))) },
		"breaker.WithLogger":                       func() error { return err2(breaker.New("b", breaker.WithLogger(log))) },
		"breaker.WithFailure":                      func() error { return err2(breaker.New("b", breaker.WithFailure(nil))) },
		"state/tiered.New source":                  func() error { return err2(tiered.New[int64](sdynNil, mini, "p")) },
		"state/tiered.New client":                  func() error { return err2(tiered.New[int64](sdynGood, redisClient, "p")) },
		"state/tiered.WithMeterProvider":           func() error { return err2(tiered.New[int64](sdynGood, mini, "p", tiered.WithMeterProvider(mp))) },
		"state/tiered.WithClock":                   func() error { return err2(tiered.New[int64](sdynGood, mini, "p", tiered.WithClock(clock))) },
		"state/cache.New":                          func() error { return err2(cache.New[int64](memStore)) },
		"state/cache.WithMeterProvider":            func() error { return err2(cache.New[int64](goodStore, cache.WithMeterProvider(mp))) },
		"state/cache.WithClock":                    func() error { return err2(cache.New[int64](goodStore, cache.WithClock(clock))) },
		"state.NewSharded store":                   func() error { return err2(state.NewSharded[int64](memStore, sum, 4)) },
		"state.NewSharded monoid":                  func() error { return err2(state.NewSharded[int64](goodStore, sumMonoid, 4)) },
		"state/memory.New monoid":                  func() error { return err2(smemory.New[int64](sumMonoid)) },
		"state/memory.WithClock":                   func() error { return err2(smemory.New[int64](sum, smemory.WithClock(clock))) },
		"state/redis.NewInt64SumStore client":      func() error { return err2(sredis.NewInt64SumStore(redisClient, "p")) },
		"state/redis.NewFloat64SumStore client":    func() error { return err2(sredis.NewFloat64SumStore(redisClient, "p")) },
		"state/redis.NewInt64MaxStore client":      func() error { return err2(sredis.NewInt64MaxStore(redisClient, "p")) },
		"state/redis.NewBytesStore client":         func() error { return err2(sredis.NewBytesStore(redisClient, "p", sketch)) },
		"state/redis.NewBytesStore monoid":         func() error { return err2(sredis.NewBytesStore(mini, "p", bytesMonoid)) },
		"state/redis.NewDeduper client":            func() error { return err2(sredis.NewDeduper(redisClient, "p")) },
		"state/redis.WithMeterProvider":            func() error { return err2(sredis.NewInt64SumStore(mini, "p", sredis.WithMeterProvider(mp))) },
		"state/redis.WithLogger":                   func() error { return err2(sredis.NewInt64SumStore(mini, "p", sredis.WithLogger(log))) },
		"state/dynamodb.NewInt64SumStore client":   func() error { return err2(sdynamodb.NewInt64SumStore(ddbClient, "t")) },
		"state/dynamodb.NewFloat64SumStore client": func() error { return err2(sdynamodb.NewFloat64SumStore(ddbClient, "t")) },
		"state/dynamodb.NewInt64MaxStore client":   func() error { return err2(sdynamodb.NewInt64MaxStore(ddbClient, "t")) },
		"state/dynamodb.NewBytesStore client":      func() error { return err2(sdynamodb.NewBytesStore(ddbClient, "t", sketch)) },
		"state/dynamodb.NewBytesStore monoid":      func() error { return err2(sdynamodb.NewBytesStore(dyn, "t", bytesMonoid)) },
		"state/dynamodb.NewDeduper client":         func() error { return err2(sdynamodb.NewDeduper(ddbClient, "t")) },
		"state/dynamodb.CreateStoreTable":          func() error { return sdynamodb.CreateStoreTable(ctx, ddbClient, "t") },
		"state/dynamodb.CreateDedupTable":          func() error { return sdynamodb.CreateDedupTable(ctx, ddbClient, "t") },
		"state/dynamodb.WithMeterProvider":         func() error { return err2(sdynamodb.NewInt64SumStore(dyn, "t", sdynamodb.WithMeterProvider(mp))) },
		"state/dynamodb.WithLogger":                func() error { return err2(sdynamodb.NewInt64SumStore(dyn, "t", sdynamodb.WithLogger(log))) },
		"state/dynamodb.WithClock":                 func() error { return err2(sdynamodb.NewInt64SumStore(dyn, "t", sdynamodb.WithClock(clock))) },
	} {
		t.Run(name, func(t *testing.T) {
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil {
						err = errors.New("panicked")
					}
				}()
				err = call()
			}()
			if !errors.Is(err, pipestate.ErrInvalidArgument) {
				t.Errorf("got %v, want an error wrapping ErrInvalidArgument", err)
			}
		})
	}
}
