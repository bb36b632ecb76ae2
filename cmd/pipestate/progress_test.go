package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestProgress: runs --all shows its progress on stderr when stderr is a
// terminal, erased at the end, and prints nothing there otherwise.
func TestProgress(t *testing.T) {
	t.Parallel()
	h := memoryHarness(t)
	for _, tty := range []bool{true, false} {
		var stdout, stderr bytes.Buffer
		c := &cli{stdout: &stdout, stderr: &stderr, now: func() time.Time { return now }, getenv: getenv(h.env), dial: h.dial,
			stderrTTY: tty}
		if code := c.main(context.Background(), words("runs --all")); code != exitOK {
			t.Fatalf("runs --all: exit %d, stderr %q", code, stderr.String())
		}
		got := stderr.String()
		switch {
		case tty && (!strings.Contains(got, " pipelines' runs read") || !strings.HasSuffix(got, "\r\x1b[K")):
			t.Errorf("stderr a terminal: %q, want the progress line, erased at the end", got)
		case !tty && got != "":
			t.Errorf("stderr not a terminal: %q, want nothing", got)
		}
		if strings.Contains(stdout.String(), "runs read") {
			t.Errorf("stdout has the progress: %q", stdout.String())
		}
	}
}

// TestIsTerminal: a pipe, a file and /dev/null (a character device) are not
// terminals.
func TestIsTerminal(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	f, err := os.Create(t.TempDir() + "/stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	for _, out := range []any{w, f, null, &bytes.Buffer{}} {
		if isTerminal(out.(interface{ Write([]byte) (int, error) })) {
			t.Errorf("isTerminal(%T) = true", out)
		}
	}
}
