package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the memory backend's output")

// now is the clock of every test: fixtures are written before it, and relative
// times are taken from it.
var now = time.Date(2026, 11, 21, 6, 0, 0, 0, time.UTC)

// binary is the path of the built command, or why there is none.
var binary struct {
	path string
	err  error
}

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "pipestate-cli-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary.path = filepath.Join(dir, "pipestate")
	if out, err := exec.Command("go", "build", "-o", binary.path, ".").CombinedOutput(); err != nil {
		binary.err = fmt.Errorf("go build: %v\n%s", err, out)
	}
	code := testenv.RunChecked(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is what one command printed and its exit status.
type result struct {
	stdout, stderr string
	code           int
}

// runBinary runs the built command with args and the environment env (plus a
// fixed clock and an empty HOME), the way a person would.
func runBinary(t *testing.T, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binaryPath(t), args...)
	cmd.Env = append(baseEnv(t), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("pipestate %v: %v", args, err)
	}
	return result{stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()}
}

// binaryPath is the built command; it fails t when the build failed.
func binaryPath(t *testing.T) string {
	t.Helper()
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	return binary.path
}

// baseEnv is the environment of every run of the binary: the fixed clock, a HOME
// without AWS configuration, and PATH.
func baseEnv(t *testing.T) []string {
	return []string{envNow + "=" + now.Format(time.RFC3339), "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
}

// runInProcess runs args through run's cli with env as the environment and dial
// as its way to connect.
func runInProcess(ctx context.Context, env []string, dial func(context.Context, target, func() time.Time) (backend, error), args ...string) result {
	var stdout, stderr bytes.Buffer
	c := &cli{stdout: &stdout, stderr: &stderr, now: func() time.Time { return now }, getenv: getenv(env), dial: dial}
	code := c.main(ctx, args)
	return result{stdout.String(), stderr.String(), code}
}

// getenv looks names up in env ("NAME=value" entries).
func getenv(env []string) func(string) string {
	return func(name string) string {
		for _, kv := range env {
			if k, v, ok := strings.Cut(kv, "="); ok && k == name {
				return v
			}
		}
		return ""
	}
}
