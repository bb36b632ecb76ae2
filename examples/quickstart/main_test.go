package main

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/pipestate/pipestate/internal/testenv"

	"github.com/pipestate/pipestate/examples/internal/exbackend"
)

const transcript = `registered pipeline orders
trait freshness: PASS
readiness: READY
took lock eval:orders:daily
run PENDING (version 0)
run -> TRIGGERING (version 1)
run -> RUNNING (version 2)
run -> COMPLETED (version 3)
run log 2026-11-21: COMPLETED
released lock eval:orders:daily
event RUN_STATE_CHANGED TRIGGERING
event RUN_STATE_CHANGED RUNNING
event RUN_STATE_CHANGED COMPLETED
3 clicks from about 3 unique users (6 deliveries)
`

func TestQuickstart(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(t *testing.T) exbackend.Config
	}{
		{"miniredis", func(t *testing.T) exbackend.Config { return exbackend.Config{Prefix: "quickstart"} }},
		{"redis", func(t *testing.T) exbackend.Config {
			return exbackend.Config{Redis: testenv.RedisAddr(t), Prefix: testenv.RedisPrefix(t)}
		}},
		{"dynamodb", func(t *testing.T) exbackend.Config {
			return exbackend.Config{DynamoDB: testenv.DynamoDBEndpoint(t), Prefix: testenv.DynamoDBPrefix(t),
				// DynamoDB Local on a loaded test machine can take seconds a call (creating
				// tables); TestDeadServer tests the timeout itself.
				Timeout: time.Minute}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := open(context.Background(), tc.cfg(t))
			if err != nil {
				t.Fatal(err)
			}
			defer b.close()
			var out bytes.Buffer
			if err := run(context.Background(), &out, b); err != nil {
				t.Fatalf("run: %v\n%s", err, out.String())
			}
			if out.String() != transcript {
				t.Errorf("transcript:\n%s\nwant:\n%s", out.String(), transcript)
			}
		})
	}
}

// TestMain fails the package when its tests leave tables or keys behind.
func TestMain(m *testing.M) { testenv.Main(m) }

// TestDeadServer: on a Redis or DynamoDB endpoint that accepts connections and
// never answers, the quickstart fails within its timeout instead of hanging (4s
// of slack for a loaded machine; without a timeout it hung on DynamoDB and took
// 5s, go-redis's default dial timeout, on Redis).
func TestDeadServer(t *testing.T) {
	const timeout = 300 * time.Millisecond
	addr := testenv.BlackHole(t)
	for name, cfg := range map[string]exbackend.Config{
		"redis":    {Redis: addr, Prefix: "quickstart", Timeout: timeout},
		"dynamodb": {DynamoDB: "http://" + addr, Prefix: "quickstart", Timeout: timeout},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			b, err := open(context.Background(), cfg)
			if err == nil {
				defer b.close()
				err = run(context.Background(), io.Discard, b)
			}
			took := time.Since(start)
			if err == nil || took > timeout+4*time.Second {
				t.Errorf("took %v, error %v; want an error within %v", took, err, timeout+4*time.Second)
			}
			t.Logf("failed after %v: %v", took, err)
		})
	}
}
