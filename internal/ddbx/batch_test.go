package ddbx

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/internal/backoff"
)

var fast = BatchOptions{Backoff: backoff.Policy{Base: time.Microsecond, Max: time.Millisecond}}

func keyOf(i int) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{"PK": &ddbtypes.AttributeValueMemberS{Value: fmt.Sprint(i)}}
}

func keysN(n int) []map[string]ddbtypes.AttributeValue {
	ks := make([]map[string]ddbtypes.AttributeValue, n)
	for i := range ks {
		ks[i] = keyOf(i)
	}
	return ks
}

// fakeBatch answers batch calls; each call leaves up to unprocessed entries for later
// while leave > 0 rounds remain.
type fakeBatch struct {
	mu         sync.Mutex
	calls      int
	maxKeys    int
	inFlight   atomic.Int32
	maxFlight  int32
	leave      int // rounds that leave entries unprocessed
	unproc     int // entries left unprocessed per such round
	failWith   error
	seen       map[string]int
	gate       sync.WaitGroup
	gateActive bool
	optFns     int // calls that were given an option
}

func (f *fakeBatch) enter(ctx context.Context, n int) (leave int, err error) {
	cur := f.inFlight.Add(1)
	f.mu.Lock()
	f.calls++
	f.maxKeys = max(f.maxKeys, n)
	f.maxFlight = max(f.maxFlight, cur)
	if f.leave > 0 {
		f.leave--
		leave = min(f.unproc, n)
	}
	gate := f.gateActive
	f.mu.Unlock()
	if gate {
		f.gate.Done()
		done := make(chan struct{})
		go func() { f.gate.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			return 0, errors.New("calls were not concurrent")
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	return leave, f.failWith
}

func (f *fakeBatch) BatchGetItem(ctx context.Context, in *ddb.BatchGetItemInput, optFns ...func(*ddb.Options)) (*ddb.BatchGetItemOutput, error) {
	defer f.inFlight.Add(-1)
	if len(optFns) > 0 {
		f.mu.Lock()
		f.optFns++
		f.mu.Unlock()
	}
	ka := in.RequestItems["t"]
	leave, err := f.enter(ctx, len(ka.Keys))
	if err != nil {
		return nil, err
	}
	out := &ddb.BatchGetItemOutput{Responses: map[string][]map[string]ddbtypes.AttributeValue{}}
	done := ka.Keys[leave:]
	for _, k := range done {
		if k["PK"].(*ddbtypes.AttributeValueMemberS).Value == "missing" {
			continue
		}
		out.Responses["t"] = append(out.Responses["t"], k)
	}
	if leave > 0 {
		rest := ka
		rest.Keys = ka.Keys[:leave]
		out.UnprocessedKeys = map[string]ddbtypes.KeysAndAttributes{"t": rest}
	}
	return out, nil
}

func (f *fakeBatch) BatchWriteItem(ctx context.Context, in *ddb.BatchWriteItemInput, _ ...func(*ddb.Options)) (*ddb.BatchWriteItemOutput, error) {
	defer f.inFlight.Add(-1)
	reqs := in.RequestItems["t"]
	leave, err := f.enter(ctx, len(reqs))
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	for _, r := range reqs[leave:] {
		f.seen[r.PutRequest.Item["PK"].(*ddbtypes.AttributeValueMemberS).Value]++
	}
	f.mu.Unlock()
	out := &ddb.BatchWriteItemOutput{}
	if leave > 0 {
		out.UnprocessedItems = map[string][]ddbtypes.WriteRequest{"t": reqs[:leave]}
	}
	return out, nil
}

func TestBatchGetSplitsConcurrently(t *testing.T) {
	f := &fakeBatch{gateActive: true}
	f.gate.Add(3) // ceil(250/100) calls must all be in flight together
	got, err := BatchGet(context.Background(), f, "t", keysN(250), fast)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 250 || f.calls != 3 || f.maxKeys != MaxBatchGetKeys || f.maxFlight != 3 {
		t.Fatalf("got %d items in %d calls (max %d keys, %d in flight), want 250 in 3 (100, 3)",
			len(got), f.calls, f.maxKeys, f.maxFlight)
	}
}

func TestBatchGetRetriesUnprocessed(t *testing.T) {
	f := &fakeBatch{leave: 3, unproc: 40}
	keys := append(keysN(90), map[string]ddbtypes.AttributeValue{"PK": &ddbtypes.AttributeValueMemberS{Value: "missing"}})
	got, err := BatchGet(context.Background(), f, "t", keys, fast)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, it := range got {
		seen[it["PK"].(*ddbtypes.AttributeValueMemberS).Value] = true
	}
	if len(got) != 90 || len(seen) != 90 || f.calls != 4 {
		t.Fatalf("got %d items (%d distinct) in %d calls, want 90 in 4", len(got), len(seen), f.calls)
	}
}

func TestBatchGetGivesUp(t *testing.T) {
	f := &fakeBatch{leave: 100, unproc: 1}
	o := fast
	o.MaxRetries = 2
	var retries []int
	o.OnRetry = func(_ context.Context, retry int) { retries = append(retries, retry) }
	o.APIOptions = []func(*ddb.Options){func(*ddb.Options) {}}
	_, err := BatchGet(context.Background(), f, "t", keysN(5), o)
	if !errors.Is(err, ErrUnprocessed) || f.calls != 3 {
		t.Fatalf("err %v after %d calls, want ErrUnprocessed after 3", err, f.calls)
	}
	if !slices.Equal(retries, []int{1, 2}) {
		t.Errorf("OnRetry called with %v, want [1 2]", retries)
	}
	if f.optFns != 3 {
		t.Errorf("%d calls got the APIOptions, want 3", f.optFns)
	}
}

func TestBatchGetHonoursContext(t *testing.T) {
	f := &fakeBatch{leave: 100, unproc: 1}
	ctx, cancel := context.WithCancel(context.Background())
	o := BatchOptions{Backoff: backoff.Policy{Base: time.Hour, Max: time.Hour}, MaxRetries: 5}
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err := BatchGet(ctx, f, "t", keysN(5), o)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if _, err := BatchGet(ctx, f, "t", keysN(5), o); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled before the call: err %v", err)
	}
}

func TestBatchGetWrapsSDKError(t *testing.T) {
	f := &fakeBatch{failWith: &ddbtypes.ResourceNotFoundException{}}
	_, err := BatchGet(context.Background(), f, "t", keysN(150), fast)
	var rnf *ddbtypes.ResourceNotFoundException
	if !errors.As(err, &rnf) {
		t.Fatalf("err %v, want a ResourceNotFoundException", err)
	}
}

func TestBatchWrite(t *testing.T) {
	for _, tc := range []struct {
		name           string
		n, leave, left int
		limit          int
		wantCalls      int
	}{
		{name: "empty", n: 0, wantCalls: 0},
		{name: "one chunk", n: 25, wantCalls: 1},
		{name: "chunks", n: 60, wantCalls: 3},
		{name: "unprocessed", n: 60, leave: 2, left: 10, wantCalls: 5},
		{name: "limited", n: 100, limit: 1, wantCalls: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeBatch{leave: tc.leave, unproc: tc.left, seen: map[string]int{}}
			reqs := make([]ddbtypes.WriteRequest, tc.n)
			for i := range reqs {
				reqs[i] = ddbtypes.WriteRequest{PutRequest: &ddbtypes.PutRequest{Item: keyOf(i)}}
			}
			o := fast
			o.MaxConcurrency = tc.limit
			if err := BatchWrite(context.Background(), f, "t", reqs, o); err != nil {
				t.Fatal(err)
			}
			if f.calls != tc.wantCalls || len(f.seen) != tc.n || f.maxKeys > MaxBatchWriteItems {
				t.Fatalf("%d calls wrote %d distinct items (max %d per call), want %d calls, %d items",
					f.calls, len(f.seen), f.maxKeys, tc.wantCalls, tc.n)
			}
			for k, c := range f.seen {
				if c != 1 {
					t.Fatalf("item %s written %d times", k, c)
				}
			}
			if tc.limit > 0 && f.maxFlight > int32(tc.limit) {
				t.Fatalf("%d calls in flight, limit %d", f.maxFlight, tc.limit)
			}
		})
	}
}

func TestBatchWriteGivesUp(t *testing.T) {
	f := &fakeBatch{leave: 100, unproc: 1, seen: map[string]int{}}
	reqs := []ddbtypes.WriteRequest{{PutRequest: &ddbtypes.PutRequest{Item: keyOf(1)}}}
	o := fast
	o.MaxRetries = -1
	if err := BatchWrite(context.Background(), f, "t", reqs, o); !errors.Is(err, ErrUnprocessed) || f.calls != 1 {
		t.Fatalf("err %v after %d calls, want ErrUnprocessed after 1", err, f.calls)
	}
}
