package ddbprovider

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
// (absent when free), exp the expiry in Unix nanoseconds (absent: no expiry), tok
// the token of the call that took the key (a lease's token for a lease), rtok the
// token of the last release call and rfreed the tok of the hold it freed.
//
// Every call is one conditional UpdateItem: 1 WCU for an item up to 1 KB, which a
// lock item is while its key and owner identity together take at most about 870
// bytes (the rest is about 154 bytes: names, three 32-character tokens, numbers;
// rtok and rfreed add 74 of them). A call's token on the item lets the SDK's
// retry of a call whose response was lost recognise its first attempt from the
// item the failed condition returns (ALL_OLD, at no extra cost), instead of a
// one-action TransactWriteItems whose idempotency token does the same at 2 WCU.

const (
	attrRelTok = "rtok"   // the token of the last release of a lock item
	attrFreed  = "rfreed" // the tok of the hold that release freed
)

var _ provider.LockInspector = (*Provider)(nil)

// A lock request is one of these updates under one of two conditions: free (the
// key is free or its holder expired at :now) or heldBy (:h holds the key, unexpired
// at :now). Acquire and release add that the call's token :t is not on the item
// yet, in tok or rtok (a comparison with an absent attribute is false, so NOT
// makes it true): once it is, the call has been applied and a retry only reads the
// outcome. An acquire's token leaves tok only when another acquire takes the key,
// which it can only once the key was released (the token is in rfreed then) or
// expired. Their texts are package variables shared by every request; values are
// the request's own.
const (
	condFree   = "attribute_not_exists(#h) OR #e <= :now"
	condHeldBy = "#h = :h AND (attribute_not_exists(#e) OR #e > :now)"
)

// lockUpdate is an update of a lock item with its condition and the attribute
// names the two use (exactly those: DynamoDB refuses unused names). seen names the
// attributes that hold the call's token once the update is applied.
type lockUpdate struct {
	update, cond string
	names        map[string]string
	seen         []string
}

var (
	namesLock    = map[string]string{"#h": attrHolder, "#e": attrExp, "#t": attrTok}
	namesRelease = map[string]string{"#h": attrHolder, "#e": attrExp, "#t": attrTok, "#r": attrRelTok, "#f": attrFreed}
	namesHeld    = map[string]string{"#h": attrHolder, "#e": attrExp}
	takeCond     = "(" + condFree + ") AND NOT (#t = :t)"
	takeExpiring = &lockUpdate{"SET #h = :h, #t = :t, #e = :e", takeCond, namesLock, []string{attrTok, attrFreed}}
	takeForever  = &lockUpdate{"SET #h = :h, #t = :t REMOVE #e", takeCond, namesLock, []string{attrTok, attrFreed}}
	takeLease    = &lockUpdate{"SET #h = :h, #t = :t, #e = :e ADD #f :one", condFree, map[string]string{"#h": attrHolder, "#e": attrExp, "#t": attrTok, "#f": attrFence}, []string{attrTok}}
	releaseHeld  = &lockUpdate{"SET #r = :t, #f = if_not_exists(#t, :t) REMOVE #h, #e", condHeldBy + " AND NOT (#r = :t)", namesRelease, []string{attrRelTok}}
	renewHeld    = &lockUpdate{"SET #e = :e", condHeldBy, namesHeld, nil}
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
// as the condition saw it (nil when missing).
func (p *Provider) updateLock(ctx context.Context, op, lockKey string, u *lockUpdate, values map[string]ddbtypes.AttributeValue, ret ddbtypes.ReturnValue) (attrs, old map[string]ddbtypes.AttributeValue, ok bool, err error) {
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
		return nil, av, false, nil
	}
	if err != nil {
		return nil, nil, false, fmt.Errorf("dynamodb: %s: %w", op, err)
	}
	return out.Attributes, nil, true, nil
}

