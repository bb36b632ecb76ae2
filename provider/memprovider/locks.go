package memprovider

import (
	"context"
	"fmt"
	"time"

	"github.com/pipestate/pipestate/internal/ids"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

var _ provider.LockInspector = (*Provider)(nil)

// lock is a held lock or lease; holder is provider.LockHolder(owner) or
// provider.LeaseHolder(token).
type lock struct {
	holder  string
	expires time.Time // zero: never
}

// AcquireLock implements provider.Locker.
func (p *Provider) AcquireLock(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	if err := p.enterWrite(ctx, "acquire lock", provider.CheckLockKey(key), provider.CheckTTL(ttl)); err != nil {
		return false, err
	}
	defer p.s.mu.Unlock()
	now := p.now()
	if l, ok := p.s.locks[key]; ok && provider.Live(l.expires, now) {
		return false, nil
	}
	p.s.locks[key] = lock{holder: provider.LockHolder(p.owner), expires: provider.Expiry(now, ttl)}
	return true, nil
}

// ReleaseLock implements provider.Locker.
func (p *Provider) ReleaseLock(ctx context.Context, key string) error {
	if err := p.enterWrite(ctx, "release lock", provider.CheckLockKey(key)); err != nil {
		return err
	}
	defer p.s.mu.Unlock()
	return p.release(key, provider.LockHolder(p.owner))
}

// release frees key if holder holds it live; the store must be locked.
func (p *Provider) release(key, holder string) error {
	if l, ok := p.s.locks[key]; !ok || l.holder != holder || !provider.Live(l.expires, p.now()) {
		return fmt.Errorf("%w: %q", provider.ErrLockNotHeld, key)
	}
	delete(p.s.locks, key)
	return nil
}

// AcquireLease implements provider.Leaser.
func (p *Provider) AcquireLease(ctx context.Context, key string, ttl time.Duration) (*types.Lease, error) {
	if err := p.enterWrite(ctx, "acquire lease", provider.CheckLockKey(key), provider.CheckLeaseTTL(ttl)); err != nil {
		return nil, err
	}
	defer p.s.mu.Unlock()
	now := p.now()
	if l, ok := p.s.locks[key]; ok && provider.Live(l.expires, now) {
		return nil, fmt.Errorf("%w: %q", provider.ErrLockHeld, key)
	}
	p.s.fences[key]++
	lease := &types.Lease{Key: key, Token: ids.Random(), Fence: p.s.fences[key], ExpiresAt: now.Add(ttl)}
	p.s.locks[key] = lock{holder: provider.LeaseHolder(lease.Token), expires: lease.ExpiresAt}
	return lease, nil
}

// RenewLease implements provider.Leaser.
func (p *Provider) RenewLease(ctx context.Context, lease types.Lease, ttl time.Duration) (*types.Lease, error) {
	if err := p.enterWrite(ctx, "renew lease", provider.Validate(lease), provider.CheckLeaseTTL(ttl)); err != nil {
		return nil, err
	}
	defer p.s.mu.Unlock()
	now := p.now()
	l, ok := p.s.locks[lease.Key]
	if !ok || l.holder != provider.LeaseHolder(lease.Token) || !provider.Live(l.expires, now) {
		return nil, fmt.Errorf("%w: %q", provider.ErrLockNotHeld, lease.Key)
	}
	l.expires = now.Add(ttl)
	p.s.locks[lease.Key] = l
	lease.ExpiresAt = l.expires
	return &lease, nil
}

// ReleaseLease implements provider.Leaser.
func (p *Provider) ReleaseLease(ctx context.Context, lease types.Lease) error {
	if err := p.enterWrite(ctx, "release lease", provider.Validate(lease)); err != nil {
		return err
	}
	defer p.s.mu.Unlock()
	return p.release(lease.Key, provider.LeaseHolder(lease.Token))
}

// GetLockInfo implements provider.LockInspector: the key's live lock or lease,
// its expiry exactly as stored, and for a lease the key's fence counter, which is
// the current lease's fence.
func (p *Provider) GetLockInfo(ctx context.Context, key string) (*types.LockInfo, error) {
	if err := p.enter(ctx, provider.CheckLockKey(key)); err != nil {
		return nil, err
	}
	defer p.s.mu.Unlock()
	l, ok := p.s.locks[key]
	if !ok || !provider.Live(l.expires, p.now()) {
		return nil, nil
	}
	info, err := provider.HolderInfo(key, l.holder, p.s.fences[key], l.expires)
	return info, provider.CorruptAt(err, "memory lock "+key)
}
