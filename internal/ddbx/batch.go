package ddbx

import (
	"context"
	"fmt"
	"sync"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/pipestate/pipestate"
	"github.com/pipestate/pipestate/internal/backoff"
)

// DynamoDB's per-call batch limits.
const (
	MaxBatchGetKeys    = 100 // keys per BatchGetItem call
	MaxBatchWriteItems = 25  // requests per BatchWriteItem call
)

// Defaults of BatchOptions.
var (
	// DefaultBackoff spaces retries of unprocessed keys and items.
	DefaultBackoff = backoff.Policy{Base: 25 * time.Millisecond, Max: 2 * time.Second}
	// DefaultMaxRetries bounds the retry rounds of one chunk.
	DefaultMaxRetries = 10
)

// ErrUnprocessed is wrapped by the error BatchGet and BatchWrite return when keys or
// items were still unprocessed after the last retry. For BatchWrite, the requests
// that were processed are stored; the call may be repeated, since puts and deletes
// are idempotent.
var ErrUnprocessed = fmt.Errorf("ddbx: unprocessed after retries: %w", pipestate.ErrContention)

// BatchGetAPI is the BatchGetItem method of *ddb.Client.
type BatchGetAPI interface {
	BatchGetItem(ctx context.Context, in *ddb.BatchGetItemInput, optFns ...func(*ddb.Options)) (*ddb.BatchGetItemOutput, error)
}

// BatchWriteAPI is the BatchWriteItem method of *ddb.Client.
type BatchWriteAPI interface {
	BatchWriteItem(ctx context.Context, in *ddb.BatchWriteItemInput, optFns ...func(*ddb.Options)) (*ddb.BatchWriteItemOutput, error)
}

// BatchOptions tunes BatchGet and BatchWrite; the zero value gives the defaults.
type BatchOptions struct {
	// ConsistentRead asks BatchGet for strongly consistent reads.
	ConsistentRead bool
	// ProjectionExpression and ExpressionAttributeNames limit the attributes BatchGet
	// returns (empty: all attributes).
	ProjectionExpression     string
	ExpressionAttributeNames map[string]string
	// Backoff spaces the retry rounds of unprocessed keys or items (zero: DefaultBackoff).
	Backoff backoff.Policy
	// MaxRetries bounds the retry rounds per chunk (0: DefaultMaxRetries; negative: no
	// retries).
	MaxRetries int
	// MaxConcurrency bounds the calls in flight (0: one per chunk, all at once).
	MaxConcurrency int
	// OnRetry, when not nil, is called before each retry round of a chunk's
	// unprocessed keys or items, with the round's number (1 for the first); rounds
	// that run out of retries end in ErrUnprocessed instead. Chunks run
	// concurrently, so it must be safe for concurrent use.
	OnRetry func(ctx context.Context, retry int)
	// APIOptions go to every BatchGetItem or BatchWriteItem call.
	APIOptions []func(*ddb.Options)
}

// retry waits before retry round attempt+1 of a chunk, after calling OnRetry.
func (o BatchOptions) retry(ctx context.Context, attempt int) error {
	if o.OnRetry != nil {
		o.OnRetry(ctx, attempt+1)
	}
	return o.policy().Wait(ctx, attempt)
}

func (o BatchOptions) policy() backoff.Policy {
	if o.Backoff == (backoff.Policy{}) {
		return DefaultBackoff
	}
	return o.Backoff
}

func (o BatchOptions) retries() int {
	switch {
	case o.MaxRetries == 0:
		return DefaultMaxRetries
	case o.MaxRetries < 0:
		return 0
	}
	return o.MaxRetries
}

