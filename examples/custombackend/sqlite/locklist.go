package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

var _ provider.LockLister = (*Provider)(nil)

// ListLocks implements provider.LockLister with one SELECT of the live rows from
// the pattern's literal prefix on, in key order (the primary key's), read until
// limit rows match or the keys no longer start with the prefix. SQLite compares
// text bytewise, the order ListLocks promises.
func (p *Provider) ListLocks(ctx context.Context, match string, limit int) ([]types.LockInfo, error) {
	const op = "list locks"
	m, err := provider.ParseLockPattern(match)
	if err = p.enter(ctx, err, provider.CheckLimit(limit)); err != nil {
		return nil, err
	}
	var list []types.LockInfo
	err = p.each(ctx, op, `SELECT key, holder, fence, expires_at FROM locks WHERE key >= ? AND `+liveSQL+` ORDER BY key`,
		[]any{m.Prefix(), sortTime(p.now())}, func(scan func(dest ...any) error) error {
			key, info, err := p.lockRow(ctx, op, scan)
			switch {
			case key != "" && !strings.HasPrefix(key, m.Prefix()):
				return errEnough
			case key != "" && !m.Match(key):
				return nil
			case provider.SkipCorrupt(ctx, p.report, err):
				return nil
			case err != nil:
				return err
			}
			list = append(list, *info)
			if len(list) == limit {
				return errEnough
			}
			return nil
		})
	if err != nil {
		return nil, err
	}
	return list, nil
}

// lockRow decodes a row of key, holder, fence, expires_at from locks: its key
// ("" when the row did not scan) and what holds it, or a *provider.CorruptError.
func (p *Provider) lockRow(ctx context.Context, op string, scan func(dest ...any) error) (string, *types.LockInfo, error) {
	var (
		key, holder string
		fence       int64
		exp         sql.NullString
		expires     time.Time
	)
	if err := scan(&key, &holder, &fence, &exp); err != nil {
		return "", nil, p.fail(ctx, op, err)
	}
	if exp.Valid {
		t, err := time.Parse(time.RFC3339Nano, exp.String)
		if err != nil {
			return key, nil, &provider.CorruptError{Kind: provider.KindLock, ID: key, Key: rowKey("locks", key),
				Err: fmt.Errorf("expires_at %q: %w", exp.String, err)}
		}
		expires = t
	}
	info, err := provider.HolderInfo(key, holder, fence, expires)
	return key, info, provider.CorruptAt(err, rowKey("locks", key))
}
