package ddbstate

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

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
	items, err := fetchMany(ctx, b, "GetMany", ks, readProjection, readNames)
	if err != nil {
		return nil, nil, err
	}
	vals, found, now := make([]V, len(ks)), make([]bool, len(ks)), b.now()
	for i, item := range items {
		if vals[i], found[i], err = decodeItem(b, item, now, decode, missing); err != nil {
			return nil, nil, err
		}
	}
	return vals, found, nil
}

// revisionProjection reads what GetRevisions needs.
var (
	revisionProjection = "#pk, #sk, #v, #ttl, #rev"
	revisionNames      = map[string]string{"#pk": attrPK, "#sk": attrSK, "#v": attrV, "#ttl": attrTTL, "#rev": attrRev}
)

// readRevisions is GetRevisions: GetMany's requests, reading the revision and
// the expiry too.
func readRevisions[V any](ctx context.Context, b *base, ks []state.Key, decode decoder[V], missing V) ([]state.Revision[V], error) {
	if err := b.life.Enter(ctx, state.CheckKeys(ks)); err != nil {
		return nil, err
	}
	items, err := fetchMany(ctx, b, "GetRevisions", ks, revisionProjection, revisionNames)
	if err != nil {
		return nil, err
	}
	revs, now := make([]state.Revision[V], len(ks)), b.now()
	for i, item := range items {
		r := &revs[i]
		if r.Value, r.Found, err = decodeItem(b, item, now, decode, missing); err != nil {
			return nil, err
		}
		if n, ok := item[attrRev].(*ddbtypes.AttributeValueMemberN); ok {
			if r.Rev, err = strconv.ParseInt(n.Value, 10, 64); err != nil {
				return nil, b.corrupt(item, fmt.Errorf("rev: %w", err))
			}
		}
		if r.Found {
			if n, ok := item[attrTTL].(*ddbtypes.AttributeValueMemberN); ok {
				sec, err := strconv.ParseInt(n.Value, 10, 64)
				if err != nil {
					return nil, b.corrupt(item, fmt.Errorf("ttl: %w", err))
				}
				r.Expires = time.Unix(sec, 0)
			}
		}
	}
	return revs, nil
}

// fetchMany returns the item of each key of ks (nil for a missing one), reading
// each distinct key once, with projection, in ceil(n/100) concurrent, strongly
// consistent BatchGetItem calls (internal/ddbx retries unprocessed keys).
func fetchMany(ctx context.Context, b *base, op string, ks []state.Key, projection string, names map[string]string) ([]map[string]av, error) {
	out := make([]map[string]av, len(ks))
	if len(ks) == 0 {
		return out, nil
	}
	// first maps each distinct key to its first position in ks.
	first := make(map[state.Key]int, len(ks))
	keys := make([]map[string]av, 0, len(ks))
	for i, k := range ks {
		if _, dup := first[k]; !dup {
			first[k] = i
			keys = append(keys, b.itemKey(k))
		}
	}
	items, err := ddbx.BatchGet(ctx, b.client, b.table, keys, ddbx.BatchOptions{
		ConsistentRead: true, ProjectionExpression: projection, ExpressionAttributeNames: names,
		OnRetry:    func(ctx context.Context, retry int) { b.sig.Retry(ctx, op, signal.ReasonUnprocessed, retry) },
		APIOptions: []func(*ddb.Options){b.sdk(op)},
	})
	if errors.Is(err, ddbx.ErrUnprocessed) {
		b.sig.GiveUp(ctx, op, signal.ReasonUnprocessed, ddbx.DefaultMaxRetries+1, err)
	}
	if err != nil {
		return nil, b.wrap("get many", err)
	}
	for _, item := range items {
		k, err := b.keyOf(item)
		if err != nil {
			return nil, b.wrap("get many", err)
		}
		i, ok := first[k]
		if !ok {
			return nil, b.wrap("get many", fmt.Errorf("item of key %v, which was not asked for", k))
		}
		out[i] = item
	}
	if len(keys) < len(ks) { // duplicates
		for i, k := range ks {
			out[i] = out[first[k]]
		}
	}
	return out, nil
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
