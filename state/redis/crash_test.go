package redis_test

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/redis"
)

// The crash-window test: a child process applies events with MergeUpdateOnce and is
// killed with SIGKILL at a random point, several times; then the parent redelivers
// every event. Each event must be applied exactly once: a kill between "claimed" and
// "merged" would lose a delta, and a merge without a claim would double one.

const (
	crashEvents   = 400
	crashRounds   = 6
	crashWorkers  = 4
	envCrashAddr  = "PIPESTATE_CRASH_REDIS_ADDR"
	envCrashPfx   = "PIPESTATE_CRASH_PREFIX"
	crashReadyMsg = "ready"
)

var crashKey = state.Key{Entity: "crash", Bucket: 1}

func crashDelta(i int) int64 { return int64(i%9) + 1 }

// crashStores opens the two once-stores the events go to.
func crashStores(t testing.TB, c goredis.UniversalClient, prefix string) (*redis.Int64SumStore, *redis.BytesStore) {
	t.Helper()
	sum, err := redis.NewInt64SumStore(c, redis.WithKeyPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	bs, err := redis.NewBytesStore(c, counter{}, redis.WithKeyPrefix(prefix), redis.WithMaxRetries(1000))
	if err != nil {
		t.Fatal(err)
	}
	return sum, bs
}

// deliver applies events to both stores with crashWorkers goroutines.
func deliver(t testing.TB, sum *redis.Int64SumStore, bs *redis.BytesStore, events []int) {
	t.Helper()
	var wg sync.WaitGroup
	for w := range crashWorkers {
		wg.Go(func() {
			for j := w; j < len(events); j += crashWorkers {
				i := events[j]
				id := fmt.Sprint("event-", i)
				if _, err := sum.MergeUpdateOnce(t.Context(), id, crashKey, crashDelta(i), 0); err != nil {
					t.Error(err)
					return
				}
				if _, err := bs.MergeUpdateOnce(t.Context(), id, crashKey, counter{}.of(crashDelta(i)), 0); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestCrashChild is the child process of TestCrashWindow; it does nothing otherwise.
func TestCrashChild(t *testing.T) {
	addr := os.Getenv(envCrashAddr)
	if addr == "" {
		t.Skip("child process of TestCrashWindow")
	}
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	sum, bs := crashStores(t, c, os.Getenv(envCrashPfx))
	fmt.Println(crashReadyMsg)
	deliver(t, sum, bs, rand.Perm(crashEvents))
}

func TestCrashWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	for _, b := range []backend{miniBackend, realBackend} {
		t.Run(b.name, func(t *testing.T) {
			c := b.client(t)
			addr := c.(*goredis.Client).Options().Addr
			prefix := prefixFor(t)
			sum, bs := crashStores(t, c, prefix)
			var want int64
			for i := range crashEvents {
				want += crashDelta(i)
			}
			for round := range crashRounds {
				before, _, err := sum.Get(t.Context(), crashKey)
				if err != nil {
					t.Fatal(err)
				}
				runAndKill(t, addr, prefix, time.Duration(rand.N(40))*time.Millisecond)
				after, _, err := sum.Get(t.Context(), crashKey)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("round %d: the child applied %d of %d before SIGKILL", round, after-before, want)
			}
			deliver(t, sum, bs, rand.Perm(crashEvents))
			if got, _, err := sum.Get(t.Context(), crashKey); err != nil || got != want {
				t.Errorf("int64 sum = %d, %v; want %d", got, err, want)
			}
			raw, _, err := bs.Get(t.Context(), crashKey)
			if got, _ := (counter{}).decode(raw); err != nil || got != want {
				t.Errorf("bytes counter = %d, %v; want %d", got, err, want)
			}
		})
	}
}

// runAndKill starts the child, waits until it is connected, lets it work for after,
// and kills it with SIGKILL (it may also have finished by then).
func runAndKill(t *testing.T, addr, prefix string, after time.Duration) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), envCrashAddr+"="+addr, envCrashPfx+"="+prefix)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == crashReadyMsg {
				close(ready)
				break
			}
		}
		for sc.Scan() { // drain
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("child did not start")
	}
	time.Sleep(after) // the random crash point
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
}
