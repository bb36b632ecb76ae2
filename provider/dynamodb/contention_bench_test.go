package dynamodb_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/internal/ddbx"
	idgen "github.com/pipestate/pipestate/internal/ids"
	"github.com/pipestate/pipestate/internal/testkit/benchpair"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider/dynamodb"
	"github.com/pipestate/pipestate/types"
)

// BenchmarkAppendEventContention appends to one pipeline from several instances
// at once, benchWorkers goroutines spread over 1, 4 or 16 Providers, beside the
// design without a counter item that the package doc weighs under "Capacity
// units" (condPutLog): what it measures is the write units and requests per
// event under contention, by AWS's rules (testenv.Capacity, refused attempts
// included), and how many events a second each design commits:
//
//	go test -run '^$' -bench AppendEventContention -benchtime 1280x ./provider/dynamodb
func BenchmarkAppendEventContention(b *testing.B) {
	hc, requests := testenv.CountingHTTPClient()
	base := benchEnv(b)
	e := &env{client: testenv.DynamoDBClient(b, benchUnits.Option(), func(o *ddb.Options) { o.HTTPClient = hc }),
		table: base.table, clock: base.clock}
	ctx := context.Background()
	for _, n := range []int{1, 4, 16} {
		b.Run("instances="+strconv.Itoa(n), func(b *testing.B) {
			libs := make([]*dynamodb.Provider, n)
			for i := range libs {
				libs[i] = openOn(b, e.client, e)
			}
			raws := make([]condPutLog, n)
			pipe := strconv.FormatInt(time.Now().UnixNano(), 36)
			benchpair.RunParallel(b, benchWorkers, func(w, i int) error {
				return libs[w%n].AppendEvent(ctx, benchEvent("lib-"+pipe, i))
			}, func(w, i int) error {
				return raws[w%n].append(ctx, e, "raw-"+pipe, benchEvent("raw-"+pipe, i))
			}, testenv.CapacityMeter(&benchUnits), benchpair.Meter{Unit: "requests", Read: func() (float64, error) {
				return float64(requests.Load()), nil
			}})
		})
	}
}

// condPutLog is one instance of an event log without a counter item: each event
// is a conditional PutItem of the number after the newest event
// (attribute_not_exists), stamped with the call's token so that a retry after
// a lost reply recognises its own item. The instance appends one event at a
// time (its callers queue on mu: a batch would need a transaction, 2 units per
// event) and keeps the newest number it saw; a refusal costs a strongly
// consistent Query of the newest event. It does not keep what the counter item
// keeps (see "Capacity units" in the package doc): a fence check, and a number
// above every number used once the whole log has expired.
type condPutLog struct {
	mu   sync.Mutex
	last int64
}

func (l *condPutLog) append(ctx context.Context, e *env, pipeline string, ev types.Event) error {
	data, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	tok := idgen.Random()
	pk := "PIPELINE#" + pipeline
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		seq := l.last + 1
		_, err := e.client.PutItem(ctx, &ddb.PutItemInput{TableName: &e.table,
			Item: map[string]ddbtypes.AttributeValue{"PK": sAV(pk), "SK": sAV(fmt.Sprintf("EVENT#%020d", seq)),
				"seq": nAV(seq), "tok": sAV(tok), "data": sAV(string(data))},
			ConditionExpression:                 aws.String("attribute_not_exists(PK)"),
			ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
		})
		if err == nil {
			l.last = seq
			return nil
		}
		old, refused := ddbx.ConditionFailedItem(err)
		if !refused {
			return err
		}
		if t, _ := old["tok"].(*ddbtypes.AttributeValueMemberS); t != nil && t.Value == tok {
			l.last = seq // an SDK retry of this put, whose reply was lost
			return nil
		}
		out, err := e.client.Query(ctx, &ddb.QueryInput{
			TableName: &e.table, ConsistentRead: aws.Bool(true), ScanIndexForward: aws.Bool(false), Limit: aws.Int32(1),
			KeyConditionExpression:   aws.String("#pk = :pk AND #sk BETWEEN :lo AND :hi"),
			ExpressionAttributeNames: map[string]string{"#pk": "PK", "#sk": "SK"},
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
				":pk": sAV(pk), ":lo": sAV("EVENT#"), ":hi": sAV("EVENT#99999999999999999999")},
		})
		if err != nil {
			return err
		}
		if len(out.Items) == 1 {
			if l.last, err = strconv.ParseInt(out.Items[0]["seq"].(*ddbtypes.AttributeValueMemberN).Value, 10, 64); err != nil {
				return err
			}
		}
	}
}
