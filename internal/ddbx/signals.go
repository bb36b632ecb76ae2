package ddbx

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"

	"github.com/pipestate/pipestate/internal/signal"
)

// throttleMiddlewareID names the middleware ThrottleSignals adds.
const throttleMiddlewareID = "pipestate.ThrottleSignals"

// ThrottleSignals returns an SDK option for one call of operation op (a pipestate
// method name) that records, through rec, the throttling the SDK's retryer
// handled inside it: a Retry (signal.ReasonThrottled) for each attempt that was
// throttled and retried, and a GiveUp when the call ends throttled after its last
// attempt. Throttled means a ProvisionedThroughputExceededException,
// ThrottlingException or RequestLimitExceeded; a transaction cancelled for
// throttling is not (the SDK does not retry it: the backend's own loop records it).
//
// The middleware sits in the Finalize step just before the retry middleware
// ("Retry"), so it sees the call's result with the retry middleware's record of
// every attempt (retry.GetAttemptResults), which says whether each attempt was
// retried. It records after the call, not as each attempt fails. Passing the option
// is all a call needs: an API wrapper that drops optFns loses these signals. The
// option may be kept and passed to any number of calls, concurrent ones included.
func ThrottleSignals(rec *signal.Recorder, op string) func(*ddb.Options) {
	// Built once: a caller that keeps the option adds nothing but the stack
	// insertion to each request.
	mw := middleware.FinalizeMiddlewareFunc(throttleMiddlewareID, func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
		out, md, err := next.HandleFinalize(ctx, in)
		recordThrottles(ctx, rec, op, md, err)
		return out, md, err
	})
	add := func(s *middleware.Stack) error {
		if _, ok := s.Finalize.Get("Retry"); !ok { // a client without the retry middleware
			return s.Finalize.Add(mw, middleware.Before)
		}
		return s.Finalize.Insert(mw, "Retry", middleware.Before)
	}
	return func(o *ddb.Options) { o.APIOptions = append(o.APIOptions, add) }
}

// recordThrottles records the throttled attempts of one call from the retry
// middleware's attempt results in md, and a give-up when err is a throttle.
func recordThrottles(ctx context.Context, rec *signal.Recorder, op string, md middleware.Metadata, err error) {
	results, _ := retry.GetAttemptResults(md)
	for i, r := range results.Results {
		if r.Retried && isThrottleException(r.Err) {
			rec.Retry(ctx, op, signal.ReasonThrottled, i+1)
		}
	}
	if isThrottleException(err) {
		rec.GiveUp(ctx, op, signal.ReasonThrottled, max(1, len(results.Results)), err)
	}
}

// isThrottleException reports whether err is a throttling error response, as the
// SDK's retryer sees it (not a transaction cancelled for throttling), matched by
// its error code, typed or not.
func isThrottleException(err error) bool {
	var api smithy.APIError
	if !errors.As(err, &api) {
		return false
	}
	switch api.ErrorCode() {
	case "ProvisionedThroughputExceededException", "RequestLimitExceeded", "ThrottlingException":
		return true
	}
	return false
}
