package breaker

import (
	"context"

	goredis "github.com/redis/go-redis/v9"
)

// RedisHook returns a go-redis hook that sends each command and each pipeline
// through the breaker: while it is open they fail at once with an error
// wrapping pipestate.ErrUnavailable, unsent. Add it to the client before
// handing the client to the provider and the stores:
//
//	rdb.AddHook(b.RedisHook())
//
// On a ClusterClient it guards the whole cluster as one endpoint (one outcome
// per call, after go-redis's redirections and retries).
func (b *Breaker) RedisHook() goredis.Hook { return redisHook{b} }

type redisHook struct{ b *Breaker }

// guarded marks the context of a call the breaker let through: the commands
// go-redis sends inside it (HELLO, AUTH, ... when the call opens a connection)
// are part of that request, not requests of their own.
type guarded struct{}

// pass reports whether ctx belongs to a call the breaker already let through.
func pass(ctx context.Context) bool { return ctx.Value(guarded{}) != nil }

func guard(ctx context.Context) context.Context { return context.WithValue(ctx, guarded{}, true) }

func (h redisHook) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h redisHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if pass(ctx) {
			return next(ctx, cmd)
		}
		done, err := h.b.allow()
		if err != nil {
			cmd.SetErr(err)
			return err
		}
		err = next(guard(ctx), cmd)
		done(err)
		return err
	}
}

func (h redisHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		if pass(ctx) {
			return next(ctx, cmds)
		}
		done, err := h.b.allow()
		if err != nil {
			for _, c := range cmds {
				c.SetErr(err)
			}
			return err
		}
		err = next(guard(ctx), cmds)
		done(err)
		return err
	}
}
