package ddbstate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/pipestate/pipestate/internal/ddbx"
	"github.com/pipestate/pipestate/internal/signal"
	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/internal/storekey"
	"github.com/pipestate/pipestate/state/internal/storeopt"
)

// numericKind is what tells the three numeric stores apart.
type numericKind[V int64 | float64] struct {
	typ    string           // type name
	kind   string           // store kind (storekey)
	m      monoid.Monoid[V] // checks deltas and sums; its Identity is the value of a missing key
	format func(V) string
	parse  func(string) (V, error)
	// lo and hi bound a sum (not used by the max store): a merge whose result would
	// leave [lo, hi] is an error wrapping state.ErrInvalidArgument.
	lo, hi V
	// exact enables the read-modify-write fallback for a delta whose exact decimal
	// sum DynamoDB refuses (over 38 significant digits, or out of its range): the
	// float64 sum is written instead, conditioned on the value read.
	exact bool
}

// numeric is the implementation shared by Int64SumStore, Float64SumStore and
// Int64MaxStore: v is a DynamoDB number, merged by UpdateItem.
type numeric[V int64 | float64] struct {
	base
	numericKind[V]
	isMax bool // the monoid is monoid.Max
}

func newNumeric[V int64 | float64](nk numericKind[V], client API, table string, opts []StoreOption) (numeric[V], error) {
	c, err := newConfig("New"+nk.typ, opts, StoreOption.ApplyStore)
	if err != nil {
		return numeric[V]{}, err
	}
	b, err := newBase(nk.typ, nk.kind, client, table, c)
	if err != nil {
		return numeric[V]{}, err
	}
	return numeric[V]{base: b, numericKind: nk, isMax: nk.m.Kind() == monoid.KindMax}, nil
}

func (s *numeric[V]) decode(v av) (V, error) {
	n, ok := v.(*ddbtypes.AttributeValueMemberN)
	if !ok {
		return s.m.Identity(), fmt.Errorf("attribute v is %T, want N", v)
	}
	return s.parse(n.Value)
}

// checkOld returns an error wrapping state.ErrCorrupt when old, the item a
// failed condition saw, holds an attribute of the wrong shape (base.checkItem)
// or a v that does not decode: the merge fails and writes nothing.
func (s *numeric[V]) checkOld(old map[string]av) error {
	if err := s.checkItem(old); err != nil {
		return err
	}
	if v, ok := old[attrV]; ok {
		if _, err := s.decode(v); err != nil {
			return s.corrupt(old, err)
		}
	}
	return nil
}

func (s *numeric[V]) get(ctx context.Context, k state.Key) (V, bool, error) {
	return readOne(ctx, &s.base, k, s.decode, s.m.Identity())
}

func (s *numeric[V]) getMany(ctx context.Context, ks []state.Key) ([]V, []bool, error) {
	return readMany(ctx, &s.base, ks, s.decode, s.m.Identity())
}

func numV(n string) expression.ValueBuilder {
	return expression.Value(ddbtypes.AttributeValueMemberN{Value: n})
}

