package storetest

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

	"github.com/pipestate/pipestate/state"
)

// CrashStores are the two exactly-once stores the crash test delivers to.
type CrashStores struct {
	Sum   state.OnceStore[int64]
	Bytes state.OnceStore[[]byte] // with Counter as its monoid
}

// Crash configures the crash-window test.
type Crash struct {
	Events   int           // events delivered, each with delta CrashDelta(i)
	Rounds   int           // child processes killed
	MaxDelay time.Duration // the child is killed after a random delay up to this
	// ChildTest is the test function that calls CrashChild in the child process
	// (e.g. "TestCrashChild"); ChildEnv is added to its environment so it opens the
	// same storage, and its presence is how that test knows it is the child.
	ChildTest string
	ChildEnv  []string
}

// CrashKey is the key every crash-test event merges into.
var CrashKey = state.Key{Entity: "crash", Bucket: 1}

// CrashDelta is the delta of event i.
func CrashDelta(i int) int64 { return int64(i%9) + 1 }

const (
	crashWorkers  = 4
	crashReadyMsg = "ready"
)

// CrashChild is the body of the child process: it says it is ready, then delivers
// every event in a random order until it is killed.
func CrashChild(t *testing.T, s CrashStores, events int) {
	fmt.Println(crashReadyMsg)
	deliver(t, s, rand.Perm(events))
}

// CrashWindow kills child processes at random points while they apply events with
// MergeUpdateOnce, then redelivers every event itself: each must be applied exactly
// once, so a kill between "claimed" and "merged" (a lost delta) or a merge without
// a claim (a doubled one) fails the test.
func CrashWindow(t *testing.T, s CrashStores, c Crash) {
	t.Helper()
	var want int64
	for i := range c.Events {
		want += CrashDelta(i)
	}
	for round := range c.Rounds {
		before := get(t, s.Sum)
		runAndKill(t, c, time.Duration(rand.N(int64(c.MaxDelay)+1)))
		t.Logf("round %d: the child applied %d of %d before SIGKILL", round, get(t, s.Sum)-before, want)
	}
	deliver(t, s, rand.Perm(c.Events))
	if got := get(t, s.Sum); got != want {
		t.Errorf("int64 sum = %d; want %d", got, want)
	}
	raw, _, err := s.Bytes.Get(t.Context(), CrashKey)
	if got, derr := (Counter{}).Decode(raw); err != nil || derr != nil || got != want {
		t.Errorf("bytes counter = %d (%v, %v); want %d", got, err, derr, want)
	}
}

func get(t *testing.T, s state.Store[int64]) int64 {
	t.Helper()
	v, _, err := s.Get(t.Context(), CrashKey)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// deliver applies events to both stores with crashWorkers goroutines.
func deliver(t *testing.T, s CrashStores, events []int) {
	var wg sync.WaitGroup
	for w := range crashWorkers {
		wg.Go(func() {
			for j := w; j < len(events); j += crashWorkers {
				i := events[j]
				id := fmt.Sprint("event-", i)
				if _, err := s.Sum.MergeUpdateOnce(t.Context(), id, CrashKey, CrashDelta(i), 0); err != nil {
					t.Error(err)
					return
				}
				if _, err := s.Bytes.MergeUpdateOnce(t.Context(), id, CrashKey, Counter{}.Of(CrashDelta(i)), 0); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// runAndKill starts the child, waits until it is connected, lets it work for after,
// and kills it with SIGKILL (it may also have finished by then).
func runAndKill(t *testing.T, c Crash, after time.Duration) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+c.ChildTest+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), c.ChildEnv...)
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
		_ = cmd.Wait()
		t.Fatal("child did not start")
	}
	time.Sleep(after) // the random crash point
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
}
