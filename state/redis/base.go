package redis

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/nilcheck"
	"github.com/pipestate/pipestate/state"
)

// base is what every store and the deduper share: the client (not owned), the key
// schema and the closed flag.
type base struct {
	client goredis.UniversalClient
	keys   keyspace
	name   string       // type name for errors, e.g. "Int64SumStore"
	closed *atomic.Bool // shared by copies made during construction
}

func newBase(name string, client goredis.UniversalClient, prefix string, c config) (base, error) {
	if nilcheck.IsNil(client) {
		return base{}, state.Invalidf("%s: nil client", c.Ctor)
	}
	if err := checkPrefix(c.Ctor, prefix); err != nil {
		return base{}, err
	}
	return base{client: client, keys: keyspace{prefix: prefix}, name: name, closed: new(atomic.Bool)}, nil
}

// begin is called first by every method: it returns ErrClosed after Close and
// ctx.Err() for a done ctx, so nothing is sent in either case.
func (b *base) begin(ctx context.Context) error {
	if b.closed.Load() {
		return fmt.Errorf("state/redis: %s: %w", b.name, state.ErrClosed)
	}
	return ctx.Err()
}

// Close marks the store closed: later calls return an error wrapping state.ErrClosed.
// It does not close the client, which the caller owns. Close is idempotent.
func (b *base) Close() error {
	b.closed.Store(true)
	return nil
}

// wrap annotates a driver error with the operation and key; it keeps the driver error
// reachable through errors.As / errors.Is (and ctx errors as they are).
func (b *base) wrap(op, key string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("state/redis: %s %s %q: %w", b.name, op, key, err)
}
