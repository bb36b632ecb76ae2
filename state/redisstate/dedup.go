package redisstate

import (
	"context"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/redisx"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/internal/storekey"
)

// Deduper is a state.Deduper over Redis: a claim is the key "prefix:seen:eventID",
// created by a Lua script only when absent and holding the claiming call's random
// token, so exactly one caller across all processes wins it until it expires
// (WithDedupTTL) or is released, also when the client library retried a claim whose reply
// was lost (the retry finds its own token and still answers true). It is safe for
// concurrent use.
type Deduper struct {
	base
	ttlArg any // redisx.Millis(claim ttl), boxed once
}

var _ state.Deduper = (*Deduper)(nil)

// NewDeduper returns a Deduper over client, which it uses but does not own, keeping
// its claims under prefix as NewInt64SumStore does. Options: WithDedupTTL (default
// state.DefaultDedupTTL; 0 = claims never expire), WithMeterProvider, WithLogger.
func NewDeduper(client goredis.UniversalClient, prefix string, opts ...DeduperOption) (*Deduper, error) {
	const name = "Deduper"
	c, err := newConfig("New"+name, opts, DeduperOption.ApplyDeduper)
	if err != nil {
		return nil, err
	}
	b, err := newBase(&c, name, client, prefix)
	if err != nil {
		return nil, err
	}
	return &Deduper{base: b, ttlArg: redisx.Millis(c.DedupTTL)}, nil
}

// MarkSeen claims eventID with one Lua script (one round trip); firstSeen is true for
// exactly one caller until the claim expires or is released. The ttl is sent as
// internal/redisx.Millis: the claim is gone at the server's first millisecond >=
// now + ttl.
func (d *Deduper) MarkSeen(ctx context.Context, eventID string) (bool, error) {
	key, err := d.key(ctx, eventID)
	if err != nil {
		return false, err
	}
	args := append(d.args(scriptDedup, 1, 3), key, d.ttlArg, storekey.Token())
	n, err := d.run(ctx, scriptDedup, args).Int()
	if err != nil {
		return false, d.wrap("mark seen", key, err)
	}
	return n == 1, nil
}

// Release deletes the claim on eventID (DEL, one round trip), so the next MarkSeen
// wins again; releasing an unclaimed ID is not an error.
func (d *Deduper) Release(ctx context.Context, eventID string) error {
	key, err := d.key(ctx, eventID)
	if err != nil {
		return err
	}
	if err := d.client.Del(ctx, key).Err(); err != nil {
		return d.wrap("release", key, err)
	}
	return nil
}

func (d *Deduper) key(ctx context.Context, eventID string) (string, error) {
	if err := d.life.Enter(ctx, state.CheckEventID(eventID)); err != nil {
		return "", err
	}
	return d.keys.seenKey(eventID), nil
}
