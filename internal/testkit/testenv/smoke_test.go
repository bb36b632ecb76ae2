package testenv

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	goredis "github.com/redis/go-redis/v9"
)

// The smoke tests prove the harness: under `make test` they run against the real
// servers (and fail rather than skip when one is missing).

func TestSmokeRedis(t *testing.T) {
	ctx := context.Background()
	c := goredis.NewClient(&goredis.Options{Addr: RedisAddr(t)})
	t.Cleanup(func() { _ = c.Close() })
	if got, err := c.Ping(ctx).Result(); err != nil || got != "PONG" {
		t.Fatalf("PING = %q, %v; want PONG", got, err)
	}
	n := CountRedis(c)
	key := RedisPrefix(t) + ":k"
	if _, err := c.Pipelined(ctx, func(p goredis.Pipeliner) error {
		p.Set(ctx, key, "v", time.Minute)
		p.Get(ctx, key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := n.Load(); got != 1 {
		t.Errorf("pipeline counted %d round trips, want 1", got)
	}
}

func TestSmokeRedisCluster(t *testing.T) {
	ctx := context.Background()
	addrs := RedisClusterAddrs(t)
	c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs})
	t.Cleanup(func() { _ = c.Close() })
	n := CountRedis(c)
	prefix := RedisPrefix(t)

	// Keys in many slots: with 3 masters, 30 keys land on every master with
	// overwhelming probability; the test checks it rather than assuming it.
	keys := make([]string, 30)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s:%d", prefix, i)
	}
	for i, k := range keys {
		if err := c.Set(ctx, k, i, time.Minute).Err(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
	}
	shards, err := c.ClusterShards(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	masters := make(map[int]bool) // indexes of the shards owning keys
	for _, k := range keys {
		slot := goredisKeySlot(ctx, t, c, k)
		for i, sh := range shards {
			for _, r := range sh.Slots {
				if slot >= r.Start && slot <= r.End {
					masters[i] = true
				}
			}
		}
	}
	if len(masters) < 3 {
		t.Errorf("keys landed on %d masters, want 3 (is it a 3-master cluster?)", len(masters))
	}

	// Read back through one pipeline: it fans out to every master, one round trip each.
	n.Reset()
	cmds, err := c.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for _, k := range keys {
			p.Get(ctx, k)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, cmd := range cmds {
		if got := cmd.(*goredis.StringCmd).Val(); got != fmt.Sprint(i) {
			t.Errorf("GET %s = %q, want %d", keys[i], got, i)
		}
	}
	if got := n.Load(); got != int64(len(masters)) {
		t.Errorf("cluster pipeline counted %d round trips, want %d (one per master)", got, len(masters))
	}
}

func TestSmokeDynamoDB(t *testing.T) {
	ctx := context.Background()
	hc, n := CountingHTTPClient()
	c := DynamoDBClient(t, func(o *dynamodb.Options) { o.HTTPClient = hc })
	table := UniqueName(t)
	DynamoDBTable(t, c, table, func(ctx context.Context, name string) error {
		_, err := c.CreateTable(ctx, smokeTable(name))
		return err
	})

	n.Reset()
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(table),
		Item: map[string]ddbtypes.AttributeValue{
			"pk":  &ddbtypes.AttributeValueMemberS{Value: "a"},
			"val": &ddbtypes.AttributeValueMemberS{Value: "hello"},
		},
	}); err != nil {
		t.Fatalf("PutItem: %v", err)
	}
	out, err := c.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(table),
		Key:            map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "a"}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatalf("GetItem: %v", err)
	}
	v, ok := out.Item["val"].(*ddbtypes.AttributeValueMemberS)
	if !ok || v.Value != "hello" {
		t.Fatalf("GetItem returned %v, want val=hello", out.Item)
	}
	if got := n.Load(); got != 2 {
		t.Errorf("PutItem+GetItem counted %d HTTP requests, want 2", got)
	}
}

func goredisKeySlot(ctx context.Context, t *testing.T, c *goredis.ClusterClient, key string) int64 {
	t.Helper()
	slot, err := c.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		t.Fatalf("CLUSTER KEYSLOT %s: %v", key, err)
	}
	return slot
}

// smokeTable is the input of CreateTable for a table with a string key pk.
func smokeTable(name string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash}},
		BillingMode:          ddbtypes.BillingModePayPerRequest,
	}
}
