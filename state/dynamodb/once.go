package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/internal/backoff"
	"github.com/pipestate/pipestate/internal/ddbx"
	"github.com/pipestate/pipestate/state"
)

// checkOnce checks what MergeUpdateOnce needs beyond MergeUpdate's arguments.
func (b *base) checkOnce(eventID string) error {
	if err := state.CheckEventID(eventID); err != nil {
		return err
	}
	if b.cfg.dedupTable == "" {
		return state.Invalidf("%s.MergeUpdateOnce: no dedup table (use WithDedupTable)", b.name)
	}
	return nil
}

// claimName is the dedup-table key of an event applied to k by a store: the claim is
// per (event ID, key) (state.OnceClaimID, injective), namespaced by the value table
// and the store kind (table names cannot contain '#'), so it never collides with
// another store's claim or a Deduper's ("seen#...").
func (b *base) claimName(kind string, k state.Key, eventID string) string {
	return "once#" + b.table + "#" + kind + "#" + state.OnceClaimID(k, eventID)
}

// claimItem and claimCond make a claim at now: the item (with an expiry when ttl > 0)
// and the condition that no live claim exists.
func (b *base) claimItem(pk string, ttl time.Duration) map[string]av {
	item := map[string]av{attrPK: &ddbtypes.AttributeValueMemberS{Value: pk}}
	if ttl > 0 {
		item[attrTTL] = &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(b.expiry(ttl), 10)}
	}
	return item
}

func claimCond(now int64) (expression.Expression, error) {
	return expression.NewBuilder().WithCondition(
		expression.AttributeNotExists(expression.Name(attrPK)).Or(expiredCond(now)),
	).Build()
}

// errLostRace marks a transaction that lost a race: its value write's condition
// failed, or it conflicted with a concurrent transaction.
var errLostRace = errors.New("lost race")

// transact claims the event (claimPK in the dedup table) and applies write in one
// TransactWriteItems. It returns applied == false, nil when the event holds a live
// claim; an error wrapping errLostRace (and the SDK error) when write's condition
// failed or the transaction conflicted; any other error wrapped.
func (b *base) transact(ctx context.Context, claimPK string, now int64, write ddbtypes.TransactWriteItem) (bool, error) {
	cond, err := claimCond(now)
	if err != nil {
		return false, b.wrap("build expression", err)
	}
	_, err = b.client.TransactWriteItems(ctx, &ddb.TransactWriteItemsInput{
		TransactItems: []ddbtypes.TransactWriteItem{
			{Put: &ddbtypes.Put{
				TableName: &b.cfg.dedupTable, Item: b.claimItem(claimPK, b.cfg.DedupTTL),
				ConditionExpression: cond.Condition(), ExpressionAttributeNames: cond.Names(),
				ExpressionAttributeValues: cond.Values(),
			}},
			write,
		},
	})
	switch {
	case err == nil:
		return true, nil
	case ddbx.TxReasonCode(err, 0) == ddbx.ReasonConditionalCheck:
		return false, nil
	case ddbx.TxReasonCode(err, 1) == ddbx.ReasonConditionalCheck || ddbx.IsTxConflict(err):
		return false, fmt.Errorf("%w: %w", errLostRace, err)
	default:
		return false, b.wrap("transact write", err)
	}
}

// retries counts the lost races of one merge and waits between attempts.
type retries struct {
	b    *base
	lost int
}

// again records a lost race; it waits with the backoff policy, or returns an error
// wrapping state.ErrMaxRetriesExceeded once MaxRetries races were lost.
func (r *retries) again(ctx context.Context) error {
	if r.lost >= r.b.cfg.CAS.MaxRetries {
		return fmt.Errorf("state/dynamodb: %s merge on %s: %w: lost %d races", r.b.name, r.b.table, state.ErrMaxRetriesExceeded, r.lost+1)
	}
	p := backoff.Policy{Base: r.b.cfg.CAS.Base, Max: r.b.cfg.CAS.Max}
	if err := p.Wait(ctx, r.lost); err != nil {
		return err
	}
	r.lost++
	return nil
}
