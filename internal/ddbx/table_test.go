package ddbx

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
)

func tableInput(name, sk string) *ddb.CreateTableInput {
	return &ddb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{
			{AttributeName: aws.String("PK"), AttributeType: ddbtypes.ScalarAttributeTypeS},
			{AttributeName: aws.String(sk), AttributeType: ddbtypes.ScalarAttributeTypeS},
		},
		KeySchema: []ddbtypes.KeySchemaElement{
			{AttributeName: aws.String("PK"), KeyType: ddbtypes.KeyTypeHash},
			{AttributeName: aws.String(sk), KeyType: ddbtypes.KeyTypeRange},
		},
	}
}

func newTable(t *testing.T) (*ddb.Client, string) {
	t.Helper()
	c := testenv.DynamoDBClient(t)
	name := testenv.UniqueName(t)
	testenv.DynamoDBTable(t, c, name, func(ctx context.Context, name string) error {
		return EnsureTable(ctx, c, tableInput(name, "SK"), "ttl", time.Minute)
	})
	return c, name
}

func TestEnsureTable(t *testing.T) {
	c, name := newTable(t)
	ctx := context.Background()
	if err := EnsureTable(ctx, c, tableInput(name, "SK"), "ttl", time.Minute); err != nil {
		t.Fatalf("second call: %v", err)
	}
	if err := EnsureTable(ctx, c, tableInput(name, "OTHER"), "", time.Minute); !errors.Is(err, ErrSchemaMismatch) {
		t.Fatalf("other sort key: err %v, want ErrSchemaMismatch", err)
	}
	if err := EnsureTable(ctx, c, tableInput(name, "SK"), "expires", time.Minute); !errors.Is(err, ErrSchemaMismatch) {
		t.Fatalf("other ttl attribute: err %v, want ErrSchemaMismatch", err)
	}
	ttl, err := c.DescribeTimeToLive(ctx, &ddb.DescribeTimeToLiveInput{TableName: &name})
	if err != nil || aws.ToString(ttl.TimeToLiveDescription.AttributeName) != "ttl" {
		t.Fatalf("ttl: %+v, %v", ttl, err)
	}
}

