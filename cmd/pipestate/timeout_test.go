package main

import (
	"context"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
)

// blackHoleTimeout is the --timeout of the black-hole tests, and blackHoleSlack
// what a command may take beyond it (starting the process, a loaded machine):
// generous, while the old behaviour (5s on Redis, no bound on DynamoDB) fails.
const (
	blackHoleTimeout = 300 * time.Millisecond
	blackHoleSlack   = 4 * time.Second
)

// TestTimeoutBlackHole: against a backend that accepts connections and never
// answers, every kind of command fails with exit 1 within the timeout, naming the
// endpoint, whether the timeout comes from --timeout or PIPESTATE_TIMEOUT, and
// --follow's first read too.
func TestTimeoutBlackHole(t *testing.T) {
	t.Parallel()
	addr := testenv.BlackHole(t)
	url := "http://" + addr
	awsEnv := []string{"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=x", "AWS_SECRET_ACCESS_KEY=y", "AWS_ENDPOINT_URL_DYNAMODB=" + url}
	for _, tc := range []struct {
		name     string
		env      []string
		args     string
		endpoint string
		from     string // what set the timeout
	}{
		{"redis", nil, "runs orders --redis " + addr, "redis " + addr, "--timeout"},
		{"redis follow", nil, "events orders --follow --redis " + addr, "redis " + addr, "--timeout"},
		{"redis json", nil, "run r-1 --json --redis " + addr, "redis " + addr, "--timeout"},
		{"redis lock release", nil, "lock release k --owner o --reason gone --yes --redis " + addr, "redis " + addr, "--timeout"},
		{"redis state", nil, "state get int64sum --entity e --prefix p --redis " + addr, "redis " + addr, "--timeout"},
		{"redis url", nil, "pipelines list --redis redis://" + addr + "/0", "redis redis://" + addr + "/0", "--timeout"},
		{"cluster", nil, "runs orders --redis-cluster " + addr, "redis-cluster " + addr, "--timeout"},
		{"redis env", []string{envTimeout + "=" + blackHoleTimeout.String(), envRedis + "=" + addr}, "readiness orders", "redis " + addr, envTimeout},
		{"dynamodb", nil, "runs orders --dynamodb " + url + " --table t", "dynamodb " + url, "--timeout"},
		{"dynamodb follow", nil, "events orders --follow --dynamodb " + url + " --table t", "dynamodb " + url, "--timeout"},
		{"dynamodb state", nil, "state get hll --entity e --dynamodb " + url + " --table t", "dynamodb " + url, "--timeout"},
		{"dynamodb create-tables", nil, "admin create-tables --dynamodb " + url + " --table t --yes", "dynamodb " + url, "--timeout"},
		{"dynamodb env", []string{envTimeout + "=" + blackHoleTimeout.String(), envDynamoDB + "=" + url, envTable + "=t"}, "pipelines show orders", "dynamodb " + url, envTimeout},
		// The AWS default config, its DynamoDB endpoint set by the SDK's variable.
		{"aws", awsEnv, "lock show k --table t", "dynamodb (AWS default config)", "--timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := words(tc.args)
			if tc.from == "--timeout" {
				args = append(args, "--timeout", blackHoleTimeout.String())
			}
			start := time.Now()
			r := runBinary(t, tc.env, args...)
			took := time.Since(start)
			want := tc.endpoint + " did not answer within " + blackHoleTimeout.String() + " (" + tc.from + ")"
			if r.code != exitError || !strings.Contains(r.stderr, want) || (slices.Contains(args, "--json") != strings.HasPrefix(r.stderr, "{")) {
				t.Errorf("exit %d, stderr %q; want exit 1 and %q", r.code, r.stderr, want)
			}
			if took < blackHoleTimeout || took > blackHoleTimeout+blackHoleSlack {
				t.Errorf("took %v, want between %v and %v", took, blackHoleTimeout, blackHoleTimeout+blackHoleSlack)
			}
			t.Logf("%s: %v", tc.name, took)
		})
	}
}

