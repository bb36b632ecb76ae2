package ddbstate_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"go.opentelemetry.io/otel/attribute"

	"github.com/pipestate/pipestate/internal/signal"
	"github.com/pipestate/pipestate/internal/signal/signaltest"
	"github.com/pipestate/pipestate/internal/testkit/faults"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/ddbstate"
	"github.com/pipestate/pipestate/state/internal/storetest"
)

// faultClient is a client of DynamoDB Local whose requests go through ft, with the
// SDK making at most 3 attempts per request, quickly and without a retry quota.
func faultClient(t *testing.T, ft *faults.Transport) *ddb.Client {
	return testenv.DynamoDBClient(t, func(o *ddb.Options) {
		o.HTTPClient = &http.Client{Transport: ft}
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts, so.MaxBackoff, so.RateLimiter = 3, 5*time.Millisecond, ratelimit.None
		})
	})
}

// signalCount reads one counter of sig for an operation and reason.
func signalCount(t *testing.T, sig *signaltest.Signals, name, op, reason string) int64 {
	t.Helper()
	return sig.Collect(t, name, attribute.String("db.system.name", "aws.dynamodb"),
		attribute.String("db.operation.name", op), signal.AttrReason.String(reason)).Value
}

// TestSignalsInjected injects throttles and transaction conflicts through a fault
// transport and checks the retries and give-ups recorded for each, under the
// method's name and the reason, and a log record for each.
func TestSignalsInjected(t *testing.T) {
	e := envFor(t)
	ft := faults.NewTransport()
	c := faultClient(t, ft)
	sig := signaltest.NewSignals()
	opts := []ddbstate.StoreOption{ddbstate.WithClock(e.clock.Now), ddbstate.WithDedupTable(e.dedup), ddbstate.WithMaxRetries(2),
		ddbstate.WithBackoff(time.Millisecond, time.Millisecond), ddbstate.WithMeterProvider(sig.Meter), ddbstate.WithLogger(sig.Log)}
	sum, err1 := ddbstate.NewInt64SumStore(c, e.values, opts...)
	b, err2 := ddbstate.NewBytesStore(c, e.bytes, storetest.Counter{}, opts...)
	d, err3 := ddbstate.NewDeduper(c, e.dedup, ddbstate.WithMeterProvider(sig.Meter), ddbstate.WithLogger(sig.Log))
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	k := state.Key{Entity: "e"}
	steps := []signaltest.RetryStep{
		signaltest.Retry("throttled merge", "MergeUpdate", signal.ReasonThrottled, func() error {
			ft.Reject(2, faults.Op("UpdateItem"), faults.Throttled)
			return sum.MergeUpdate(ctx, k, 1, 0)
		}, 2, 0),
		signaltest.Retry("throttled out", "MarkSeen", signal.ReasonThrottled, func() error {
			ft.Reject(3, faults.Op("PutItem"), faults.Throttled)
			if _, err := d.MarkSeen(ctx, "ev"); err == nil {
				return errors.New("MarkSeen throttled 3 times succeeded")
			}
			return nil
		}, 2, 1),
		signaltest.Retry("conflicted once merge", "MergeUpdateOnce", signal.ReasonTransactionConflict, func() error {
			ft.Reject(2, faults.Op("TransactWriteItems"), faults.TransactionConflict)
			_, err := sum.MergeUpdateOnce(ctx, "ev1", k, 1, 0)
			return err
		}, 2, 0),
		signaltest.Retry("conflicted out", "MergeUpdateOnce", signal.ReasonTransactionConflict, func() error {
			ft.Reject(3, faults.Op("TransactWriteItems"), faults.TransactionConflict)
			if _, err := sum.MergeUpdateOnce(ctx, "ev2", k, 1, 0); !errors.Is(err, state.ErrContention) {
				return errors.New("a merge conflicted 3 times with 2 retries did not fail with ErrContention")
			}
			return nil
		}, 2, 1),
		signaltest.Retry("conflicted bytes merge", "MergeUpdateOnce", signal.ReasonTransactionConflict, func() error {
			ft.Reject(1, faults.Op("TransactWriteItems"), faults.TransactionConflict)
			_, err := b.MergeUpdateOnce(ctx, "ev3", k, storetest.Counter{}.Of(1), 0)
			return err
		}, 1, 0),
		signaltest.Retry("throttled batch read", "GetMany", signal.ReasonThrottled, func() error {
			ft.Reject(1, faults.Op("BatchGetItem"), faults.Throttled)
			_, _, err := sum.GetMany(ctx, []state.Key{k})
			return err
		}, 1, 0),
	}
	sig.CheckRetries(t, "aws.dynamodb", steps)
}

