package ddbprovider_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/pipestate/pipestate/internal/testkit/faults"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/types"
)

// TestRetryAfterInterleaving drops the reply to a lock call after DynamoDB applied
// it and, before the SDK retries, lets other instances change the lock: the retry
// must report the first attempt's outcome, not re-run the condition against what
// the others did (which made a released lock report ErrLockNotHeld, and an acquired
// one report false, while the others held it).
func TestRetryAfterInterleaving(t *testing.T) {
	ft := faults.NewTransport()
	e := faultEnv(t, ft, 3)
	direct := testenv.DynamoDBClient(t)
	p := openOn(t, e.client, e)
	same := openOn(t, direct, e, ddbprovider.WithOwner(p.Owner())) // another process of p's owner
	other := openOn(t, direct, e)
	ctx := context.Background()
	lockCall := func(key string) func(string, []byte) bool {
		return func(op string, body []byte) bool {
			return (op == "UpdateItem" || op == "TransactWriteItems") && faults.Contains("LOCK#"+key)(body)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	t.Run("release_then_other_acquires", func(t *testing.T) {
		const key = "release-then-acquire"
		if ok, err := p.AcquireLock(ctx, key, time.Minute); !ok || err != nil {
			t.Fatalf("AcquireLock = %v, %v", ok, err)
		}
		ft.DropReplyThen(lockCall(key), func() {
			if ok, err := other.AcquireLock(ctx, key, time.Minute); !ok || err != nil {
				t.Errorf("another instance's AcquireLock after the release = %v, %v; want true", ok, err)
			}
		})
		if err := p.ReleaseLock(ctx, key); err != nil {
			t.Errorf("ReleaseLock whose reply was lost while another instance took the lock = %v; want nil (it released)", err)
		}
		if ft.Dropped() == 0 {
			t.Fatal("the fault did not fire")
		}
		must(other.ReleaseLock(ctx, key))
	})
	t.Run("acquire_then_released_and_taken", func(t *testing.T) {
		const key = "acquire-then-taken"
		before := ft.Dropped()
		ft.DropReplyThen(lockCall(key), func() {
			if err := same.ReleaseLock(ctx, key); err != nil {
				t.Errorf("release by the same owner: %v", err)
			}
			if ok, err := other.AcquireLock(ctx, key, time.Minute); !ok || err != nil {
				t.Errorf("another instance's AcquireLock = %v, %v; want true", ok, err)
			}
		})
		if ok, err := p.AcquireLock(ctx, key, time.Minute); !ok || err != nil {
			t.Errorf("AcquireLock whose reply was lost (released and taken before the retry) = %v, %v; want true (it acquired)", ok, err)
		}
		if ft.Dropped() == before {
			t.Fatal("the fault did not fire")
		}
		must(other.ReleaseLock(ctx, key))
	})
	t.Run("release_lease_then_other_leases", func(t *testing.T) {
		const key = "release-lease-then-lease"
		l, err := p.AcquireLease(ctx, key, time.Minute)
		must(err)
		var next error
		ft.DropReplyThen(lockCall(key), func() {
			_, next = other.AcquireLease(ctx, key, time.Minute)
		})
		if err := p.ReleaseLease(ctx, *l); err != nil {
			t.Errorf("ReleaseLease whose reply was lost while another instance leased the key = %v; want nil", err)
		}
		if next != nil {
			t.Errorf("another instance's AcquireLease after the release: %v", next)
		}
		if _, err := p.AcquireLease(ctx, key, time.Minute); !errors.Is(err, provider.ErrLockHeld) {
			t.Errorf("AcquireLease after the other's lease = %v; want ErrLockHeld", err)
		}
	})
	t.Run("acquire_then_released", func(t *testing.T) {
		const key = "acquire-then-released"
		before := ft.Dropped()
		ft.DropReplyThen(lockCall(key), func() {
			if err := same.ReleaseLock(ctx, key); err != nil {
				t.Errorf("release by the same owner: %v", err)
			}
		})
		if ok, err := p.AcquireLock(ctx, key, time.Minute); !ok || err != nil {
			t.Errorf("AcquireLock whose reply was lost (released before the retry) = %v, %v; want true (it acquired)", ok, err)
		}
		if ft.Dropped() == before {
			t.Fatal("the fault did not fire")
		}
		if ok, err := other.AcquireLock(ctx, key, time.Minute); !ok || err != nil {
			t.Errorf("another instance's AcquireLock after the release = %v, %v; want true (the retry took nothing more)", ok, err)
		}
		must(other.ReleaseLock(ctx, key))
	})
	t.Run("release_then_same_owner_acquires", func(t *testing.T) {
		const key = "release-then-reacquire"
		if ok, err := p.AcquireLock(ctx, key, time.Minute); !ok || err != nil {
			t.Fatalf("AcquireLock = %v, %v", ok, err)
		}
		before := ft.Dropped()
		ft.DropReplyThen(lockCall(key), func() {
			if ok, err := same.AcquireLock(ctx, key, time.Minute); !ok || err != nil {
				t.Errorf("the same owner's AcquireLock after the release = %v, %v; want true", ok, err)
			}
		})
		if err := p.ReleaseLock(ctx, key); err != nil {
			t.Errorf("ReleaseLock whose reply was lost (taken again by the same owner before the retry) = %v; want nil", err)
		}
		if ft.Dropped() == before {
			t.Fatal("the fault did not fire")
		}
		if ok, err := other.AcquireLock(ctx, key, time.Minute); ok || err != nil {
			t.Errorf("another instance's AcquireLock = %v, %v; want false (the retry freed nothing more)", ok, err)
		}
		must(same.ReleaseLock(ctx, key))
	})
	t.Run("release_lease_then_released_again", func(t *testing.T) {
		const key = "release-lease-twice"
		l, err := p.AcquireLease(ctx, key, time.Minute)
		must(err)
		before := ft.Dropped()
		var again error
		ft.DropReplyThen(lockCall(key), func() { again = other.ReleaseLease(ctx, *l) })
		if err := p.ReleaseLease(ctx, *l); err != nil {
			t.Errorf("ReleaseLease whose reply was lost = %v; want nil", err)
		}
		if ft.Dropped() == before {
			t.Fatal("the fault did not fire")
		}
		if !errors.Is(again, provider.ErrLockNotHeld) {
			t.Errorf("a second release of the same lease between = %v; want ErrLockNotHeld", again)
		}
	})
	t.Run("create_then_other_swaps", func(t *testing.T) {
		run := types.RunState{RunID: "create-then-swap", PipelineID: "p-create", Status: types.RunPending}
		var swapped bool
		var swapErr error
		ft.DropReplyThen(faults.Op("TransactWriteItems", "RUN#"+run.RunID), func() {
			next := run
			next.Status = types.RunRunning
			swapped, swapErr = other.CompareAndSwapRunState(ctx, run.RunID, 0, next)
		})
		if created, err := p.CreateRunState(ctx, run); !created || err != nil {
			t.Errorf("CreateRunState whose reply was lost while another instance swapped the run = %v, %v; want created", created, err)
		}
		if !swapped || swapErr != nil {
			t.Fatalf("another instance's swap from version 0 = %v, %v; want true: the fault did not fire after the create", swapped, swapErr)
		}
		if got, err := p.GetRunState(ctx, run.RunID); err != nil || got.Version != 1 || got.Status != types.RunRunning {
			t.Errorf("run %+v, %v; want the other's swap at version 1", got, err)
		}
	})
	t.Run("marker_then_other_marker", func(t *testing.T) {
		ft.DropReplyThen(faults.Op("TransactWriteItems", "MARKER#p-first"), func() {
			must(other.WriteCascadeMarker(ctx, "p-second", "", "2026-01-01", "up"))
		})
		if err := p.WriteCascadeMarker(ctx, "p-first", "", "2026-01-01", "up"); err != nil {
			t.Errorf("WriteCascadeMarker whose reply was lost while another instance wrote the next entry = %v; want nil", err)
		}
		recs, err := watchAll(t, p, "")
		must(err)
		var got []string
		for _, r := range recs {
			got = append(got, r.Marker.PipelineID)
		}
		if !slices.Equal(got, []string{"p-first", "p-second"}) {
			t.Errorf("marker log %q; want each write once, in commit order", got)
		}
	})
}

// freshTokenRetry is an API whose next TransactWriteItems, once armed, is sent
// twice: the first reply is discarded and the request sent again with a fresh
// idempotency token, as a wrapper that retries on its own would. DynamoDB then
// runs the retry as a new transaction, so only the token a write stamps on its item
// tells the caller that its first attempt won.
type freshTokenRetry struct {
	ddbprovider.API
	armed bool
}

func (a *freshTokenRetry) TransactWriteItems(ctx context.Context, in *ddb.TransactWriteItemsInput, optFns ...func(*ddb.Options)) (*ddb.TransactWriteItemsOutput, error) {
	if !a.armed {
		return a.API.TransactWriteItems(ctx, in, optFns...)
	}
	a.armed = false
	if _, err := a.API.TransactWriteItems(ctx, in, optFns...); err != nil {
		return nil, err
	}
	again := *in
	again.ClientRequestToken = nil
	return a.API.TransactWriteItems(ctx, &again, optFns...)
}

// TestRetryWithFreshToken: a create or a marker write whose transaction is sent
// again under a new idempotency token after it succeeded reports its success, and
// writes once.
func TestRetryWithFreshToken(t *testing.T) {
	e := testEnv(t)
	api := &freshTokenRetry{API: e.client}
	p := openOn(t, api, e)
	ctx := t.Context()
	run := types.RunState{RunID: "r", PipelineID: "p", Status: types.RunPending}
	api.armed = true
	if created, err := p.CreateRunState(ctx, run); !created || err != nil {
		t.Errorf("CreateRunState sent twice = %v, %v; want created", created, err)
	}
	if created, err := p.CreateRunState(ctx, run); created || err != nil {
		t.Errorf("a second CreateRunState = %v, %v; want not created", created, err)
	}
	for _, source := range []string{"a", "b"} { // a new marker, then a rewrite
		api.armed = true
		if err := p.WriteCascadeMarker(ctx, "p", "", "2026-01-01", source); err != nil {
			t.Fatalf("WriteCascadeMarker sent twice: %v", err)
		}
		e.clock.Advance(time.Second)
	}
	if api.armed {
		t.Fatal("the fault did not fire")
	}
	wantLogged(t, p, "p", "a", "b")
}

// beforeTx is an API that runs before ahead of each TransactWriteItems.
type beforeTx struct {
	ddbprovider.API
	before func()
}

func (a beforeTx) TransactWriteItems(ctx context.Context, in *ddb.TransactWriteItemsInput, o ...func(*ddb.Options)) (*ddb.TransactWriteItemsOutput, error) {
	a.before()
	return a.API.TransactWriteItems(ctx, in, o...)
}

// TestCASWhileCreatedAtMoves: puts of the run with a new CreatedAt (a zero
// CreatedAt is filled with the time of the put) move its list copy between the
// swap's read and each of its attempts, three times. The version stays the
// expected one throughout, so the swap must win, not report a lost race. (It
// gave up after one retry and returned false: a history of the lincheck
// fenced-runs workload caught it.)
func TestCASWhileCreatedAtMoves(t *testing.T) {
	e := testEnv(t)
	ctx := context.Background()
	other := openOn(t, e.client, e)
	put := func() {
		e.clock.Advance(time.Second)
		if err := other.PutRunState(ctx, types.RunState{RunID: "r", PipelineID: "p", Status: types.RunPending, Version: 1}); err != nil {
			t.Error(err)
		}
	}
	put()
	moves := 0
	p := openOn(t, beforeTx{e.client, func() {
		if moves < 3 {
			moves++
			put()
		}
	}}, e)
	ok, err := p.CompareAndSwapRunState(ctx, "r", 1, types.RunState{RunID: "r", PipelineID: "p", Status: types.RunRunning})
	if !ok || err != nil {
		t.Fatalf("CompareAndSwapRunState from the stored version while puts moved the list copy %d times = %v, %v; want true", moves, ok, err)
	}
	got, err := p.GetRunState(ctx, "r")
	if err != nil || got == nil || got.Version != 2 || got.Status != types.RunRunning {
		t.Fatalf("run after the swap = %+v, %v; want version 2, running", got, err)
	}
	if list, err := p.ListRuns(ctx, "p", 10); err != nil || len(list) != 1 || list[0].Version != 2 {
		t.Fatalf("ListRuns after the swap = %+v, %v; want the swapped run once", list, err)
	}
}
