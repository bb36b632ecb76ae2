package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	goredis "github.com/redis/go-redis/v9"
)

// cleanupTimeout bounds each deletion a cleanup or Main makes. Cleanups cannot use
// t.Context(): it is cancelled before they run.
const cleanupTimeout = time.Minute

// DynamoDBTable creates the table name with create (CreateTable, CreateStoreTable,
// ...) and deletes it when t ends, also when t fails; a failed create fails t
// (t.Fatalf), and so does a failed delete (t.Errorf), unless the table is already
// gone. Name it with UniqueName(t), plus a suffix, so that Main can find it if it
// is left behind.
func DynamoDBTable(t testing.TB, client *dynamodb.Client, name string, create func(ctx context.Context, name string) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	// Registered first, so that a create that fails half-way is cleaned up too.
	t.Cleanup(func() {
		if err := deleteTable(client, name); err != nil {
			t.Errorf("testenv: delete table %s: %v", name, err)
		}
	})
	if err := create(ctx, name); err != nil {
		t.Fatalf("testenv: create table %s: %v", name, err)
	}
}

// DynamoDBPrefix returns UniqueName(t), for a program under test to name the
// tables it creates (the name itself, or the name and a suffix), and deletes every
// table of DynamoDB Local (DYNAMODB_ENDPOINT) whose name starts with it when t
// ends, also when t fails; a failed deletion fails t.
func DynamoDBPrefix(t testing.TB) string {
	t.Helper()
	name := UniqueName(t)
	t.Cleanup(func() {
		if err := deleteTables(name); err != nil {
			t.Errorf("testenv: delete the tables of %s: %v", name, err)
		}
	})
	return name
}

// deleteTable deletes table; a table that does not exist is not an error.
func deleteTable(client *dynamodb.Client, table string) error {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	_, err := client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	if _, gone := errors.AsType[*types.ResourceNotFoundException](err); gone {
		return nil
	}
	return err
}

// RedisPrefix returns UniqueName(t), to put in every key t writes, and deletes
// every key containing it from the Redis servers of the environment (REDIS_ADDR,
// and each master of REDIS_CLUSTER_ADDRS) when t ends, also when t fails; a failed
// deletion fails t. Keys on a miniredis go with it.
func RedisPrefix(t testing.TB) string {
	t.Helper()
	name := UniqueName(t)
	t.Cleanup(func() {
		for _, c := range envRedis() {
			if _, err := deleteKeys(c, "*"+name+"*", nil); err != nil {
				t.Errorf("testenv: delete the keys of %s: %v", name, err)
			}
		}
	})
	return name
}

// DeleteRedisPrefix deletes every key under prefix (prefix + ":*") on every
// master behind c.
func DeleteRedisPrefix(c goredis.UniversalClient, prefix string) error {
	_, err := deleteKeys(c, prefix+":*", nil)
	return err
}

// envRedis returns clients of the Redis servers of the environment, opened on
// first use and shared by the process.
var envRedis = sync.OnceValue(func() []goredis.UniversalClient {
	var clients []goredis.UniversalClient
	if addr := strings.TrimSpace(os.Getenv(EnvRedisAddr)); addr != "" {
		clients = append(clients, goredis.NewClient(&goredis.Options{Addr: addr}))
	}
	if addrs := splitAddrs(os.Getenv(EnvRedisClusterAddrs)); len(addrs) > 0 {
		clients = append(clients, goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs}))
	}
	return clients
})

// deleteKeys deletes the keys matching the SCAN pattern (and keep, if not nil) on
// every master behind c and returns how many it found.
func deleteKeys(c goredis.UniversalClient, pattern string, keep *regexp.Regexp) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	var found int
	each := func(ctx context.Context, node *goredis.Client) error {
		iter := node.Scan(ctx, 0, pattern, 1000).Iterator()
		var keys []string
		for iter.Next(ctx) {
			if keep == nil || keep.MatchString(iter.Val()) {
				keys = append(keys, iter.Val())
			}
		}
		if err := iter.Err(); err != nil {
			return err
		}
		found += len(keys)
		_, err := node.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for _, k := range keys { // one key a command: a cluster node refuses cross-slot DELs
				p.Unlink(ctx, k)
			}
			return nil
		})
		return err
	}
	switch cc := c.(type) {
	case *goredis.ClusterClient:
		var mu sync.Mutex // ForEachMaster runs the nodes at once
		return found, cc.ForEachMaster(ctx, func(ctx context.Context, node *goredis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			return each(ctx, node)
		})
	case *goredis.Client:
		return found, each(ctx, cc)
	}
	return 0, fmt.Errorf("testenv: unsupported Redis client %T", c)
}

