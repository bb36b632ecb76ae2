package breaker_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate"
	"github.com/pipestate/pipestate/breaker"
	"github.com/pipestate/pipestate/internal/signal/signaltest"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var errDown = errors.New("down")

// newBreaker opens after 3 failures in a row and half-opens after 50ms;
// errDown is its only failure.
func newBreaker(t *testing.T, opts ...breaker.Option) *breaker.Breaker {
	t.Helper()
	opts = append([]breaker.Option{breaker.WithFailures(3), breaker.WithOpenFor(50 * time.Millisecond),
		breaker.WithFailure(func(err error) bool { return errors.Is(err, errDown) })}, opts...)
	b, err := breaker.New("test", opts...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// waitState polls until b is in want (after its open period) or fails t.
func waitState(t *testing.T, b *breaker.Breaker, want breaker.State) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for b.State() != want {
		if time.Now().After(deadline) {
			t.Fatalf("breaker %v, want %v", b.State(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestLifecycle(t *testing.T) {
	b := newBreaker(t, breaker.WithProbes(2))
	calls := 0
	do := func(err error) error { return b.Do(func() error { calls++; return err }) }

	// Two failures, a non-failure in between: the run starts again.
	for _, err := range []error{errDown, errDown, errors.New("conflict"), errDown, errDown, nil, errDown} {
		_ = do(err)
	}
	if b.State() != breaker.Closed {
		t.Fatalf("no 3 failures in a row, but %v", b.State())
	}
	_ = do(errDown)
	_ = do(errDown) // the third in a row
	if b.State() != breaker.Open {
		t.Fatalf("3 failures in a row: %v, want open", b.State())
	}
	before := calls
	err := do(nil)
	if !errors.Is(err, pipestate.ErrUnavailable) || calls != before {
		t.Fatalf("open: Do = %v after %d calls of the function, want ErrUnavailable and none", err, calls-before)
	}

	// Half-open: a failing probe opens it again.
	waitState(t, b, breaker.HalfOpen)
	_ = do(errDown)
	if b.State() != breaker.Open {
		t.Fatalf("failed probe: %v, want open", b.State())
	}
	// Two successful probes close it.
	waitState(t, b, breaker.HalfOpen)
	if err := do(nil); err != nil || b.State() != breaker.HalfOpen {
		t.Fatalf("first probe: %v, %v; want half-open until the second", err, b.State())
	}
	if err := do(nil); err != nil || b.State() != breaker.Closed {
		t.Fatalf("second probe: %v, %v; want closed", err, b.State())
	}
}

// TestCancellationIgnored: a caller's cancellation neither opens the breaker nor
// ends a run of failures.
func TestCancellationIgnored(t *testing.T) {
	b, err := breaker.New("cancel", breaker.WithFailures(2))
	if err != nil {
		t.Fatal(err)
	}
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	_ = b.Do(func() error { return timeout })
	for range 10 {
		_ = b.Do(func() error { return fmt.Errorf("call: %w", context.Canceled) })
	}
	if b.State() != breaker.Closed {
		t.Fatalf("cancellations opened it: %v", b.State())
	}
	_ = b.Do(func() error { return timeout })
	if b.State() != breaker.Open {
		t.Fatalf("second failure after cancellations: %v, want open", b.State())
	}
}

func TestIsFailure(t *testing.T) {
	status := func(code int) error {
		return &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: code}},
			Err: errors.New("x")}
	}
	txReason := func(code string) error {
		return &ddbtypes.TransactionCanceledException{CancellationReasons: []ddbtypes.CancellationReason{
			{Code: aws.String("None")}, {Code: aws.String(code)}}}
	}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"miss", goredis.Nil, false},
		{"cancelled", context.Canceled, false},
		{"other", errors.New("conflict"), false},
		{"invalid", pipestate.ErrInvalidArgument, false},
		{"deadline", context.DeadlineExceeded, true},
		{"refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{"reset", syscall.ECONNRESET, true},
		{"eof", io.EOF, true},
		{"pool timeout", goredis.ErrPoolTimeout, true},
		{"throttled", &ddbtypes.ProvisionedThroughputExceededException{}, true},
		{"throttling", &smithy.GenericAPIError{Code: "ThrottlingException"}, true},
		{"request limit", &smithy.GenericAPIError{Code: "RequestLimitExceeded"}, true},
		{"condition", &ddbtypes.ConditionalCheckFailedException{}, false},
		{"tx throttled", txReason("ThrottlingError"), true},
		{"tx capacity", txReason("ProvisionedThroughputExceeded"), true},
		{"tx condition", txReason("ConditionalCheckFailed"), false},
		{"tx conflict", txReason("TransactionConflict"), false},
		{"http 500", status(500), true},
		{"http 503", status(503), true},
		{"http 400", status(400), false},
	} {
		for _, err := range []error{c.err, fmt.Errorf("wrapped: %w", c.err)} {
			if c.err == nil && err != nil {
				continue
			}
			if got := breaker.IsFailure(err); got != c.want {
				t.Errorf("%s: IsFailure(%v) = %v, want %v", c.name, err, got, c.want)
			}
		}
	}
}

// TestRedisRefusals: a Redis that answers LOADING, BUSY, CLUSTERDOWN, ... is a
// failure; a Redis that answers an error of the command (WRONGTYPE, NOSCRIPT,
// NOPERM) is not. The answers come from a real server connection speaking RESP.
func TestRedisRefusals(t *testing.T) {
	for reply, want := range map[string]bool{
		"LOADING Redis is loading the dataset in memory":                    true,
		"BUSY Redis is busy running a script":                               true,
		"CLUSTERDOWN The cluster is down":                                   true,
		"MASTERDOWN Link with MASTER is down":                               true,
		"TRYAGAIN Multiple keys request during rehashing of slot":           true,
		"READONLY You can't write against a read only replica.":             true,
		"OOM command not allowed when used memory > 'maxmemory'.":           true,
		"WRONGTYPE Operation against a key holding the wrong kind of value": false,
		"NOSCRIPT No matching script. Please use EVAL.":                     false,
		"NOPERM User has no permissions to run the 'set' command":           false,
		"ERR unknown command 'x'":                                           false,
		"BUSYKEY Target key name already exists.":                           false,
	} {
		c := goredis.NewClient(&goredis.Options{Addr: answering(t, "-"+reply), MaxRetries: -1, Protocol: 2})
		err := c.Get(t.Context(), "k").Err()
		var re goredis.Error
		if !errors.As(err, &re) {
			t.Fatalf("%q: got %v, want a Redis error reply", reply, err)
		}
		if got := breaker.IsFailure(err); got != want {
			t.Errorf("IsFailure(%q) = %v, want %v", reply, got, want)
		}
		_ = c.Close()
	}
}

// answering listens on a local port and answers every RESP command with line.
func answering(t *testing.T, line string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				r := bufio.NewReader(conn)
				for {
					hdr, err := r.ReadString('\n')
					if err != nil {
						return
					}
					var n int
					if _, err := fmt.Sscanf(hdr, "*%d", &n); err != nil {
						return
					}
					for range 2 * n { // $len and the argument of each
						if _, err := r.ReadString('\n'); err != nil {
							return
						}
					}
					if _, err := io.WriteString(conn, line+"\r\n"); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

func TestStateChangesAreSignalled(t *testing.T) {
	sig := signaltest.NewSignals()
	b := newBreaker(t, breaker.WithMeterProvider(sig.Meter), breaker.WithLogger(sig.Log))
	gauge := func() int64 {
		p := sig.Collect(t, "pipestate.breaker.state", breaker.AttrName.String("test"))
		if !p.Found {
			t.Fatal("no pipestate.breaker.state point")
		}
		return p.Value
	}
	if g := gauge(); g != 0 {
		t.Fatalf("closed: gauge %v, want 0", g)
	}
	for range 3 {
		_ = b.Do(func() error { return errDown })
	}
	if g := gauge(); g != 2 {
		t.Fatalf("open: gauge %v, want 2", g)
	}
	waitState(t, b, breaker.HalfOpen)
	if g := gauge(); g != 1 {
		t.Fatalf("half-open: gauge %v, want 1", g)
	}
	_ = b.Do(func() error { return nil })
	for _, w := range []struct {
		level slog.Level
		to    string
	}{{slog.LevelWarn, "open"}, {slog.LevelInfo, "half-open"}, {slog.LevelInfo, "closed"}} {
		if n := sig.Logs(w.level, "pipestate: circuit breaker "+w.to); n != 1 {
			t.Errorf("%d %s records of the change to %s, want 1:\n%s", n, w.level, w.to, sig.LogText())
		}
	}
}

func TestOptionsRefuseBadValues(t *testing.T) {
	for name, opt := range map[string]breaker.Option{
		"failures 0":  breaker.WithFailures(0),
		"failures <0": breaker.WithFailures(-1),
		"open 0":      breaker.WithOpenFor(0),
		"probes 0":    breaker.WithProbes(0),
		"failure nil": breaker.WithFailure(nil),
		"logger nil":  breaker.WithLogger(nil),
		"meter nil":   breaker.WithMeterProvider(nil),
		"nil option":  nil,
	} {
		if _, err := breaker.New("x", opt); !errors.Is(err, pipestate.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
	if _, err := breaker.New(""); !errors.Is(err, pipestate.ErrInvalidArgument) {
		t.Errorf("empty name: %v, want ErrInvalidArgument", err)
	}
}
