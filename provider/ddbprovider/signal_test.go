package ddbprovider_test

import (
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/pipestate/pipestate/internal/signal"
	"github.com/pipestate/pipestate/internal/signal/signaltest"
	"github.com/pipestate/pipestate/internal/testkit/faults"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/types"
)

// TestSignals injects throttles and transaction conflicts through a fault transport
// on DynamoDB Local (the SDK makes at most 3 attempts) and races a second instance
// for sequence numbers, and checks what the provider records: each retry and
// give-up under its method and reason, the group-commit batch sizes, and a log
// record for each.
func TestSignals(t *testing.T) {
	ft := faults.NewTransport()
	e := faultEnv(t, ft, 3)
	sig := signaltest.NewSignals()
	p := openOn(t, e.client, e, ddbprovider.WithMeterProvider(sig.Meter), ddbprovider.WithLogger(sig.Log))
	other := openOn(t, e.client, e)
	ctx := t.Context()
	run := types.RunState{RunID: "r", PipelineID: "p", Status: types.RunPending}
	steps := []signaltest.RetryStep{
		signaltest.Retry("throttled read", "GetRunState", signal.ReasonThrottled, func() error {
			ft.Reject(2, faults.Op("GetItem"), faults.Throttled)
			_, err := p.GetRunState(ctx, "r")
			return err
		}, 2, 0),
		signaltest.Retry("throttled out", "PutTrait", signal.ReasonThrottled, func() error {
			ft.Reject(3, faults.Op("PutItem"), faults.Throttled)
			if err := p.PutTrait(ctx, "p", types.TraitEvaluation{TraitType: "t", Status: types.TraitPass}, 0); err == nil {
				return errors.New("PutTrait throttled 3 times succeeded")
			}
			return nil
		}, 2, 1),
		signaltest.Retry("throttled transaction", "PutRunState", signal.ReasonThrottled, func() error {
			ft.Reject(1, faults.Op("TransactWriteItems"), faults.Throttled)
			return p.PutRunState(ctx, run)
		}, 1, 0),
		signaltest.Retry("transaction conflicts", "CreateRunState", signal.ReasonTransactionConflict, func() error {
			ft.Reject(2, faults.Op("TransactWriteItems"), faults.TransactionConflict)
			return createdOK(p.CreateRunState(ctx, types.RunState{RunID: "r2", PipelineID: "p", Status: types.RunPending}))
		}, 2, 0),
		signaltest.Retry("event sequence race", "AppendEvent", signal.ReasonSequenceRace, func() error {
			// p learns the counter, other moves it: p's next claim loses the race.
			for _, q := range []*ddbprovider.Provider{p, other} {
				if err := q.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p-race"}); err != nil {
					return err
				}
			}
			return p.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p-race"})
		}, 1, 0),
		signaltest.Retry("marker sequence race", "WriteCascadeMarker", signal.ReasonSequenceRace, func() error {
			if err := other.WriteCascadeMarker(ctx, "p", "", "2026-01-01", "up"); err != nil {
				return err
			}
			return p.WriteCascadeMarker(ctx, "p", "", "2026-01-02", "up")
		}, 1, 0),
	}
	sig.CheckRetries(t, "aws.dynamodb", steps)

	// Group commit: 32 concurrent appends through p are recorded as batches whose
	// sizes add up to 32, in fewer than 32 batches.
	batches := func() (uint64, float64) {
		pt := sig.Collect(t, "pipestate.batch.size", attribute.String("db.operation.name", "AppendEvent"))
		return pt.Count, pt.Sum
	}
	n0, sum0 := batches()
	const appends = 32
	var wg sync.WaitGroup
	for range appends {
		wg.Go(func() {
			if err := p.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "q"}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	n, sum := batches()
	if sum-sum0 != appends || n-n0 >= appends || n == n0 {
		t.Errorf("%d batches of %v events recorded, want fewer than %d batches of %d events", n-n0, sum-sum0, appends, appends)
	}
}

// TestLateArrivalFallbackIsNoConflict: a fenced PutLateArrival whose list's
// guard outlives the record makes a second transaction, and a conflict on that
// one is its first retry (attempt 1), not its second: the refused first
// transaction is no conflict. Before, the fallback counted as one, so the
// retry was logged as attempt 2 and the call gave up one attempt early.
func TestLateArrivalFallbackIsNoConflict(t *testing.T) {
	ft := faults.NewTransport()
	e := faultEnv(t, ft, 3)
	sig := signaltest.NewSignals()
	p := openOn(t, e.client, e, ddbprovider.WithMeterProvider(sig.Meter), ddbprovider.WithLogger(sig.Log))
	r := provider.DefaultRetention()
	r.LateArrivals = 0 // its guard items never expire
	forever := openOn(t, e.client, e, ddbprovider.WithRetention(r))
	ctx := t.Context()
	fenced := func(pp provider.Provider) provider.Provider {
		fp, err := provider.Fenced(pp, types.Lease{Key: "job", Token: "t", Fence: 5})
		if err != nil {
			t.Fatal(err)
		}
		return fp
	}
	late := types.LateArrival{PipelineID: "p", Date: "2026-01-01"}
	if err := fenced(forever).PutLateArrival(ctx, late); err != nil {
		t.Fatal(err)
	}
	ft.Reject(1, faults.Op("TransactWriteItems", `"UpdateExpression":"SET #f = :fence"`), faults.TransactionConflict)
	err := fenced(p).PutLateArrival(ctx, late)
	ft.StopRejecting()
	if err != nil {
		t.Fatal(err)
	}
	logs := sig.LogText()
	if n := sig.Logs(slog.LevelDebug, "pipestate: retry"); n != 1 || !strings.Contains(logs, `"attempt":1}`) {
		t.Fatalf("%d retries logged, want one of attempt 1:\n%s", n, logs)
	}
}
