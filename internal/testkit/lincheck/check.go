package lincheck

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// Timeout bounds one Check. The workloads keep histories small enough (a few
// hundred operations, split into partitions where the model allows) that porcupine
// decides them in milliseconds on an idle machine. On a loaded one (make test
// runs packages and their backends' servers side by side) the checker can be
// starved of the CPU for seconds, so Require gives a history it could not decide
// in Timeout a second try of retryTimeout before failing it.
const Timeout = 10 * time.Second

// retryTimeout bounds Require's second try at a history undecided in Timeout.
const retryTimeout = 6 * Timeout

// DirEnv names the environment variable that overrides Dir.
const DirEnv = "PIPESTATE_LINCHECK_DIR"

// Dir is the directory that Check writes visualisations to: $PIPESTATE_LINCHECK_DIR
// if set, else pipestate-lincheck under os.TempDir(). It outlives the test, unlike
// t.TempDir().
func Dir() string {
	if d := os.Getenv(DirEnv); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "pipestate-lincheck")
}

// Check reports whether ops is linearizable under model, deciding within timeout.
// When the result is not porcupine.Ok (Illegal, or Unknown after the timeout), it
// writes porcupine's visualisation of the history to Dir()/<name>.html, name
// sanitised for a file name, and returns its path (or an error if writing failed).
func Check(model porcupine.Model, ops []porcupine.Operation, timeout time.Duration, name string) (res porcupine.CheckResult, path string, err error) {
	res, info := porcupine.CheckOperationsVerbose(model, ops, timeout)
	if res == porcupine.Ok {
		return res, "", nil
	}
	if err := os.MkdirAll(Dir(), 0o755); err != nil {
		return res, "", err
	}
	path = filepath.Join(Dir(), fileName(name)+".html")
	return res, path, porcupine.VisualizePath(model, info, path)
}

// Require fails t unless ops is linearizable under model, decided within Timeout
// or, when undecided, within a second try of retryTimeout; it names the file with
// the history's visualisation and logs the history's size.
func Require(t testing.TB, model porcupine.Model, ops []porcupine.Operation) {
	t.Helper()
	timeout := Timeout
	start := time.Now()
	res, path, err := Check(model, ops, timeout, t.Name())
	t.Logf("lincheck: %s: %s in %v", Summary(ops), res, time.Since(start).Round(time.Millisecond))
	if res == porcupine.Unknown {
		timeout = retryTimeout
		start = time.Now()
		res, path, err = Check(model, ops, timeout, t.Name())
		t.Logf("lincheck: undecided in %v; second try: %s in %v", Timeout, res, time.Since(start).Round(time.Millisecond))
	}
	switch {
	case res == porcupine.Ok:
	case err != nil:
		t.Errorf("lincheck: history is %s (not linearizable, or undecided in %v); writing the visualisation failed: %v", res, timeout, err)
	case res == porcupine.Illegal:
		t.Errorf("lincheck: history is not linearizable; visualisation: %s\n%s", path, Explain(model, ops, timeout))
	default:
		t.Errorf("lincheck: porcupine could not decide the history in %v; visualisation: %s", timeout, path)
	}
}

// maxExplain bounds the lines of Explain.
const maxExplain = 80

// Explain returns, as text for a test log, the operations of the first partition
// of ops (per model.Partition) that is not linearizable on its own, in call order,
// one per line with its client, call and return times in microseconds and the
// model's description; at most maxExplain lines. It returns "" when every
// partition is linearizable or undecided within timeout.
func Explain(model porcupine.Model, ops []porcupine.Operation, timeout time.Duration) string {
	parts := [][]porcupine.Operation{ops}
	if model.Partition != nil {
		parts = model.Partition(ops)
	}
	whole := model
	whole.Partition = nil
	for _, p := range parts {
		if porcupine.CheckOperationsTimeout(whole, p, timeout) != porcupine.Illegal {
			continue
		}
		p = slices.Clone(p)
		slices.SortFunc(p, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
		var b strings.Builder
		fmt.Fprintf(&b, "a partition that is not linearizable (%d operations; times in µs):\n", len(p))
		for i, o := range p {
			if i == maxExplain {
				fmt.Fprintf(&b, "... %d more\n", len(p)-i)
				break
			}
			fmt.Fprintf(&b, "client %-3d [%9d, %9d] %s\n", o.ClientId, o.Call/1e3, o.Return/1e3, model.DescribeOperation(o.Input, o.Output))
		}
		return b.String()
	}
	return ""
}

// fileName maps a test name to a file name: path separators and other characters
// outside [A-Za-z0-9._-] become '_'.
func fileName(name string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, name)
}
