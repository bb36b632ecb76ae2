package providertest_test

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pipestate/pipestate/internal/testkit/memorytest"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/memprovider"
	"github.com/pipestate/pipestate/providertest"
)

// The subtest names are the suite's interface as much as its functions are: a
// backend's CI selects and skips tests by them (go test -run
// 'TestConformance/RunStore/cas_match'), and the teeth name the subtest that
// must fail. TestSubtestNames keeps them stable: it runs the whole suite in a
// subprocess with -test.v and compares the names of every subtest that ran
// with testdata/subtests.golden (go test -run TestSubtestNames -update writes
// it).

var update = flag.Bool("update", false, "rewrite testdata/subtests.golden from the suite")

const (
	subtestsEnv    = "PROVIDERTEST_SUBTESTS"
	subtestsGolden = "testdata/subtests.golden"
)

// TestSubtestList runs the suite on the memory backend twice: with every
// Harness field the memory harness sets and every optional interface, and with
// only Open, Sleep and Now over a provider without optional interfaces (the
// names of the groups and tests that skip). It runs only as TestSubtestNames's
// subprocess.
func TestSubtestList(t *testing.T) {
	if os.Getenv(subtestsEnv) == "" {
		t.Skip(subtestsEnv + " is not set: this test runs as a subprocess of TestSubtestNames")
	}
	b := memorytest.New()
	t.Run("full", func(t *testing.T) { providertest.Run(t, b.Harness(nil)) })
	t.Run("minimal", func(t *testing.T) {
		h := b.Harness(func(_ *testing.T, p *memprovider.Provider) provider.Provider { return struct{ provider.Provider }{p} })
		providertest.Run(t, providertest.Harness{Open: h.Open, Sleep: h.Sleep, Now: h.Now})
	})
}

// suiteList is what a run of TestSubtestList shows: the subtests that ran and
// those that skipped, without the "TestSubtestList/" prefix, sorted.
type suiteList struct {
	ran, skipped []string
}

var (
	listOnce sync.Once
	listed   suiteList
	listErr  string
)

// listSuite runs TestSubtestList in a subprocess (once per test binary) and
// returns its subtests.
func listSuite(t *testing.T) suiteList {
	t.Helper()
	if os.Getenv(subtestsEnv) != "" || os.Getenv(brokenEnv) != "" || os.Getenv(harnessEnv) != "" {
		t.Skip("running as a subprocess")
	}
	if testing.Short() {
		t.Skip("runs the whole suite in a subprocess")
	}
	listOnce.Do(func() {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSubtestList$", "-test.count=1", "-test.v", "-test.timeout=5m")
		cmd.Env = append(os.Environ(), subtestsEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			listErr = fmt.Sprintf("the suite on the memory backend: %v\n%s", err, tail(string(out), 60))
			return
		}
		for _, line := range strings.Split(string(out), "\n") {
			line = strings.TrimSpace(line)
			if name, ok := strings.CutPrefix(line, "=== RUN   TestSubtestList/"); ok {
				listed.ran = append(listed.ran, name)
			}
			if name, ok := strings.CutPrefix(line, "--- SKIP: TestSubtestList/"); ok {
				listed.skipped = append(listed.skipped, strings.Fields(name)[0])
			}
		}
		for _, l := range []*[]string{&listed.ran, &listed.skipped} {
			slices.Sort(*l)
			*l = slices.Compact(*l)
		}
	})
	if listErr != "" {
		t.Fatal(listErr)
	}
	return listed
}

func TestSubtestNames(t *testing.T) {
	names := listSuite(t).ran
	got := strings.Join(names, "\n") + "\n"
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(subtestsGolden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(subtestsGolden)
	if err != nil {
		t.Fatal(err)
	}
	if got == string(want) {
		return
	}
	wantNames := strings.Split(strings.TrimSuffix(string(want), "\n"), "\n")
	var missing, extra []string
	for _, n := range wantNames {
		if _, found := slices.BinarySearch(names, n); !found {
			missing = append(missing, n)
		}
	}
	for _, n := range names {
		if _, found := slices.BinarySearch(wantNames, n); !found {
			extra = append(extra, n)
		}
	}
	t.Errorf("the suite's subtest names differ from %s (go test -run TestSubtestNames -update rewrites it, for a deliberate change):\nmissing (%d): %s\nnew (%d): %s",
		subtestsGolden, len(missing), strings.Join(missing, "\n  "), len(extra), strings.Join(extra, "\n  "))
}
