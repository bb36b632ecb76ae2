package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/logging"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/provider/redisprovider"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/ddbstate"
	"github.com/pipestate/pipestate/state/redisstate"
)

// backend is a connected backend. Its stores are the ones its target names (the
// Redis key prefix or the DynamoDB table).
type backend interface {
	fmt.Stringer
	// provider opens the provider with owner as its lock owner ("": a random one),
	// read-only (the backend's WithReadOnly) unless write: every command but a
	// write run with --yes reads through a provider that never writes.
	provider(owner string, write bool) (provider.Provider, error)
	// int64Store opens the int64 store of kind storeInt64Sum or storeInt64Max.
	int64Store(kind string) (state.Store[int64], error)
	float64Store() (state.Store[float64], error)
	bytesStore(m monoid.Monoid[[]byte]) (state.Store[[]byte], error)
	close()
}

// dial connects to t, every call bounded by t's timeout (see timeout.go). The
// clock now fills the timestamps of writes and judges the
// TTLs the backend judges by its client's clock.
func dial(ctx context.Context, t target, now func() time.Time) (backend, error) {
	quietRedis.Do(func() { goredis.SetLogger(discard{}) })
	switch t.kind {
	case kindRedis:
		opts := &goredis.Options{Addr: t.addr}
		if strings.Contains(t.addr, "://") {
			var err error
			if opts, err = goredis.ParseURL(t.addr); err != nil {
				return nil, usagef("%s: %v", t.from[0], err)
			}
		}
		opts.Username, opts.Password = credential(opts.Username, t.user), credential(opts.Password, t.password)
		boundRedis(opts, timeoutOf(t))
		c := goredis.NewClient(opts)
		c.AddHook(redisDeadlines{timeoutOf(t)})
		return &redisBackend{t: t, c: c, now: now}, nil
	case kindRedisCluster:
		opts := &goredis.ClusterOptions{}
		if strings.Contains(t.addr, "://") {
			var err error
			if opts, err = goredis.ParseClusterURL(t.addr); err != nil {
				return nil, usagef("%s: %v", t.from[0], err)
			}
		} else {
			for a := range strings.SplitSeq(t.addr, ",") {
				if a = strings.TrimSpace(a); a != "" {
					opts.Addrs = append(opts.Addrs, a)
				}
			}
		}
		opts.Username, opts.Password = credential(opts.Username, t.user), credential(opts.Password, t.password)
		boundRedisCluster(opts, timeoutOf(t))
		c := goredis.NewClusterClient(opts)
		c.AddHook(redisDeadlines{timeoutOf(t)})
		return &redisBackend{t: t, c: c, now: now}, nil
	}
	c, err := dynamoClient(ctx, t)
	if err != nil {
		return nil, err
	}
	return &dynamoBackend{t: t, c: c, now: now}, nil
}

// credential is the user name or password of a Redis URL, else the one of the
// environment (PIPESTATE_REDIS_USERNAME, PIPESTATE_REDIS_PASSWORD).
func credential(fromURL, fromEnv string) string {
	if fromURL != "" {
		return fromURL
	}
	return fromEnv
}

// quietRedis silences go-redis's own log of failed dials: the command reports the
// error once, with the backend.
var quietRedis sync.Once

type discard struct{}

func (discard) Printf(context.Context, string, ...any) {}

