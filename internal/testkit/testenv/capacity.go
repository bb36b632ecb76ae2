package testenv

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/pipestate/pipestate/internal/testkit/benchpair"
)

// Capacity sums the capacity units the requests of a client built with its
// Option consume, as AWS charges them for items up to 1 KB written: it asks
// every request that can report them for ReturnConsumedCapacity TOTAL and adds
// up what the responses say, which on DynamoDB Local follows AWS's rules for
// single items, queries and batches. Where Local's figures are not AWS's,
// Capacity counts by AWS's rules instead:
//   - a TransactWriteItems is 2 units per action, or what Local reports when
//     that is more (it reports 4 for any small transaction, more when the
//     transaction writes index copies);
//   - a conditional write that a failed condition refused reports nothing,
//     while AWS charges the attempt: 1 unit for a PutItem, UpdateItem or
//     DeleteItem, 2 per action for a transaction.
//
// It is safe for concurrent use; the zero value is ready.
type Capacity struct {
	mu    sync.Mutex
	units float64
}

// CapacityMeter is the benchpair meter of c: the capacity units consumed, as
// capacity-units/op.
func CapacityMeter(c *Capacity) benchpair.Meter {
	return benchpair.Meter{Unit: "capacity-units", Read: func() (float64, error) { return c.Load(), nil }}
}

// Load returns the units counted since creation or the last Reset.
func (c *Capacity) Load() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.units
}

// Reset sets the count back to 0.
func (c *Capacity) Reset() {
	c.mu.Lock()
	c.units = 0
	c.mu.Unlock()
}

// Option is the client option that measures: pass it to DynamoDBClient.
func (c *Capacity) Option() func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
			return s.Initialize.Add(middleware.InitializeMiddlewareFunc("pipestate/capacity",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					if f := field(in.Parameters, "ReturnConsumedCapacity"); f.IsValid() && f.CanSet() {
						f.Set(reflect.ValueOf(ddbtypes.ReturnConsumedCapacityTotal))
					}
					out, md, err := next.HandleInitialize(ctx, in)
					if tx, ok := in.Parameters.(*dynamodb.TransactWriteItemsInput); ok {
						units := 2 * float64(len(tx.TransactItems))
						if err == nil {
							c.addUnits(max(units, c.sum(field(out.Result, "ConsumedCapacity"))))
						} else if refused(err) {
							c.addUnits(units)
						}
					} else if err == nil {
						c.add(field(out.Result, "ConsumedCapacity"))
					} else if ccf := (*ddbtypes.ConditionalCheckFailedException)(nil); errors.As(err, &ccf) {
						c.addUnits(1)
					}
					return out, md, err
				}), middleware.After)
		})
	}
}

// add counts a response's ConsumedCapacity.
func (c *Capacity) add(v reflect.Value) { c.addUnits(c.sum(v)) }

// sum returns the units of a response's ConsumedCapacity: one (a pointer) or
// one per table (a slice).
func (c *Capacity) sum(v reflect.Value) float64 {
	if !v.IsValid() {
		return 0
	}
	var sum float64
	count := func(cc *ddbtypes.ConsumedCapacity) {
		if cc != nil && cc.CapacityUnits != nil {
			sum += *cc.CapacityUnits
		}
	}
	switch x := v.Interface().(type) {
	case *ddbtypes.ConsumedCapacity:
		count(x)
	case []ddbtypes.ConsumedCapacity:
		for i := range x {
			count(&x[i])
		}
	}
	return sum
}

func (c *Capacity) addUnits(units float64) {
	c.mu.Lock()
	c.units += units
	c.mu.Unlock()
}

// refused reports whether err is a transaction that a failed condition
// cancelled. (It reads the reasons itself: internal/ddbx's tests import this
// package.)
func refused(err error) bool {
	var tx *ddbtypes.TransactionCanceledException
	return errors.As(err, &tx) && slices.ContainsFunc(tx.CancellationReasons, func(r ddbtypes.CancellationReason) bool {
		return r.Code != nil && *r.Code == "ConditionalCheckFailed"
	})
}

// field returns the named field of the struct p points to, or the zero Value.
func field(p any, name string) reflect.Value {
	v := reflect.ValueOf(p)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}
	}
	return v.Elem().FieldByName(name)
}
