package ddbstate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/internal/ddbx"
	"github.com/pipestate/pipestate/internal/signal"
	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/internal/storekey"
	"github.com/pipestate/pipestate/state/internal/storeopt"
)

// BytesStore is a state.OnceStore[[]byte] for any monoid over bytes, typically a
// sketch from monoid/sketch. An item holds v (B) and ver (S, a random version token);
// MergeUpdate reads it, combines in Go (TryCombine when the monoid is
// monoid.Fallible) and writes it back with an UpdateItem conditioned on the version (or,
// for a missing or expired item, on its absence or expiry), retrying lost races with
// capped exponential backoff and full jitter. It is safe for concurrent use by any
// number of processes.
type BytesStore struct {
	base
	m       monoid.Monoid[[]byte]
	retries atomic.Int64 // lost races since creation, for benchmarks
}

var _ state.OnceStore[[]byte] = (*BytesStore)(nil)

// NewBytesStore returns a BytesStore merging with m over the table (see
// CreateStoreTable), using client without owning it. Options: WithClock,
// WithMaxRetries, WithBackoff, WithDedupTable, WithDedupTTL, WithBatchConcurrency,
// WithMeterProvider, WithLogger.
func NewBytesStore(client API, table string, m monoid.Monoid[[]byte], opts ...StoreOption) (*BytesStore, error) {
	const name = "BytesStore"
	c, err := newConfig("New"+name, opts, StoreOption.ApplyStore)
	if err != nil {
		return nil, err
	}
	if err := state.CheckMonoid(m); err != nil {
		return nil, fmt.Errorf("%s: %w", c.Ctor, err)
	}
	b, err := newBase(name, storekey.Bytes(m.Kind()), client, table, c)
	if err != nil {
		return nil, err
	}
	return &BytesStore{base: b, m: m}, nil
}

func decodeBytes(v av) ([]byte, error) {
	b, ok := v.(*ddbtypes.AttributeValueMemberB)
	if !ok {
		return nil, fmt.Errorf("attribute v is %T, want B", v)
	}
	return b.Value, nil
}

// Get returns the value of k and whether it exists; a missing or expired item returns
// the monoid's identity and false. One strongly consistent GetItem.
func (s *BytesStore) Get(ctx context.Context, k state.Key) ([]byte, bool, error) {
	return readOne(ctx, &s.base, k, decodeBytes, s.m.Identity())
}

// GetMany returns one value and one found flag per key, in the order of ks
// (duplicates allowed; missing or expired keys hold the monoid's identity):
// ceil(d/100) concurrent, strongly consistent BatchGetItem calls for d distinct keys,
// plus retries of unprocessed keys.
func (s *BytesStore) GetMany(ctx context.Context, ks []state.Key) ([][]byte, []bool, error) {
	return readMany(ctx, &s.base, ks, decodeBytes, s.m.Identity())
}

// GetRevisions returns one state.Revision per key, in the order of ks: GetMany's
// requests, reading each item's revision and expiry too. It makes the store a
// state.RevisionStore, the source of truth under a state/tiered cache.
func (s *BytesStore) GetRevisions(ctx context.Context, ks []state.Key) ([]state.Revision[[]byte], error) {
	return readRevisions(ctx, &s.base, ks, decodeBytes, s.m.Identity())
}

// MergeUpdate combines delta into the value of k and sets its expiry to now+ttl
// (ttl == 0 clears any expiry). Round trips: GetItem + conditional UpdateItem when
// uncontended; a lost race returns the current item with the refusal, so each retry
// costs one UpdateItem more. After MaxRetries lost races it returns an error wrapping
// state.ErrContention. A delta or stored value the monoid rejects is an error
// wrapping monoid.ErrIncompatible (and state.ErrInvalidArgument), and a merged item
// over DynamoDB's 400 KB limit is an error wrapping state.ErrInvalidArgument; nothing
// is written in either case.
func (s *BytesStore) MergeUpdate(ctx context.Context, k state.Key, delta []byte, ttl time.Duration) error {
	_, err := s.merge(ctx, false, "", k, delta, ttl)
	return err
}

// MergeUpdateOnce is MergeUpdate applied at most once per event ID: the conditional
// write is one TransactWriteItems that also puts the event's claim in the dedup table
// (WithDedupTable), so the claim is taken exactly when the merged value is written.
// Claims are per (event ID, key) and live for the store's dedup TTL. applied is
// false, and nothing is written, when the event was applied to k before. Round trips as MergeUpdate (GetItem +
// one transaction per attempt).
func (s *BytesStore) MergeUpdateOnce(ctx context.Context, eventID string, k state.Key, delta []byte, ttl time.Duration) (applied bool, err error) {
	return s.merge(ctx, true, eventID, k, delta, ttl)
}

var (
	casProjection = "#v, #ver, #ttl"
	casNames      = map[string]string{"#v": attrV, "#ver": attrVer, "#ttl": attrTTL}
)

