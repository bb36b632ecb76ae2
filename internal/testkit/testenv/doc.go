// Package testenv hands tests their real backends: a Redis server, a Redis Cluster and
// DynamoDB Local.
//
// Every lookup follows the same order:
//
//  1. the address in the environment (REDIS_ADDR, REDIS_CLUSTER_ADDRS,
//     DYNAMODB_ENDPOINT), which is what `make test` exports after starting real
//     servers on loopback ports;
//  2. otherwise, where a Docker engine answers (probed once per process with a short
//     timeout), a container started through testcontainers-go and shared by every test
//     of the process (Redis and DynamoDB Local only; there is no Redis Cluster
//     container). Containers are removed by testcontainers' reaper when the test binary
//     exits;
//  3. otherwise the test is skipped with a message that says how to run it.
//
// When PIPESTATE_REQUIRE_SERVERS=1 (set by `make test`), step 3 is a test failure
// instead of a skip, so a broken harness can never turn into a green run of skipped
// tests. A container that fails to start is likewise a skip (with the error) or, under
// PIPESTATE_REQUIRE_SERVERS=1, a failure.
//
// Servers are shared between tests and between packages: every test must isolate its
// data under its own key prefix or table, for which UniqueName gives a short name that
// is unique across tests, processes and runs, and delete it when it ends, also when it
// fails: RedisPrefix (keys), DynamoDBTable (a table the test creates) and
// DynamoDBPrefix (tables a program under test creates) do both. DynamoDBPooledTable
// hands out a table of the process's pool instead, emptied when its test ends and
// reused by the next (creating a table on DynamoDB Local takes seconds; see
// internal/testkit/ddbtables for the backends' tables). Every package that
// uses the servers calls Main from its TestMain: after the tests it looks for the
// tables and keys that carry this process's tag, deletes them, and fails the run,
// so a cleanup that misses something is a failing test, not a server that fills up
// (DynamoDB Local slows with every table left; an AWS account has a table quota).
//
// CountRedis and CountingHTTPClient count network round trips so that tests can hold
// the round-trip budgets documented by each backend.
//
// Example:
//
//	func TestSet(t *testing.T) {
//		ctx := context.Background()
//		c := goredis.NewClient(&goredis.Options{Addr: testenv.RedisAddr(t)})
//		t.Cleanup(func() { _ = c.Close() })
//		n := testenv.CountRedis(c)
//		key := testenv.RedisPrefix(t) + ":k" // this test's own key space, deleted at its end
//		if err := c.Set(ctx, key, "v", time.Minute).Err(); err != nil {
//			t.Fatal(err)
//		}
//		if got := n.Load(); got != 1 {
//			t.Errorf("SET took %d round trips, want 1", got)
//		}
//	}
package testenv
