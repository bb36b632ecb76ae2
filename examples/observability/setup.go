package main

import (
	"cmp"
	"context"
	"errors"

	"fmt"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/provider/memprovider"
	"github.com/pipestate/pipestate/provider/redisprovider"

	"github.com/pipestate/pipestate/examples/internal/exbackend"
)

// example is a started example: the address of its /metrics server and what close
// stops.
type example struct {
	addr    string
	closers []func(context.Context) error
}

// onClose adds f to what close calls, before those added earlier.
func (ex *example) onClose(f func(context.Context) error) { ex.closers = append(ex.closers, f) }

// close stops what onClose added, last first, and returns their errors joined.
func (ex *example) close(ctx context.Context) error {
	var errs []error
	for i := len(ex.closers) - 1; i >= 0; i-- {
		errs = append(errs, ex.closers[i](ctx))
	}
	return errors.Join(errs...)
}

// open returns the two orchestrator instances' providers: two handles of one
// in-memory store, two Redis providers (each with its own lock owner) on one client
// of cfg.Redis under cfg.Prefix, or two DynamoDB providers on the table cfg.Prefix
// at cfg.DynamoDB (created when missing); ex.close closes the client.
func open(ctx context.Context, ex *example, cfg exbackend.Config) ([]provider.Provider, error) {
	switch {
	case cfg.DynamoDB != "":
		client := cfg.DynamoDBClient()
		if err := ddbprovider.CreateTable(ctx, client, cfg.Prefix); err != nil {
			return nil, fmt.Errorf("create table: %w", err)
		}
		a, errA := ddbprovider.New(client, cfg.Prefix)
		b, errB := ddbprovider.New(client, cfg.Prefix)
		return []provider.Provider{a, b}, errors.Join(errA, errB)
	case cfg.Redis != "":
		client, closeClient, err := cfg.RedisClient()
		if err != nil {
			return nil, err
		}
		ex.onClose(func(context.Context) error { closeClient(); return nil })
		a, errA := redisprovider.New(client, redisprovider.WithKeyPrefix(cfg.Prefix))
		b, errB := redisprovider.New(client, redisprovider.WithKeyPrefix(cfg.Prefix))
		return []provider.Provider{a, b}, errors.Join(errA, errB)
	}
	a, err := memprovider.New()
	if err != nil {
		return nil, err
	}
	b, err := a.NewHandle()
	return []provider.Provider{a, b}, err
}

// endpoint is where the backend of cfg is, for observe.WithEndpoint ("": in memory).
func endpoint(cfg exbackend.Config) string { return cmp.Or(cfg.DynamoDB, cfg.Redis) }
