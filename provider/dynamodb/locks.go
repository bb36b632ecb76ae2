package dynamodb

import (
	"context"
	"fmt"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/internal/ddbx"
	"github.com/pipestate/pipestate/internal/ids"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// Locks and leases share one item per key, LOCK#{key}/LOCK, updated in place with
// conditional UpdateItem calls and never deleted, so its fence counter outlives
// every lease: holder is provider.LockHolder(owner) or provider.LeaseHolder(token)
// (absent when free), exp the expiry in Unix nanoseconds (absent: no expiry).

var _ provider.LockInspector = (*Provider)(nil)

// A lock request is one of these updates under one of two conditions: free (the
// key is free or its holder expired at :now) or heldBy (:h holds the key, unexpired
// at :now). Their texts are package variables shared by every request; values are
// the request's own.
const (
	condFree   = "attribute_not_exists(#h) OR #e <= :now"
	condHeldBy = "#h = :h AND (attribute_not_exists(#e) OR #e > :now)"
)

// lockUpdate is an update of a lock item with its condition and the attribute
// names the two use (exactly those: DynamoDB refuses unused names).
type lockUpdate struct {
	update, cond string
	names        map[string]string
}

var (
	namesLock    = map[string]string{"#h": attrHolder, "#e": attrExp, "#t": attrTok}
	namesHeld    = map[string]string{"#h": attrHolder, "#e": attrExp}
	takeExpiring = &lockUpdate{"SET #h = :h, #t = :t, #e = :e", condFree, namesLock}
	takeForever  = &lockUpdate{"SET #h = :h, #t = :t REMOVE #e", condFree, namesLock}
	takeLease    = &lockUpdate{"SET #h = :h, #t = :t, #e = :e ADD #f :one", condFree, map[string]string{"#h": attrHolder, "#e": attrExp, "#t": attrTok, "#f": attrFence}}
	releaseHeld  = &lockUpdate{"REMOVE #h, #e", condHeldBy, namesHeld}
	renewHeld    = &lockUpdate{"SET #e = :e", condHeldBy, namesHeld}
	fenceStep    = nv(1) // takeLease adds it to the fence
)

// take returns the update and values that give the key to holder until exp (zero:
// no expiry) with the call's token tok, if it is free at now.
func take(holder, tok string, now, exp time.Time) (*lockUpdate, map[string]ddbtypes.AttributeValue) {
	values := map[string]ddbtypes.AttributeValue{":h": sv(holder), ":t": sv(tok), ":now": nv(unixNano(now))}
	if exp.IsZero() {
		return takeForever, values
	}
	values[":e"] = nv(unixNano(exp))
	return takeExpiring, values
}

// updateLock runs one conditional UpdateItem on the lock item of lockKey. It returns
// the attributes ret asks for, or, when the condition failed, ok false and the item
// as the condition saw it (zero when missing).
func (p *Provider) updateLock(ctx context.Context, op, lockKey string, u *lockUpdate, values map[string]ddbtypes.AttributeValue, ret ddbtypes.ReturnValue) (attrs map[string]ddbtypes.AttributeValue, old item, ok bool, err error) {
	out, err := p.api.UpdateItem(ctx, &ddb.UpdateItemInput{
		TableName:                 &p.table,
		Key:                       key(lockPrefix+lockKey, skLock),
		UpdateExpression:          &u.update,
		ConditionExpression:       &u.cond,
		ExpressionAttributeNames:  u.names,
		ExpressionAttributeValues: values,
		ReturnValues:              ret,

		ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
	}, p.sdk(op))
	if av, failed := ddbx.ConditionFailedItem(err); failed {
		if len(av) == 0 {
			return nil, old, false, nil
		}
		old, err := unmarshal(av)
		return nil, old, false, err
	}
	if err != nil {
		return nil, old, false, fmt.Errorf("dynamodb: %s: %w", op, err)
	}
	return out.Attributes, old, true, nil
}

// updateLockOnce runs one conditional update of the lock item of lockKey as a
// one-action TransactWriteItems and reports whether the condition held. The SDK fills
// the call's ClientRequestToken once and keeps it across its own retries, and
// DynamoDB answers a retried token with the first attempt's success without running
// it again: so when a response is lost, the retry reports what this call did, not
// what the condition says after other callers changed the lock in between. A
// transaction cancelled by a concurrent one is run again, as a new call.
func (p *Provider) updateLockOnce(ctx context.Context, op, lockKey string, u *lockUpdate, values map[string]ddbtypes.AttributeValue) (bool, error) {
	action := ddbtypes.TransactWriteItem{Update: &ddbtypes.Update{
		TableName:                 &p.table,
		Key:                       key(lockPrefix+lockKey, skLock),
		UpdateExpression:          &u.update,
		ConditionExpression:       &u.cond,
		ExpressionAttributeNames:  u.names,
		ExpressionAttributeValues: values,
	}}
	for attempt := 0; ; attempt++ {
		err := p.transact(ctx, op, action)
		if _, failed := ddbx.TxConditionFailed(err, 0); failed {
			return false, nil
		}
		if err == nil || !ddbx.IsTxConflict(err) {
			if err != nil {
				return false, fmt.Errorf("dynamodb: %s: %w", op, err)
			}
			return true, nil
		}
		if err := p.conflictWait(ctx, op, attempt, err); err != nil {
			return false, err
		}
	}
}

// AcquireLock implements provider.Locker with one conditional update (see
// updateLockOnce).
func (p *Provider) AcquireLock(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	if err := p.writing(ctx, "AcquireLock"); err != nil {
		return false, err
	}
	if err := provider.CheckLockKey(key); err != nil {
		return false, err
	}
	if err := provider.CheckTTL(ttl); err != nil {
		return false, err
	}
	if err := p.begin(ctx); err != nil {
		return false, err
	}
	now := p.now()
	u, values := take(provider.LockHolder(p.owner), ids.Random(), now, expiresAt(now, ttl))
	return p.updateLockOnce(ctx, "AcquireLock", key, u, values)
}

// ReleaseLock implements provider.Locker with one conditional update (see
// updateLockOnce).
func (p *Provider) ReleaseLock(ctx context.Context, key string) error {
	if err := p.writing(ctx, "ReleaseLock"); err != nil {
		return err
	}
	if err := provider.CheckLockKey(key); err != nil {
		return err
	}
	if err := p.begin(ctx); err != nil {
		return err
	}
	return p.release(ctx, "ReleaseLock", key, provider.LockHolder(p.owner))
}

// release frees key, keeping its fence, if holder holds it (see updateLockOnce).
func (p *Provider) release(ctx context.Context, op, key, holder string) error {
	ok, err := p.updateLockOnce(ctx, op, key, releaseHeld, heldBy(holder, p.now()))
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %q", provider.ErrLockNotHeld, key)
	}
	return nil
}

