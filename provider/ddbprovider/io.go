package ddbprovider

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/internal/ddbx"
	"github.com/pipestate/pipestate/internal/ids"
	"github.com/pipestate/pipestate/internal/signal"
	"github.com/pipestate/pipestate/provider"
)

// Key prefixes and fixed sort keys; see the key schema in the package doc.
const (
	pipelinePrefix = "PIPELINE#"
	runPrefix      = "RUN#"
	rerunPrefix    = "RERUN#"
	lockPrefix     = "LOCK#"
	markerPrefix   = "MARKER#"
	markerLogPK    = "MARKERLOG" // the marker log of every pipeline: not an ID's prefix

	skConfig    = "CONFIG"
	skState     = "STATE"
	skReadiness = "READINESS"
	skEventSeq  = "EVENTSEQ"
	skLock      = "LOCK"
	skLogSeq    = "SEQ"

	skTrait        = "TRAIT#"
	skRun          = "RUN#"
	skRunLog       = "RUNLOG#"
	skEvent        = "EVENT#"
	skRerun        = "RERUN#"
	skReplay       = "REPLAY#"
	skLate         = "LATE#"
	skMarkerByTime = "#BYTIME#" // '#' sorts before every ID byte: no date can collide
	skLogEntry     = "ENTRY#"
	skLateGuard    = "FENCE#LATE#" // a late-arrival list's fences: no query's prefix

	gsiPipelines = "PIPELINES"
	gsiReruns    = "RERUNS"
	gsiReplays   = "REPLAYS"
)

// get reads one item with a strongly consistent GetItem; ok is false when it is
// missing.
func (p *Provider) get(ctx context.Context, op, pk, sk string) (it item, ok bool, err error) {
	consistent := true
	out, err := p.api.GetItem(ctx, &ddb.GetItemInput{TableName: &p.table, Key: key(pk, sk), ConsistentRead: &consistent}, p.sdk(op))
	if err != nil {
		return it, false, fmt.Errorf("dynamodb: %s: %w", op, err)
	}
	if len(out.Item) == 0 {
		return it, false, nil
	}
	it, err = unmarshal(out.Item)
	return it, err == nil, err
}

// getRecord is get of the item of a record of kind: attributes that do not
// unmarshal are a *provider.CorruptError.
func (p *Provider) getRecord(ctx context.Context, op string, kind provider.RecordKind, pk, sk string) (it item, ok bool, err error) {
	consistent := true
	out, err := p.api.GetItem(ctx, &ddb.GetItemInput{TableName: &p.table, Key: key(pk, sk), ConsistentRead: &consistent}, p.sdk(op))
	if err != nil {
		return it, false, fmt.Errorf("dynamodb: %s: %w", op, err)
	}
	if len(out.Item) == 0 {
		return it, false, nil
	}
	if it, err = unmarshal(out.Item); err != nil {
		return it, false, p.badItem(kind, out.Item, err).bad
	}
	return it, true, nil
}

