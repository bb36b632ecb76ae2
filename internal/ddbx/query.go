package ddbx

import (
	"context"
	"fmt"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// QueryAPI is the Query method of *ddb.Client.
type QueryAPI interface {
	Query(ctx context.Context, in *ddb.QueryInput, optFns ...func(*ddb.Options)) (*ddb.QueryOutput, error)
}

// Query runs in page after page, following LastEvaluatedKey, and calls fn with every
// item in order until fn returns false, fn fails, or the query is exhausted. in is
// not modified. When next is non-nil it is called before every page after the first
// and may return a new page Limit (0 leaves in.Limit as is): callers that filter
// items on the client use it to ask only for what they still need. optFns go to
// every Query call.
func Query(ctx context.Context, api QueryAPI, in *ddb.QueryInput, next func() int32,
	fn func(item map[string]ddbtypes.AttributeValue) (more bool, err error), optFns ...func(*ddb.Options)) error {
	page := *in
	for first := true; ; first = false {
		if !first && next != nil {
			if l := next(); l > 0 {
				page.Limit = &l
			}
		}
		out, err := api.Query(ctx, &page, optFns...)
		if err != nil {
			return fmt.Errorf("query %s: %w", deref(in.TableName), err)
		}
		for _, item := range out.Items {
			more, err := fn(item)
			if err != nil || !more {
				return err
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		page.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