// heldBy returns the values of condHeldBy: holder holds the key, unexpired at now.
func heldBy(holder string, now time.Time) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{":h": sv(holder), ":now": nv(unixNano(now))}
}

// AcquireLease implements provider.Leaser with one conditional UpdateItem that also
// increments the key's fence counter and returns it.
func (p *Provider) AcquireLease(ctx context.Context, key string, ttl time.Duration) (*types.Lease, error) {
	if err := p.writing(ctx, "AcquireLease"); err != nil {
		return nil, err
	}
	if err := provider.CheckLockKey(key); err != nil {
		return nil, err
	}
	if err := provider.CheckLeaseTTL(ttl); err != nil {
		return nil, err
	}
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	now := p.now()
	lease := types.Lease{Key: key, Token: ids.Random(), ExpiresAt: now.Add(ttl)}
	_, values := take(provider.LeaseHolder(lease.Token), lease.Token, now, lease.ExpiresAt)
	values[":one"] = fenceStep
	attrs, old, ok, err := p.updateLock(ctx, "AcquireLease", key, takeLease, values, ddbtypes.ReturnValueUpdatedNew)
	switch {
	case err != nil:
		return nil, err
	case !ok && old.Tok == lease.Token: // an SDK retry of our own acquire, whose response was lost
		lease.Fence = old.Fence
		return &lease, nil
	case !ok:
		return nil, fmt.Errorf("%w: %q", provider.ErrLockHeld, key)
	}
	if lease.Fence, err = attrInt(attrs[attrFence]); err != nil {
		return nil, fmt.Errorf("dynamodb: AcquireLease: fence: %w", err)
	}
	return &lease, nil
}

// RenewLease implements provider.Leaser with one conditional UpdateItem.
func (p *Provider) RenewLease(ctx context.Context, lease types.Lease, ttl time.Duration) (*types.Lease, error) {
	if err := p.writing(ctx, "RenewLease"); err != nil {
		return nil, err
	}
	if err := provider.Validate(lease); err != nil {
		return nil, err
	}
	if err := provider.CheckLeaseTTL(ttl); err != nil {
		return nil, err
	}
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	now := p.now()
	lease.ExpiresAt = now.Add(ttl)
	values := heldBy(provider.LeaseHolder(lease.Token), now)
	values[":e"] = nv(unixNano(lease.ExpiresAt))
	_, _, ok, err := p.updateLock(ctx, "RenewLease", lease.Key, renewHeld, values, ddbtypes.ReturnValueNone)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: %q", provider.ErrLockNotHeld, lease.Key)
	}
	return &lease, nil
}

// ReleaseLease implements provider.Leaser with one conditional update (see
// updateLockOnce).
func (p *Provider) ReleaseLease(ctx context.Context, lease types.Lease) error {
	if err := p.writing(ctx, "ReleaseLease"); err != nil {
		return err
	}
	if err := provider.Validate(lease); err != nil {
		return err
	}
	if err := p.begin(ctx); err != nil {
		return err
	}
	return p.release(ctx, "ReleaseLease", lease.Key, provider.LeaseHolder(lease.Token))
}

// GetLockInfo implements provider.LockInspector with one strongly consistent
// GetItem of the key's lock item. A holder whose exp has passed by the provider's
// clock is free, as AcquireLock's condition judges it; ExpiresAt is exp, to the
// nanosecond.
func (p *Provider) GetLockInfo(ctx context.Context, key string) (*types.LockInfo, error) {
	if err := provider.CheckLockKey(key); err != nil {
		return nil, err
	}
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	it, ok, err := p.getRecord(ctx, "GetLockInfo", provider.KindLock, lockPrefix+key, skLock)
	if err != nil || !ok {
		return nil, err
	}
	return p.lockInfo(it, p.now())
}