// updateLockOnce runs one conditional update of the lock item of lockKey that
// stamps the call's token (values[":t"]) on the item, and reports whether the
// update was applied by this call. When the SDK retries an attempt whose response
// was lost, the retry's condition fails on the token and the returned item shows
// it: the call reports what its first attempt did, not what the condition says
// after other callers changed the lock in between. A token stays readable until
// the key has been taken and released again by other calls (an acquire's token
// moves to rfreed when the hold is released; a release's token stays in rtok until
// the next release).
func (p *Provider) updateLockOnce(ctx context.Context, op, lockKey string, u *lockUpdate, values map[string]ddbtypes.AttributeValue) (bool, error) {
	_, old, ok, err := p.updateLock(ctx, op, lockKey, u, values, ddbtypes.ReturnValueNone)
	if err != nil || ok {
		return ok, err
	}
	return hasToken(old, values[":t"], u.seen), nil
}

// hasToken reports whether one of the attributes names of av is the string tok.
func hasToken(av map[string]ddbtypes.AttributeValue, tok ddbtypes.AttributeValue, names []string) bool {
	t, ok := tok.(*ddbtypes.AttributeValueMemberS)
	if !ok {
		return false
	}
	for _, name := range names {
		if s, ok := av[name].(*ddbtypes.AttributeValueMemberS); ok && s.Value == t.Value {
			return true
		}
	}
	return false
}

// AcquireLock implements provider.Locker with one conditional UpdateItem that
// stamps the call's token (see updateLockOnce).
func (p *Provider) AcquireLock(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	if err := p.life.EnterWrite(ctx, "AcquireLock", provider.CheckLockKey(key), provider.CheckTTL(ttl)); err != nil {
		return false, err
	}
	now := p.now()
	u, values := take(provider.LockHolder(p.owner), ids.Random(), now, expiresAt(now, ttl))
	return p.updateLockOnce(ctx, "AcquireLock", key, u, values)
}

// ReleaseLock implements provider.Locker with one conditional UpdateItem that
// stamps the call's token (see updateLockOnce).
func (p *Provider) ReleaseLock(ctx context.Context, key string) error {
	if err := p.life.EnterWrite(ctx, "ReleaseLock", provider.CheckLockKey(key)); err != nil {
		return err
	}
	return p.release(ctx, "ReleaseLock", key, provider.LockHolder(p.owner))
}

// release frees key, keeping its fence, if holder holds it (see updateLockOnce).
func (p *Provider) release(ctx context.Context, op, key, holder string) error {
	values := heldBy(holder, p.now())
	values[":t"] = sv(ids.Random())
	ok, err := p.updateLockOnce(ctx, op, key, releaseHeld, values)
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
	if err := p.life.EnterWrite(ctx, "AcquireLease", provider.CheckLockKey(key), provider.CheckLeaseTTL(ttl)); err != nil {
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
	case !ok && hasToken(old, values[":t"], takeLease.seen): // an SDK retry of our own acquire, whose response was lost
		if lease.Fence, err = attrInt(old[attrFence]); err != nil {
			return nil, fmt.Errorf("dynamodb: AcquireLease: fence: %w", err)
		}
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
	if err := p.life.EnterWrite(ctx, "RenewLease", provider.Validate(lease), provider.CheckLeaseTTL(ttl)); err != nil {
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

// ReleaseLease implements provider.Leaser with one conditional UpdateItem that
// stamps the call's token (see updateLockOnce).
func (p *Provider) ReleaseLease(ctx context.Context, lease types.Lease) error {
	if err := p.life.EnterWrite(ctx, "ReleaseLease", provider.Validate(lease)); err != nil {
		return err
	}
	return p.release(ctx, "ReleaseLease", lease.Key, provider.LeaseHolder(lease.Token))
}

// GetLockInfo implements provider.LockInspector with one strongly consistent
// GetItem of the key's lock item. A holder whose exp has passed by the provider's
// clock is free, as AcquireLock's condition judges it; ExpiresAt is exp, to the
// nanosecond.
func (p *Provider) GetLockInfo(ctx context.Context, key string) (*types.LockInfo, error) {
	if err := p.life.Enter(ctx, provider.CheckLockKey(key)); err != nil {
		return nil, err
	}
	it, ok, err := p.getRecord(ctx, "GetLockInfo", provider.KindLock, lockPrefix+key, skLock)
	if err != nil || !ok {
		return nil, err
	}
	return p.lockInfo(it, p.now())
}
