package dynamodb

import (
	"context"
	"fmt"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/internal/ddbx"
	"github.com/pipestate/pipestate/state"
)

// Attribute names of the value and dedup tables (see the package doc).
const (
	attrPK  = "pk"  // S: the entity (value tables) or the claim name (dedup tables)
	attrSK  = "sk"  // N: the bucket (value tables only)
	attrV   = "v"   // N (numeric stores) or B (BytesStore): the value
	attrTTL = "ttl" // N: expiry in Unix seconds, absent = never; DynamoDB's TTL attribute
	attrVer = "ver" // S: BytesStore's version: the tokens of its latest writes (storekey.PushToken)
	attrTok = "tok" // S: the token of the call that took a claim (dedup tables)
)

// TableAPI is the part of *ddb.Client the Create*Table functions call.
type TableAPI interface {
	CreateTable(ctx context.Context, in *ddb.CreateTableInput, optFns ...func(*ddb.Options)) (*ddb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *ddb.DescribeTableInput, optFns ...func(*ddb.Options)) (*ddb.DescribeTableOutput, error)
	DescribeTimeToLive(ctx context.Context, in *ddb.DescribeTimeToLiveInput, optFns ...func(*ddb.Options)) (*ddb.DescribeTimeToLiveOutput, error)
	UpdateTimeToLive(ctx context.Context, in *ddb.UpdateTimeToLiveInput, optFns ...func(*ddb.Options)) (*ddb.UpdateTimeToLiveOutput, error)
}

// tableWait bounds how long the Create*Table functions wait for ACTIVE.
const tableWait = 5 * time.Minute

// CreateInt64Table creates a value table for Int64SumStore, Float64SumStore and
// Int64MaxStore: key pk (S, hash) + sk (N, range), on-demand billing, DynamoDB TTL on
// the ttl attribute. It waits until the table is ACTIVE (at most 5 minutes, or until
// ctx ends). An existing table with the same key schema is accepted; one with another
// schema returns an error and changes nothing. Use one table per logical store.
func CreateInt64Table(ctx context.Context, client TableAPI, table string) error {
	return createTable(ctx, client, table, true)
}

// CreateBytesTable creates a value table for BytesStore. Its key schema is that of
// CreateInt64Table (the value attribute v is B instead of N, which DynamoDB does not
// declare); the same rules apply.
func CreateBytesTable(ctx context.Context, client TableAPI, table string) error {
	return createTable(ctx, client, table, true)
}

// CreateDedupTable creates a table for Deduper claims and MergeUpdateOnce event
// claims (WithDedupTable): key pk (S, hash), on-demand billing, DynamoDB TTL on ttl.
// It waits until ACTIVE like CreateInt64Table and accepts an existing table with the
// same key schema.
func CreateDedupTable(ctx context.Context, client TableAPI, table string) error {
	return createTable(ctx, client, table, false)
}

func createTable(ctx context.Context, client TableAPI, table string, ranged bool) error {
	if client == nil {
		return state.Invalidf("create table: nil client")
	}
	if table == "" {
		return state.Invalidf("create table: empty table name")
	}
	in := &ddb.CreateTableInput{
		TableName:   &table,
		BillingMode: ddbtypes.BillingModePayPerRequest,
		KeySchema:   []ddbtypes.KeySchemaElement{{AttributeName: ptr(attrPK), KeyType: ddbtypes.KeyTypeHash}},
		AttributeDefinitions: []ddbtypes.AttributeDefinition{
			{AttributeName: ptr(attrPK), AttributeType: ddbtypes.ScalarAttributeTypeS},
		},
	}
	if ranged {
		in.KeySchema = append(in.KeySchema, ddbtypes.KeySchemaElement{AttributeName: ptr(attrSK), KeyType: ddbtypes.KeyTypeRange})
		in.AttributeDefinitions = append(in.AttributeDefinitions, ddbtypes.AttributeDefinition{AttributeName: ptr(attrSK), AttributeType: ddbtypes.ScalarAttributeTypeN})
	}
	if err := ddbx.EnsureTable(ctx, client, in, attrTTL, tableWait); err != nil {
		return fmt.Errorf("state/dynamodb: %w", err)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }
