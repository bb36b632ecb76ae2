package ddbstate_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/ddbstate"
)

// opLog records the operations an API wrapper passed or refused, with the
// actions of each TransactWriteItems item, which IAM authorizes.
type opLog struct {
	mu     sync.Mutex
	called map[string]bool
}

func (l *opLog) call(op string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.called == nil {
		l.called = map[string]bool{}
	}
	l.called[op] = true
}

func (l *opLog) ops() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for op := range l.called {
		out = append(out, op)
	}
	slices.Sort(out)
	return out
}

// errDenied stands for DynamoDB's AccessDeniedException (DynamoDB Local has no
// IAM).
var errDenied = errors.New("AccessDeniedException: not authorized (emulated IAM policy without write actions)")

// opsAPI passes the reads (GetItem, BatchGetItem) on, and the writes too unless
// deny, which fails them unsent, as an IAM policy without write actions does.
type opsAPI struct {
	ddbstate.API
	opLog
	deny bool
}

func (a *opsAPI) GetItem(ctx context.Context, in *ddb.GetItemInput, o ...func(*ddb.Options)) (*ddb.GetItemOutput, error) {
	a.call("GetItem")
	return a.API.GetItem(ctx, in, o...)
}

func (a *opsAPI) BatchGetItem(ctx context.Context, in *ddb.BatchGetItemInput, o ...func(*ddb.Options)) (*ddb.BatchGetItemOutput, error) {
	a.call("BatchGetItem")
	return a.API.BatchGetItem(ctx, in, o...)
}

func (a *opsAPI) PutItem(ctx context.Context, in *ddb.PutItemInput, o ...func(*ddb.Options)) (*ddb.PutItemOutput, error) {
	a.call("PutItem")
	if a.deny {
		return nil, errDenied
	}
	return a.API.PutItem(ctx, in, o...)
}

func (a *opsAPI) UpdateItem(ctx context.Context, in *ddb.UpdateItemInput, o ...func(*ddb.Options)) (*ddb.UpdateItemOutput, error) {
	a.call("UpdateItem")
	if a.deny {
		return nil, errDenied
	}
	return a.API.UpdateItem(ctx, in, o...)
}

func (a *opsAPI) DeleteItem(ctx context.Context, in *ddb.DeleteItemInput, o ...func(*ddb.Options)) (*ddb.DeleteItemOutput, error) {
	a.call("DeleteItem")
	if a.deny {
		return nil, errDenied
	}
	return a.API.DeleteItem(ctx, in, o...)
}

func (a *opsAPI) TransactWriteItems(ctx context.Context, in *ddb.TransactWriteItemsInput, o ...func(*ddb.Options)) (*ddb.TransactWriteItemsOutput, error) {
	a.call("TransactWriteItems")
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
	if a.deny {
		return nil, errDenied
	}
	return a.API.TransactWriteItems(ctx, in, o...)
}

// rwAppend is a Monoid[[]byte] that appends.
type rwAppend struct{}

func (rwAppend) Identity() []byte { return nil }
func (rwAppend) Combine(a, b []byte) []byte {
	return append(append(make([]byte, 0, len(a)+len(b)), a...), b...)
}
func (rwAppend) Kind() monoid.Kind { return monoid.KindCustom }

type rwStoreSet struct {
	sum   *ddbstate.Int64SumStore
	fsum  *ddbstate.Float64SumStore
	max   *ddbstate.Int64MaxStore
	bytes *ddbstate.BytesStore
	dedup *ddbstate.Deduper
}

func openRWStores(t *testing.T, api ddbstate.API, e *env) rwStoreSet {
	t.Helper()
	var s rwStoreSet
	var err error
	check := func() {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	opts := []ddbstate.StoreOption{ddbstate.WithDedupTable(e.dedup), ddbstate.WithClock(e.clock.Now)}
	s.sum, err = ddbstate.NewInt64SumStore(api, e.values, opts...)
	check()
	s.fsum, err = ddbstate.NewFloat64SumStore(api, e.values, opts...)
	check()
	s.max, err = ddbstate.NewInt64MaxStore(api, e.values, opts...)
	check()
	s.bytes, err = ddbstate.NewBytesStore(api, e.bytes, rwAppend{}, opts...)
	check()
	s.dedup, err = ddbstate.NewDeduper(api, e.dedup, ddbstate.WithClock(e.clock.Now))
	check()
	return s
}

var rwKeys = []state.Key{{Entity: "a", Bucket: 1}, {Entity: "b", Bucket: 2}, {Entity: "missing"}}

// writes is every write of s once; eventID makes the once-writes new.
func (s rwStoreSet) writes(eventID string) map[string]func(ctx context.Context) error {
	k := rwKeys[0]
	return map[string]func(ctx context.Context) error{
		"Int64Sum.MergeUpdate": func(ctx context.Context) error { return s.sum.MergeUpdate(ctx, k, 1, time.Hour) },
		"Int64Sum.MergeUpdateOnce": func(ctx context.Context) error {
			_, err := s.sum.MergeUpdateOnce(ctx, eventID, k, 1, time.Hour)
			return err
		},
		"Int64Sum.MergeMany": func(ctx context.Context) error {
			return s.sum.MergeMany(ctx, []state.Update[int64]{{Key: k, Delta: 1}, {Key: rwKeys[1], Delta: 2}})
		},
		"Float64Sum.MergeUpdate": func(ctx context.Context) error { return s.fsum.MergeUpdate(ctx, k, 0.5, 0) },
		"Int64Max.MergeUpdate":   func(ctx context.Context) error { return s.max.MergeUpdate(ctx, k, 7, 0) },
		"Bytes.MergeUpdate":      func(ctx context.Context) error { return s.bytes.MergeUpdate(ctx, k, []byte("x"), 0) },
		"Bytes.MergeUpdateOnce": func(ctx context.Context) error {
			_, err := s.bytes.MergeUpdateOnce(ctx, eventID, rwKeys[1], []byte("y"), time.Hour)
			return err
		},
		"Deduper.MarkSeen": func(ctx context.Context) error { _, err := s.dedup.MarkSeen(ctx, eventID); return err },
		"Deduper.Release":  func(ctx context.Context) error { return s.dedup.Release(ctx, "released-"+eventID) },
	}
}

// reads reads every key of rwKeys from every store of s with Get and GetMany.
func (s rwStoreSet) reads(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	read := func(what string, v any, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		fmt.Fprintf(&b, "%s: %v\n", what, v)
	}
	for _, k := range rwKeys {
		v, ok, err := s.sum.Get(ctx, k)
		read("Int64Sum.Get", []any{v, ok}, err)
		f, ok, err := s.fsum.Get(ctx, k)
		read("Float64Sum.Get", []any{f, ok}, err)
		m, ok, err := s.max.Get(ctx, k)
		read("Int64Max.Get", []any{m, ok}, err)
		by, ok, err := s.bytes.Get(ctx, k)
		read("Bytes.Get", []any{string(by), ok}, err)
	}
	vs, oks, err := s.sum.GetMany(ctx, rwKeys)
	read("Int64Sum.GetMany", []any{vs, oks}, err)
	fs, oks, err := s.fsum.GetMany(ctx, rwKeys)
	read("Float64Sum.GetMany", []any{fs, oks}, err)
	ms, oks, err := s.max.GetMany(ctx, rwKeys)
	read("Int64Max.GetMany", []any{ms, oks}, err)
	bs, oks, err := s.bytes.GetMany(ctx, rwKeys)
	read("Bytes.GetMany", []any{bs, oks}, err)
	return b.String()
}

// TestStoreReadsWithReadCredentials: through a client that fails every write
// (an IAM policy with the reader's actions), every store's Get and GetMany
// succeed, call only GetItem and BatchGetItem, and read what the writer wrote
// through every write; every write fails with the client's error and changes
// nothing. The package doc's policies allow exactly the actions called.
func TestStoreReadsWithReadCredentials(t *testing.T) {
	ctx := context.Background()
	e := envFor(t)
	c := testenv.DynamoDBClient(t)
	wapi := &opsAPI{API: c}
	writer := openRWStores(t, wapi, e)
	for name, w := range writer.writes("e1") {
		if err := w(ctx); err != nil {
			t.Fatalf("writer %s: %v", name, err)
		}
	}
	want := writer.reads(t)
	checkPolicy(t, "writer", wapi.ops())
	rapi := &opsAPI{API: c, deny: true}
	reader := openRWStores(t, rapi, e)
	if got := reader.reads(t); got != want {
		t.Errorf("the reader reads\n%s\nthe writer\n%s", got, want)
	}
	if ops := fmt.Sprint(rapi.ops()); ops != "[BatchGetItem GetItem]" {
		t.Errorf("the reads called %s, want [BatchGetItem GetItem]", ops)
	}
	checkPolicy(t, "reader", rapi.ops())
	for name, w := range reader.writes("e2") {
		if err := w(ctx); !errors.Is(err, errDenied) {
			t.Errorf("reader %s: %v, want the client's error", name, err)
		}
	}
	if got := writer.reads(t); got != want {
		t.Errorf("the refused writes changed the values:\n%s\nwant\n%s", got, want)
	}
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
