package main

import (
	"cmp"
	"context"
	"errors"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/memory"
	redisprovider "github.com/pipestate/pipestate/provider/redis"
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
// in-memory store, or two Redis providers (each with its own lock owner) on one
// client of cfg.redisAddr under cfg.prefix, whose close ex.close calls.
func open(ex *example, cfg config) ([]provider.Provider, error) {
	if cfg.redisAddr == "" {
		a, err := memory.New()
		if err != nil {
			return nil, err
		}
		b, err := a.NewHandle()
		return []provider.Provider{a, b}, err
	}
	timeout := cmp.Or(cfg.timeout, defaultTimeout) // dialing, each read and write
	client := goredis.NewClient(&goredis.Options{Addr: cfg.redisAddr, DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout})
	ex.onClose(func(context.Context) error { return client.Close() })
	a, errA := redisprovider.New(client, redisprovider.WithKeyPrefix(cfg.prefix))
	b, errB := redisprovider.New(client, redisprovider.WithKeyPrefix(cfg.prefix))
	return []provider.Provider{a, b}, errors.Join(errA, errB)
}
