package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// following is a running follow: the lines it prints, and how to interrupt it.
type following struct {
	lines <-chan string
	stop  func() int // interrupts the command and returns its exit status
}

// startFollow starts args on h: in process for memory (through dial, when set),
// as the binary otherwise.
func startFollow(t *testing.T, h *harness, dial func(context.Context, target, func() time.Time) (backend, error), args ...string) following {
	t.Helper()
	lines := make(chan string, 100)
	scan := func(r io.Reader) {
		s := bufio.NewScanner(r)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}
	if dial != nil {
		ctx, cancel := context.WithCancel(context.Background())
		pr, pw := io.Pipe()
		var stderr bytes.Buffer
		c := &cli{stdout: pw, stderr: &stderr, now: func() time.Time { return now }, getenv: getenv(h.env), dial: dial}
		code := make(chan int, 1)
		go func() {
			code <- c.main(ctx, args)
			pw.Close()
		}()
		go scan(pr)
		return following{lines, func() int {
			cancel()
			for range lines { // drain, so the command can finish writing
			}
			n := <-code
			if stderr.Len() > 0 {
				t.Errorf("stderr: %s", stderr.String())
			}
			return n
		}}
	}
	cmd := exec.Command(binaryPath(t), args...)
	cmd.Env = append(baseEnv(t), h.env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go scan(out)
	return following{lines, func() int {
		_ = cmd.Process.Signal(os.Interrupt)
		for range lines { // drain, so Wait can close the pipe
		}
		_ = cmd.Wait()
		return cmd.ProcessState.ExitCode()
	}}
}

// next returns the next line, failing t after 15 seconds without one.
func (f following) next(t *testing.T) string {
	t.Helper()
	select {
	case line, ok := <-f.lines:
		if !ok {
			t.Fatal("the command ended")
		}
		return line
	case <-time.After(15 * time.Second):
		t.Fatal("no line within 15s")
	}
	return ""
}

// appended is the event the follow tests append once the command is following.
var appended = types.Event{PipelineID: "orders", Kind: "RUN_STATE_CHANGED", RunID: "r-0005", Status: "PENDING",
	Message: "appended while following"}

func TestFollow(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, h *harness) {
		t.Run("tail", func(t *testing.T) { followTail(t, h, h.dial) })
		t.Run("json", func(t *testing.T) { followJSON(t, h, h.dial) })
		t.Run("from-end", func(t *testing.T) { followFromEnd(t, h, h.dial) })
	})
	// The polling loop of a backend without EventFollower.
	t.Run("polling", func(t *testing.T) {
		h := memoryHarness(t)
		followTail(t, h, withoutFollower(h.dial))
	})
	t.Run("polling-from-end", func(t *testing.T) {
		h := memoryHarness(t)
		followFromEnd(t, h, withoutFollower(h.dial))
	})
	// A pipeline that is not registered but has events is followed, not "not
	// found": the follow from the end finds its end, however few events it prints.
	t.Run("polling-from-end-unregistered", func(t *testing.T) {
		h := memoryHarness(t)
		ev := appended
		ev.PipelineID = "unregistered"
		if err := h.open(t, "").AppendEvent(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
		f := startFollow(t, h, withoutFollower(h.dial), words("events unregistered --follow --from-end")...)
		if line := f.next(t); line != "backend: "+h.line {
			t.Fatalf("line %q, want the backend line", line)
		}
		ev.Message = "the second"
		if err := h.open(t, "").AppendEvent(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
		if line := f.next(t); !strings.Contains(line, ev.Message) {
			t.Errorf("followed %q, want the second event, and none before it", line)
		}
		if code := f.stop(); code != exitOK {
			t.Errorf("exit status %d after an interrupt, want 0", code)
		}
	})
}

// followTail follows without a cursor: the newest two events, then the appended one.
func followTail(t *testing.T, h *harness, dial func(context.Context, target, func() time.Time) (backend, error)) {
	f := startFollow(t, h, dial, words("events orders --follow --limit 2")...)
	for _, want := range []string{"backend: " + h.line, "row count 120", "queued behind r-0003"} {
		if line := f.next(t); !strings.Contains(line, want) {
			t.Fatalf("line %q, want it to contain %q", line, want)
		}
	}
	if err := h.open(t, "").AppendEvent(context.Background(), appended); err != nil {
		t.Fatal(err)
	}
	want := now.Format(time.RFC3339) + ` RUN_STATE_CHANGED run=r-0005 status=PENDING "appended while following" cursor=`
	if line := f.next(t); !strings.HasPrefix(line, want) {
		t.Errorf("followed %q, want %q...", line, want)
	}
	if code := f.stop(); code != exitOK {
		t.Errorf("exit status %d after an interrupt, want 0", code)
	}
}

// followJSON follows from the fifth event's cursor with --json: the sixth, then
// the appended one, each a types.EventRecord.
func followJSON(t *testing.T, h *harness, dial func(context.Context, target, func() time.Time) (backend, error)) {
	cursors := eventCursors(t, h)
	f := startFollow(t, h, dial, "events", "orders", "--follow", "--json", "--since", cursors[4])
	decode := func() types.EventRecord {
		var r types.EventRecord
		if line := f.next(t); json.Unmarshal([]byte(line), &r) != nil {
			t.Fatalf("line %q is not a types.EventRecord", line)
		}
		return r
	}
	if r := decode(); r.StreamID != cursors[5] || r.Event.Message != "queued behind r-0003" || r.Event.Details["queue"] != "default" {
		t.Errorf("first record %+v, want the sixth event (cursor %s)", r, cursors[5])
	}
	if err := h.open(t, "").AppendEvent(context.Background(), appended); err != nil {
		t.Fatal(err)
	}
	if r := decode(); r.StreamID == "" || r.Event.Message != appended.Message || !r.Event.Timestamp.Equal(now) {
		t.Errorf("followed %+v, want the appended event", r)
	}
	if code := f.stop(); code != exitOK {
		t.Errorf("exit status %d after an interrupt, want 0", code)
	}
}

// followFromEnd follows with --from-end: none of the log's events, then the
// appended one.
func followFromEnd(t *testing.T, h *harness, dial func(context.Context, target, func() time.Time) (backend, error)) {
	f := startFollow(t, h, dial, words("events orders --follow --from-end")...)
	if line := f.next(t); line != "backend: "+h.line {
		t.Fatalf("line %q, want the backend line", line)
	}
	// The follow found the end before it printed the backend line.
	if err := h.open(t, "").AppendEvent(context.Background(), appended); err != nil {
		t.Fatal(err)
	}
	if line := f.next(t); !strings.Contains(line, appended.Message) {
		t.Errorf("followed %q, want the appended event, and none before it", line)
	}
	if code := f.stop(); code != exitOK {
		t.Errorf("exit status %d after an interrupt, want 0", code)
	}
}

// withoutFollower wraps dial so that its providers hide every optional interface.
func withoutFollower(dial func(context.Context, target, func() time.Time) (backend, error)) func(context.Context, target, func() time.Time) (backend, error) {
	return func(ctx context.Context, t target, now func() time.Time) (backend, error) {
		b, err := dial(ctx, t, now)
		return plainBackend{b}, err
	}
}

type plainBackend struct{ backend }

// plainProvider is a provider.Provider and nothing more.
type plainProvider struct{ provider.Provider }

func (b plainBackend) provider(owner string, write bool) (provider.Provider, error) {
	p, err := b.backend.provider(owner, write)
	return plainProvider{p}, err
}
