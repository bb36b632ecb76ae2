package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// Locks and leases share the locks table, one row per held key: holder is
// provider.LockHolder(owner) for a lock and provider.LeaseHolder(token) for a lease,
// fence the lease's fence (0 for a lock). An expired row is as good as absent:
// acquiring overwrites it.

var _ provider.LockInspector = (*Provider)(nil)

// acquire takes key for holder in tx if no live row holds it, and reports whether
// it did.
func (p *Provider) acquire(ctx context.Context, tx *sql.Tx, op, key, holder string, fence int64, now time.Time, ttl time.Duration) (bool, error) {
	n, err := p.exec(ctx, tx, op,
		`INSERT INTO locks (key, holder, fence, expires_at) VALUES (?, ?, ?, ?)
		 ON CONFLICT (key) DO UPDATE
		 SET holder = excluded.holder, fence = excluded.fence, expires_at = excluded.expires_at
		 WHERE locks.expires_at IS NOT NULL AND locks.expires_at <= ?`,
		key, holder, fence, expiresAt(after(now, ttl)), sortTime(now))
	return n == 1, err
}

// release deletes key's row if holder holds it live, and otherwise returns an error
// wrapping provider.ErrLockNotHeld.
func (p *Provider) release(ctx context.Context, op, key, holder string) error {
	n, err := p.exec(ctx, p.db, op, `DELETE FROM locks WHERE key = ? AND holder = ? AND `+liveSQL,
		key, holder, sortTime(p.now()))
	if err == nil && n == 0 {
		return fmt.Errorf("sqlite: %s %q: %w", op, key, provider.ErrLockNotHeld)
	}
	return err
}

// AcquireLock implements provider.Locker.
func (p *Provider) AcquireLock(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	if err := p.enterWrite(ctx, "AcquireLock", provider.CheckLockKey(key), provider.CheckTTL(ttl)); err != nil {
		return false, err
	}
	var ok bool
	err := p.inTx(ctx, "acquire lock", func(tx *sql.Tx) error {
		var err error
		ok, err = p.acquire(ctx, tx, "acquire lock", key, provider.LockHolder(p.owner), 0, p.now(), ttl)
		return err
	})
	return err == nil && ok, err
}

// ReleaseLock implements provider.Locker.
func (p *Provider) ReleaseLock(ctx context.Context, key string) error {
	if err := p.enterWrite(ctx, "ReleaseLock", provider.CheckLockKey(key)); err != nil {
		return err
	}
	return p.release(ctx, "release lock", key, provider.LockHolder(p.owner))
}

// AcquireLease implements provider.Leaser. In one transaction it increments the
// key's fence counter, which is never reset, and takes the key.
func (p *Provider) AcquireLease(ctx context.Context, key string, ttl time.Duration) (*types.Lease, error) {
	const op = "acquire lease"
	if err := p.enterWrite(ctx, "AcquireLease", provider.CheckLockKey(key), provider.CheckLeaseTTL(ttl)); err != nil {
		return nil, err
	}
	now := p.now()
	lease := &types.Lease{Key: key, Token: randomHex(), ExpiresAt: now.Add(ttl)}
	err := p.inTx(ctx, op, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx,
			`INSERT INTO fences (key, fence) VALUES (?, 1)
			 ON CONFLICT (key) DO UPDATE SET fence = fence + 1
			 RETURNING fence`, key).Scan(&lease.Fence)
		if err != nil {
			return p.fail(ctx, op, err)
		}
		ok, err := p.acquire(ctx, tx, op, key, provider.LeaseHolder(lease.Token), lease.Fence, now, ttl)
		if err == nil && !ok {
			// Rolling back also undoes the fence increment.
			return fmt.Errorf("sqlite: %s %q: %w", op, key, provider.ErrLockHeld)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return lease, nil
}

// RenewLease implements provider.Leaser. It is one UPDATE that matches only the
// current, live lease.
func (p *Provider) RenewLease(ctx context.Context, lease types.Lease, ttl time.Duration) (*types.Lease, error) {
	if err := p.enterWrite(ctx, "RenewLease", provider.Validate(lease), provider.CheckLeaseTTL(ttl)); err != nil {
		return nil, err
	}
	now := p.now()
	lease.ExpiresAt = now.Add(ttl)
	n, err := p.exec(ctx, p.db, "renew lease",
		`UPDATE locks SET expires_at = ? WHERE key = ? AND holder = ? AND `+liveSQL,
		sortTime(lease.ExpiresAt), lease.Key, provider.LeaseHolder(lease.Token), sortTime(now))
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("sqlite: renew lease %q: %w", lease.Key, provider.ErrLockNotHeld)
	}
	return &lease, nil
}

// ReleaseLease implements provider.Leaser.
func (p *Provider) ReleaseLease(ctx context.Context, lease types.Lease) error {
	if err := p.enterWrite(ctx, "ReleaseLease", provider.Validate(lease)); err != nil {
		return err
	}
	return p.release(ctx, "release lease", lease.Key, provider.LeaseHolder(lease.Token))
}

// GetLockInfo implements provider.LockInspector with one SELECT of the key's live
// row (liveSQL, the rule acquire overwrites by).
func (p *Provider) GetLockInfo(ctx context.Context, key string) (*types.LockInfo, error) {
	const op = "inspect lock"
	if err := p.enter(ctx, provider.CheckLockKey(key)); err != nil {
		return nil, err
	}
	var info *types.LockInfo
	err := p.each(ctx, op, `SELECT key, holder, fence, expires_at FROM locks WHERE key = ? AND `+liveSQL,
		[]any{key, sortTime(p.now())}, func(scan func(dest ...any) error) error {
			var err error
			_, info, err = p.lockRow(ctx, op, scan)
			return err
		})
	if err != nil {
		return nil, err
	}
	return info, nil
}
