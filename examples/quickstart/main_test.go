package main

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pipestate/pipestate/internal/testkit/testenv"

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

// TestLeavesNothing: a run on a real server writes under a prefix of its own,
// says what it wrote and removes it: no key or table is left under the prefix;
// with -keep it is all left, and said so.
func TestLeavesNothing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags func(t *testing.T) []string
		left  func(t *testing.T, prefix string) int
	}{
		{"redis", func(t *testing.T) []string { return []string{"-redis", testenv.RedisAddr(t)} }, func(t *testing.T, prefix string) int {
			return left(t, exbackend.Config{Redis: testenv.RedisAddr(t), Prefix: prefix})
		}},
		{"dynamodb", func(t *testing.T) []string {
			return []string{"-dynamodb", testenv.DynamoDBEndpoint(t), "-timeout", "1m"}
		}, func(t *testing.T, prefix string) int {
			return left(t, exbackend.Config{DynamoDB: testenv.DynamoDBEndpoint(t), Prefix: prefix})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, keep := range []bool{false, true} {
				args := tc.flags(t)
				if keep {
					args = append(args, "-keep")
				}
				var out bytes.Buffer
				if err := mainArgs(context.Background(), args, &out); err != nil {
					t.Fatalf("quickstart %v: %v\n%s", args, err, out.String())
				}
				said := strings.TrimSpace(out.String()[strings.LastIndex(strings.TrimSpace(out.String()), "\n")+1:])
				m := regexp.MustCompile(`^wrote (\d+) \w+ under (quickstart-[0-9a-f]{8}) on `).FindStringSubmatch(said)
				if m == nil || m[1] == "0" {
					t.Fatalf("last line %q: want what the run wrote, under a prefix of its own", said)
				}
				prefix := m[2]
				if keep {
					cleanup := exbackend.Config{Prefix: prefix}
					if tc.name == "redis" {
						cleanup.Redis = testenv.RedisAddr(t)
					} else {
						cleanup.DynamoDB, cleanup.Timeout = testenv.DynamoDBEndpoint(t), time.Minute
					}
					t.Cleanup(func() {
						if err := cleanup.Remove(context.Background()); err != nil {
							t.Errorf("remove %s: %v", prefix, err)
						}
					})
				}
				n := tc.left(t, prefix)
				switch {
				case !keep && (n != 0 || !strings.Contains(said, "removed them")):
					t.Errorf("%d left under %s after %q, want 0", n, prefix, said)
				case keep && (n == 0 || !strings.Contains(said, "kept them (-keep)")):
					t.Errorf("-keep: %d left under %s after %q, want what it wrote", n, prefix, said)
				}
			}
		})
	}
}

// left counts what is under cfg's prefix on its server, as the run's end does.
func left(t *testing.T, cfg exbackend.Config) int {
	t.Helper()
	n, err := cfg.Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}
