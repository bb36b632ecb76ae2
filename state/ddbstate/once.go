package ddbstate

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/internal/backoff"
	"github.com/pipestate/pipestate/internal/ddbx"
	"github.com/pipestate/pipestate/internal/signal"
	"github.com/pipestate/pipestate/state"
)

// checkOnce checks what a MergeUpdateOnce (once) needs beyond its arguments: a dedup
// table.
func (b *base) checkOnce(once bool) error {
	if once && b.cfg.dedupTable == "" {
		return state.Invalidf("%s.MergeUpdateOnce: no dedup table (use WithDedupTable)", b.name)
	}
	return nil
}

// claimName is the dedup-table key of an event applied to k by the store: the claim
// is per (event ID, key) (state.OnceClaimID, injective), namespaced by the value table
// and the store kind (neither can contain '#'), so it never collides with another
// store's claim or a Deduper's ("seen#...").
func (b *base) claimName(k state.Key, eventID string) string {
	return "once#" + b.table + "#" + b.kind + "#" + state.OnceClaimID(k, eventID)
}

// claimItem and claimCond make a claim at now by the call with token tok: the item
// (with an expiry when ttl > 0) and the condition that no live claim exists.
func (b *base) claimItem(pk, tok string, ttl time.Duration) map[string]av {
	item := map[string]av{attrPK: &ddbtypes.AttributeValueMemberS{Value: pk}, attrTok: &ddbtypes.AttributeValueMemberS{Value: tok}}
	if ttl > 0 {
		item[attrTTL] = &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(b.expiry(ttl), 10)}
	}
	return item
}

// ownClaim reports whether a claim that refused a write was taken by the call with
// token tok: that call's reply was lost and the SDK retried it, so the claim was won
// (once) by this very call.
func ownClaim(item map[string]av, tok string) bool {
	t, ok := item[attrTok].(*ddbtypes.AttributeValueMemberS)
	return ok && t.Value == tok
}

// claimCond is the condition of a claim (no live claim: none, or one expired at
// the value :now) and claimNames its names.
var (
	claimCond  = "attribute_not_exists(#pk) OR #ttl <= :now"
	claimNames = map[string]string{"#pk": attrPK, "#ttl": attrTTL}
)

// errLostRace marks a transaction that lost a race: its value write's condition
// failed, or it conflicted with a concurrent transaction.
var errLostRace = errors.New("lost race")

// transact claims the event (claimPK in the dedup table) for the call with token tok
// and applies write in one TransactWriteItems. It returns applied == false, nil when
// the event holds a live claim of another call (true, nil when the claim is this
// call's own: a retry after a lost reply); an error wrapping errLostRace (and the SDK
// error) when write's condition failed or the transaction conflicted; any other
// error wrapped.
func (b *base) transact(ctx context.Context, claimPK, tok string, now int64, write ddbtypes.TransactWriteItem) (bool, error) {
	const op = "MergeUpdateOnce"
	_, err := b.client.TransactWriteItems(ctx, &ddb.TransactWriteItemsInput{
		TransactItems: []ddbtypes.TransactWriteItem{
			{Put: &ddbtypes.Put{
				TableName: &b.cfg.dedupTable, Item: b.claimItem(claimPK, tok, b.cfg.DedupTTL),
				ConditionExpression: &claimCond, ExpressionAttributeNames: claimNames,
				ExpressionAttributeValues:           map[string]av{":now": numAV(now)},
				ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
			}},
			write,
		},
	}, b.sdk(op))
	switch {
	case err == nil:
		return true, nil
	case ddbx.TxReasonCode(err, 0) == ddbx.ReasonConditionalCheck:
		claim, _ := ddbx.TxConditionFailed(err, 0)
		return ownClaim(claim, tok), nil
	case ddbx.TxReasonCode(err, 1) == ddbx.ReasonConditionalCheck || ddbx.IsTxConflict(err):
		return false, fmt.Errorf("%w: %w", errLostRace, err)
	default:
		return false, b.wrap("transact write", err)
	}
}

// retries counts the lost races of one merge (operation op) and waits between
// attempts.
type retries struct {
	b    *base
	op   string
	lost int
}

// again records a lost race for reason (a signal.Reason*): it records a retry and
// waits with the backoff policy, or records a give-up and returns an error wrapping
// state.ErrContention once MaxRetries races were lost.
func (r *retries) again(ctx context.Context, reason string) error {
	if r.lost >= r.b.cfg.CAS.MaxRetries {
		err := fmt.Errorf("state/ddbstate: %s merge on %s: %w: lost %d races", r.b.name, r.b.table, state.ErrContention, r.lost+1)
		r.b.sig.GiveUp(ctx, r.op, reason, r.lost+1, err)
		return err
	}
	r.b.sig.Retry(ctx, r.op, reason, r.lost+1)
	p := backoff.Policy{Base: r.b.cfg.CAS.Base, Max: r.b.cfg.CAS.Max}
	if err := p.Wait(ctx, r.lost); err != nil {
		return err
	}
	r.lost++
	return nil
}

// raceReason is the signal reason of a lost race: lost, the error of the attempt
// that lost, when it is a transaction cancelled by a concurrent one (or for
// throttling); else a failed condition, cas_conflict.
func raceReason(lost error) string {
	switch {
	case !ddbx.IsTxConflict(lost):
		return signal.ReasonCASConflict
	case ddbx.IsThrottled(lost):
		return signal.ReasonThrottled
	}
	return signal.ReasonTransactionConflict
}
