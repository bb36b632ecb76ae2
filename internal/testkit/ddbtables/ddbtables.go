// Package ddbtables hands tests the tables of state/ddbstate from testenv's
// pool (testenv.DynamoDBPooledTable): empty, the test's own until it ends, and
// reused by a later test of the process instead of being created and deleted for
// each test, which on DynamoDB Local takes seconds a table. The package's
// TestMain must call testenv.Main.
package ddbtables

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/state/ddbstate"
)

// Store returns a table made by ddbstate.CreateStoreTable for t.
func Store(t testing.TB) string {
	t.Helper()
	return testenv.DynamoDBPooledTable(t, "store", func(ctx context.Context, c *dynamodb.Client, name string) error {
		return ddbstate.CreateStoreTable(ctx, c, name)
	})
}

// Dedup returns a table made by ddbstate.CreateDedupTable for t.
func Dedup(t testing.TB) string {
	t.Helper()
	return testenv.DynamoDBPooledTable(t, "dedup", func(ctx context.Context, c *dynamodb.Client, name string) error {
		return ddbstate.CreateDedupTable(ctx, c, name)
	})
}
