package redis_test

import (
	"context"
	"errors"
	"iter"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/testenv"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/redis"
	"github.com/pipestate/pipestate/types"
)

// followTargets returns a client of miniredis and, when REDIS_ADDR is set, of the
// real server, each with a fresh key prefix.
func followTargets(t *testing.T) map[string]func(t *testing.T) (*goredis.Client, string) {
	targets := map[string]func(t *testing.T) (*goredis.Client, string){
		"miniredis": func(t *testing.T) (*goredis.Client, string) {
			m := miniredis.RunT(t)
			c := goredis.NewClient(&goredis.Options{Addr: m.Addr()})
			t.Cleanup(func() { _ = c.Close() })
			return c, "f"
		},
	}
	if envAddr() != "" {
		targets["redis"] = func(t *testing.T) (*goredis.Client, string) {
			c := realClient(t)
			prefix := "pst:" + testenv.UniqueName(t)
			cleanPrefix(t, c, prefix)
			return c, prefix
		}
	}
	return targets
}

// followed is one value a sequence yielded.
type followed[R any] struct {
	r   R
	err error
}

// drain iterates seq on a goroutine, sending what it yields; the channel closes
// when the sequence ends.
func drain[R any](seq iter.Seq2[R, error]) <-chan followed[R] {
	ch := make(chan followed[R], 64)
	go func() {
		defer close(ch)
		for r, err := range seq {
			ch <- followed[R]{r, err}
		}
	}()
	return ch
}

// lastErr drains the sequence's channel and returns when the channel closed and
// the last error.
func lastErr[R any](t *testing.T, ch <-chan followed[R]) (time.Time, error) {
	t.Helper()
	var err error
	timeout := time.After(10 * time.Second)
	for {
		select {
		case it, ok := <-ch:
			if !ok {
				return time.Now(), err
			}
			if it.err != nil {
				err = it.err
			}
		case <-timeout:
			t.Fatal("the sequence did not end within 10s")
		}
	}
}

// TestFollowBlocksAndEndsAtOnce: an idle follower sends one blocking read (no
// polling), returns within milliseconds of a cancel although its read is blocked
// on the server, and a Stop ends another follower with ErrClosed just as fast.
func TestFollowBlocksAndEndsAtOnce(t *testing.T) {
	for name, target := range followTargets(t) {
		t.Run(name, func(t *testing.T) {
			c, prefix := target(t)
			counter := testenv.CountRedis(c)
			p := openProvider(t, c, redis.WithKeyPrefix(prefix))
			counter.Reset() // Start's script load
			ctx, cancel := context.WithCancel(t.Context())
			ch := drain(p.FollowEvents(ctx, "pipe", ""))
			time.Sleep(300 * time.Millisecond)
			if n := counter.Load(); n != 1 {
				t.Errorf("an idle follower sent %d requests in 300ms, want 1 blocked read", n)
			}
			if err := p.AppendEvent(t.Context(), types.Event{Kind: "K", PipelineID: "pipe"}); err != nil {
				t.Fatal(err)
			}
			if it := <-ch; it.err != nil || it.r.Event.Kind != "K" {
				t.Fatalf("followed %+v, %v; want the appended event", it.r, it.err)
			}
			time.Sleep(50 * time.Millisecond) // the next read blocks
			start := time.Now()
			cancel()
			end, err := lastErr(t, ch)
			if !errors.Is(err, context.Canceled) {
				t.Errorf("follow ended with %v, want context.Canceled", err)
			}
			if d := end.Sub(start); d > 500*time.Millisecond {
				t.Errorf("follow ended %v after the cancel, want at once", d)
			}

			q := openProvider(t, c, redis.WithKeyPrefix(prefix))
			ch = drain(q.FollowEvents(t.Context(), "pipe", ""))
			time.Sleep(50 * time.Millisecond)
			start = time.Now()
			if err := q.Stop(t.Context()); err != nil {
				t.Fatal(err)
			}
			end, err = lastErr(t, ch)
			if !errors.Is(err, provider.ErrClosed) {
				t.Errorf("follow ended with %v after Stop, want ErrClosed", err)
			}
			if d := end.Sub(start); d > 500*time.Millisecond {
				t.Errorf("follow ended %v after Stop, want at once", d)
			}
		})
	}
}
