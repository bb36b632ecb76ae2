package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/pipestate/pipestate/monoid/sketch/hll"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/provider/redisprovider"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/ddbstate"
	"github.com/pipestate/pipestate/state/redisstate"

	"github.com/pipestate/pipestate/examples/internal/exbackend"
)

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

// open connects to the backend cfg names: an embedded miniredis by default, a
// Redis server (cfg.Redis, keys under cfg.Prefix) or DynamoDB (cfg.DynamoDB, tables
// PREFIX, PREFIX-counts, PREFIX-sketches and PREFIX-dedup, created when missing),
// each wait for a server bounded by cfg.Timeout.
func open(ctx context.Context, cfg exbackend.Config) (*backend, error) {
	sk, err := hll.New(hll.DefaultPrecision)
	if err != nil {
		return nil, err
	}
	if cfg.DynamoDB != "" {
		return openDynamoDB(ctx, cfg, sk)
	}
	return openRedis(cfg, sk)
}

func openRedis(cfg exbackend.Config, sk hll.Monoid) (*backend, error) {
	client, closeClient, err := cfg.RedisClient()
	if err != nil {
		return nil, err
	}
	b := &backend{hll: sk, close: closeClient}
	var errs [3]error
	b.provider, errs[0] = redisprovider.New(client, redisprovider.WithKeyPrefix(cfg.Prefix))
	b.clicks, errs[1] = redisstate.NewInt64SumStore(client, cfg.Prefix+":clicks")
	b.users, errs[2] = redisstate.NewBytesStore(client, cfg.Prefix+":users", sk)
	if err := errors.Join(errs[:]...); err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

func openDynamoDB(ctx context.Context, cfg exbackend.Config, sk hll.Monoid) (*backend, error) {
	client := cfg.DynamoDBClient()
	main, counts, sketches, dedup := cfg.Prefix, cfg.Prefix+"-counts", cfg.Prefix+"-sketches", cfg.Prefix+"-dedup"
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

// acquired turns AcquireLock's (false, nil) for a held lock into an error.
func acquired(ok bool, err error) error {
	if err == nil && !ok {
		return errors.New("held by another owner")
	}
	return err
}
