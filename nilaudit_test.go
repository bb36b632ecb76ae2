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
	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/provider/memprovider"
	"github.com/pipestate/pipestate/provider/redisprovider"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/cache"
	"github.com/pipestate/pipestate/state/ddbstate"
	"github.com/pipestate/pipestate/state/memstate"
	"github.com/pipestate/pipestate/state/redisstate"
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
		memProvider *memprovider.Provider
		memStore    *memstate.Store[int64]
		memDeduper  *memstate.Deduper
		sumMonoid   *monoid.Sum[int64]
		bytesMonoid *hll.Monoid
	)
	mini := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1"}) // never dialled
	var sdynNil *ddbstate.Int64SumStore
	sdynGood, err := ddbstate.NewInt64SumStore(ddb.New(ddb.Options{Region: "us-east-1"}), "t")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mini.Close() })
	dyn := ddb.New(ddb.Options{Region: "us-east-1"})
	sum := monoid.Sum[int64]{}
	goodStore, err := memstate.New[int64](sum)
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
		"provider/redisprovider.New client":          func() error { return err2(redisprovider.New(redisClient)) },
		"provider/redisprovider.WithMeterProvider":   func() error { return err2(redisprovider.New(mini, redisprovider.WithMeterProvider(mp))) },
		"provider/redisprovider.WithLogger":          func() error { return err2(redisprovider.New(mini, redisprovider.WithLogger(log))) },
		"provider/redisprovider.WithClock":           func() error { return err2(redisprovider.New(mini, redisprovider.WithClock(clock))) },
		"provider/ddbprovider.New client":            func() error { return err2(ddbprovider.New(ddbClient, "t")) },
		"provider/ddbprovider.CreateTable":           func() error { return ddbprovider.CreateTable(ctx, ddbClient, "t") },
		"provider/ddbprovider.WithMeterProvider":     func() error { return err2(ddbprovider.New(dyn, "t", ddbprovider.WithMeterProvider(mp))) },
		"provider/ddbprovider.WithLogger":            func() error { return err2(ddbprovider.New(dyn, "t", ddbprovider.WithLogger(log))) },
		"provider/ddbprovider.WithClock":             func() error { return err2(ddbprovider.New(dyn, "t", ddbprovider.WithClock(clock))) },
		"provider/memprovider.WithClock":             func() error { return err2(memprovider.New(memprovider.WithClock(clock))) },
		"provider/memprovider.WithMeterProvider":     func() error { return err2(memprovider.New(memprovider.WithMeterProvider(mp))) },
		"provider/memprovider.WithLogger":            func() error { return err2(memprovider.New(memprovider.WithLogger(log))) },
		"provider.KeepAlive":                         func() error { return err3(provider.KeepAlive(ctx, memProvider, lease, time.Minute)) },
		"observe.Provider":                           func() error { return err2(observe.Provider(memProvider)) },
		"observe.Store":                              func() error { return err2(observe.Store[int64](memStore)) },
		"observe.Deduper":                            func() error { return err2(observe.Deduper(memDeduper)) },
		"observe.WithTracerProvider":                 func() error { return err2(observe.Store[int64](goodStore, observe.WithTracerProvider(tp))) },
		"observe.WithMeterProvider":                  func() error { return err2(observe.Store[int64](goodStore, observe.WithMeterProvider(mp))) },
		"state.NewCoalescer store":                   func() error { return err2(state.NewCoalescer[int64](memStore, sum)) },
		"state.NewCoalescer monoid":                  func() error { return err2(state.NewCoalescer[int64](goodStore, sumMonoid)) },
		"state.WithMeterProvider":                    func() error { return err2(state.NewCoalescer[int64](goodStore, sum, state.WithMeterProvider(mp))) },
		"state.WithLogger":                           func() error { return err2(state.NewCoalescer[int64](goodStore, sum, state.WithLogger(log))) },
		"breaker.WithMeterProvider":                  func() error { return err2(breaker.New("b", breaker.WithMeterProvider(mp))) },
		"breaker.WithLogger":                         func() error { return err2(breaker.New("b", breaker.WithLogger(log))) },
		"breaker.WithFailure":                        func() error { return err2(breaker.New("b", breaker.WithFailure(nil))) },
		"state/tiered.New source":                    func() error { return err2(tiered.New[int64](sdynNil, mini, "p")) },
		"state/tiered.New client":                    func() error { return err2(tiered.New[int64](sdynGood, redisClient, "p")) },
		"state/tiered.WithMeterProvider":             func() error { return err2(tiered.New[int64](sdynGood, mini, "p", tiered.WithMeterProvider(mp))) },
		"state/tiered.WithClock":                     func() error { return err2(tiered.New[int64](sdynGood, mini, "p", tiered.WithClock(clock))) },
		"state/cache.New":                            func() error { return err2(cache.New[int64](memStore)) },
		"state/cache.WithMeterProvider":              func() error { return err2(cache.New[int64](goodStore, cache.WithMeterProvider(mp))) },
		"state/cache.WithClock":                      func() error { return err2(cache.New[int64](goodStore, cache.WithClock(clock))) },
		"state.NewSharded store":                     func() error { return err2(state.NewSharded[int64](memStore, sum, 4)) },
		"state.NewSharded monoid":                    func() error { return err2(state.NewSharded[int64](goodStore, sumMonoid, 4)) },
		"state/memstate.New monoid":                  func() error { return err2(memstate.New[int64](sumMonoid)) },
		"state/memstate.WithClock":                   func() error { return err2(memstate.New[int64](sum, memstate.WithClock(clock))) },
		"state/redisstate.NewInt64SumStore client":   func() error { return err2(redisstate.NewInt64SumStore(redisClient, "p")) },
		"state/redisstate.NewFloat64SumStore client": func() error { return err2(redisstate.NewFloat64SumStore(redisClient, "p")) },
		"state/redisstate.NewInt64MaxStore client":   func() error { return err2(redisstate.NewInt64MaxStore(redisClient, "p")) },
		"state/redisstate.NewBytesStore client":      func() error { return err2(redisstate.NewBytesStore(redisClient, "p", sketch)) },
		"state/redisstate.NewBytesStore monoid":      func() error { return err2(redisstate.NewBytesStore(mini, "p", bytesMonoid)) },
		"state/redisstate.NewDeduper client":         func() error { return err2(redisstate.NewDeduper(redisClient, "p")) },
		"state/redisstate.WithMeterProvider":         func() error { return err2(redisstate.NewInt64SumStore(mini, "p", redisstate.WithMeterProvider(mp))) },
		"state/redisstate.WithLogger":                func() error { return err2(redisstate.NewInt64SumStore(mini, "p", redisstate.WithLogger(log))) },
		"state/ddbstate.NewInt64SumStore client":     func() error { return err2(ddbstate.NewInt64SumStore(ddbClient, "t")) },
		"state/ddbstate.NewFloat64SumStore client":   func() error { return err2(ddbstate.NewFloat64SumStore(ddbClient, "t")) },
		"state/ddbstate.NewInt64MaxStore client":     func() error { return err2(ddbstate.NewInt64MaxStore(ddbClient, "t")) },
		"state/ddbstate.NewBytesStore client":        func() error { return err2(ddbstate.NewBytesStore(ddbClient, "t", sketch)) },
		"state/ddbstate.NewBytesStore monoid":        func() error { return err2(ddbstate.NewBytesStore(dyn, "t", bytesMonoid)) },
		"state/ddbstate.NewDeduper client":           func() error { return err2(ddbstate.NewDeduper(ddbClient, "t")) },
		"state/ddbstate.CreateStoreTable":            func() error { return ddbstate.CreateStoreTable(ctx, ddbClient, "t") },
		"state/ddbstate.CreateDedupTable":            func() error { return ddbstate.CreateDedupTable(ctx, ddbClient, "t") },
		"state/ddbstate.WithMeterProvider":           func() error { return err2(ddbstate.NewInt64SumStore(dyn, "t", ddbstate.WithMeterProvider(mp))) },
		"state/ddbstate.WithLogger":                  func() error { return err2(ddbstate.NewInt64SumStore(dyn, "t", ddbstate.WithLogger(log))) },
		"state/ddbstate.WithClock":                   func() error { return err2(ddbstate.NewInt64SumStore(dyn, "t", ddbstate.WithClock(clock))) },
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
