package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
)

const transcript = `registered pipeline orders
trait freshness: PASS
readiness: READY
took lock eval:orders:daily
run PENDING
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
		cfg  func(t *testing.T) backendConfig
	}{
		{"miniredis", func(t *testing.T) backendConfig { return backendConfig{prefix: "quickstart"} }},
		{"redis", func(t *testing.T) backendConfig {
			return backendConfig{redisAddr: server(t, "REDIS_ADDR"), prefix: uniqueName()}
		}},
		{"dynamodb", func(t *testing.T) backendConfig {
			return backendConfig{dynamoEndpoint: server(t, "DYNAMODB_ENDPOINT"), prefix: uniqueName()}
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

// server returns the address of a real server from the environment variable env
// (`make test` sets REDIS_ADDR and DYNAMODB_ENDPOINT). When it is unset the test
// is skipped, or fails under PIPESTATE_REQUIRE_SERVERS=1.
func server(t *testing.T, env string) string {
	t.Helper()
	addr := os.Getenv(env)
	if addr == "" {
		msg := env + " is unset: run `make test`, or set it to a server's address"
		if os.Getenv("PIPESTATE_REQUIRE_SERVERS") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return addr
}

// uniqueName is a key prefix and table name that no other test or run uses.
func uniqueName() string { return fmt.Sprintf("quickstart-%016x", rand.Uint64()) }
