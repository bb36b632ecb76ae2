package main

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/provider"
	ddbprovider "github.com/pipestate/pipestate/provider/dynamodb"
	"github.com/pipestate/pipestate/provider/memory"
	redisprovider "github.com/pipestate/pipestate/provider/redis"
)

// backendConfig says where the orchestrators keep their state: in memory unless
// redisAddr or dynamoEndpoint is set.
type backendConfig struct {
	redisAddr      string
	dynamoEndpoint string
	prefix         string // the Redis key prefix or the DynamoDB table
}

// backend is one store that clients open, each as another process would.
type backend struct {
	open func() (provider.Provider, error)

	mu      sync.Mutex
	clients []provider.Provider
}

// openBackend prepares the store cfg names (a DynamoDB table is created if
// missing) without opening a client.
func openBackend(ctx context.Context, cfg backendConfig) (*backend, error) {
	switch {
	case cfg.dynamoEndpoint != "":
		client := ddb.New(ddb.Options{
			BaseEndpoint: aws.String(cfg.dynamoEndpoint),
			Region:       "us-east-1",
			Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
		})
		if err := ddbprovider.CreateTable(ctx, client, cfg.prefix); err != nil {
			return nil, fmt.Errorf("create table: %w", err)
		}
		return &backend{open: func() (provider.Provider, error) { return ddbprovider.New(client, cfg.prefix) }}, nil
	case cfg.redisAddr != "":
		return &backend{open: func() (provider.Provider, error) {
			client := goredis.NewClient(&goredis.Options{Addr: cfg.redisAddr})
			p, err := redisprovider.New(client, redisprovider.WithKeyPrefix(cfg.prefix), redisprovider.WithCloseClient())
			if err != nil {
				client.Close()
			}
			return p, err
		}}, nil
	}
	data, err := memory.New() // the shared state, like a server's; each client is a handle
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