// update returns one of the two complementary conditional updates of a merge at now:
//
//	sum, live (or missing) item:  ADD v :d        IF (ttl absent OR ttl > now) AND bound
//	sum, expired item:            SET v = :d      IF ttl <= now
//	max, value rises:             SET v = :d      IF v absent OR v < :d OR ttl <= now
//	max, value stays:             (expiry only)   IF v >= :d AND (ttl absent OR ttl > now)
//
// Each also sets (or removes) ttl. Exactly one of the pair holds for any item, so a
// merge whose condition fails tries the other, and only an item changing between the
// two calls (expiring, or being re-created) makes it try again.
//
// The bound of a live sum (v absent, or v <= hi-delta for a positive delta, v >=
// lo-delta for a negative one; none for 0) fails only when the sum would leave
// [lo, hi].
//
// A fenced merge (g) adds g's condition and SET to either (see fence.go).
func (s *numeric[V]) update(other bool, delta V, ttl time.Duration, now int64, g guard) mergeExpr {
	c := sumLive
	switch {
	case !s.isMax && other:
		c = sumExpired
	case s.isMax && !other:
		c = maxRises
	case s.isMax:
		c = maxStays
	}
	values := make(map[string]av, 5)
	values[":d"], values[":now"], values[":one"] = &ddbtypes.AttributeValueMemberN{Value: s.format(delta)}, numAV(now), numAV(1)
	if c == sumLive {
		switch {
		case delta > 0:
			c = sumLiveUp
			values[":b"] = &ddbtypes.AttributeValueMemberN{Value: s.format(s.hi - delta)}
		case delta < 0:
			c = sumLiveDown
			values[":b"] = &ddbtypes.AttributeValueMemberN{Value: s.format(s.lo - delta)}
		}
	}
	forms := &mergeForms
	if g.on {
		forms = &fencedMergeForms
	}
	f := &forms[c][0]
	if ttl > 0 {
		f = &forms[c][1]
		values[":ttl"] = numAV(s.expiry(ttl))
	}
	return mergeExpr{f, g.names(namesMerge), g.values(values)}
}

// mergeExpr is a merge's update: its texts, names and values.
type mergeExpr struct {
	*mergeForm
	names  map[string]string
	values map[string]av
}

// mergeForm is the texts of one update of a merge.
type mergeForm struct{ update, cond string }

// The cases of update.
const (
	sumLive     = iota // an ADD of 0
	sumLiveUp          // an ADD of a positive delta, bounded above
	sumLiveDown        // an ADD of a negative delta, bounded below
	sumExpired
	maxRises
	maxStays
	mergeCases
)

// mergeForms holds the texts of every case of update, removing ttl ([0]) or
// setting it ([1]); namesMerge their names.
var (
	namesMerge = map[string]string{"#v": attrV, "#ttl": attrTTL, "#rev": attrRev}
	mergeForms = func() (f [mergeCases][2]mergeForm) {
		const live, bound = "(attribute_not_exists(#ttl) OR #ttl > :now)", " AND (attribute_not_exists(#v) OR #v "
		conds := [mergeCases]string{live, live + bound + "<= :b)", live + bound + ">= :b)", "#ttl <= :now",
			"attribute_not_exists(#v) OR #v < :d OR #ttl <= :now", "#v >= :d AND " + live}
		for c, cond := range conds {
			// Every form adds 1 to the revision.
			add, set := "ADD #v :d, #rev :one ", "ADD #rev :one SET #v = :d"
			switch c {
			case sumExpired, maxRises:
				f[c] = [2]mergeForm{{set + " REMOVE #ttl", cond}, {set + ", #ttl = :ttl", cond}}
			case maxStays:
				f[c] = [2]mergeForm{{"ADD #rev :one REMOVE #ttl", cond}, {"ADD #rev :one SET #ttl = :ttl", cond}}
			default:
				f[c] = [2]mergeForm{{add + "REMOVE #ttl", cond}, {add + "SET #ttl = :ttl", cond}}
			}
		}
		return f
	}()
	// fencedMergeForms are mergeForms with a fence (see fenced).
	fencedMergeForms = func() (f [mergeCases][2]mergeForm) {
		for c := range mergeForms {
			for i := range mergeForms[c] {
				f[c][i] = fenced(mergeForms[c][i])
			}
		}
		return f
	}()
)

