package dynamodb_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pipestate/pipestate/internal/faults"
	"github.com/pipestate/pipestate/internal/testenv"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/dynamodb"
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
	same := openOn(t, direct, e, dynamodb.WithOwner(p.Owner())) // another process of p's owner
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
}
