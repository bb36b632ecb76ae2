package dynamodb

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
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

// free is the condition that the key is free or its holder expired at now.
func free(now time.Time) expression.ConditionBuilder {
	return expression.AttributeNotExists(expression.Name(attrHolder)).
		Or(expression.Name(attrExp).LessThanEqual(expression.Value(unixNano(now))))
}

// heldBy is the condition that holder holds the key, unexpired at now.
func heldBy(holder string, now time.Time) expression.ConditionBuilder {
	return expression.Name(attrHolder).Equal(expression.Value(holder)).And(
		expression.AttributeNotExists(expression.Name(attrExp)).
			Or(expression.Name(attrExp).GreaterThan(expression.Value(unixNano(now)))))
}

// take sets holder, expiry (zero: none) and the call's token.
func take(holder, tok string, exp time.Time) expression.UpdateBuilder {
	u := expression.Set(expression.Name(attrHolder), expression.Value(holder)).
		Set(expression.Name(attrTok), expression.Value(tok))
	if exp.IsZero() {
		return u.Remove(expression.Name(attrExp))
	}
	return u.Set(expression.Name(attrExp), expression.Value(unixNano(exp)))
}

// updateLock runs one conditional UpdateItem on the lock item of lockKey. It returns
// the attributes ret asks for, or, when the condition failed, ok false and the item
// as the condition saw it (zero when missing).
func (p *Provider) updateLock(ctx context.Context, op, lockKey string, upd expression.UpdateBuilder, cond expression.ConditionBuilder, ret ddbtypes.ReturnValue) (attrs map[string]ddbtypes.AttributeValue, old item, ok bool, err error) {
	expr, err := expression.NewBuilder().WithUpdate(upd).WithCondition(cond).Build()
	if err != nil {
		return nil, old, false, fmt.Errorf("dynamodb: %s: build update: %w", op, err)
	}
	out, err := p.api.UpdateItem(ctx, &ddb.UpdateItemInput{
		TableName:                 &p.table,
		Key:                       key(lockPrefix+lockKey, skLock),
		UpdateExpression:          expr.Update(),
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
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
func (p *Provider) updateLockOnce(ctx context.Context, op, lockKey string, upd expression.UpdateBuilder, cond expression.ConditionBuilder) (bool, error) {
	expr, err := expression.NewBuilder().WithUpdate(upd).WithCondition(cond).Build()
	if err != nil {
		return false, fmt.Errorf("dynamodb: %s: build update: %w", op, err)
	}
	action := ddbtypes.TransactWriteItem{Update: &ddbtypes.Update{
		TableName:                 &p.table,
		Key:                       key(lockPrefix+lockKey, skLock),
		UpdateExpression:          expr.Update(),
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
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
	return p.updateLockOnce(ctx, "AcquireLock", key, take(provider.LockHolder(p.owner), ids.Random(), expiresAt(now, ttl)), free(now))
}

// ReleaseLock implements provider.Locker with one conditional update (see
// updateLockOnce).
func (p *Provider) ReleaseLock(ctx context.Context, key string) error {
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
	upd := expression.Remove(expression.Name(attrHolder)).Remove(expression.Name(attrExp))
	ok, err := p.updateLockOnce(ctx, op, key, upd, heldBy(holder, p.now()))
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %q", provider.ErrLockNotHeld, key)
	}
	return nil
}

// AcquireLease implements provider.Leaser with one conditional UpdateItem that also
// increments the key's fence counter and returns it.
func (p *Provider) AcquireLease(ctx context.Context, key string, ttl time.Duration) (*types.Lease, error) {
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
	upd := take(provider.LeaseHolder(lease.Token), lease.Token, lease.ExpiresAt).Add(expression.Name(attrFence), expression.Value(1))
	attrs, old, ok, err := p.updateLock(ctx, "AcquireLease", key, upd, free(now), ddbtypes.ReturnValueUpdatedNew)
	switch {
	case err != nil:
		return nil, err
	case !ok && old.Tok == lease.Token: // an SDK retry of our own acquire, whose response was lost
		lease.Fence = old.Fence
		return &lease, nil
	case !ok:
		return nil, fmt.Errorf("%w: %q", provider.ErrLockHeld, key)
	}
	if err := attributevalue.Unmarshal(attrs[attrFence], &lease.Fence); err != nil {
		return nil, fmt.Errorf("dynamodb: AcquireLease: fence: %w", err)
	}
	return &lease, nil
}

// RenewLease implements provider.Leaser with one conditional UpdateItem.
func (p *Provider) RenewLease(ctx context.Context, lease types.Lease, ttl time.Duration) (*types.Lease, error) {
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
	upd := expression.Set(expression.Name(attrExp), expression.Value(unixNano(lease.ExpiresAt)))
	_, _, ok, err := p.updateLock(ctx, "RenewLease", lease.Key, upd, heldBy(provider.LeaseHolder(lease.Token), now), ddbtypes.ReturnValueNone)
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
	it, ok, err := p.get(ctx, "GetLockInfo", lockPrefix+key, skLock)
	if err != nil || !ok || it.Holder == "" || !it.live(p.now()) {
		return nil, err
	}
	var expires time.Time
	if it.Exp != 0 {
		expires = time.Unix(0, it.Exp).UTC()
	}
	return provider.HolderInfo(key, it.Holder, it.Fence, expires)
}