// BatchGet reads keys from table with ceil(len(keys)/100) concurrent BatchGetItem
// calls, retrying UnprocessedKeys with o.Backoff, and returns the items found, in no
// particular order (missing keys are simply absent). keys must be distinct:
// DynamoDB rejects a call with duplicate keys. On any error nothing is returned; the
// error wraps the SDK's error, ErrUnprocessed, or ctx's error.
func BatchGet(ctx context.Context, api BatchGetAPI, table string, keys []map[string]ddbtypes.AttributeValue, o BatchOptions) ([]map[string]ddbtypes.AttributeValue, error) {
	var (
		mu  sync.Mutex
		out = make([]map[string]ddbtypes.AttributeValue, 0, len(keys))
	)
	err := chunks(ctx, len(keys), MaxBatchGetKeys, o.MaxConcurrency, func(ctx context.Context, lo, hi int) error {
		ka := ddbtypes.KeysAndAttributes{Keys: keys[lo:hi]}
		if o.ConsistentRead {
			ka.ConsistentRead = &o.ConsistentRead
		}
		if o.ProjectionExpression != "" {
			ka.ProjectionExpression = &o.ProjectionExpression
			ka.ExpressionAttributeNames = o.ExpressionAttributeNames
		}
		pending := map[string]ddbtypes.KeysAndAttributes{table: ka}
		for attempt := 0; ; attempt++ {
			res, err := api.BatchGetItem(ctx, &ddb.BatchGetItemInput{RequestItems: pending}, o.APIOptions...)
			if err != nil {
				return fmt.Errorf("batch get %s: %w", table, err)
			}
			mu.Lock()
			out = append(out, res.Responses[table]...)
			mu.Unlock()
			left := res.UnprocessedKeys[table]
			if len(left.Keys) == 0 {
				return nil
			}
			if attempt >= o.retries() {
				return fmt.Errorf("batch get %s: %w: %d keys", table, ErrUnprocessed, len(left.Keys))
			}
			if err := o.retry(ctx, attempt); err != nil {
				return err
			}
			pending = map[string]ddbtypes.KeysAndAttributes{table: left}
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// BatchWrite applies reqs (puts and deletes) to table with ceil(len(reqs)/25)
// concurrent BatchWriteItem calls, retrying UnprocessedItems with o.Backoff. A batch
// write is not atomic: on error some requests may have been applied. Two requests
// for the same key are rejected by DynamoDB when they fall in one call.
func BatchWrite(ctx context.Context, api BatchWriteAPI, table string, reqs []ddbtypes.WriteRequest, o BatchOptions) error {
	return chunks(ctx, len(reqs), MaxBatchWriteItems, o.MaxConcurrency, func(ctx context.Context, lo, hi int) error {
		pending := map[string][]ddbtypes.WriteRequest{table: reqs[lo:hi]}
		for attempt := 0; ; attempt++ {
			res, err := api.BatchWriteItem(ctx, &ddb.BatchWriteItemInput{RequestItems: pending}, o.APIOptions...)
			if err != nil {
				return fmt.Errorf("batch write %s: %w", table, err)
			}
			left := res.UnprocessedItems[table]
			if len(left) == 0 {
				return nil
			}
			if attempt >= o.retries() {
				return fmt.Errorf("batch write %s: %w: %d items", table, ErrUnprocessed, len(left))
			}
			if err := o.retry(ctx, attempt); err != nil {
				return err
			}
			pending = map[string][]ddbtypes.WriteRequest{table: left}
		}
	})
}

// chunks calls fn for every [lo, hi) chunk of n elements of at most size, concurrently
// (at most limit at once when limit > 0), and returns the first error; the context
// passed to fn is cancelled on the first error.
func chunks(ctx context.Context, n, size, limit int, fn func(ctx context.Context, lo, hi int) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if n <= size {
		if n == 0 {
			return nil
		}
		return fn(ctx, 0, n)
	}
	g, gctx := errgroup.WithContext(ctx)
	if limit > 0 {
		g.SetLimit(limit)
	}
	for lo := 0; lo < n; lo += size {
		hi := min(lo+size, n)
		g.Go(func() error { return fn(gctx, lo, hi) })
	}
	return g.Wait()
}
