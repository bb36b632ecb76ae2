package redisprovider

import (
	"context"
	"errors"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/ids"
	"github.com/pipestate/pipestate/internal/redisx"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

var _ provider.LockInspector = (*Provider)(nil)

// lockHolder and leaseHolder are the values of a held lock key (a lock's value
// also ends in "\n" and its call's nonce).
func (p *Provider) lockHolder() string { return provider.LockHolder(p.owner) }
func leaseHolder(token string) string  { return provider.LeaseHolder(token) }

// AcquireLock implements provider.Locker with one script: SET key owner NX [PX ttl];
// ttl is sent as internal/redisx.Millis (the key is gone at the server's first
// millisecond >= now + ttl) and 0 means until released. Expiry is judged by the
// server. A call that go-redis retried after a lost reply reports
// its first attempt's outcome (see "Retries" in the package doc).
func (p *Provider) AcquireLock(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	if err := p.life.EnterWrite(ctx, "acquire lock", provider.CheckLockKey(key), provider.CheckTTL(ttl)); err != nil {
		return false, err
	}
	lk, _ := p.k.lock(key)
	nonce := ids.Random()
	n, err := p.run(ctx, scriptLockAcquire, []string{lk, p.k.call(lk, nonce)}, p.lockHolder()+"\n"+nonce, redisx.Millis(ttl),
		callMemory.Milliseconds()).Int64()
	if err != nil {
		return false, p.wrap("acquire lock", err)
	}
	return n == 1, nil
}

// ReleaseLock implements provider.Locker with one script that deletes the key only
// if this instance's owner identity, compared exactly, holds it; otherwise it
// returns an error wrapping provider.ErrLockNotHeld. A release that go-redis retried
// after a lost reply returns nil (see "Retries" in the package doc).
func (p *Provider) ReleaseLock(ctx context.Context, key string) error {
	if err := p.life.EnterWrite(ctx, "release lock", provider.CheckLockKey(key)); err != nil {
		return err
	}
	return p.release(ctx, "release lock", key, p.lockHolder())
}

// release deletes the lock key of key while holder holds it, after its caller
// opened the method.
func (p *Provider) release(ctx context.Context, op, key, holder string) error {
	lk, _ := p.k.lock(key)
	n, err := p.run(ctx, scriptLockRelease, []string{lk, p.k.call(lk, ids.Random())}, holder, callMemory.Milliseconds()).Int64()
	if err != nil {
		return p.wrap(op, err)
	}
	if n == 0 {
		return fmt.Errorf("redis: %s: %w: %q", op, provider.ErrLockNotHeld, key)
	}
	return nil
}

// AcquireLease implements provider.Leaser with one script: SET NX PX on the key
// shared with locks, then INCR of the key's fence counter, which has no TTL, so
// fences strictly increase forever. The key expires on the server after ttl
// (internal/redisx.Millis); the returned ExpiresAt is the clock's now + ttl, taken
// before the call. A call that go-redis retried after a lost reply
// returns the lease its first attempt took, with its fence (see "Retries" in the
// package doc).
func (p *Provider) AcquireLease(ctx context.Context, key string, ttl time.Duration) (*types.Lease, error) {
	if err := p.life.EnterWrite(ctx, "acquire lease", provider.CheckLockKey(key), provider.CheckLeaseTTL(ttl)); err != nil {
		return nil, err
	}
	lk, fk := p.k.lock(key)
	token := ids.Random()
	ms := redisx.Millis(ttl)
	now := p.now()
	fence, err := p.run(ctx, scriptLeaseAcquire, []string{lk, fk, p.k.call(lk, token)}, leaseHolder(token), ms,
		callMemory.Milliseconds()).Int64()
	if err != nil {
		return nil, p.wrap("acquire lease", err)
	}
	if fence == 0 {
		return nil, fmt.Errorf("redis: acquire lease: %w: %q", provider.ErrLockHeld, key)
	}
	return &types.Lease{Key: key, Token: token, Fence: fence, ExpiresAt: now.Add(ttl)}, nil
}

// RenewLease implements provider.Leaser with one script that extends the key only
// while it still holds this lease; otherwise it returns an error wrapping
// provider.ErrLockNotHeld.
func (p *Provider) RenewLease(ctx context.Context, lease types.Lease, ttl time.Duration) (*types.Lease, error) {
	if err := p.life.EnterWrite(ctx, "renew lease", provider.Validate(lease), provider.CheckLeaseTTL(ttl)); err != nil {
		return nil, err
	}
	lk, _ := p.k.lock(lease.Key)
	ms := redisx.Millis(ttl)
	now := p.now()
	n, err := p.run(ctx, scriptLeaseRenew, []string{lk}, leaseHolder(lease.Token), ms).Int64()
	if err != nil {
		return nil, p.wrap("renew lease", err)
	}
	if n == 0 {
		return nil, fmt.Errorf("redis: renew lease: %w: %q", provider.ErrLockNotHeld, lease.Key)
	}
	lease.ExpiresAt = now.Add(ttl)
	return &lease, nil
}

// ReleaseLease implements provider.Leaser with one script that deletes the key only
// while it holds this lease (the token compared exactly); otherwise it returns an
// error wrapping provider.ErrLockNotHeld. Like ReleaseLock, a release retried after
// a lost reply returns nil.
func (p *Provider) ReleaseLease(ctx context.Context, lease types.Lease) error {
	if err := p.life.EnterWrite(ctx, "release lease", provider.Validate(lease)); err != nil {
		return err
	}
	return p.release(ctx, "release lease", lease.Key, leaseHolder(lease.Token))
}

// GetLockInfo implements provider.LockInspector with one read-only MULTI/EXEC
// round trip: GET and PTTL of the key, GET of its fence counter (all one slot).
// Expiry is the server's, as for AcquireLock: a key the server still returns is
// held. ExpiresAt is the clock's now, taken before the call, plus the remaining
// PTTL, so it is in milliseconds and agrees with the ExpiresAt AcquireLease and
// RenewLease returned when the clocks agree; nil for a lock taken with ttl 0.
func (p *Provider) GetLockInfo(ctx context.Context, key string) (*types.LockInfo, error) {
	if err := p.life.Enter(ctx, provider.CheckLockKey(key)); err != nil {
		return nil, err
	}
	now := p.now()
	var r lockRead
	_, err := p.c.TxPipelined(ctx, func(pipe goredis.Pipeliner) error {
		r = p.readLock(ctx, pipe, key)
		return nil
	})
	if err != nil && !errors.Is(err, goredis.Nil) { // Nil: a free key or one never leased
		return nil, p.wrap("inspect lock", err)
	}
	info, err := r.info(now)
	var ce *provider.CorruptError
	if err != nil && !errors.As(err, &ce) {
		return nil, p.wrap("inspect lock", err)
	}
	return info, err
}
