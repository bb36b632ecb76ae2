package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/monoid/sketch/hll"
	"github.com/pipestate/pipestate/provider"
	ddbprovider "github.com/pipestate/pipestate/provider/dynamodb"
	redisprovider "github.com/pipestate/pipestate/provider/redis"
	"github.com/pipestate/pipestate/state"
	ddbstate "github.com/pipestate/pipestate/state/dynamodb"
	redisstate "github.com/pipestate/pipestate/state/redis"
)

// backendConfig says where the quickstart keeps its state.
type backendConfig struct {
	redisAddr      string // "" and no dynamoEndpoint: an embedded miniredis
	dynamoEndpoint string
	prefix         string
	timeout        time.Duration // each call's bound on a server that does not answer; 0: defaultTimeout
}

// defaultTimeout bounds each call to Redis or DynamoDB unless -timeout says
// otherwise: a dead server fails the quickstart instead of hanging it.
const defaultTimeout = 5 * time.Second

// backend is a Provider and two exactly-once stores on one backend.
type backend struct {
	provider provider.Provider
	clicks   state.OnceStore[int64]  // a sum
	users    state.OnceStore[[]byte] // a HyperLogLog sketch
	hll      hll.Monoid
	close    func()
}

// counts reads the click count and the unique-user estimate of key.
func (b *backend) counts(ctx context.Context, key state.Key) (int64, uint64, error) {
	clicks, _, err := b.clicks.Get(ctx, key)
	if err != nil {
		return 0, 0, err
	}
	sketch, _, err := b.users.Get(ctx, key)
	if err != nil {
		return 0, 0, err
	}
	unique, err := hll.Estimate(sketch)
	return clicks, unique, err
}

func open(ctx context.Context, cfg backendConfig) (*backend, error) {
	sk, err := hll.New(hll.DefaultPrecision)
	if err != nil {
		return nil, err
	}
	if cfg.dynamoEndpoint != "" {
		return openDynamoDB(ctx, cfg, sk)
	}
	return openRedis(cfg, sk)
}

// openRedis connects with every wait bounded: dialing, and each read and write
// (go-redis retries a command that timed out, MaxRetries times, each attempt
// bounded alike).
func openRedis(cfg backendConfig, sk hll.Monoid) (*backend, error) {
	addr, stopServer := cfg.redisAddr, func() {}
	if addr == "" {
		mr, err := miniredis.Run()
		if err != nil {
			return nil, err
		}
		addr, stopServer = mr.Addr(), mr.Close
	}
	timeout := cmp.Or(cfg.timeout, defaultTimeout)
	client := goredis.NewClient(&goredis.Options{Addr: addr, DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout})
	b := &backend{hll: sk, close: func() { client.Close(); stopServer() }}
	var errs [3]error
	b.provider, errs[0] = redisprovider.New(client, redisprovider.WithKeyPrefix(cfg.prefix))
	b.clicks, errs[1] = redisstate.NewInt64SumStore(client, cfg.prefix+":clicks")
	b.users, errs[2] = redisstate.NewBytesStore(client, cfg.prefix+":users", sk)
	if err := errors.Join(errs[:]...); err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

func openDynamoDB(ctx context.Context, cfg backendConfig, sk hll.Monoid) (*backend, error) {
	timeout := cmp.Or(cfg.timeout, defaultTimeout)
	client := ddb.New(ddb.Options{
		BaseEndpoint: aws.String(cfg.dynamoEndpoint),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
		HTTPClient:   awshttp.NewBuildableClient().WithTimeout(timeout),
		APIOptions:   []func(*middleware.Stack) error{operationTimeout(timeout)},
	})
	main, counts, sketches, dedup := cfg.prefix, cfg.prefix+"-counts", cfg.prefix+"-sketches", cfg.prefix+"-dedup"
	for _, create := range []func() error{
		func() error { return ddbprovider.CreateTable(ctx, client, main) },
		func() error { return ddbstate.CreateStoreTable(ctx, client, counts) },
		func() error { return ddbstate.CreateStoreTable(ctx, client, sketches) },
		func() error { return ddbstate.CreateDedupTable(ctx, client, dedup) },
	} {
		if err := create(); err != nil {
			return nil, fmt.Errorf("create tables: %w", err)
		}
	}
	b := &backend{hll: sk, close: func() {}}
	var errs [3]error
	b.provider, errs[0] = ddbprovider.New(client, main)
	b.clicks, errs[1] = ddbstate.NewInt64SumStore(client, counts, ddbstate.WithDedupTable(dedup))
	b.users, errs[2] = ddbstate.NewBytesStore(client, sketches, sk, ddbstate.WithDedupTable(dedup))
	return b, errors.Join(errs[:]...)
}

// operationTimeout ends each DynamoDB operation's context after d. The HTTP
// client's timeout bounds one attempt, and the SDK retries an attempt that timed
// out; this bounds the operation, its retries and their backoffs included.
func operationTimeout(d time.Duration) func(*middleware.Stack) error {
	return func(s *middleware.Stack) error {
		return s.Initialize.Add(middleware.InitializeMiddlewareFunc("OperationTimeout",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				ctx, cancel := context.WithTimeout(ctx, d)
				defer cancel()
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
	}
}

// acquired turns AcquireLock's (false, nil) for a held lock into an error.
func acquired(ok bool, err error) error {
	if err == nil && !ok {
		return errors.New("held by another owner")
	}
	return err
}
