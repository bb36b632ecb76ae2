package breaker

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
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
		return redisRefusal(re.Error())
	}
	return dynamoDBFailure(err)
}

// redisRefusals are the error prefixes of a Redis that cannot serve now.
var redisRefusals = []string{"LOADING", "BUSY", "CLUSTERDOWN", "MASTERDOWN", "TRYAGAIN", "READONLY", "OOM"}

func redisRefusal(msg string) bool {
	for _, p := range redisRefusals {
		if strings.HasPrefix(msg, p+" ") || msg == p {
			return true
		}
	}
	return false
}

// dynamoDBThrottles are the error codes of a throttled DynamoDB request.
var dynamoDBThrottles = map[string]bool{
	"ProvisionedThroughputExceededException": true,
	"ThrottlingException":                    true,
	"RequestLimitExceeded":                   true,
}

func dynamoDBFailure(err error) bool {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() >= 500 {
		return true
	}
	var api smithy.APIError
	if errors.As(err, &api) && dynamoDBThrottles[api.ErrorCode()] {
		return true
	}
	var tx *ddbtypes.TransactionCanceledException
	if errors.As(err, &tx) {
		for i := range tx.CancellationReasons {
			code := ddbx.TxReasonCode(err, i)
			if code == ddbx.ReasonThrottling || code == ddbx.ReasonProvisionedThroughput {
				return true
			}
		}
	}
	return false
}