// TestTimeoutCredentials: the AWS default config's credentials, fetched from an
// instance metadata service that never answers, are bounded too.
func TestTimeoutCredentials(t *testing.T) {
	t.Parallel()
	addr := testenv.BlackHole(t)
	env := []string{"AWS_REGION=us-east-1", "AWS_EC2_METADATA_SERVICE_ENDPOINT=http://" + addr, "AWS_ENDPOINT_URL_DYNAMODB=http://" + addr}
	start := time.Now()
	r := runBinary(t, env, "runs", "orders", "--table", "t", "--timeout", blackHoleTimeout.String())
	took := time.Since(start)
	if r.code != exitError || took > blackHoleTimeout+blackHoleSlack {
		t.Errorf("exit %d after %v, stderr %q; want exit 1 within %v", r.code, took, r.stderr, blackHoleTimeout+blackHoleSlack)
	}
}

// TestFollowOutlivesTimeout: --timeout bounds each read of a follow, not the
// follow: on Redis a read blocks on the server for up to 5s (XREAD BLOCK) and
// gets that time on top of the timeout (3s, not less: DynamoDB Local on a loaded
// machine may take longer than a black-hole test's timeout to answer a poll), and
// a follow idle for longer than both still prints what is appended after.
func TestFollowOutlivesTimeout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		h    func(t *testing.T) *harness
	}{
		{"miniredis", func(t *testing.T) *harness { return redisHarness(t, "redis", miniredis.RunT(t).Addr(), nil) }},
		{"redis", func(t *testing.T) *harness { return redisHarness(t, "redis", testenv.RedisAddr(t), nil) }},
		{"dynamodb", dynamoHarness},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := tc.h(t)
			f := startFollow(t, h, nil, words("events orders --follow --limit 1 --timeout 3s")...)
			for range 2 { // the backend line and the newest event
				f.next(t)
			}
			time.Sleep(5500 * time.Millisecond) // longer than a blocked read
			if err := h.open(t, "").AppendEvent(context.Background(), appended); err != nil {
				t.Fatal(err)
			}
			if line := f.next(t); !strings.Contains(line, appended.Message) {
				t.Errorf("followed %q, want the appended event", line)
			}
			if code := f.stop(); code != exitOK {
				t.Errorf("exit status %d after an interrupt, want 0", code)
			}
		})
	}
}

func TestBlockOf(t *testing.T) {
	for _, tc := range []struct {
		args []any
		want time.Duration
	}{
		{[]any{"xread", "count", int64(256), "block", int64(5000), "streams", "k", "0-0"}, 5 * time.Second},
		{[]any{"XREADGROUP", "GROUP", "g", "c", "BLOCK", "250", "STREAMS", "k", ">"}, 250 * time.Millisecond},
		{[]any{"xread", "count", int64(10), "streams", "block", "0"}, 0}, // a stream named block
		{[]any{"get", "block"}, 0},
		{nil, 0},
	} {
		if got := blockOf(tc.args); got != tc.want {
			t.Errorf("blockOf(%v) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

// TestTimeoutResolve: --timeout wins over PIPESTATE_TIMEOUT, which wins over the
// default; either must be a positive duration.
func TestTimeoutResolve(t *testing.T) {
	for _, tc := range []struct {
		args, env string
		want      string // timeout and source, or the usage error
	}{
		{"", "", "10s --timeout"},
		{"--timeout 2s", "", "2s --timeout"},
		{"", "1m30s", "1m30s PIPESTATE_TIMEOUT"},
		{"--timeout 250ms", "1m", "250ms --timeout"},
		{"--timeout 250ms", "bogus", "250ms --timeout"},
		{"", "bogus", `PIPESTATE_TIMEOUT="bogus": want a positive duration such as 10s, 500ms or 1m`},
		{"", "-1s", `PIPESTATE_TIMEOUT="-1s": want a positive duration such as 10s, 500ms or 1m`},
		{"--timeout 0", "", `invalid value "0" for --timeout: want a positive duration such as 10s, 500ms or 1m`},
		{"--timeout 10", "", `invalid value "10" for --timeout: want a positive duration such as 10s, 500ms or 1m`},
	} {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var f connFlags
		f.register(fs, connProvider)
		env := []string{envRedis + "=r:1"}
		if tc.env != "" {
			env = append(env, envTimeout+"="+tc.env)
		}
		var got string
		if err := fs.Parse(words(tc.args)); err != nil {
			got = flagError(fs, err).Error()
		} else if tg, err := f.resolve(getenv(env)); err != nil {
			got = err.Error()
		} else {
			got = dur(tg.timeout) + " " + tg.timeoutFrom
		}
		if got != tc.want {
			t.Errorf("%q, %s=%q: got %s, want %s", tc.args, envTimeout, tc.env, got, tc.want)
		}
	}
}
