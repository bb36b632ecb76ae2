package ddbstate

import (
	"context"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/internal/ddbx"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/internal/storekey"
)

// Deduper is a state.Deduper over a dedup table (see CreateDedupTable): a claim is
// the item pk = "seen#" + eventID, written by a PutItem conditioned on no live claim
// (attribute_not_exists(pk) OR ttl <= now), so exactly one caller across all
// processes wins it until it expires (WithDedupTTL) or is released. Expired claims that
// DynamoDB has not deleted yet count as absent. It is safe for concurrent use.
type Deduper struct {
	base
}

var _ state.Deduper = (*Deduper)(nil)

// NewDeduper returns a Deduper over the dedup table, using client without owning it.
// Options: WithClock, WithDedupTTL (default state.DefaultDedupTTL; 0 = claims never
// expire), WithMeterProvider, WithLogger. The table may also hold the MergeUpdateOnce claims of stores.
func NewDeduper(client API, table string, opts ...DeduperOption) (*Deduper, error) {
	const name = "Deduper"
	c, err := newConfig("New"+name, opts, DeduperOption.ApplyDeduper)
	if err != nil {
		return nil, err
	}
	b, err := newBase(name, "", client, table, c)
	if err != nil {
		return nil, err
	}
	return &Deduper{base: b}, nil
}

// MarkSeen claims eventID with one conditional PutItem; firstSeen is true for
// exactly one caller until the claim expires or is released. The claim holds a
// random token of the call, so a call whose reply was lost and that the SDK retried
// recognises its own claim and still answers true.
func (d *Deduper) MarkSeen(ctx context.Context, eventID string) (bool, error) {
	pk, err := d.key(ctx, eventID)
	if err != nil {
		return false, err
	}
	tok := storekey.Token()
	_, err = d.client.PutItem(ctx, &ddb.PutItemInput{
		TableName: &d.table, Item: d.claimItem(pk, tok, d.cfg.DedupTTL),
		ConditionExpression: &claimCond, ExpressionAttributeNames: claimNames,
		ExpressionAttributeValues:           map[string]av{":now": numAV(d.now())},
		ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
	}, d.sdk("MarkSeen"))
	if err == nil {
		return true, nil
	}
	if claim, ok := ddbx.ConditionFailedItem(err); ok {
		return ownClaim(claim, tok), nil
	}
	return false, d.wrap("mark seen", err)
}

// Release deletes the claim on eventID (one DeleteItem), so the next MarkSeen wins
// again; releasing an unclaimed ID is not an error.
func (d *Deduper) Release(ctx context.Context, eventID string) error {
	pk, err := d.key(ctx, eventID)
	if err != nil {
		return err
	}
	_, err = d.client.DeleteItem(ctx, &ddb.DeleteItemInput{
		TableName: &d.table,
		Key:       map[string]av{attrPK: &ddbtypes.AttributeValueMemberS{Value: pk}},
	}, d.sdk("Release"))
	if err != nil {
		return d.wrap("release", err)
	}
	return nil
}

func (d *Deduper) key(ctx context.Context, eventID string) (string, error) {
	if err := d.life.Enter(ctx, state.CheckEventID(eventID)); err != nil {
		return "", err
	}
	return "seen#" + eventID, nil
}
