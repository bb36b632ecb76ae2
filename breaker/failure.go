package breaker

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	smithyhttp "github.com/aws/smithy-go/transport/http"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/ddbx"
)

// IsFailure is the default rule of what counts toward opening a breaker: the
// outcomes that say the backend cannot serve now.
//
//   - Unreachable or cut off: a network error (refused, reset, a read or dial
//     timeout), a connection closed mid-reply, go-redis's pool timeout, and a
//     request that ran out its context's deadline (the backend did not answer
//     within what the caller allowed).
//   - Redis refusing service: LOADING, BUSY, CLUSTERDOWN, MASTERDOWN,
//     TRYAGAIN, READONLY (a write to a replica during a failover), OOM.
//   - DynamoDB throttling or failing: ProvisionedThroughputExceededException,
//     ThrottlingException, RequestLimitExceeded, a transaction cancelled for
//     throttling, and any HTTP 5xx answer.
//
// Every other outcome is the backend answering: success, a miss (redis.Nil),
// a failed condition, a transaction conflict, a script error, a permission
// error. A caller's cancellation (context.Canceled) is neither: the breaker
// ignores it.
func IsFailure(err error) bool {
	if err == nil || errors.Is(err, goredis.Nil) || errors.Is(err, context.Canceled) {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, goredis.ErrPoolTimeout) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var re goredis.Error
	if errors.As(err, &re) {
		return redisRefusal(err)
	}
	var resp *smithyhttp.ResponseError
	return ddbx.IsThrottled(err) || errors.As(err, &resp) && resp.HTTPStatusCode() >= 500
}

// redisRefusals are the error prefixes of a Redis that cannot serve now (with
// their space: BUSYKEY is an answer, BUSY a refusal).
var redisRefusals = []string{"LOADING ", "BUSY ", "CLUSTERDOWN ", "MASTERDOWN ", "TRYAGAIN ", "READONLY ", "OOM "}

func redisRefusal(err error) bool {
	for _, p := range redisRefusals {
		if goredis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return false
}
