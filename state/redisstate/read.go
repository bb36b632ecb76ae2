package redisstate

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

// readMany is GetMany. A getter of plain values (GET: the numeric stores) reads
// with MGET (see readValues); BytesStore's hashes, which MGET cannot read, with
// one HGET per key in one pipeline. Either is one round trip to a single server
// and one per node (sent concurrently by go-redis) on a cluster. Duplicate keys
// are read twice; an empty ks costs nothing. The commands and their arguments
// live in one array each, not one allocation per key.
func readMany[V any](ctx context.Context, b *base, kind string, ks []state.Key, get getter, decode decoder[V], missing V) ([]V, []bool, error) {
	if err := b.life.Enter(ctx, state.CheckKeys(ks)); err != nil {
		return nil, nil, err
	}
	vals, found := make([]V, len(ks)), make([]bool, len(ks))
	if len(ks) == 0 {
		return vals, found, nil
	}
	if get.field == nil {
		return readValues(ctx, b, kind, ks, decode, missing, vals, found)
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

// mgetKeys is the most keys one MGET reads: a larger GetMany sends several, in the
// same round trip, so that no single command holds the server for long.
const mgetKeys = 1000

// readValues reads plain string values with MGET, the cheapest read of many
// strings for the server (one command parsed and one reply written, where GETs
// cost one each): one MGET per mgetKeys keys on a single server, one per hash
// slot (and mgetKeys keys) on a Redis Cluster, where an MGET must stay in one
// slot, and one per hash tag (the keys' entity) on a Ring, whose shards follow
// the tag. A single MGET goes alone, several in one pipeline. MGET answers nil
// for a missing key and also for a key of another type (WRONGTYPE is GET's
// reply): such a key, which no store writes, reads as missing here, where Get
// reports it as corrupt.
func readValues[V any](ctx context.Context, b *base, kind string, ks []state.Key, decode decoder[V], missing V, vals []V, found []bool) ([]V, []bool, error) {
	keys := make([]string, len(ks))
	for i, k := range ks {
		keys[i] = b.keys.valueKey(kind, k)
	}
	groups := mgetGroups(b.client, keys)
	lines := make([]any, len(keys)+len(groups))
	cmds := make([]goredis.SliceCmd, len(groups))
	at := 0
	for g, idx := range groups {
		line := lines[at : at+1+len(idx) : at+1+len(idx)]
		at += len(line)
		line[0] = "mget"
		for j, i := range idx {
			line[1+j] = keys[i]
		}
		cmds[g] = *goredis.NewSliceCmd(ctx, line...)
	}
	if len(cmds) == 1 {
		_ = b.client.Process(ctx, &cmds[0])
	} else {
		queue := make([]goredis.Cmder, len(cmds))
		for g := range cmds {
			queue[g] = &cmds[g]
		}
		pipe := b.client.Pipeline()
		_ = pipe.BatchProcess(ctx, queue...)
		_, _ = pipe.Exec(ctx) // each command's error is read below
	}
	for g, idx := range groups {
		replies, err := cmds[g].Result()
		if err == nil && len(replies) != len(idx) {
			err = fmt.Errorf("MGET of %d keys answered %d values", len(idx), len(replies))
		}
		if err != nil {
			return nil, nil, b.wrap("get many", keys[idx[0]], err)
		}
		for j, i := range idx {
			switch r := replies[j].(type) {
			case nil:
				vals[i] = missing
			case string:
				v, err := decode(r)
				if err != nil {
					return nil, nil, b.wrap("decode", keys[i], fmt.Errorf("%w: %w", state.ErrCorrupt, err))
				}
				vals[i], found[i] = v, true
			default:
				return nil, nil, b.wrap("decode", keys[i], fmt.Errorf("%w: MGET answered %T", state.ErrCorrupt, r))
			}
		}
	}
	return vals, found, nil
}

// mgetGroups splits the indexes of keys into MGETs (see readValues), each in the
// order of keys.
func mgetGroups(client goredis.UniversalClient, keys []string) [][]int {
	switch client.(type) {
	case *goredis.Client:
		return groupBy(keys, func(string) struct{} { return struct{}{} })
	case *goredis.ClusterClient:
		return groupBy(keys, clusterSlot)
	default: // a Ring, or another client that shards by hash tag
		return groupBy(keys, hashTag)
	}
}

// groupBy splits the indexes of keys by of(key), at most mgetKeys to a group, in
// groups that share one array.
func groupBy[G comparable](keys []string, of func(key string) G) [][]int {
	gid := make([]int, len(keys)) // each key's group
	var sizes []int
	open := map[G]int{} // a group key's last group
	for i, key := range keys {
		gk := of(key)
		g, ok := open[gk]
		if !ok || sizes[g] == mgetKeys {
			g = len(sizes)
			sizes = append(sizes, 0)
			open[gk] = g
		}
		gid[i] = g
		sizes[g]++
	}
	groups := make([][]int, len(sizes))
	flat := make([]int, 0, len(keys))
	for g, n := range sizes {
		groups[g] = flat[len(flat) : len(flat) : len(flat)+n]
		flat = flat[:len(flat)+n]
	}
	for i, g := range gid {
		groups[g] = append(groups[g], i)
	}
	return groups
}

// hashTag is the part of key that Redis Cluster hashes: between the first '{' and
// the next '}' when that is not empty, else the whole key.
func hashTag(key string) string {
	if s := strings.IndexByte(key, '{'); s >= 0 {
		if e := strings.IndexByte(key[s+1:], '}'); e > 0 {
			return key[s+1 : s+1+e]
		}
	}
	return key
}

// clusterSlot is the Redis Cluster hash slot of key: CRC16 (XMODEM) of its hash
// tag, modulo 16384.
func clusterSlot(key string) uint16 {
	var crc uint16
	for _, c := range []byte(hashTag(key)) {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc & 16383
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
