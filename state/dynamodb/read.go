package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/internal/ddbx"
	"github.com/pipestate/pipestate/internal/signal"
	"github.com/pipestate/pipestate/state"
)

// decoder turns the v attribute of an item into a V.
type decoder[V any] func(v av) (V, error)

// readProjection reads what Get and GetMany need. ttl is a reserved word.
var (
	readProjection = "#pk, #sk, #v, #ttl"
	readNames      = map[string]string{"#pk": attrPK, "#sk": attrSK, "#v": attrV, "#ttl": attrTTL}
)

// decodeItem returns the value of a live item, or found == false for a missing or
// expired one.
func decodeItem[V any](b *base, item map[string]av, now int64, decode decoder[V], missing V) (V, bool, error) {
	if item == nil || !live(item, now) {
		return missing, false, nil
	}
	v, err := decode(item[attrV])
	if err != nil {
		return missing, false, b.corrupt(item, err)
	}
	return v, true, nil
}

// corrupt is the error of item, whose v attribute does not decode as the
// store's type (cause): it wraps state.ErrCorrupt and names the item.
func (b *base) corrupt(item map[string]av, cause error) error {
	pk, _ := item[attrPK].(*ddbtypes.AttributeValueMemberS)
	sk, _ := item[attrSK].(*ddbtypes.AttributeValueMemberS)
	var key string
	if pk != nil {
		key = pk.Value
	}
	if sk != nil {
		key += " " + sk.Value
	}
	return b.wrap("decode", fmt.Errorf("item %s: %w: %w", key, state.ErrCorrupt, cause))
}

// readOne is Get: one strongly consistent GetItem.
func readOne[V any](ctx context.Context, b *base, k state.Key, decode decoder[V], missing V) (V, bool, error) {
	if err := b.life.Enter(ctx, state.CheckKey(k)); err != nil {
		return missing, false, err
	}
	out, err := b.client.GetItem(ctx, &ddb.GetItemInput{
		TableName: &b.table, Key: b.itemKey(k), ConsistentRead: ptr(true),
		ProjectionExpression: &readProjection, ExpressionAttributeNames: readNames,
	}, b.sdk("Get"))
	if err != nil {
		return missing, false, b.wrap("get", err)
	}
	return decodeItem(b, out.Item, b.now(), decode, missing)
}

// readMany is GetMany: the distinct keys of ks in ceil(n/100) concurrent, strongly
// consistent BatchGetItem calls (internal/ddbx retries unprocessed keys), fanned back
// out to one slot per requested key.
func readMany[V any](ctx context.Context, b *base, ks []state.Key, decode decoder[V], missing V) ([]V, []bool, error) {
	if err := b.life.Enter(ctx, state.CheckKeys(ks)); err != nil {
		return nil, nil, err
	}
	vals, found := make([]V, len(ks)), make([]bool, len(ks))
	if len(ks) == 0 {
		return vals, found, nil
	}
	// first maps each distinct key to its first position in ks, where its item's
	// value lands; later positions of the same key copy it.
	first := make(map[state.Key]int, len(ks))
	keys := make([]map[string]av, 0, len(ks))
	for i, k := range ks {
		if _, dup := first[k]; !dup {
			first[k] = i
			keys = append(keys, b.itemKey(k))
		}
	}
	const op = "GetMany"
	items, err := ddbx.BatchGet(ctx, b.client, b.table, keys, ddbx.BatchOptions{
		ConsistentRead: true, ProjectionExpression: readProjection, ExpressionAttributeNames: readNames,
		OnRetry:    func(ctx context.Context, retry int) { b.sig.Retry(ctx, op, signal.ReasonUnprocessed, retry) },
		APIOptions: []func(*ddb.Options){b.sdk(op)},
	})
	if errors.Is(err, ddbx.ErrUnprocessed) {
		b.sig.GiveUp(ctx, op, signal.ReasonUnprocessed, ddbx.DefaultMaxRetries+1, err)
	}
	if err != nil {
		return nil, nil, b.wrap("get many", err)
	}
	for i := range vals {
		vals[i] = missing
	}
	now := b.now()
	for _, item := range items {
		k, err := b.keyOf(item)
		if err != nil {
			return nil, nil, b.wrap("get many", err)
		}
		i, ok := first[k]
		if !ok {
			return nil, nil, b.wrap("get many", fmt.Errorf("item of key %v, which was not asked for", k))
		}
		if vals[i], found[i], err = decodeItem(b, item, now, decode, missing); err != nil {
			return nil, nil, err
		}
	}
	if len(keys) < len(ks) { // duplicates
		for i, k := range ks {
			if j := first[k]; j != i {
				vals[i], found[i] = vals[j], found[j]
			}
		}
	}
	return vals, found, nil
}

// keyOf reads the primary key of an item of the store (see itemKey).
func (b *base) keyOf(item map[string]av) (state.Key, error) {
	pk, ok1 := item[attrPK].(*ddbtypes.AttributeValueMemberS)
	sk, ok2 := item[attrSK].(*ddbtypes.AttributeValueMemberN)
	if !ok1 || !ok2 {
		return state.Key{}, fmt.Errorf("item without a pk (S) and sk (N)")
	}
	entity, ok := strings.CutPrefix(pk.Value, b.kind+"#")
	if !ok {
		return state.Key{}, fmt.Errorf("pk %q of another store kind", pk.Value)
	}
	bucket, err := strconv.ParseInt(sk.Value, 10, 64)
	if err != nil {
		return state.Key{}, fmt.Errorf("sk %q: %w", sk.Value, err)
	}
	return state.Key{Entity: entity, Bucket: bucket}, nil
}
