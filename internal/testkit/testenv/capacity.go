package testenv

import (
	"context"
	"reflect"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/pipestate/pipestate/internal/ddbx"
	"github.com/pipestate/pipestate/internal/testkit/benchpair"
)

// Capacity sums the capacity units DynamoDB reports consumed by the requests of
// a client built with its Option: it asks every request that can report them
// for ReturnConsumedCapacity TOTAL and adds up what the responses say (on
// DynamoDB Local: its figures, which follow AWS's rules for single items,
// queries and batches, and count any small transaction as 2 units per item).
// A refused conditional write reports nothing, while AWS charges the attempt:
// Capacity adds what AWS charges for one of small items, 1 unit for a
// PutItem, UpdateItem or DeleteItem and 2 per action for a transaction that a
// failed condition cancelled. It is safe for concurrent use; the zero value is
// ready.
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
					if err == nil {
						c.add(field(out.Result, "ConsumedCapacity"))
					} else {
						c.addRefused(in.Parameters, err)
					}
					return out, md, err
				}), middleware.After)
		})
	}
}

// add counts a response's ConsumedCapacity: one (a pointer) or one per table
// (a slice).
func (c *Capacity) add(v reflect.Value) {
	if !v.IsValid() {
		return
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
	c.mu.Lock()
	c.units += sum
	c.mu.Unlock()
}

// addRefused counts what AWS charges for a write that err says a failed
// condition refused: 1 unit for a single item, 2 per action of a transaction.
func (c *Capacity) addRefused(params any, err error) {
	var units float64
	if ddbx.IsConditionFailed(err) {
		units = 1
	} else if reasons, ok := ddbx.TxReasons(err); ok && slices.ContainsFunc(reasons, func(r ddbtypes.CancellationReason) bool {
		return r.Code != nil && *r.Code == ddbx.ReasonConditionalCheck
	}) {
		if tx, ok := params.(*dynamodb.TransactWriteItemsInput); ok {
			units = 2 * float64(len(tx.TransactItems))
		}
	}
	c.mu.Lock()
	c.units += units
	c.mu.Unlock()
}

// field returns the named field of the struct p points to, or the zero Value.
func field(p any, name string) reflect.Value {
	v := reflect.ValueOf(p)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}
	}
	return v.Elem().FieldByName(name)
}
