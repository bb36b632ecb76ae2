package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/state"
)

// getter is a store's read command of one key: GET key (the numeric stores), or
// HGET key field when field is set (BytesStore: HGET key v). Missing keys answer
// goredis.Nil.
type getter struct {
	field any // HGET's field, boxed once; nil for GET
}

// The getters of the numeric stores and of BytesStore.
var (
	getString = getter{}
	getBytes  = getter{field: "v"}
)

// argc is the length of g's command line.
func (g getter) argc() int {
	if g.field == nil {
		return 2
	}
	return 3
}

// cmd returns g's command reading key, its command line written to line (argc
// long), so that many commands can share one array.
func (g getter) cmd(ctx context.Context, line []any, key string) goredis.StringCmd {
	if g.field == nil {
		line[0], line[1] = "get", key
	} else {
		line[0], line[1], line[2] = "hget", key, g.field
	}
	return *goredis.NewStringCmd(ctx, line...)
}

// isWrongType reports whether err is Redis's WRONGTYPE reply: the key holds a
// value of another type than the store's (a string where BytesStore keeps a
// hash, a hash where a numeric store keeps a string).
func isWrongType(err error) bool {
	var re goredis.Error
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), "WRONGTYPE ")
}

// decoder turns the raw value into a V.
type decoder[V any] func(raw string) (V, error)

// readOne is Get: one round trip.
func readOne[V any](ctx context.Context, b *base, kind string, k state.Key, get getter, decode decoder[V], missing V) (V, bool, error) {
	if err := b.life.Enter(ctx, state.CheckKey(k)); err != nil {
		return missing, false, err
	}
	key := b.keys.valueKey(kind, k)
	cmd := get.cmd(ctx, make([]any, get.argc()), key)
	_ = b.client.Process(ctx, &cmd)
	return decodeCmd(b, key, &cmd, decode, missing)
}

// readMany is GetMany: every read in one pipeline, which is one round trip to a
// single server and one per node (sent concurrently by go-redis) on a cluster.
// Duplicate keys are read twice; an empty ks costs nothing. The commands and their
// arguments live in one array each, not one allocation per key.
func readMany[V any](ctx context.Context, b *base, kind string, ks []state.Key, get getter, decode decoder[V], missing V) ([]V, []bool, error) {
	if err := b.life.Enter(ctx, state.CheckKeys(ks)); err != nil {
		return nil, nil, err
	}
	vals, found := make([]V, len(ks)), make([]bool, len(ks))
	if len(ks) == 0 {
		return vals, found, nil
	}
	argc := get.argc()
	lines := make([]any, len(ks)*argc)
	cmds := make([]goredis.StringCmd, len(ks))
	queue := make([]goredis.Cmder, len(ks))
	for i, k := range ks {
		cmds[i] = get.cmd(ctx, lines[i*argc:(i+1)*argc:(i+1)*argc], b.keys.valueKey(kind, k))
		queue[i] = &cmds[i]
	}
	pipe := b.client.Pipeline()
	_ = pipe.BatchProcess(ctx, queue...)
	// Exec reports the first failed command, goredis.Nil and WRONGTYPE included;
	// the loop below looks at every command instead.
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, goredis.Nil) && !isWrongType(err) {
		return nil, nil, b.wrap("get many", cmdKey(&cmds[0]), err)
	}
	for i := range cmds {
		v, ok, err := decodeCmd(b, cmdKey(&cmds[i]), &cmds[i], decode, missing)
		if err != nil {
			return nil, nil, err
		}
		vals[i], found[i] = v, ok
	}
	return vals, found, nil
}

// cmdKey is the key a getter's command reads.
func cmdKey(cmd *goredis.StringCmd) string {
	key, _ := cmd.Args()[1].(string)
	return key
}

func decodeCmd[V any](b *base, key string, cmd *goredis.StringCmd, decode decoder[V], missing V) (V, bool, error) {
	raw, err := cmd.Result()
	if errors.Is(err, goredis.Nil) {
		return missing, false, nil
	}
	if isWrongType(err) { // a key of another type, written by hand
		return missing, false, b.wrap("decode", key, fmt.Errorf("%w: %w", state.ErrCorrupt, err))
	}
	if err != nil {
		return missing, false, b.wrap("get", key, err)
	}
	v, err := decode(raw)
	if err != nil {
		return missing, false, b.wrap("decode", key, fmt.Errorf("%w: %w", state.ErrCorrupt, err))
	}
	return v, true, nil
}