// merge is MergeUpdate (once == false) and MergeUpdateOnce.
func (s *numeric[V]) merge(ctx context.Context, once bool, eventID string, k state.Key, delta V, ttl time.Duration) (bool, error) {
	if err := s.life.Enter(ctx, state.CheckWrite(s.m, once, eventID, k, delta, ttl), s.checkOnce(once)); err != nil {
		return false, err
	}
	tok := storekey.Token()
	key := s.itemKey(k)
	op := storeopt.MergeOp(once)
	r := retries{b: &s.base, op: op}
	g := guardOf(ctx, k)
	// other selects the second update of the pair; the first failed condition switches
	// for free (the item is simply in the other state), later ones are lost races.
	other, switched := false, false
	for {
		now := s.now()
		expr := s.update(other, delta, ttl, now, g)
		var (
			old             map[string]av
			conditionFailed bool
			reason          = signal.ReasonCASConflict
		)
		if once {
			applied, err := s.transact(ctx, s.claimName(k, eventID), tok, now, ddbtypes.TransactWriteItem{Update: &ddbtypes.Update{
				TableName: &s.table, Key: key,
				UpdateExpression: &expr.update, ConditionExpression: &expr.cond,
				ExpressionAttributeNames: expr.names, ExpressionAttributeValues: expr.values,
				ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
			}})
			if err == nil {
				return applied, nil
			}
			if s.exact && isValidation(err) && !ddbx.IsTypeMismatch(err) {
				return s.readModifyWrite(ctx, once, eventID, tok, k, delta, ttl, g)
			}
			if !errors.Is(err, errLostRace) {
				return false, err
			}
			reason = raceReason(err)
			old, conditionFailed = ddbx.TxConditionFailed(err, 1)
			if err := s.checkOld(old); conditionFailed && err != nil {
				return false, err
			}
			if err := g.refused(s.typ, old); conditionFailed && err != nil {
				return false, err
			}
		} else {
			_, err := s.client.UpdateItem(ctx, &ddb.UpdateItemInput{
				TableName: &s.table, Key: key,
				UpdateExpression: &expr.update, ConditionExpression: &expr.cond,
				ExpressionAttributeNames: expr.names, ExpressionAttributeValues: expr.values,
				ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
			}, s.sdk(op))
			if err == nil {
				return true, nil
			}
			if s.exact && isValidation(err) && !ddbx.IsTypeMismatch(err) {
				return s.readModifyWrite(ctx, once, eventID, tok, k, delta, ttl, g)
			}
			if old, conditionFailed = ddbx.ConditionFailedItem(err); !conditionFailed {
				return false, s.wrap("update", err)
			}
			if err := s.checkOld(old); err != nil {
				return false, err
			}
			if err := g.refused(s.typ, old); err != nil {
				return false, err
			}
			// A max that stays, with no expiry to set or clear (and, fenced, its
			// fence remembered already), needs no second write.
			if s.isMax && !other && ttl == 0 && old != nil && old[attrTTL] == nil && g.remembers(old) {
				return true, nil
			}
		}
		if conditionFailed && !s.isMax && !other && old != nil && live(old, now) {
			// A live item refused the ADD: its sum would leave [lo, hi].
			return false, state.Invalidf("%s: adding %s to %q would leave [%s, %s]", s.typ, s.format(delta), k.Entity, s.format(s.lo), s.format(s.hi))
		}
		if conditionFailed {
			other = !other
			if !switched {
				switched = true
				continue
			}
		}
		if err := r.again(ctx, reason); err != nil {
			return false, err
		}
	}
}

func formatInt(v int64) string { return strconv.FormatInt(v, 10) }

func parseInt(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) }

// formatFloat writes a float as the SDK's attributevalue encoder does.
func formatFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func parseFloat(s string) (float64, error) { return strconv.ParseFloat(s, 64) }

// Int64SumStore is a state.OnceStore[int64] of sums (monoid.Sum): MergeUpdate is one
// UpdateItem ADD, conditioned on the sum staying within int64: a sum that would
// overflow is an error wrapping state.ErrInvalidArgument and writes nothing. A plain
// MergeUpdate is at-least-once when the SDK retries it after a lost response; use
// MergeUpdateOnce for exactly once. It is safe for concurrent use.
type Int64SumStore struct{ n numeric[int64] }

