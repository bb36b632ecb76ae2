package ddbprovider

import (
	"context"
	"fmt"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

var _ provider.LockLister = (*Provider)(nil)

// lockScan is ListLocks's Scan filter: the held lock items whose keys start
// with :p (LOCK# and the pattern's literal prefix).
var lockScan = &form{"begins_with(#pk, :p) AND #sk = :sk AND attribute_exists(#h)",
	map[string]string{"#pk": attrPK, "#sk": attrSK, "#h": attrHolder}}

// ListLocks implements provider.LockLister with a strongly consistent Scan of
// the whole table, page after page (one request per 1 MB of items read, whatever
// they are: locks have no index, so that acquiring and renewing them write one
// item and no index partition that every lock shares), filtered in DynamoDB to the
// held lock items whose keys start with the pattern's literal prefix, and in the
// provider by the rest of the pattern and by expiry (the provider's clock, as
// GetLockInfo judges it). It needs the dynamodb:Scan permission. Its cost grows
// with the table, not with the locks: a maintenance read for operators.
func (p *Provider) ListLocks(ctx context.Context, match string, limit int) ([]types.LockInfo, error) {
	m, err := provider.ParseLockPattern(match)
	if err := p.life.Enter(ctx, err, provider.CheckLimit(limit)); err != nil {
		return nil, err
	}
	const op = "ListLocks"
	consistent := true
	in := &ddb.ScanInput{
		TableName:                 &p.table,
		ConsistentRead:            &consistent,
		FilterExpression:          &lockScan.text,
		ExpressionAttributeNames:  lockScan.names,
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":p": sv(lockPrefix + m.Prefix()), ":sk": sv(skLock)},
	}
	now := p.now()
	// The first limit live locks that decode, and the first limit that do not:
	// those among the locks listed are reported (a limit counts good ones only).
	key := func(info types.LockInfo) string { return info.Key }
	good := provider.NewFirstByKey(limit, key)
	bad := provider.NewFirstByKey(limit, func(it item) string { return recordID(provider.KindLock, it) })
	for {
		out, err := p.api.Scan(ctx, in, p.sdk(op))
		if err != nil {
			return nil, fmt.Errorf("dynamodb: %s: %w", op, err)
		}
		for _, av := range out.Items {
			it, err := unmarshal(av)
			if err != nil {
				it = p.badItem(provider.KindLock, av, err)
			}
			if !m.Match(recordID(provider.KindLock, it)) {
				continue
			}
			switch info, err := p.lockInfo(it, now); {
			case err != nil:
				it.bad = err
				bad.Add(it)
			case info != nil:
				good.Add(*info)
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	list := good.Items()
	for _, it := range bad.Items() {
		if len(list) == limit && recordID(provider.KindLock, it) > list[limit-1].Key {
			break
		}
		provider.SkipCorrupt(ctx, p.sig, it.bad)
	}
	return list, nil
}

// lockInfo is what holds the lock item it at now: nil when free or expired, a
// *provider.CorruptError for an item that does not decode.
func (p *Provider) lockInfo(it item, now time.Time) (*types.LockInfo, error) {
	if it.bad != nil {
		return nil, it.bad
	}
	if !it.live(now) {
		return nil, nil
	}
	return imageLock(tableName(p.table), it)
}