// Main runs the package's tests and exits with RunChecked's code: a package whose
// tests use the servers of the environment calls it from TestMain.
func Main(m *testing.M) { os.Exit(RunChecked(m)) }

// RunChecked runs m's tests and then looks on the servers of the environment
// (REDIS_ADDR, REDIS_CLUSTER_ADDRS, DYNAMODB_ENDPOINT) for what this process's tests
// left behind: tables, keys and ACL users named by UniqueName that no cleanup
// deleted. It deletes them and, if the tests passed, turns the exit code into a
// failure naming them: a leak is a bug in a test's cleanup, and on a long-lived
// server or a real AWS account left-behind tables pile up until the quota is
// reached.
func RunChecked(m *testing.M) int {
	mainRuns.Store(true)
	code := m.Run()
	if err := tablePools.drain(); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: deleting the pooled tables: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	if err := removeLeaks(processTag); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// leakPattern matches a UniqueName of the process tagged tag inside a table name
// or key: '-', the tag and exactly 10 hex digits (so that no UUID, whose last
// group has 12, and no other process's name matches).
func leakPattern(tag string) *regexp.Regexp {
	return regexp.MustCompile(`-` + regexp.QuoteMeta(tag) + `[0-9a-f]{10}([^0-9a-f]|$)`)
}

// removeLeaks deletes the tables, keys and ACL users named by UniqueNames of the
// process tagged tag from the servers of the environment and returns an error
// describing them.
func removeLeaks(tag string) error {
	var errs []error
	leak := leakPattern(tag)
	errs = append(errs, removeTables(leak))
	for _, c := range envRedis() {
		n, err := deleteKeys(c, "*-"+tag+"*", leak)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("looking for keys left behind: %w", err))
		case n > 0:
			errs = append(errs, fmt.Errorf("tests left %d Redis keys behind (now deleted); a test's cleanup misses them: use RedisPrefix", n))
		}
		switch n, err := deleteUsers(c, leak); {
		case err != nil:
			errs = append(errs, fmt.Errorf("looking for ACL users left behind: %w", err))
		case n > 0:
			errs = append(errs, fmt.Errorf("tests left %d Redis ACL users behind (now deleted); a test's cleanup misses them: use RedisUser", n))
		}
	}
	return errors.Join(errs...)
}

// removeTables deletes the tables whose name leak matches and returns an error
// naming them.
func removeTables(leak *regexp.Regexp) error {
	left, err := tablesWhere(leak.MatchString)
	if err != nil || len(left) == 0 {
		return err
	}
	if err := deleteTablesNamed(left); err != nil {
		return fmt.Errorf("deleting a table left behind: %w", err)
	}
	return fmt.Errorf("tests left %d DynamoDB tables behind (now deleted), e.g. %s; a test's cleanup misses them: use DynamoDBTable", len(left), left[0])
}

// deleteTables deletes the tables whose name starts with prefix.
func deleteTables(prefix string) error {
	names, err := tablesWhere(func(name string) bool { return strings.HasPrefix(name, prefix) })
	if err != nil {
		return err
	}
	return deleteTablesNamed(names)
}

// envDynamoDB returns a client of DynamoDB Local (DYNAMODB_ENDPOINT), nil when
// none is configured.
var envDynamoDB = sync.OnceValue(func() *dynamodb.Client {
	ep := strings.TrimSpace(os.Getenv(EnvDynamoDBEndpoint))
	if ep == "" {
		return nil
	}
	return newDynamoDBClient(ep)
})

// tablesWhere lists the tables of envDynamoDB whose name match accepts.
func tablesWhere(match func(string) bool) ([]string, error) {
	client := envDynamoDB()
	if client == nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	var names []string
	pages := dynamodb.NewListTablesPaginator(client, &dynamodb.ListTablesInput{})
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing tables: %w", err)
		}
		for _, name := range out.TableNames {
			if match(name) {
				names = append(names, name)
			}
		}
	}
	return names, nil
}

// deleteTablesNamed deletes the named tables of envDynamoDB, every one it can.
func deleteTablesNamed(names []string) error {
	var errs []error
	for _, name := range names {
		errs = append(errs, deleteTable(envDynamoDB(), name))
	}
	return errors.Join(errs...)
}
