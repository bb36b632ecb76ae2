package ddbstate

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/internal/ddbx"
	"github.com/pipestate/pipestate/internal/lifecycle"
	"github.com/pipestate/pipestate/internal/nilcheck"
	"github.com/pipestate/pipestate/internal/signal"
	"github.com/pipestate/pipestate/state"
)

// API is the part of *ddb.Client the stores and the deduper call. A wrapper must
// pass optFns on: they carry the middleware that records throttling (see "Signals"
// in the package doc).
type API interface {
	GetItem(ctx context.Context, in *ddb.GetItemInput, optFns ...func(*ddb.Options)) (*ddb.GetItemOutput, error)
	PutItem(ctx context.Context, in *ddb.PutItemInput, optFns ...func(*ddb.Options)) (*ddb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *ddb.UpdateItemInput, optFns ...func(*ddb.Options)) (*ddb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *ddb.DeleteItemInput, optFns ...func(*ddb.Options)) (*ddb.DeleteItemOutput, error)
	BatchGetItem(ctx context.Context, in *ddb.BatchGetItemInput, optFns ...func(*ddb.Options)) (*ddb.BatchGetItemOutput, error)
	TransactWriteItems(ctx context.Context, in *ddb.TransactWriteItemsInput, optFns ...func(*ddb.Options)) (*ddb.TransactWriteItemsOutput, error)
}

var _ API = (*ddb.Client)(nil)

type av = ddbtypes.AttributeValue

// base is what every store and the deduper share.
type base struct {
	client API
	table  string
	name   string // type name, for errors
	kind   string // store kind (storekey), the first part of every pk; "" for a Deduper
	cfg    config
	life   *lifecycle.Flag
	sig    *signal.Recorder
	opts   map[string]func(*ddb.Options) // the SDK option of each operation (see sdk)
}

// operations are the operations whose SDK options newBase makes once.
var operations = []string{"Get", "GetMany", "GetRevisions", "MergeUpdate", "MergeUpdateOnce", "MarkSeen", "Release"}

func newBase(name, kind string, client API, table string, c config) (base, error) {
	if nilcheck.IsNil(client) {
		return base{}, state.Invalidf("%s: nil client", c.Ctor)
	}
	if table == "" {
		return base{}, state.Invalidf("%s: empty table name", c.Ctor)
	}
	b := base{client: client, table: table, name: name, kind: kind, cfg: c, life: lifecycle.New("state/ddbstate: " + name), sig: c.Signal("aws.dynamodb"),
		opts: make(map[string]func(*ddb.Options), len(operations))}
	for _, op := range operations {
		b.opts[op] = ddbx.ThrottleSignals(b.sig, op)
	}
	return b, nil
}

// sdk is the SDK option of every request of operation op (the method's name): it
// records the throttles the SDK's retryer retried (see ddbx.ThrottleSignals).
// Those of the operations listed in operations are made once.
func (b *base) sdk(op string) func(*ddb.Options) {
	if o, ok := b.opts[op]; ok {
		return o
	}
	return ddbx.ThrottleSignals(b.sig, op)
}

// Close marks the store closed: later calls return an error wrapping state.ErrClosed.
// It does not close the client, which the caller owns. Close is idempotent.
func (b *base) Close() error { b.life.Close(); return nil }

// wrap annotates an SDK error, keeping it reachable with errors.As; ctx errors are
// returned as they are.
func (b *base) wrap(op string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if ddbx.IsTypeMismatch(err) {
		// The item holds an attribute of another type than the store writes.
		return fmt.Errorf("state/ddbstate: %s %s on %s: %w: %w", b.name, op, b.table, state.ErrCorrupt, err)
	}
	return fmt.Errorf("state/ddbstate: %s %s on %s: %w", b.name, op, b.table, err)
}

// checkItem returns an error wrapping state.ErrCorrupt (b.corrupt) when item, an
// item a failed condition or a read saw, holds an attribute a merge reads of the
// wrong shape: ttl or rev not an int64 number, a fence attribute not a positive
// int64 number. A merge's conditions compare those attributes, and a comparison
// with another type never holds, so without this check a merge over such an
// item would retry until it gave up (or misread the failure as a range
// refusal); with it the merge fails at once and writes nothing.
func (b *base) checkItem(item map[string]av) error {
	for name, a := range item {
		if name != attrTTL && name != attrRev && !strings.HasPrefix(name, fencePrefix) {
			continue
		}
		n, ok := a.(*ddbtypes.AttributeValueMemberN)
		if !ok {
			return b.corrupt(item, fmt.Errorf("attribute %s is %T, want N", name, a))
		}
		v, err := strconv.ParseInt(n.Value, 10, 64)
		if err != nil || (v < 1 && strings.HasPrefix(name, fencePrefix)) {
			return b.corrupt(item, fmt.Errorf("attribute %s is %q, want an int64", name, n.Value))
		}
	}
	return nil
}

// now returns the current time as Unix seconds (floored): an item whose ttl is <= now
// has expired.
func (b *base) now() int64 { return b.cfg.Now().Unix() }

// expiry returns the ttl attribute of an item written now with ttl (> 0): Unix
// seconds, rounded up so that an item never expires early.
func (b *base) expiry(ttl time.Duration) int64 {
	at := b.cfg.Now().Add(ttl)
	s := at.Unix()
	if at.Nanosecond() > 0 {
		s++
	}
	return s
}

// itemKey is the primary key of k in a value table: pk is the store's kind, '#' and
// the entity (kinds hold no '#'), so stores of different kinds sharing a table never
// share items.
func (b *base) itemKey(k state.Key) map[string]av {
	return map[string]av{
		attrPK: &ddbtypes.AttributeValueMemberS{Value: b.kind + "#" + k.Entity},
		attrSK: &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(k.Bucket, 10)},
	}
}

// Conditions on the ttl attribute at time now (Unix seconds). They are exact
// complements: every item (or its absence) satisfies exactly one.
func liveCond(now int64) expression.ConditionBuilder {
	return expression.AttributeNotExists(expression.Name(attrTTL)).Or(expression.Name(attrTTL).GreaterThan(numValue(now)))
}

func expiredCond(now int64) expression.ConditionBuilder {
	return expression.Name(attrTTL).LessThanEqual(numValue(now))
}

// setExpiry adds "SET ttl = now+ttl" (ttl > 0) or "REMOVE ttl" (ttl == 0) to u.
func (b *base) setExpiry(u expression.UpdateBuilder, ttl time.Duration) expression.UpdateBuilder {
	if ttl == 0 {
		return u.Remove(expression.Name(attrTTL))
	}
	return u.Set(expression.Name(attrTTL), numValue(b.expiry(ttl)))
}

// live reports whether an item read at now has not expired.
func live(item map[string]av, now int64) bool {
	n, ok := item[attrTTL].(*ddbtypes.AttributeValueMemberN)
	if !ok {
		return true
	}
	exp, err := strconv.ParseInt(n.Value, 10, 64)
	return err != nil || exp > now
}

func numValue(n int64) expression.ValueBuilder {
	return expression.Value(ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)})
}

// numAV is n as a number attribute value.
func numAV(n int64) av { return &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)} }