// Float64SumStore is a state.OnceStore[float64] of sums under the float contract of
// package state: MergeUpdate is one UpdateItem ADD, computed by DynamoDB in decimal
// (so 0.1 + 0.2 reads back as 0.3, an ulp from the float64 sum); when DynamoDB refuses
// the exact decimal sum (over 38 significant digits, like 0.5 + 1e-50) the merge reads
// the value and writes the float64 sum conditioned on it (two more round trips). A
// delta outside state.CheckFloat64's range, or a sum that would leave it, is an error
// wrapping state.ErrInvalidArgument and writes nothing. A plain MergeUpdate is
// at-least-once under a lost response; MergeUpdateOnce is exactly once. It is safe
// for concurrent use.
type Float64SumStore struct{ n numeric[float64] }

// Int64MaxStore is a state.OnceStore[int64] of maxima (monoid.Max): MergeUpdate is an
// UpdateItem SET conditioned on the stored value being smaller; when it is not, the
// merge only refreshes the expiry (a second UpdateItem, skipped when ttl is 0 and the
// item has no expiry). A missing key reads as math.MinInt64, the identity. It is
// safe for concurrent use.
type Int64MaxStore struct{ n numeric[int64] }

var (
	_ state.OnceStore[int64]       = (*Int64SumStore)(nil)
	_ state.OnceStore[float64]     = (*Float64SumStore)(nil)
	_ state.OnceStore[int64]       = (*Int64MaxStore)(nil)
	_ state.RevisionStore[int64]   = (*Int64SumStore)(nil)
	_ state.RevisionStore[float64] = (*Float64SumStore)(nil)
	_ state.RevisionStore[int64]   = (*Int64MaxStore)(nil)
	_ state.RevisionStore[[]byte]  = (*BytesStore)(nil)
)

// NewInt64SumStore returns an Int64SumStore over the table (see CreateStoreTable),
// using client without owning it. Options: WithClock, WithMaxRetries, WithBackoff,
// WithDedupTable, WithDedupTTL, WithBatchConcurrency, WithMeterProvider,
// WithLogger.
func NewInt64SumStore(client API, table string, opts ...StoreOption) (*Int64SumStore, error) {
	n, err := newNumeric(numericKind[int64]{
		typ: "Int64SumStore", kind: storekey.Int64Sum, m: monoid.Sum[int64]{}, format: formatInt, parse: parseInt,
		lo: math.MinInt64, hi: math.MaxInt64,
	}, client, table, opts)
	if err != nil {
		return nil, err
	}
	return &Int64SumStore{n: n}, nil
}

// NewFloat64SumStore returns a Float64SumStore over the table (see CreateStoreTable),
// using client without owning it. Options as NewInt64SumStore.
func NewFloat64SumStore(client API, table string, opts ...StoreOption) (*Float64SumStore, error) {
	n, err := newNumeric(numericKind[float64]{
		typ: "Float64SumStore", kind: storekey.Float64Sum, m: monoid.Sum[float64]{}, format: formatFloat, parse: parseFloat,
		lo: -state.MaxFloat64, hi: state.MaxFloat64, exact: true,
	}, client, table, opts)
	if err != nil {
		return nil, err
	}
	return &Float64SumStore{n: n}, nil
}

// NewInt64MaxStore returns an Int64MaxStore over the table (see CreateStoreTable),
// using client without owning it. Options as NewInt64SumStore.
func NewInt64MaxStore(client API, table string, opts ...StoreOption) (*Int64MaxStore, error) {
	n, err := newNumeric(numericKind[int64]{
		typ: "Int64MaxStore", kind: storekey.Int64Max, m: monoid.Max[int64]{}, format: formatInt, parse: parseInt,
	}, client, table, opts)
	if err != nil {
		return nil, err
	}
	return &Int64MaxStore{n: n}, nil
}