func (s *BytesStore) merge(ctx context.Context, once bool, eventID string, k state.Key, delta []byte, ttl time.Duration) (bool, error) {
	if err := s.life.Enter(ctx, state.CheckWrite(s.m, once, eventID, k, delta, ttl), s.checkOnce(once)); err != nil {
		return false, err
	}
	key, tok, op := s.itemKey(k), storekey.Token(), storeopt.MergeOp(once)
	g := guardOf(ctx, k)
	projection, names := &casProjection, casNames
	// A plain merge's read sees the fence too, so a stale merge is refused
	// before its write; MergeUpdateOnce's is refused by its transaction, after
	// the event's claim.
	early := g
	early.on = g.on && !once
	if early.on {
		p := casProjection + ", " + fenceName
		projection, names = &p, early.names(casNames)
	}
	var (
		last     map[string]av // the item a lost race saw
		haveLast bool
		claimed  bool   // the event was applied before
		reason   string // why the last attempt lost its race, a signal.Reason*
	)
	read := func(ctx context.Context) ([]byte, bool, string, error) {
		item := last
		if !haveLast {
			out, err := s.client.GetItem(ctx, &ddb.GetItemInput{
				TableName: &s.table, Key: key, ConsistentRead: ptr(true),
				ProjectionExpression: projection, ExpressionAttributeNames: names,
			}, s.sdk(op))
			if err != nil {
				return nil, false, "", s.wrap("get", err)
			}
			item = out.Item
		}
		last, haveLast = nil, false
		if err := s.checkItem(item); err != nil {
			return nil, false, "", err
		}
		if err := early.refused(s.name, item); err != nil {
			return nil, false, "", err
		}
		if item == nil || !live(item, s.now()) {
			return nil, false, "", nil
		}
		v, err := decodeBytes(item[attrV])
		if err != nil {
			return nil, false, "", s.corrupt(item, err)
		}
		ver, _ := item[attrVer].(*ddbtypes.AttributeValueMemberS)
		if ver == nil {
			return nil, false, "", s.corrupt(item, errors.New("item without a version"))
		}
		return v, true, ver.Value, nil
	}
	write := func(ctx context.Context, next []byte, found bool, ver string) (bool, error) {
		now := s.now()
		item := s.itemKey(k)
		item[attrV] = &ddbtypes.AttributeValueMemberB{Value: next}
		item[attrVer] = &ddbtypes.AttributeValueMemberS{Value: storekey.PushToken(ver, tok)}
		item[attrRev] = numAV(math.MaxInt64) // the room the revision may take
		if ttl > 0 {
			item[attrTTL] = numAV(s.expiry(ttl))
		}
		if !ddbx.FitsItem(item) {
			return false, state.Invalidf("%s: merged value of %d bytes does not fit in a DynamoDB item", s.name, len(next))
		}
		cond := expression.AttributeNotExists(expression.Name(attrPK)).Or(expiredCond(now))
		if found {
			cond = expression.Name(attrVer).Equal(expression.Value(ddbtypes.AttributeValueMemberS{Value: ver})).And(liveCond(now))
		}
		// An update, not a put: it keeps adding to the revision of an item that
		// expired and starts again.
		set := expression.Set(expression.Name(attrV), expression.Value(item[attrV])).
			Set(expression.Name(attrVer), expression.Value(item[attrVer]))
		expr, err := expression.NewBuilder().WithCondition(cond).
			WithUpdate(s.setExpiry(set, ttl).Add(expression.Name(attrRev), numValue(1))).Build()
		if err != nil {
			return false, s.wrap("build expression", err)
		}
		ut, ct, names, values := g.expr(expr)
		update := &ddbtypes.Update{
			TableName: &s.table, Key: s.itemKey(k),
			UpdateExpression: ut, ConditionExpression: ct,
			ExpressionAttributeNames: names, ExpressionAttributeValues: values,
			ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
		}
		if once {
			applied, err := s.transact(ctx, s.claimName(k, eventID), tok, now, ddbtypes.TransactWriteItem{Update: update})
			if errors.Is(err, errLostRace) {
				reason = raceReason(err)
				last, haveLast = ddbx.TxConditionFailed(err, 1)
				if own := ownWrite(last, tok); own || !haveLast {
					return own, nil
				}
				return false, g.refused(s.name, last)
			}
			if err != nil {
				return false, err
			}
			claimed = !applied
			return true, nil
		}
		_, err = s.client.UpdateItem(ctx, &ddb.UpdateItemInput{
			TableName: update.TableName, Key: update.Key,
			UpdateExpression: update.UpdateExpression, ConditionExpression: update.ConditionExpression,
			ExpressionAttributeNames: update.ExpressionAttributeNames, ExpressionAttributeValues: update.ExpressionAttributeValues,
			ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
		}, s.sdk(op))
		if err == nil {
			return true, nil
		}
		if last, haveLast = ddbx.ConditionFailedItem(err); haveLast {
			reason = signal.ReasonCASConflict
			if ownWrite(last, tok) {
				return true, nil
			}
			return false, g.refused(s.name, last)
		}
		return false, s.wrap("update", err)
	}
	retries, err := storeopt.RetryCAS(ctx, s.sig, op, func() string { return reason }, s.cfg.CAS, s.m, delta, read, write)
	s.retries.Add(int64(retries))
	if err != nil {
		return false, err
	}
	return !claimed, nil
}

// ownWrite reports whether the item that refused a conditional write holds the write
// of the call with token tok (among its latest storekey.RecentWrites writes): that
// call's reply was lost and the SDK retried it, so the delta was applied once.
func ownWrite(item map[string]av, tok string) bool {
	ver, ok := item[attrVer].(*ddbtypes.AttributeValueMemberS)
	return ok && storekey.HasToken(ver.Value, tok)
}
