// Package ddbtables hands tests the tables of state/ddbstate from testenv's
// pool (testenv.DynamoDBPooledTable): empty, the test's own until it ends, and
// reused by a later test of the process instead of being created and deleted for
// each test, which on DynamoDB Local takes seconds a table. The package's
// TestMain must call testenv.Main. Sweep and CorruptValue do to those tables
// what DynamoDB's TTL sweeper and a hand edit would (the simulations of
// state/ddbstate and state/tiered).
package ddbtables

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/state"
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

// Sweep deletes, as DynamoDB's TTL sweeper would, every item of tables whose
// ttl attribute (Unix seconds) is not after now.
func Sweep(t testing.TB, now time.Time, tables ...string) {
	t.Helper()
	c := testenv.DynamoDBClient(t)
	for _, table := range tables {
		p := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: &table})
		for p.HasMorePages() {
			out, err := p.NextPage(t.Context())
			if err != nil {
				t.Fatalf("sweep %s: %v", table, err)
			}
			for _, it := range out.Items {
				ttl, ok := it["ttl"].(*ddbtypes.AttributeValueMemberN)
				if !ok {
					continue
				}
				if at, err := strconv.ParseInt(ttl.Value, 10, 64); err != nil || at > now.Unix() {
					continue
				}
				key := map[string]ddbtypes.AttributeValue{"pk": it["pk"]}
				if sk, ok := it["sk"]; ok {
					key["sk"] = sk
				}
				if _, err := c.DeleteItem(t.Context(), &dynamodb.DeleteItemInput{TableName: &table, Key: key}); err != nil {
					t.Fatalf("sweep %s: %v", table, err)
				}
			}
		}
	}
}

// CorruptValue writes the v attribute of k's item in the store table as a
// string, by hand, with no ttl: a value no store decodes.
func CorruptValue(t testing.TB, table string, k state.Key) {
	t.Helper()
	c := testenv.DynamoDBClient(t)
	p := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: &table})
	for p.HasMorePages() {
		out, err := p.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range out.Items {
			pk, _ := it["pk"].(*ddbtypes.AttributeValueMemberS)
			sk, _ := it["sk"].(*ddbtypes.AttributeValueMemberN)
			if pk != nil && sk != nil && strings.HasSuffix(pk.Value, "#"+k.Entity) && sk.Value == strconv.FormatInt(k.Bucket, 10) {
				it["v"] = &ddbtypes.AttributeValueMemberS{Value: "written by hand"}
				delete(it, "ttl")
				if _, err := c.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: &table, Item: it}); err != nil {
					t.Fatal(err)
				}
				return
			}
		}
	}
	t.Fatalf("no item of %v in %s", k, table)
}
