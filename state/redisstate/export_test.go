package redisstate

import (
	"context"

	goredis "github.com/redis/go-redis/v9"
)

// LostRaces returns the compare-and-swap races s lost since it was created, for
// benchmarks.
func LostRaces(s *BytesStore) int64 { return s.retries.Load() }

// LoadScripts loads every script on every server of c, so that a test's first
// EVALSHA is applied (no NOSCRIPT round trip).
func LoadScripts(ctx context.Context, c goredis.UniversalClient) error {
	load := func(ctx context.Context, c goredis.Scripter) error {
		for _, s := range []script{scriptIncrBy, scriptFloatSum, scriptMax, scriptCAS, scriptDedup} {
			if err := c.ScriptLoad(ctx, s.Source()).Err(); err != nil {
				return err
			}
		}
		return nil
	}
	if cc, ok := c.(*goredis.ClusterClient); ok {
		return cc.ForEachShard(ctx, func(ctx context.Context, c *goredis.Client) error { return load(ctx, c) })
	}
	return load(ctx, c)
}
