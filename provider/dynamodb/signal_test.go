package dynamodb_test

import (
	"errors"
	"log/slog"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/pipestate/pipestate/internal/faults"
	"github.com/pipestate/pipestate/internal/signal"
	"github.com/pipestate/pipestate/internal/signal/signaltest"
	"github.com/pipestate/pipestate/provider/dynamodb"
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
	p := openOn(t, e.client, e, dynamodb.WithMeterProvider(sig.Meter), dynamodb.WithLogger(sig.Log))
	other := openOn(t, e.client, e)
	ctx := t.Context()
	count := func(name, op, reason string) int64 {
		t.Helper()
		return sig.Collect(t, name, attribute.String("db.system.name", "aws.dynamodb"),
			attribute.String("db.operation.name", op), signal.AttrReason.String(reason)).Value
	}
	run := types.RunState{RunID: "r", PipelineID: "p", Status: types.RunPending}
	steps := []struct {
		name             string
		op, reason       string
		do               func() error
		retries, giveUps int64
	}{
		{"throttled read", "GetRunState", signal.ReasonThrottled, func() error {
			ft.Reject(2, faults.Op("GetItem"), faults.Throttled)
			_, err := p.GetRunState(ctx, "r")
			return err
		}, 2, 0},
		{"throttled out", "PutTrait", signal.ReasonThrottled, func() error {
			ft.Reject(3, faults.Op("PutItem"), faults.Throttled)
			if err := p.PutTrait(ctx, "p", types.TraitEvaluation{TraitType: "t", Status: types.TraitPass}, 0); err == nil {
				return errors.New("PutTrait throttled 3 times succeeded")
			}
			return nil
		}, 2, 1},
		{"throttled transaction", "PutRunState", signal.ReasonThrottled, func() error {
			ft.Reject(1, faults.Op("TransactWriteItems"), faults.Throttled)
			return p.PutRunState(ctx, run)
		}, 1, 0},
		{"transaction conflicts", "CreateRunState", signal.ReasonTransactionConflict, func() error {
			ft.Reject(2, faults.Op("TransactWriteItems"), faults.TransactionConflict)
			return createdOK(p.CreateRunState(ctx, types.RunState{RunID: "r2", PipelineID: "p", Status: types.RunPending}))
		}, 2, 0},
		{"event sequence race", "AppendEvent", signal.ReasonSequenceRace, func() error {
			if err := other.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p"}); err != nil {
				return err
			}
			return p.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p"}) // p does not know the counter
		}, 1, 0},
		{"marker sequence race", "WriteCascadeMarker", signal.ReasonSequenceRace, func() error {
			if err := other.WriteCascadeMarker(ctx, "p", "", "2026-01-01", "up"); err != nil {
				return err
			}
			return p.WriteCascadeMarker(ctx, "p", "", "2026-01-02", "up")
		}, 1, 0},
	}
	var retries, giveUps int64
	for _, s := range steps {
		r0, g0 := count("pipestate.retries", s.op, s.reason), count("pipestate.giveups", s.op, s.reason)
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := count("pipestate.retries", s.op, s.reason) - r0; got != s.retries {
			t.Errorf("%s: %d retries recorded (%s, %s), want %d", s.name, got, s.op, s.reason, s.retries)
		}
		if got := count("pipestate.giveups", s.op, s.reason) - g0; got != s.giveUps {
			t.Errorf("%s: %d give-ups recorded (%s, %s), want %d", s.name, got, s.op, s.reason, s.giveUps)
		}
		retries, giveUps = retries+s.retries, giveUps+s.giveUps
	}
	if n := sig.Logs(slog.LevelDebug, "pipestate: retry"); int64(n) != retries {
		t.Errorf("%d retry records logged, want %d:\n%s", n, retries, sig.LogText())
	}
	if n := sig.Logs(slog.LevelWarn, "pipestate: giving up"); int64(n) != giveUps {
		t.Errorf("%d give-up records logged, want %d:\n%s", n, giveUps, sig.LogText())
	}

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
