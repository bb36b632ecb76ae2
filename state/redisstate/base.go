package redisstate

import (
	"context"
	"errors"
	"fmt"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/lifecycle"
	"github.com/pipestate/pipestate/internal/nilcheck"
	"github.com/pipestate/pipestate/internal/redisx"
	"github.com/pipestate/pipestate/internal/signal"
	"github.com/pipestate/pipestate/state"
)

// system is the db.system.name of the signals.
const system = "redis"

// base is what every store and the deduper share: the client (not owned), the
// script runner on it, the key schema, the closed flag and the signal recorder.
type base struct {
	client  goredis.UniversalClient
	scripts *redisx.Runner
	keys    keyspace
	name    string // type name for errors, e.g. "Int64SumStore"
	life    *lifecycle.Flag
	sig     *signal.Recorder
}

// newBase checks what every constructor requires: a client that is not nil (also not
// a typed nil) and a key prefix of 1 to 64 bytes of valid UTF-8 without control
// characters, '{' or '}' (they would change the Redis Cluster hash tag). c is the
// constructor's applied options.
func newBase(c *config, name string, client goredis.UniversalClient, prefix string) (base, error) {
	if nilcheck.IsNil(client) {
		return base{}, state.Invalidf("New%s: nil client", name)
	}
	if err := redisx.CheckPrefix(prefix); err != nil {
		return base{}, state.Invalidf("New%s: %v", name, err)
	}
	sig := c.Signal(system)
	return base{client: client, scripts: &redisx.Runner{Client: client, Reloaded: sig.ScriptLoad}, keys: keyspace{prefix: prefix},
		name: name, life: lifecycle.New("state/redisstate: " + name), sig: sig}, nil
}

// Close marks the store closed: later calls return an error wrapping state.ErrClosed.
// It does not close the client, which the caller owns. Close is idempotent.
func (b *base) Close() error { b.life.Close(); return nil }

// wrap annotates a driver error with the operation and key; it keeps the driver error
// reachable through errors.As / errors.Is (and ctx errors as they are).
func (b *base) wrap(op, key string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("state/redisstate: %s %s %q: %w", b.name, op, key, err)
}