// getData reads one live item, a record of kind, and decodes its data; nil when
// missing or expired.
func getData[T any](ctx context.Context, p *Provider, op string, kind provider.RecordKind, pk, sk string) (*T, error) {
	it, ok, err := p.getRecord(ctx, op, kind, pk, sk)
	if err != nil || !ok || !it.live(p.now()) {
		return nil, err
	}
	var v T
	if err := decodeData(tableName(p.table), kind, it, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// put writes one item unconditionally.
func (p *Provider) put(ctx context.Context, op string, it item) error {
	av, err := marshal(it)
	if err != nil {
		return err
	}
	if _, err := p.api.PutItem(ctx, &ddb.PutItemInput{TableName: &p.table, Item: av}, p.sdk(op)); err != nil {
		return fmt.Errorf("dynamodb: %s: %w", op, err)
	}
	return nil
}

// write writes one item as PutItem would, with one UpdateItem (putUpdate) that
// keeps the item's fence attributes and checks and remembers g's fence: a
// refusal is an error wrapping fence.ErrFenced.
func (p *Provider) write(ctx context.Context, op string, it item, g guard) error {
	av, err := marshal(it)
	if err != nil {
		return err
	}
	u := putUpdate(av, expr{}, g)
	in := &ddb.UpdateItemInput{TableName: &p.table, Key: u.key, UpdateExpression: &u.text,
		ExpressionAttributeNames: u.names, ExpressionAttributeValues: u.values}
	if u.cond != "" {
		in.ConditionExpression = &u.cond
		in.ReturnValuesOnConditionCheckFailure = ddbtypes.ReturnValuesOnConditionCheckFailureAllOld
	}
	if _, err := p.api.UpdateItem(ctx, in, p.sdk(op)); err != nil {
		if old, ok := ddbx.ConditionFailedItem(err); ok {
			if rerr := g.refused(old); rerr != nil {
				return fmt.Errorf("dynamodb: %s: %w", op, rerr)
			}
		}
		return fmt.Errorf("dynamodb: %s: %w", op, err)
	}
	return nil
}

// form is the text of a condition or key condition expression with the attribute
// names its placeholders stand for (exactly those: DynamoDB refuses unused names).
// Forms are package variables, shared by every request and never modified.
type form struct {
	text  string
	names map[string]string
}

// expr is a form with its values: a condition or key condition of one request.
// The zero expr is no condition.
type expr struct {
	*form
	values map[string]ddbtypes.AttributeValue
}

// sv and nv are string and number attribute values.
func sv(s string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: s} }
func nv(n int64) ddbtypes.AttributeValue {
	return &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

var (
	namesKey  = map[string]string{"#pk": attrPK, "#sk": attrSK}
	namesList = map[string]string{"#lpk": attrListPK, "#lsk": attrListSK}

	// Key conditions: a partition's sort keys between two (see partition for
	// prefixes).
	keyRange = &form{"#pk = :pk AND #sk BETWEEN :lo AND :hi", namesKey}
	keyGSI1  = &form{"#pk = :pk", map[string]string{"#pk": attrGSI1PK}}
	// keyRangeLive is keyRange for a query with the filter filterLive.
	keyRangeLive = &form{"#pk = :pk AND #sk BETWEEN :lo AND :hi", map[string]string{"#pk": attrPK, "#sk": attrSK, "#exp": attrExp}}
	filterLive   = "attribute_not_exists(#exp) OR #exp > :now"

	// Conditions of truth items: new (or expired by the provider's clock :now,
	// before DynamoDB deleted it), pointing at a list copy, both, or a live run's
	// version and list copy.
	condNew          = &form{"attribute_not_exists(#pk)", map[string]string{"#pk": attrPK}}
	condNewOrExpired = &form{"attribute_not_exists(#pk) OR #exp <= :now", map[string]string{"#pk": attrPK, "#exp": attrExp}}
	condList         = &form{"#lpk = :lpk AND #lsk = :lsk", namesList}
	condNewOrList    = &form{"attribute_not_exists(#pk) OR (#lpk = :lpk AND #lsk = :lsk)",
		map[string]string{"#pk": attrPK, "#lpk": attrListPK, "#lsk": attrListSK}}
	condVersionList = &form{"#v = :v AND #lpk = :lpk AND #lsk = :lsk AND (attribute_not_exists(#exp) OR #exp > :now)",
		map[string]string{"#v": attrVer, "#lpk": attrListPK, "#lsk": attrListSK, "#exp": attrExp}}
)

// queryIn says what query collects.
type queryIn struct {
	kind  provider.RecordKind // of the records queried
	index string              // "" or indexGSI1
	key   expr                // the key condition
	// filter, when set, is a filter expression (its names and values are key's):
	// items it drops are read by DynamoDB but never sent.
	filter *string
	desc   bool // newest (largest sort key) first
	limit  int  // live items wanted; 0: all
	// id, when set, names the entity an item is a copy of. A query reads pages of
	// a moving list: an entity re-put with another sort key while the query runs
	// can show up again further on, so every copy after the first of one id is
	// dropped (and not counted toward limit). Lists whose sort keys never change
	// leave it nil.
	id func(it item) string
}

// query runs q page by page, dropping items expired at the provider clock (and
// repeated copies, see queryIn.id), and decodes each live item with decode, until
// it has q.limit records or the query is exhausted. An item that does not
// decode (its attributes, or decode's *provider.CorruptError) is skipped and
// reported (provider.SkipCorrupt) and does not count toward q.limit. The first page asks for
// q.limit items, each later one for at least twice as many as the one before. Base-table queries are strongly
// consistent; GSI queries cannot be.
func query[T any](ctx context.Context, p *Provider, op string, q queryIn, decode func(it item, v *T) error) ([]T, error) {
	fwd := !q.desc
	in := &ddb.QueryInput{
		TableName:                 &p.table,
		KeyConditionExpression:    &q.key.text,
		ExpressionAttributeNames:  q.key.names,
		ExpressionAttributeValues: q.key.values,
		ScanIndexForward:          &fwd,
		FilterExpression:          q.filter,
	}
	if q.index != "" {
		in.IndexName = &q.index
	} else {
		consistent := true
		in.ConsistentRead = &consistent
	}
	var (
		out  []T
		page int64 // the previous page's Limit
	)
	// pageLimit asks for the live items still wanted, and at least twice the
	// previous page: a page falls short only when it met expired items, and
	// doubling crosses a backlog of n of them in about log2(n) requests instead of
	// one per q.limit items.
	pageLimit := func() int32 {
		if q.limit == 0 {
			return 0
		}
		page = min(max(int64(q.limit-len(out)), 2*page), math.MaxInt32)
		return int32(page)
	}
	in.Limit = nil
	if l := pageLimit(); l > 0 {
		in.Limit = &l
	}
	now := p.now()
	var seen map[string]bool
	if q.id != nil {
		seen = map[string]bool{}
	}
	err := ddbx.Query(ctx, p.api, in, pageLimit, func(av map[string]ddbtypes.AttributeValue) (bool, error) {
		it, err := unmarshal(av)
		if err != nil { // decode meets it.bad: the item is skipped (and its number passed) like any corrupt one
			it = p.badItem(q.kind, av, err)
		}
		if it.live(now) {
			// Only a live copy claims its record: an expired one left behind (a
			// run created again after it expired, under another CreatedAt) must
			// not hide the live copy after it.
			if q.id != nil {
				id := q.id(it)
				if seen[id] {
					return true, nil
				}
				seen[id] = true
			}
			var v T
			if err := decode(it, &v); err != nil {
				if provider.SkipCorrupt(ctx, p.sig, err) {
					return true, nil
				}
				return false, err
			}
			out = append(out, v)
		}
		return q.limit == 0 || len(out) < q.limit, nil
	}, p.sdk(op))
	if err != nil {
		return nil, fmt.Errorf("dynamodb: %s: %w", op, err)
	}
	return out, nil
}

// queryData is query of records whose data is what a List* returns.
func queryData[T any](ctx context.Context, p *Provider, op string, q queryIn) ([]T, error) {
	return query(ctx, p, op, q, func(it item, v *T) error { return decodeData(tableName(p.table), q.kind, it, v) })
}

// queryItems is query of the items themselves (their data not decoded; an item
// whose attributes do not unmarshal carries its error, which decodeData returns).
func (p *Provider) queryItems(ctx context.Context, op string, q queryIn) ([]item, error) {
	return query(ctx, p, op, q, func(it item, v *item) error { *v = it; return nil })
}

// timedID is queryIn.id for list copies whose sort key is prefix, T(time), '#' and
// the entity's key: the sort key without the time.
func timedID(prefix string) func(it item) string {
	return func(it item) string {
		if n := len(prefix) + ids.TimeKeyLen + 1; len(it.SK) >= n {
			return it.SK[:len(prefix)] + it.SK[n:]
		}
		return it.SK
	}
}

// baseKeyID is queryIn.id for GSI1 queries: the item's base-table key, which a
// re-put with another GSI1 sort key keeps.
func baseKeyID(it item) string { return it.PK + "#" + it.SK }

// partition is the key condition of the items of partition pk whose sort key
// starts with skPrefix: SK BETWEEN skPrefix AND prefixEnd(skPrefix). It selects
// what begins_with(SK, skPrefix) selects, but DynamoDB Local answers a descending
// begins_with by walking back over every item sorted after the prefix (ListEvents
// read a pipeline's 10,000 expired traits to return 10 events), and a BETWEEN from
// where its range starts.
func partition(pk, skPrefix string) expr {
	return expr{keyRange, map[string]ddbtypes.AttributeValue{":pk": sv(pk), ":lo": sv(skPrefix), ":hi": sv(prefixEnd(skPrefix))}}
}

// livePartition is the key condition of partition with the filter that drops the
// items expired at now (see queryIn.filter): reading many expired items then costs
// DynamoDB's read of them, not their transfer and decoding.
func livePartition(pk, skPrefix string, now time.Time) (expr, *string) {
	return expr{keyRangeLive, map[string]ddbtypes.AttributeValue{":pk": sv(pk), ":lo": sv(skPrefix), ":hi": sv(prefixEnd(skPrefix)),
		":now": nv(unixNano(now))}}, &filterLive
}

// prefixEnd is a sort key prefix ending in '#' with that '#' raised to '$': every
// sort key starting with the prefix sorts below it, every other one above the
// prefix sorts above it, and no sort key equals it (every kind's prefix ends in
// '#', TestPrefixEnd), so BETWEEN prefix AND prefixEnd(prefix) is exactly the
// prefix's items.
func prefixEnd(prefix string) string { return prefix[:len(prefix)-1] + "$" }

// gsi1 is the key condition GSI1PK = pk.
func gsi1(pk string) expr {
	return expr{keyGSI1, map[string]ddbtypes.AttributeValue{":pk": sv(pk)}}
}

// txPut is a TransactWriteItem that puts av if cond (unless zero) holds, returning
// the old item when it does not.
func (p *Provider) txPut(av map[string]ddbtypes.AttributeValue, cond expr) ddbtypes.TransactWriteItem {
	put := &ddbtypes.Put{TableName: &p.table, Item: av}
	if cond.form != nil {
		put.ConditionExpression = &cond.text
		put.ExpressionAttributeNames = cond.names
		put.ExpressionAttributeValues = cond.values
		put.ReturnValuesOnConditionCheckFailure = ddbtypes.ReturnValuesOnConditionCheckFailureAllOld
	}
	return ddbtypes.TransactWriteItem{Put: put}
}

// txDelete is a TransactWriteItem that deletes (pk, sk).
func (p *Provider) txDelete(pk, sk string) ddbtypes.TransactWriteItem {
	return ddbtypes.TransactWriteItem{Delete: &ddbtypes.Delete{TableName: &p.table, Key: key(pk, sk)}}
}

// transact runs one TransactWriteItems call of operation op.
func (p *Provider) transact(ctx context.Context, op string, items ...ddbtypes.TransactWriteItem) error {
	_, err := p.api.TransactWriteItems(ctx, &ddb.TransactWriteItemsInput{TransactItems: items}, p.sdk(op))
	return err
}

// conflictWait backs off before retrying a transaction that lost to a concurrent
// one (attempt counts the previous retries from 0) and records the retry; it
// returns provider.ErrContention, and records the give-up, once maxTxAttempts are
// used up.
func (p *Provider) conflictWait(ctx context.Context, op string, attempt int, cause error) error {
	reason := signal.ReasonTransactionConflict
	if ddbx.IsThrottled(cause) { // a transaction cancelled for throttling
		reason = signal.ReasonThrottled
	}
	if attempt+1 >= maxTxAttempts {
		err := fmt.Errorf("dynamodb: %s: %w after %d attempts: %w", op, provider.ErrContention, maxTxAttempts, cause)
		p.sig.GiveUp(ctx, op, reason, maxTxAttempts, err)
		return err
	}
	p.sig.Retry(ctx, op, reason, attempt+1)
	return p.retry.Wait(ctx, attempt)
}

// lostRace records that op lost race number lost (from 1) to another writer
// that made progress (reason: signal.ReasonSequenceRace for a sequence number,
// signal.ReasonCASConflict for a run's moving list copy), and returns
// provider.ErrContention, recording the give-up, once maxLostRaces are lost.
func (p *Provider) lostRace(ctx context.Context, op, reason string, lost int, cause error) error {
	if lost >= maxLostRaces {
		err := fmt.Errorf("dynamodb: %s: %w: lost %d races to other writers: %w", op, provider.ErrContention, lost, cause)
		p.sig.GiveUp(ctx, op, reason, lost, err)
		return err
	}
	p.sig.Retry(ctx, op, reason, lost)
	return nil
}

// expiresAt returns now+ttl, or the zero time (never) for ttl == 0.
func expiresAt(now time.Time, ttl time.Duration) time.Time {
	if ttl == 0 {
		return time.Time{}
	}
	return now.Add(ttl)
}

// nonNil turns a nil slice without error into an empty one.
func nonNil[T any](vs []T, err error) ([]T, error) {
	if vs == nil && err == nil {
		vs = []T{}
	}
	return vs, err
}
