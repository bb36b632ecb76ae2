package ddbprovider_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/pipestate/pipestate/internal/readcheck"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider"
)

// readsOnlyAPI is a ddbprovider.API that passes the reads (GetItem, Query, Scan,
// DescribeTable) on and fails every write, unsent, as DynamoDB refuses an
// action an IAM policy does not allow (DynamoDB Local has no IAM); it records
// each operation called.
type readsOnlyAPI struct {
	ddbprovider.API
	opLog
}

// opLog records the operations called.
type opLog struct {
	mu     sync.Mutex
	called map[string]int
}

// errDenied stands for DynamoDB's AccessDeniedException.
var errDenied = errors.New("AccessDeniedException: not authorized (emulated IAM policy without write actions)")

func (a *opLog) call(op string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.called == nil {
		a.called = map[string]int{}
	}
	a.called[op]++
}

func (a *opLog) ops() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for op := range a.called {
		out = append(out, op)
	}
	slices.Sort(out)
	return out
}

func (a *readsOnlyAPI) GetItem(ctx context.Context, in *ddb.GetItemInput, o ...func(*ddb.Options)) (*ddb.GetItemOutput, error) {
	a.call("GetItem")
	return a.API.GetItem(ctx, in, o...)
}

func (a *readsOnlyAPI) Query(ctx context.Context, in *ddb.QueryInput, o ...func(*ddb.Options)) (*ddb.QueryOutput, error) {
	a.call("Query")
	return a.API.Query(ctx, in, o...)
}

func (a *readsOnlyAPI) Scan(ctx context.Context, in *ddb.ScanInput, o ...func(*ddb.Options)) (*ddb.ScanOutput, error) {
	a.call("Scan")
	return a.API.Scan(ctx, in, o...)
}

func (a *readsOnlyAPI) DescribeTable(ctx context.Context, in *ddb.DescribeTableInput, o ...func(*ddb.Options)) (*ddb.DescribeTableOutput, error) {
	a.call("DescribeTable")
	return a.API.DescribeTable(ctx, in, o...)
}

func (a *readsOnlyAPI) PutItem(context.Context, *ddb.PutItemInput, ...func(*ddb.Options)) (*ddb.PutItemOutput, error) {
	a.call("PutItem")
	return nil, errDenied
}

func (a *readsOnlyAPI) UpdateItem(context.Context, *ddb.UpdateItemInput, ...func(*ddb.Options)) (*ddb.UpdateItemOutput, error) {
	a.call("UpdateItem")
	return nil, errDenied
}

func (a *readsOnlyAPI) DeleteItem(context.Context, *ddb.DeleteItemInput, ...func(*ddb.Options)) (*ddb.DeleteItemOutput, error) {
	a.call("DeleteItem")
	return nil, errDenied
}

func (a *readsOnlyAPI) TransactWriteItems(context.Context, *ddb.TransactWriteItemsInput, ...func(*ddb.Options)) (*ddb.TransactWriteItemsOutput, error) {
	a.call("TransactWriteItems")
	return nil, errDenied
}

// TestReadsWithReadCredentials: through an API client that fails every write
// (an IAM policy with the reader's actions), every read method of a provider,
// read-only or not, succeeds on a table populated through every write method,
// expired traits included, calls only GetItem, Query, Scan and DescribeTable, and
// returns what a provider with the writer's client returns. Every write fails:
// with ErrReadOnly, unsent, on a read-only provider; with the client's error
// otherwise.
func TestReadsWithReadCredentials(t *testing.T) {
	ctx := context.Background()
	e := testEnv(t)
	recorder := &recordingAPI{API: e.client}
	writer := openOn(t, recorder, e)
	readcheck.Seed(t, writer, 5, func() { e.clock.Advance(2 * time.Minute) })
	want := readcheck.Read(t, writer)
	checkPolicy(t, "writer", recorder.ops())
	for what, ids := range map[string]string{
		"pipelines": "[billing orders]", "runs": "[r5 r4 r3 r2 r1]", "runs limit 2": "[r5 r4]", "reruns": "[rr2 rr1]",
		"all reruns": "[rr3 rr2 rr1]", "traits": "[forever live]", "big traits": "5",
	} {
		if want.IDs[what] != ids {
			t.Errorf("%s: %s, want %s", what, want.IDs[what], ids)
		}
	}
	for _, readOnly := range []bool{true, false} {
		t.Run(fmt.Sprintf("read-only=%v", readOnly), func(t *testing.T) {
			api := &readsOnlyAPI{API: e.client}
			var opts []ddbprovider.Option
			if readOnly {
				opts = append(opts, ddbprovider.WithReadOnly())
			}
			reader := openOn(t, api, e, opts...)
			got := readcheck.Read(t, reader)
			if ops := fmt.Sprint(api.ops()); ops != "[DescribeTable GetItem Query Scan]" {
				t.Errorf("the reads called %s, want [DescribeTable GetItem Query Scan]", ops)
			}
			checkPolicy(t, "reader", api.ops())
			if !reflect.DeepEqual(got, want) {
				t.Errorf("the reads through a client that may not write differ:\ngot  %v\nwant %v", got, want)
			}
			for _, w := range readcheck.Writes(reader) {
				before := len(api.ops())
				err := w.Do(ctx)
				switch {
				case readOnly && (!errors.Is(err, provider.ErrReadOnly) || len(api.ops()) != before):
					t.Errorf("read-only %s: %v (operations %v), want an error wrapping ErrReadOnly, unsent", w.Name, err, api.ops())
				case !readOnly && !errors.Is(err, errDenied):
					t.Errorf("%s through a client that may not write: %v, want the client's error", w.Name, err)
				}
			}
		})
	}
	if again := readcheck.Read(t, writer); !reflect.DeepEqual(again, want) {
		t.Errorf("the refused writes changed what the writer reads:\ngot  %v\nwant %v", again, want)
	}
}

