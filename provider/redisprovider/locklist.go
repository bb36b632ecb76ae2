package redisprovider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

var _ provider.LockLister = (*Provider)(nil)

// lockScanCount is the COUNT hint of each SCAN call of ListLocks: how many keys
// the server looks at per round trip.
const lockScanCount = 1000

// lockReadsAtOnce bounds the MULTIs that ListLocks sends at once on a Redis
// Cluster, one per key listed.
const lockReadsAtOnce = 16

// lockUnescaper undoes lockEscaper.
var lockUnescaper = strings.NewReplacer("%25", "%", "%7B", "{", "%7D", "}")

// globEscaper makes a string literal in a SCAN MATCH pattern.
var globEscaper = strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`)

// ListLocks implements provider.LockLister. It SCANs the keyspace of every
// master (a Redis Cluster: all masters at once; one server: it) with a MATCH on
// the lock keys of p's prefix whose keys start with the pattern's literal prefix,
// lockScanCount keys per round trip, so it costs about keys-in-the-database /
// lockScanCount round trips per master whatever it finds. Then it reads the
// first limit matching keys as GetLockInfo does (GET and PTTL of the key, GET of
// its fence, in a MULTI): on one server all in one MULTI, one round trip; on a
// Redis Cluster, where a MULTI cannot span slots, one MULTI per key, at most
// lockReadsAtOnce at once. A key skipped (corrupt, or expired between the two
// steps) is made up for by another round of both steps after the last key read,
// until limit keys are listed or none are left.
func (p *Provider) ListLocks(ctx context.Context, match string, limit int) ([]types.LockInfo, error) {
	m, err := provider.ParseLockPattern(match)
	if err = p.life.Enter(ctx, err, provider.CheckLimit(limit)); err != nil {
		return nil, err
	}
	var out []types.LockInfo
	after := "" // every key listed or skipped so far sorts at or before it
	for len(out) < limit {
		want := limit - len(out)
		keys, err := p.lockKeys(ctx, m, after, want)
		if err != nil {
			return nil, p.wrap("list locks", err)
		}
		infos, err := p.readLocks(ctx, keys)
		if err != nil {
			return nil, p.wrap("list locks", err)
		}
		out = append(out, infos...)
		if len(keys) < want {
			break
		}
		after = keys[len(keys)-1]
	}
	return out, nil
}

// lockKeys SCANs the lock keys of p's prefix that match m and sort after after
// ("": all) and returns the first n, in order.
func (p *Provider) lockKeys(ctx context.Context, m *provider.LockPattern, after string, n int) ([]string, error) {
	head := p.k.prefix + ":{lock:"
	pattern := globEscaper.Replace(head+lockEscaper.Replace(m.Prefix())) + "*}"
	var (
		mu    sync.Mutex // ForEachMaster scans the masters at once
		first = provider.NewFirstByKey(n, func(key string) string { return key })
	)
	scan := func(ctx context.Context, c goredis.Cmdable) error {
		it := c.Scan(ctx, 0, pattern, lockScanCount).Iterator()
		for it.Next(ctx) {
			name := strings.TrimSuffix(strings.TrimPrefix(it.Val(), head), "}")
			if key := lockUnescaper.Replace(name); key > after && m.Match(key) {
				mu.Lock()
				first.Add(key)
				mu.Unlock()
			}
		}
		return it.Err()
	}
	var err error
	if cc, ok := p.c.(*goredis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error { return scan(ctx, c) })
	} else {
		err = scan(ctx, p.c)
	}
	return first.Items(), err
}

// readLocks reads what holds each of keys as GetLockInfo does, in order: the
// held ones; a free one is left out, and a corrupt one is reported and left out.
func (p *Provider) readLocks(ctx context.Context, keys []string) ([]types.LockInfo, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	now := p.now()
	reads := make([]lockRead, len(keys))
	read := func(ctx context.Context, from, to int) error {
		_, err := p.c.TxPipelined(ctx, func(pipe goredis.Pipeliner) error {
			for i := from; i < to; i++ {
				reads[i] = p.readLock(ctx, pipe, keys[i])
			}
			return nil
		})
		if errors.Is(err, goredis.Nil) { // a key that expired since the scan, or one never leased
			return nil
		}
		return err
	}
	var err error
	if _, ok := p.c.(*goredis.ClusterClient); ok { // a MULTI cannot span slots: one per key, at once
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(lockReadsAtOnce)
		for i := range keys {
			g.Go(func() error { return read(gctx, i, i+1) })
		}
		err = g.Wait()
	} else {
		err = read(ctx, 0, len(keys))
	}
	if err != nil {
		return nil, err
	}
	var out []types.LockInfo
	for _, r := range reads {
		info, err := r.info(now)
		switch {
		case provider.SkipCorrupt(ctx, p.sig, err):
		case err != nil:
			return nil, err
		case info != nil:
			out = append(out, *info)
		}
	}
	return out, nil
}

// lockRead is the queued reads of one lock key: what GetLockInfo and ListLocks
// decode.
type lockRead struct {
	key, lk, fk  string
	value, fence *goredis.StringCmd
	ttl          *goredis.DurationCmd
}

// readLock queues on pipe the reads of key: GET and PTTL of the key, GET of its
// fence counter (one slot).
func (p *Provider) readLock(ctx context.Context, pipe goredis.Pipeliner, key string) lockRead {
	lk, fk := p.k.lock(key)
	return lockRead{key: key, lk: lk, fk: fk, value: pipe.Get(ctx, lk), ttl: pipe.PTTL(ctx, lk), fence: pipe.Get(ctx, fk)}
}

// info decodes the reads, executed, with now the clock's reading before they
// were sent: nil for a free key, a *provider.CorruptError for a value that does
// not decode.
func (r lockRead) info(now time.Time) (*types.LockInfo, error) {
	v, err := r.value.Result()
	if errors.Is(err, goredis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	holder, _, _ := strings.Cut(v, "\n") // a lock's value ends in its call's nonce
	f, err := r.fence.Int64()
	if err != nil && !errors.Is(err, goredis.Nil) { // the exec succeeded: the value does not parse
		return nil, corrupt(provider.KindLock, r.key, where(r.fk, ""), fmt.Errorf("fence counter: %w", err))
	}
	var expires time.Time
	if d := r.ttl.Val(); d >= 0 { // -1: no expiry
		expires = now.Add(d)
	}
	info, err := provider.HolderInfo(r.key, holder, f, expires)
	return info, provider.CorruptAt(err, where(r.lk, ""))
}