// unprocessedOnce is an API whose first BatchGetItem returns its last key
// unprocessed, as DynamoDB does under load.
type unprocessedOnce struct {
	ddbstate.API
	done atomic.Bool
}

func (a *unprocessedOnce) BatchGetItem(ctx context.Context, in *ddb.BatchGetItemInput, optFns ...func(*ddb.Options)) (*ddb.BatchGetItemOutput, error) {
	if a.done.Swap(true) {
		return a.API.BatchGetItem(ctx, in, optFns...)
	}
	req := map[string]ddbtypes.KeysAndAttributes{}
	left := map[string]ddbtypes.KeysAndAttributes{}
	for table, ka := range in.RequestItems {
		last := len(ka.Keys) - 1
		head, tail := ka, ka
		head.Keys, tail.Keys = ka.Keys[:last], ka.Keys[last:]
		req[table], left[table] = head, tail
	}
	out, err := a.API.BatchGetItem(ctx, &ddb.BatchGetItemInput{RequestItems: req}, optFns...)
	if err != nil {
		return nil, err
	}
	out.UnprocessedKeys = left
	return out, nil
}

// TestSignalsUnprocessed: a key left unprocessed by BatchGetItem is retried and
// recorded.
func TestSignalsUnprocessed(t *testing.T) {
	e := envFor(t)
	sig := signaltest.NewSignals()
	api := &unprocessedOnce{API: testenv.DynamoDBClient(t)}
	s, err := ddbstate.NewInt64SumStore(api, e.values, ddbstate.WithMeterProvider(sig.Meter), ddbstate.WithLogger(sig.Log))
	if err != nil {
		t.Fatal(err)
	}
	ks := []state.Key{{Entity: "a"}, {Entity: "b"}}
	for _, k := range ks {
		if err := s.MergeUpdate(t.Context(), k, 1, 0); err != nil {
			t.Fatal(err)
		}
	}
	vals, found, err := s.GetMany(t.Context(), ks)
	if err != nil || vals[0] != 1 || vals[1] != 1 || !found[0] || !found[1] {
		t.Fatalf("GetMany = %v, %v, %v; want both 1", vals, found, err)
	}
	if got := signalCount(t, sig, "pipestate.retries", "GetMany", signal.ReasonUnprocessed); got != 1 {
		t.Errorf("%d unprocessed retries recorded, want 1", got)
	}
}

// TestSignalsUnderContention: 8 writers on one hot key, one retry each at most, so
// merges lose races and give up. Every lost race the store counts is a recorded
// retry or give-up, and every ErrContention returned a recorded give-up.
func TestSignalsUnderContention(t *testing.T) {
	e := envFor(t)
	sig := signaltest.NewSignals()
	var m storetest.Counter
	s, err := ddbstate.NewBytesStore(testenv.DynamoDBClient(t), e.bytes, m, ddbstate.WithMaxRetries(1),
		ddbstate.WithBackoff(time.Microsecond, 50*time.Microsecond), ddbstate.WithMeterProvider(sig.Meter), ddbstate.WithLogger(sig.Log))
	if err != nil {
		t.Fatal(err)
	}
	k := state.Key{Entity: "hot"}
	const writers, merges = 8, 10
	var applied, contention atomic.Int64
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for range merges {
				switch err := s.MergeUpdate(t.Context(), k, m.Of(1), 0); {
				case err == nil:
					applied.Add(1)
				case errors.Is(err, state.ErrContention):
					contention.Add(1)
				default:
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	lost := ddbstate.LostRaces(s)
	retries := signalCount(t, sig, "pipestate.retries", "MergeUpdate", signal.ReasonCASConflict)
	giveUps := signalCount(t, sig, "pipestate.giveups", "MergeUpdate", signal.ReasonCASConflict)
	t.Logf("%d applied, %d ErrContention, %d lost races, %d retries recorded, %d give-ups recorded", applied.Load(), contention.Load(), lost, retries, giveUps)
	if lost == 0 {
		t.Fatal("no race was lost: the test forced no contention")
	}
	if giveUps != contention.Load() {
		t.Errorf("give-ups recorded %d, want %d (the ErrContention returns)", giveUps, contention.Load())
	}
	if retries+giveUps != lost {
		t.Errorf("retries %d + give-ups %d recorded, want the %d lost races", retries, giveUps, lost)
	}
	got, _, err := s.Get(t.Context(), k)
	if n, derr := m.Decode(got); err != nil || derr != nil || n != applied.Load() {
		t.Errorf("value %d (%v, %v), want the %d applied merges", n, err, derr, applied.Load())
	}
}