// TestItemSizeMatchesDynamoDB puts items right at the estimated limit, which
// DynamoDB must accept, and over it by more than the estimate's slack, which it
// must refuse. The numbers are the ones DynamoDB stores in more bytes than the
// documented approximation: negative ones and ones whose digits do not pair up
// around the decimal point.
func TestItemSizeMatchesDynamoDB(t *testing.T) {
	c, name := newTable(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		numbers []string
		slack   int // how far over MaxItemSize the estimate may be
	}{
		{name: "positive", numbers: []string{"1234567"}, slack: 64},
		{name: "negative", numbers: repeat("-1", 2000), slack: 64},
		{name: "negative long", numbers: repeat("-12345678901234567890123456789012345678", 300), slack: 64},
		{name: "unaligned", numbers: repeat("1.1", 2000), slack: 64},
		{name: "unaligned negative", numbers: repeat("-123.45e-7", 2000), slack: 64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			item := func(pad int) map[string]ddbtypes.AttributeValue {
				ns := make([]ddbtypes.AttributeValue, len(tc.numbers))
				for i, n := range tc.numbers {
					ns[i] = &ddbtypes.AttributeValueMemberN{Value: n}
				}
				it := map[string]ddbtypes.AttributeValue{
					"PK": &ddbtypes.AttributeValueMemberS{Value: "k"},
					"SK": &ddbtypes.AttributeValueMemberS{Value: tc.name},
					"n":  &ddbtypes.AttributeValueMemberL{Value: ns},
					"d":  &ddbtypes.AttributeValueMemberS{},
				}
				it["d"] = &ddbtypes.AttributeValueMemberS{Value: strings.Repeat("x", MaxItemSize-ItemSize(it)+pad)}
				return it
			}
			at := item(0)
			if ItemSize(at) != MaxItemSize {
				t.Fatalf("test item is %d bytes", ItemSize(at))
			}
			if _, err := c.PutItem(ctx, &ddb.PutItemInput{TableName: &name, Item: at}); err != nil {
				t.Fatalf("item of estimated size MaxItemSize rejected: %v", err)
			}
			if _, err := c.PutItem(ctx, &ddb.PutItemInput{TableName: &name, Item: item(tc.slack)}); err == nil {
				t.Fatalf("item %d bytes over the limit accepted: the estimate is too large", tc.slack)
			}
		})
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func TestBatchAgainstDynamoDB(t *testing.T) {
	c, name := newTable(t)
	ctx := context.Background()
	var reqs []ddbtypes.WriteRequest
	var keys []map[string]ddbtypes.AttributeValue
	for i := range 230 {
		k := keyOf(i)
		k["SK"] = &ddbtypes.AttributeValueMemberS{Value: "x"}
		keys = append(keys, k)
		reqs = append(reqs, ddbtypes.WriteRequest{PutRequest: &ddbtypes.PutRequest{Item: k}})
	}
	if err := BatchWrite(ctx, c, name, reqs, BatchOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := BatchGet(ctx, c, name, keys, BatchOptions{ConsistentRead: true})
	if err != nil || len(got) != 230 {
		t.Fatalf("BatchGet: %d items, %v", len(got), err)
	}
	for i := range 5 {
		k := keyOf(1000)
		k["SK"] = &ddbtypes.AttributeValueMemberS{Value: string(rune('a' + i))}
		if _, err := c.PutItem(ctx, &ddb.PutItemInput{TableName: &name, Item: k}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name      string
		stopAfter int
		want      string
		pages     int
	}{
		{name: "all", stopAfter: 99, want: "abcde", pages: 4}, // the last page is empty: DynamoDB stopped at the limit,
		{name: "stop", stopAfter: 3, want: "abc", pages: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, pages := "", 0
			err := Query(ctx, c, &ddb.QueryInput{
				TableName:                 &name,
				KeyConditionExpression:    aws.String("PK = :pk"),
				ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":pk": keyOf(1000)["PK"]},
				Limit:                     aws.Int32(1),
			}, func() int32 { pages++; return 2 }, func(it map[string]ddbtypes.AttributeValue) (bool, error) {
				got += it["SK"].(*ddbtypes.AttributeValueMemberS).Value
				return len(got) < tc.stopAfter, nil
			})
			if err != nil || got != tc.want || pages+1 != tc.pages {
				t.Fatalf("got %q in %d pages, %v; want %q in %d", got, pages+1, err, tc.want, tc.pages)
			}
		})
	}
}

// TestEnsureTableConcurrent creates one new table from many goroutines released at
// once: every call must succeed and the table must be usable with TTL on.
func TestEnsureTableConcurrent(t *testing.T) {
	c := testenv.DynamoDBClient(t)
	name := testenv.UniqueName(t)
	t.Cleanup(func() { _, _ = c.DeleteTable(context.Background(), &ddb.DeleteTableInput{TableName: &name}) })
	errs := make([]error, 16)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = EnsureTable(context.Background(), c, tableInput(name, "SK"), "ttl", time.Minute)
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("call %d: %v", i, err)
		}
	}
	ctx := context.Background()
	it := keyOf(1)
	it["SK"] = &ddbtypes.AttributeValueMemberS{Value: "s"}
	if _, err := c.PutItem(ctx, &ddb.PutItemInput{TableName: &name, Item: it}); err != nil {
		t.Fatalf("table unusable: %v", err)
	}
	ttl, err := c.DescribeTimeToLive(ctx, &ddb.DescribeTimeToLiveInput{TableName: &name})
	if err != nil || aws.ToString(ttl.TimeToLiveDescription.AttributeName) != "ttl" {
		t.Fatalf("ttl: %+v, %v", ttl, err)
	}
}

// replicated answers DescribeTable with a Global Table of two replicas.
type replicated struct{ TableAPI }

func (replicated) DescribeTable(context.Context, *ddb.DescribeTableInput, ...func(*ddb.Options)) (*ddb.DescribeTableOutput, error) {
	return &ddb.DescribeTableOutput{Table: &ddbtypes.TableDescription{Replicas: []ddbtypes.ReplicaDescription{
		{RegionName: aws.String("us-east-1")}, {RegionName: aws.String("eu-west-1")}}}}, nil
}

func TestReplicaRegions(t *testing.T) {
	ctx := t.Context()
	got, err := ReplicaRegions(ctx, replicated{}, "t")
	if err != nil || strings.Join(got, ",") != "us-east-1,eu-west-1" {
		t.Fatalf("replicated table: %v, %v", got, err)
	}
	c, name := newTable(t)
	if got, err := ReplicaRegions(ctx, c, name); err != nil || got != nil {
		t.Fatalf("a table of DynamoDB Local: %v, %v; want none", got, err)
	}
	if _, err := ReplicaRegions(ctx, c, name+"-missing"); err == nil {
		t.Fatal("a missing table: no error")
	}
}