// dynamoClient is a DynamoDB client from the AWS default config, on t's endpoint if
// it has one (region us-east-1 unless configured; a loopback endpoint, DynamoDB
// Local, gets dummy credentials unless AWS_ACCESS_KEY_ID is set), each operation
// bounded by t's timeout.
func dynamoClient(ctx context.Context, t target) (*ddb.Client, error) {
	d := timeoutOf(t)
	opts := []func(*config.LoadOptions) error{
		config.WithHTTPClient(dynamoHTTPClient(d)),
		config.WithLogger(logging.Nop{}), // the SDK's warnings (an IMDS fallback) too: the command reports errors itself
	}
	if t.kind == kindDynamoDB {
		u, err := url.Parse(t.addr)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, usagef("%s: endpoint %q is not an http:// or https:// URL", t.from[0], t.addr)
		}
		opts = append(opts, config.WithDefaultRegion("us-east-1"))
		if loopback(u.Hostname()) && os.Getenv("AWS_ACCESS_KEY_ID") == "" {
			opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("local", "local", "")))
		}
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("AWS default config: %w", err)
	}
	if cfg.Region == "" {
		return nil, usagef("no AWS region: set AWS_REGION (or a profile's region), or pass --dynamodb URL")
	}
	return ddb.NewFromConfig(cfg, func(o *ddb.Options) {
		o.Logger = logging.Nop{} // the command reports errors itself
		o.APIOptions = append(o.APIOptions, dynamoDeadline(d))
		if t.kind == kindDynamoDB {
			o.BaseEndpoint = aws.String(t.addr)
		}
	}), nil
}

func loopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

// redisBackend is Redis or a Redis Cluster.
type redisBackend struct {
	t   target
	c   goredis.UniversalClient
	now func() time.Time
}

func (b *redisBackend) String() string { return b.t.String() }

func (b *redisBackend) provider(owner string, write bool) (provider.Provider, error) {
	opts := []redisprovider.Option{redisprovider.WithKeyPrefix(b.t.prefix), redisprovider.WithClock(b.now)}
	if owner != "" {
		opts = append(opts, redisprovider.WithOwner(owner))
	}
	if !write {
		opts = append(opts, redisprovider.WithReadOnly())
	}
	return redisprovider.New(b.c, opts...)
}

func (b *redisBackend) int64Store(kind string) (state.Store[int64], error) {
	if kind == storeInt64Max {
		return redisstate.NewInt64MaxStore(b.c, b.t.prefix)
	}
	return redisstate.NewInt64SumStore(b.c, b.t.prefix)
}

func (b *redisBackend) float64Store() (state.Store[float64], error) {
	return redisstate.NewFloat64SumStore(b.c, b.t.prefix)
}

func (b *redisBackend) bytesStore(m monoid.Monoid[[]byte]) (state.Store[[]byte], error) {
	return redisstate.NewBytesStore(b.c, b.t.prefix, m)
}

func (b *redisBackend) close() { _ = b.c.Close() }

// dynamoBackend is DynamoDB.
type dynamoBackend struct {
	t   target
	c   *ddb.Client
	now func() time.Time
}

func (b *dynamoBackend) String() string { return b.t.String() }

func (b *dynamoBackend) provider(owner string, write bool) (provider.Provider, error) {
	opts := []ddbprovider.Option{ddbprovider.WithClock(b.now)}
	if owner != "" {
		opts = append(opts, ddbprovider.WithOwner(owner))
	}
	if !write {
		opts = append(opts, ddbprovider.WithReadOnly())
	}
	return ddbprovider.New(b.c, b.t.table, opts...)
}

func (b *dynamoBackend) int64Store(kind string) (state.Store[int64], error) {
	if kind == storeInt64Max {
		return ddbstate.NewInt64MaxStore(b.c, b.t.table, ddbstate.WithClock(b.now))
	}
	return ddbstate.NewInt64SumStore(b.c, b.t.table, ddbstate.WithClock(b.now))
}

func (b *dynamoBackend) float64Store() (state.Store[float64], error) {
	return ddbstate.NewFloat64SumStore(b.c, b.t.table, ddbstate.WithClock(b.now))
}

func (b *dynamoBackend) bytesStore(m monoid.Monoid[[]byte]) (state.Store[[]byte], error) {
	return ddbstate.NewBytesStore(b.c, b.t.table, m, ddbstate.WithClock(b.now))
}

func (b *dynamoBackend) close() {}
