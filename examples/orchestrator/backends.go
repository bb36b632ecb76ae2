package main

import (
	"context"
	"fmt"
	"sync"

	"github.com/pipestate/pipestate/examples/internal/exbackend"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/provider/memprovider"
	"github.com/pipestate/pipestate/provider/redisprovider"
)

// backend is one store that clients open, each as another process would.
type backend struct {
	open func() (provider.Provider, error)

	mu      sync.Mutex
	clients []provider.Provider
}

// openBackend prepares the store cfg names (in memory unless cfg.Redis or
// cfg.DynamoDB is set; a DynamoDB table named cfg.Prefix is created if missing)
// without opening a client. Its clients are exbackend's, bounded by cfg.Timeout.
func openBackend(ctx context.Context, cfg exbackend.Config) (*backend, error) {
	switch {
	case cfg.DynamoDB != "":
		client := cfg.DynamoDBClient()
		if err := ddbprovider.CreateTable(ctx, client, cfg.Prefix); err != nil {
			return nil, fmt.Errorf("create table: %w", err)
		}
		return &backend{open: func() (provider.Provider, error) { return ddbprovider.New(client, cfg.Prefix) }}, nil
	case cfg.Redis != "":
		return &backend{open: func() (provider.Provider, error) {
			client, closeClient, err := cfg.RedisClient()
			if err != nil {
				return nil, err
			}
			p, err := redisprovider.New(client, redisprovider.WithKeyPrefix(cfg.Prefix), redisprovider.WithCloseClient())
			if err != nil {
				closeClient()
			}
			return p, err
		}}, nil
	}
	data, err := memprovider.New() // the shared state, like a server's; each client is a handle
	if err != nil {
		return nil, err
	}
	return &backend{open: func() (provider.Provider, error) { return data.NewHandle() }}, nil
}

// client opens another client of the store and checks that it has every
// optional interface the orchestrator needs; close stops it.
func (b *backend) client() (Store, error) {
	p, err := b.open()
	if err != nil {
		return nil, err
	}
	s, err := needStore(p)
	if err != nil {
		p.Stop(context.Background())
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.clients = append(b.clients, p)
	return s, nil
}

// close stops every client the backend opened.
func (b *backend) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.clients {
		p.Stop(context.Background())
	}
}
