package breaker

import (
	"context"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
)

// DynamoDB returns an option of the DynamoDB client that sends each attempt of
// each request through the breaker: while it is open an attempt fails at once
// with an error wrapping pipestate.ErrUnavailable, unsent, and the SDK does not
// retry it. Give it to the client the provider and the stores share:
//
//	client := ddb.NewFromConfig(cfg, b.DynamoDB())
//
// It sits inside the SDK's retry loop, so every throttled attempt counts
// toward opening the breaker, and an attempt the breaker refuses ends the
// call. The SDK's adaptive retry mode (retry.NewAdaptiveMode) is the
// recommended companion: it slows this client's requests down while
// DynamoDB throttles, before the breaker has to stop them.
func (b *Breaker) DynamoDB() func(*ddb.Options) {
	return func(o *ddb.Options) {
		o.APIOptions = append(o.APIOptions, b.addMiddleware)
	}
}

func (b *Breaker) addMiddleware(s *middleware.Stack) error {
	mw := middleware.FinalizeMiddlewareFunc("pipestate/breaker", func(ctx context.Context, in middleware.FinalizeInput,
		next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
		done, err := b.allow()
		if err != nil {
			return middleware.FinalizeOutput{}, middleware.Metadata{}, err
		}
		out, md, err := next.HandleFinalize(ctx, in)
		done(err)
		return out, md, err
	})
	// After the SDK's retry middleware: one outcome per attempt. A client built
	// without it gets one outcome per call.
	if err := s.Finalize.Insert(mw, "Retry", middleware.After); err != nil {
		return s.Finalize.Add(mw, middleware.After)
	}
	return nil
}
