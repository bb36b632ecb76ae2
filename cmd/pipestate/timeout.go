package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go/middleware"
	goredis "github.com/redis/go-redis/v9"
)

// Bounded waits. Every call to a backend, connecting included, fails after the
// command's timeout (--timeout, PIPESTATE_TIMEOUT, default defaultTimeout) on a
// backend that does not answer, whatever the client library's retries:
//
//   - Redis: the client's dial, read and write timeouts are the timeout, and a
//     hook gives each command (and each pipeline) a context that ends after it,
//     which the client obeys (ContextTimeoutEnabled), retries and the dial of a
//     new connection included. A blocking read (XREAD BLOCK, which --follow
//     uses) gets its block time on top.
//   - DynamoDB: the HTTP client's dial, TLS handshake, response header and read
//     timeouts are the timeout, and a middleware gives each operation a context
//     that ends after it, around the SDK's retry loop, so its retries and
//     backoffs, and the credentials retrieved for it, share the one bound.
//
// So --follow is bounded per call: each read or poll, not the follow.

// defaultTimeout bounds each backend call when neither --timeout nor
// PIPESTATE_TIMEOUT says otherwise.
const defaultTimeout = 10 * time.Second

// envTimeout is the variable of --timeout.
const envTimeout = "PIPESTATE_TIMEOUT"

// timeoutFlag is --timeout: a positive duration.
type timeoutFlag time.Duration

func (f *timeoutFlag) String() string { return dur(time.Duration(*f)) }

func (f *timeoutFlag) Set(s string) error {
	d, err := parseTimeout(s)
	if err != nil {
		return err
	}
	*f = timeoutFlag(d)
	return nil
}

// parseTimeout parses a positive duration.
func parseTimeout(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, errors.New("want a positive duration such as 10s, 500ms or 1m")
	}
	return d, nil
}

// timeoutOf is t's timeout, defaultTimeout when it has none (a target built by
// hand).
func timeoutOf(t target) time.Duration {
	if t.timeout <= 0 {
		return defaultTimeout
	}
	return t.timeout
}

// boundRedis sets o's timeouts to d; the client also needs redisDeadlines as a
// hook.
func boundRedis(o *goredis.Options, d time.Duration) {
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = d, d, d, d
	o.ContextTimeoutEnabled = true
}

// boundRedisCluster is boundRedis for a cluster's options.
func boundRedisCluster(o *goredis.ClusterOptions, d time.Duration) {
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = d, d, d, d
	o.ContextTimeoutEnabled = true
}

// redisDeadlines is a go-redis hook that ends each command's and pipeline's
// context after d, plus the block time of a blocking read.
type redisDeadlines struct{ d time.Duration }

func (h redisDeadlines) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h redisDeadlines) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		ctx, cancel := context.WithTimeout(ctx, h.d+blockOf(cmd.Args()))
		defer cancel()
		return next(ctx, cmd)
	}
}

func (h redisDeadlines) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		var block time.Duration
		for _, c := range cmds {
			block = max(block, blockOf(c.Args()))
		}
		ctx, cancel := context.WithTimeout(ctx, h.d+block)
		defer cancel()
		return next(ctx, cmds)
	}
}

// blockOf is the block time of an XREAD or XREADGROUP command's BLOCK option
// (its options come before STREAMS), 0 for any other command.
func blockOf(args []any) time.Duration {
	if len(args) == 0 {
		return 0
	}
	if name, _ := args[0].(string); !strings.EqualFold(name, "xread") && !strings.EqualFold(name, "xreadgroup") {
		return 0
	}
	for i := 1; i+1 < len(args); i++ {
		word, _ := args[i].(string)
		switch {
		case strings.EqualFold(word, "streams"):
			return 0
		case strings.EqualFold(word, "block"):
			var ms int64
			switch v := args[i+1].(type) {
			case int64:
				ms = v
			case int:
				ms = int64(v)
			case string:
				ms, _ = strconv.ParseInt(v, 10, 64)
			}
			return time.Duration(ms) * time.Millisecond
		}
	}
	return 0
}

// dynamoHTTPClient is an HTTP client whose dial, TLS handshake, wait for the
// response headers and each read of the body give up after d.
func dynamoHTTPClient(d time.Duration) *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().
		WithDialerOptions(func(dl *net.Dialer) { dl.Timeout = d }).
		WithTransportOptions(func(tr *http.Transport) {
			tr.TLSHandshakeTimeout = d
			tr.ResponseHeaderTimeout = d
		}).
		WithReadTimeout(d)
}

// dynamoDeadline is an SDK stack option that ends each operation's context after
// d. It runs first, so the bound covers the SDK's retries, their backoffs and
// the retrieval of credentials.
func dynamoDeadline(d time.Duration) func(*middleware.Stack) error {
	return func(s *middleware.Stack) error {
		return s.Initialize.Add(middleware.InitializeMiddlewareFunc("PipestateTimeout",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				ctx, cancel := context.WithTimeout(ctx, d)
				defer cancel()
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
	}
}

// isTimeout reports whether err is a wait that a timeout ended: a context
// deadline or a network timeout. The command's own context has no deadline, so
// such an error comes from --timeout.
func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
