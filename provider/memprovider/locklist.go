package memprovider

import (
	"context"
	"slices"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

var _ provider.LockLister = (*Provider)(nil)

// ListLocks implements provider.LockLister: the live locks and leases whose keys
// match, as GetLockInfo reports each, under one hold of the store lock.
func (p *Provider) ListLocks(ctx context.Context, match string, limit int) ([]types.LockInfo, error) {
	m, err := provider.ParseLockPattern(match)
	if err = p.enter(ctx, err, provider.CheckLimit(limit)); err != nil {
		return nil, err
	}
	defer p.s.mu.Unlock()
	now := p.now()
	keys := make([]string, 0, len(p.s.locks))
	for key, l := range p.s.locks {
		if provider.Live(l.expires, now) && m.Match(key) {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	var out []types.LockInfo
	for _, key := range keys {
		if len(out) == limit {
			break
		}
		l := p.s.locks[key]
		info, err := provider.HolderInfo(key, l.holder, p.s.fences[key], l.expires)
		if provider.SkipCorrupt(ctx, p.sig, provider.CorruptAt(err, "memory lock "+key)) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, *info)
	}
	return out, nil
}