// recordingAPI passes every call on and records the operations called.
type recordingAPI struct {
	ddbprovider.API
	opLog
}

func (a *recordingAPI) Scan(ctx context.Context, in *ddb.ScanInput, o ...func(*ddb.Options)) (*ddb.ScanOutput, error) {
	a.call("Scan")
	return a.API.Scan(ctx, in, o...)
}

func (a *recordingAPI) GetItem(ctx context.Context, in *ddb.GetItemInput, o ...func(*ddb.Options)) (*ddb.GetItemOutput, error) {
	a.call("GetItem")
	return a.API.GetItem(ctx, in, o...)
}

func (a *recordingAPI) Query(ctx context.Context, in *ddb.QueryInput, o ...func(*ddb.Options)) (*ddb.QueryOutput, error) {
	a.call("Query")
	return a.API.Query(ctx, in, o...)
}

func (a *recordingAPI) DescribeTable(ctx context.Context, in *ddb.DescribeTableInput, o ...func(*ddb.Options)) (*ddb.DescribeTableOutput, error) {
	a.call("DescribeTable")
	return a.API.DescribeTable(ctx, in, o...)
}

func (a *recordingAPI) PutItem(ctx context.Context, in *ddb.PutItemInput, o ...func(*ddb.Options)) (*ddb.PutItemOutput, error) {
	a.call("PutItem")
	return a.API.PutItem(ctx, in, o...)
}

func (a *recordingAPI) UpdateItem(ctx context.Context, in *ddb.UpdateItemInput, o ...func(*ddb.Options)) (*ddb.UpdateItemOutput, error) {
	a.call("UpdateItem")
	return a.API.UpdateItem(ctx, in, o...)
}

func (a *recordingAPI) DeleteItem(ctx context.Context, in *ddb.DeleteItemInput, o ...func(*ddb.Options)) (*ddb.DeleteItemOutput, error) {
	a.call("DeleteItem")
	return a.API.DeleteItem(ctx, in, o...)
}

func (a *recordingAPI) TransactWriteItems(ctx context.Context, in *ddb.TransactWriteItemsInput, o ...func(*ddb.Options)) (*ddb.TransactWriteItemsOutput, error) {
	a.call("TransactWriteItems")
	// The items' actions are what IAM authorizes.
	for _, it := range in.TransactItems {
		switch {
		case it.Put != nil:
			a.call("PutItem")
		case it.Update != nil:
			a.call("UpdateItem")
		case it.Delete != nil:
			a.call("DeleteItem")
		case it.ConditionCheck != nil:
			a.call("ConditionCheckItem")
		}
	}
	return a.API.TransactWriteItems(ctx, in, o...)
}

// checkPolicy fails t unless the package doc's policy for who allows exactly the
// actions of ops (TransactWriteItems being authorized by its items' actions).
func checkPolicy(t *testing.T, who string, ops []string) {
	t.Helper()
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, op := range ops {
		if op != "TransactWriteItems" {
			actions = append(actions, strconv.Quote("dynamodb:"+op))
		}
	}
	_, policy, _ := strings.Cut(string(doc), "a "+who+":\n")
	want := `"Action": [` + strings.Join(actions, ", ") + `],`
	if first, _, _ := strings.Cut(policy, "}]"); !strings.Contains(first, want) {
		t.Errorf("the package doc's %s policy does not allow exactly the actions the %s called:\n%s", who, who, want)
	}
}
