package redis

import (
	"context"
	"errors"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/state"
)

// getter reads the raw value of one key: GET for the numeric stores, HGET key v for
// BytesStore. Missing keys answer goredis.Nil.
type getter func(ctx context.Context, c goredis.Cmdable, key string) *goredis.StringCmd

// decoder turns the raw value into a V.
type decoder[V any] func(raw string) (V, error)

// readOne is Get: one round trip.
func readOne[V any](ctx context.Context, b *base, kind string, k state.Key, get getter, decode decoder[V], missing V) (V, bool, error) {
	if err := b.life.Enter(ctx, state.CheckKey(k)); err != nil {
		return missing, false, err
	}
	key := b.keys.valueKey(kind, k)
	return decodeCmd(b, key, get(ctx, b.client, key), decode, missing)
}

// readMany is GetMany: every read in one pipeline, which is one round trip to a
// single server and one per node (sent concurrently by go-redis) on a cluster.
// Duplicate keys are read twice; an empty ks costs nothing.
func readMany[V any](ctx context.Context, b *base, kind string, ks []state.Key, get getter, decode decoder[V], missing V) ([]V, []bool, error) {
	if err := b.life.Enter(ctx, state.CheckKeys(ks)); err != nil {
		return nil, nil, err
	}
	vals, found := make([]V, len(ks)), make([]bool, len(ks))
	if len(ks) == 0 {
		return vals, found, nil
	}
	keys := make([]string, len(ks))
	cmds := make([]*goredis.StringCmd, len(ks))
	pipe := b.client.Pipeline()
	for i, k := range ks {
		keys[i] = b.keys.valueKey(kind, k)
		cmds[i] = get(ctx, pipe, keys[i])
	}
	// Exec reports the first failed command, goredis.Nil included; the loop below
	// looks at every command instead.
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, goredis.Nil) {
		return nil, nil, b.wrap("get many", keys[0], err)
	}
	for i, cmd := range cmds {
		v, ok, err := decodeCmd(b, keys[i], cmd, decode, missing)
		if err != nil {
			return nil, nil, err
		}
		vals[i], found[i] = v, ok
	}
	return vals, found, nil
}

func decodeCmd[V any](b *base, key string, cmd *goredis.StringCmd, decode decoder[V], missing V) (V, bool, error) {
	raw, err := cmd.Result()
	if errors.Is(err, goredis.Nil) {
		return missing, false, nil
	}
	if err != nil {
		return missing, false, b.wrap("get", key, err)
	}
	v, err := decode(raw)
	if err != nil {
		return missing, false, b.wrap("decode", key, err)
	}
	return v, true, nil
}

func getString(ctx context.Context, c goredis.Cmdable, key string) *goredis.StringCmd {
	return c.Get(ctx, key)
}
