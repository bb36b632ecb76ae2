package dynamodb_test

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pipestate/pipestate/internal/testenv"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/dynamodb"
)

// The crash-window test: a child process applies events with MergeUpdateOnce and is
// killed with SIGKILL at a random point, several times; then the parent redelivers
// every event. Each event must be applied exactly once.

const (
	crashEvents   = 150
	crashRounds   = 5
	crashWorkers  = 4
	envCrashTbl   = "PIPESTATE_CRASH_DDB_TABLES" // values,bytes,dedup
	crashReadyMsg = "ready"
)

var crashKey = state.Key{Entity: "crash", Bucket: 1}

func crashDelta(i int) int64 { return int64(i%9) + 1 }

func crashStores(t testing.TB, tables []string) (*dynamodb.Int64SumStore, *dynamodb.BytesStore) {
	t.Helper()
	c := testenv.DynamoDBClient(t)
	sum, err := dynamodb.NewInt64SumStore(c, tables[0], dynamodb.WithDedupTable(tables[2]))
	if err != nil {
		t.Fatal(err)
	}
	bs, err := dynamodb.NewBytesStore(c, tables[1], counter{}, dynamodb.WithDedupTable(tables[2]), dynamodb.WithMaxRetries(1000))
	if err != nil {
		t.Fatal(err)
	}
	return sum, bs
}

func deliver(t testing.TB, sum *dynamodb.Int64SumStore, bs *dynamodb.BytesStore, events []int) {
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
	tables := os.Getenv(envCrashTbl)
	if tables == "" {
		t.Skip("child process of TestCrashWindow")
	}
	sum, bs := crashStores(t, strings.Split(tables, ","))
	fmt.Println(crashReadyMsg)
	deliver(t, sum, bs, rand.Perm(crashEvents))
}

func TestCrashWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	e := envFor(t)
	tables := []string{e.values, e.bytes, e.dedup}
	sum, bs := crashStores(t, tables)
	var want int64
	for i := range crashEvents {
		want += crashDelta(i)
	}
	for round := range crashRounds {
		before, _, err := sum.Get(t.Context(), crashKey)
		if err != nil {
			t.Fatal(err)
		}
		runAndKill(t, strings.Join(tables, ","), time.Duration(rand.N(300))*time.Millisecond)
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
}

func runAndKill(t *testing.T, tables string, after time.Duration) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), envCrashTbl+"="+tables)
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
