package testenv

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestDynamoDBPooledTable: a table goes back to the pool emptied and the next test
// gets it; a table a test changed, a table too full to empty cheaply, or a failed
// test's table, is deleted instead; drain deletes the rest.
func TestDynamoDBPooledTable(t *testing.T) {
	ctx := context.Background()
	c := DynamoDBClient(t)
	kind := "pooltest-" + UniqueName(t)[len(UniqueName(t))-10:] // not shared with another test of the process
	creates := 0
	create := func(ctx context.Context, c *dynamodb.Client, name string) error {
		creates++
		_, err := c.CreateTable(ctx, smokeTable(name))
		return err
	}
	count := func(t *testing.T, table string) int32 {
		t.Helper()
		out, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true), Select: ddbtypes.SelectCount})
		if err != nil {
			t.Fatalf("Scan %s: %v", table, err)
		}
		return out.Count
	}
	gone := func(t *testing.T, table string) bool {
		t.Helper()
		_, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if _, ok := errors.AsType[*ddbtypes.ResourceNotFoundException](err); ok {
			return true
		}
		if err != nil {
			t.Fatalf("DescribeTable %s: %v", table, err)
		}
		return false
	}

	var first, third string
	t.Run("new", func(t *testing.T) {
		first = DynamoDBPooledTable(t, kind, create)
		for i := range 30 { // more than one BatchWriteItem's 25
			if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(first),
				Item: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: fmt.Sprint(i)}}}); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("reused and empty", func(t *testing.T) {
		table := DynamoDBPooledTable(t, kind, create)
		if table != first || creates != 1 {
			t.Fatalf("got table %s after %d creates, want %s reused", table, creates, first)
		}
		if n := count(t, table); n != 0 {
			t.Fatalf("the reused table holds %d items of the test before", n)
		}
		enabled := true // a change of the table's description: the next test must not get it
		if _, err := c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(table),
			TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{AttributeName: aws.String("exp"), Enabled: &enabled}}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("changed table not reused", func(t *testing.T) {
		third = DynamoDBPooledTable(t, kind, create)
		if third == first || creates != 2 {
			t.Fatalf("got table %s after %d creates, want a new one", third, creates)
		}
		if !gone(t, first) {
			t.Errorf("the changed table %s was not deleted", first)
		}
	})

	var full string
	t.Run("full table", func(t *testing.T) {
		n := maxClearItems
		t.Cleanup(func() { maxClearItems = n }) // after the table's cleanup
		maxClearItems = 10                      // fewer items to write than the real bound
		full = DynamoDBPooledTable(t, kind, create)
		var reqs []ddbtypes.WriteRequest
		for i := range maxClearItems + 1 {
			reqs = append(reqs, ddbtypes.WriteRequest{PutRequest: &ddbtypes.PutRequest{
				Item: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: fmt.Sprint(i)}}}})
		}
		for len(reqs) > 0 {
			n := min(25, len(reqs))
			out, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]ddbtypes.WriteRequest{full: reqs[:n]}})
			if err != nil {
				t.Fatal(err)
			}
			reqs = append(reqs[n:], out.UnprocessedItems[full]...)
		}
	})
	if full != third || !gone(t, full) {
		t.Errorf("the table %s holding more than the bound of items was not deleted (want %s, deleted)", full, third)
	}
	third = ""
	t.Run("after the full table", func(t *testing.T) {
		third = DynamoDBPooledTable(t, kind, create)
		if third == full || creates != 3 {
			t.Fatalf("got table %s after %d creates, want a new one", third, creates)
		}
	})

	p := tablePools.get(DynamoDBEndpoint(t), kind)
	name, err := p.take(create)
	if err != nil || name != third {
		t.Fatalf("take = %s, %v; want %s", name, err, third)
	}
	if err := p.give(name, true); err != nil {
		t.Fatal(err)
	}
	if !gone(t, third) {
		t.Errorf("the table %s of a failed test was not deleted", third)
	}
	last, err := p.take(create)
	if err != nil || creates != 4 {
		t.Fatalf("take = %s, %v after %d creates; want a new table", last, err, creates)
	}
	if err := p.give(last, false); err != nil {
		t.Fatal(err)
	}
	if err := p.drain(); err != nil {
		t.Fatal(err)
	}
	if !gone(t, last) {
		t.Errorf("drain left %s", last)
	}
}
