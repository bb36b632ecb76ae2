// Package exbackend is how every example chooses and connects to its backend: the
// -redis, -dynamodb, -prefix, -timeout and -keep flags, and clients whose every
// wait on a server is bounded, so a dead server fails an example instead of
// hanging it.
//
// An example run on a server writes under a prefix of its own (Begin: the
// example's name and a random suffix, unless -prefix names one), says at the end
// what it wrote there (keys, or tables) and removes it unless -keep. It never
// removes what an explicit -prefix names: that may be data the example did not
// write.
package exbackend

import (
	"cmp"
	"context"
	"flag"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
	goredis "github.com/redis/go-redis/v9"
)

// DefaultTimeout bounds each call to a server unless -timeout says otherwise.
const DefaultTimeout = 5 * time.Second

// Config says where an example keeps its state.
type Config struct {
	Redis    string        // Redis host:port; "" and no DynamoDB: the example's default (in memory)
	DynamoDB string        // DynamoDB endpoint URL, e.g. http://127.0.0.1:8000
	Prefix   string        // Redis key prefix, or the prefix of the DynamoDB table names
	Timeout  time.Duration // each call's bound on a server that does not answer; 0: DefaultTimeout
	Keep     bool          // leave what the run wrote on the server (see Begin)
}

// Register defines -redis, -dynamodb (unless noDynamoDB), -prefix and -timeout on fs.
func (c *Config) Register(fs *flag.FlagSet, prefix string, noDynamoDB bool) {
	fs.StringVar(&c.Redis, "redis", "", "Redis host:port (default: in memory)")
	if !noDynamoDB {
		fs.StringVar(&c.DynamoDB, "dynamodb", "", "DynamoDB endpoint, e.g. http://127.0.0.1:8000 (default: in memory)")
	}
	fs.StringVar(&c.Prefix, "prefix", prefix, "Redis key prefix, or the prefix of the DynamoDB table names")
	fs.DurationVar(&c.Timeout, "timeout", DefaultTimeout, "how long a call waits for a server that does not answer")
	fs.BoolVar(&c.Keep, "keep", false, "keep what the run wrote on the server (default: remove it at the end)")
}

// RedisClient connects to c.Redis, or to an embedded miniredis when it is empty,
// with dialing and each read and write bounded by the timeout (go-redis retries a
// command that timed out, each attempt bounded alike). close closes the client and
// stops the miniredis.
func (c Config) RedisClient() (client *goredis.Client, close func(), err error) {
	addr, stop := c.Redis, func() {}
	if addr == "" {
		mr, err := miniredis.Run()
		if err != nil {
			return nil, nil, err
		}
		addr, stop = mr.Addr(), mr.Close
	}
	t := cmp.Or(c.Timeout, DefaultTimeout)
	client = goredis.NewClient(&goredis.Options{Addr: addr, DialTimeout: t, ReadTimeout: t, WriteTimeout: t})
	return client, func() { _ = client.Close(); stop() }, nil
}

// DynamoDBClient is a client of the endpoint c.DynamoDB (local credentials: DynamoDB
// Local accepts any), each operation, its retries included, bounded by the timeout.
func (c Config) DynamoDBClient() *ddb.Client {
	t := cmp.Or(c.Timeout, DefaultTimeout)
	return ddb.New(ddb.Options{
		BaseEndpoint: aws.String(c.DynamoDB),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
		HTTPClient:   awshttp.NewBuildableClient().WithTimeout(t),
		APIOptions:   []func(*middleware.Stack) error{operationTimeout(t)},
	})
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