// isValidation reports whether DynamoDB refused a request as invalid, as it refuses
// a number it cannot store (over 38 significant digits, or out of its range).
func isValidation(err error) bool {
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() == "ValidationException" {
		return true
	}
	reasons, _ := ddbx.TxReasons(err)
	for _, r := range reasons {
		if r.Code != nil && *r.Code == "ValidationError" {
			return true
		}
	}
	return false
}

// readModifyWrite merges delta as the float64 sum of the value read and delta,
// written with SET conditioned on the value read (or on the item being missing or
// expired), with the event's claim for MergeUpdateOnce. It is the fallback for a
// delta whose exact decimal sum DynamoDB refuses; a lost race reads again.
func (s *numeric[V]) readModifyWrite(ctx context.Context, once bool, eventID, tok string, k state.Key, delta V, ttl time.Duration, g guard) (bool, error) {
	key := s.itemKey(k)
	op := storeopt.MergeOp(once)
	r := retries{b: &s.base, op: op}
	for {
		out, err := s.client.GetItem(ctx, &ddb.GetItemInput{
			TableName: &s.table, Key: key, ConsistentRead: ptr(true),
			ProjectionExpression: &readProjection, ExpressionAttributeNames: readNames,
		}, s.sdk(op))
		if err != nil {
			return false, s.wrap("get", err)
		}
		now := s.now()
		cur := s.m.Identity()
		cond := expression.AttributeNotExists(expression.Name(attrPK)).Or(expiredCond(now))
		if raw, ok := out.Item[attrV].(*ddbtypes.AttributeValueMemberN); ok && live(out.Item, now) {
			if cur, err = s.parse(raw.Value); err != nil {
				return false, s.corrupt(out.Item, err)
			}
			cond = expression.Name(attrV).Equal(numV(raw.Value)).And(liveCond(now))
		}
		sum, err := state.Combine(s.m, cur, delta)
		if err != nil {
			return false, fmt.Errorf("%s: adding %s to %q: %w", s.typ, s.format(delta), k.Entity, err)
		}
		expr, err := expression.NewBuilder().WithCondition(cond).
			WithUpdate(s.setExpiry(expression.Set(expression.Name(attrV), numV(s.format(sum))), ttl).
				Add(expression.Name(attrRev), numValue(1))).Build()
		if err != nil {
			return false, s.wrap("build expression", err)
		}
		ut, ct, names, values := g.expr(expr)
		update := &ddbtypes.Update{
			TableName: &s.table, Key: key,
			UpdateExpression: ut, ConditionExpression: ct,
			ExpressionAttributeNames: names, ExpressionAttributeValues: values,
		}
		if g.on { // the refusal carries the fence
			update.ReturnValuesOnConditionCheckFailure = ddbtypes.ReturnValuesOnConditionCheckFailureAllOld
		}
		reason := signal.ReasonCASConflict
		if once {
			applied, err := s.transact(ctx, s.claimName(k, eventID), tok, now, ddbtypes.TransactWriteItem{Update: update})
			if !errors.Is(err, errLostRace) {
				return applied, err
			}
			if old, failed := ddbx.TxConditionFailed(err, 1); failed {
				if err := g.refused(s.typ, old); err != nil {
					return false, err
				}
			}
			reason = raceReason(err)
		} else {
			_, err := s.client.UpdateItem(ctx, &ddb.UpdateItemInput{
				TableName: update.TableName, Key: key,
				UpdateExpression: update.UpdateExpression, ConditionExpression: update.ConditionExpression,
				ExpressionAttributeNames: update.ExpressionAttributeNames, ExpressionAttributeValues: update.ExpressionAttributeValues,
				ReturnValuesOnConditionCheckFailure: update.ReturnValuesOnConditionCheckFailure,
			}, s.sdk(op))
			if err == nil {
				return true, nil
			}
			old, failed := ddbx.ConditionFailedItem(err)
			if !failed {
				return false, s.wrap("update", err)
			}
			if err := g.refused(s.typ, old); err != nil {
				return false, err
			}
		}
		if err := r.again(ctx, reason); err != nil {
			return false, err
		}
	}
}
