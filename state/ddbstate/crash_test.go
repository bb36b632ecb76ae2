package ddbstate_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/state/ddbstate"
	"github.com/pipestate/pipestate/state/internal/storetest"
)

// The crash-window test (storetest.CrashWindow) on DynamoDB Local: the child opens
// the parent's tables, whose names it is given.

const (
	envCrashTbl = "PIPESTATE_CRASH_DDB_TABLES" // values,bytes,dedup
	crashEvents = 150
)

func crashStores(t testing.TB, tables []string) storetest.CrashStores {
	t.Helper()
	c := testenv.DynamoDBClient(t)
	sum, err := ddbstate.NewInt64SumStore(c, tables[0], ddbstate.WithDedupTable(tables[2]))
	if err != nil {
		t.Fatal(err)
	}
	bs, err := ddbstate.NewBytesStore(c, tables[1], storetest.Counter{}, ddbstate.WithDedupTable(tables[2]), ddbstate.WithMaxRetries(1000))
	if err != nil {
		t.Fatal(err)
	}
	return storetest.CrashStores{Sum: sum, Bytes: bs}
}

// TestCrashChild is the child process of TestCrashWindow; it does nothing otherwise.
func TestCrashChild(t *testing.T) {
	tables := os.Getenv(envCrashTbl)
	if tables == "" {
		t.Skip("child process of TestCrashWindow")
	}
	storetest.CrashChild(t, crashStores(t, strings.Split(tables, ",")), crashEvents)
}

func TestCrashWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	e := envFor(t)
	tables := []string{e.values, e.bytes, e.dedup}
	storetest.CrashWindow(t, crashStores(t, tables), storetest.Crash{
		Events: crashEvents, Rounds: 5, MaxDelay: 300 * time.Millisecond,
		ChildTest: "TestCrashChild", ChildEnv: []string{envCrashTbl + "=" + strings.Join(tables, ",")},
	})
}
