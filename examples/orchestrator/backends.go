package main

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
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
	prefix         string        // the Redis key prefix or the DynamoDB table
	timeout        time.Duration // each call's bound on a server that does not answer; 0: defaultTimeout
}

// defaultTimeout bounds each call to Redis or DynamoDB unless -timeout says
// otherwise: a dead server fails the orchestrators instead of hanging them.
const defaultTimeout = 5 * time.Second

// backend is one store that clients open, each as another process would.
type backend struct {
	open func() (provider.Provider, error)

	mu      sync.Mutex
	clients []provider.Provider
}

// openBackend prepares the store cfg names (a DynamoDB table is created if
// missing) without opening a client.
func openBackend(ctx context.Context, cfg backendConfig) (*backend, error) {
	timeout := cmp.Or(cfg.timeout, defaultTimeout)
	switch {
	case cfg.dynamoEndpoint != "":
		client := ddb.New(ddb.Options{
			BaseEndpoint: aws.String(cfg.dynamoEndpoint),
			Region:       "us-east-1",
			Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
			HTTPClient:   awshttp.NewBuildableClient().WithTimeout(timeout),
			APIOptions:   []func(*middleware.Stack) error{operationTimeout(timeout)},
		})
		if err := ddbprovider.CreateTable(ctx, client, cfg.prefix); err != nil {
			return nil, fmt.Errorf("create table: %w", err)
		}
		return &backend{open: func() (provider.Provider, error) { return ddbprovider.New(client, cfg.prefix) }}, nil
	case cfg.redisAddr != "":
		return &backend{open: func() (provider.Provider, error) {
			client := goredis.NewClient(&goredis.Options{Addr: cfg.redisAddr, DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout})
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
