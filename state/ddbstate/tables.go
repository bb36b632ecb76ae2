package ddbstate

import (
	"context"
	"fmt"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/internal/ddbx"
	"github.com/pipestate/pipestate/internal/nilcheck"
	"github.com/pipestate/pipestate/state"
)

// Attribute names of the value and dedup tables (see the package doc).
const (
	attrPK  = "pk"  // S: the entity (value tables) or the claim name (dedup tables)
	attrSK  = "sk"  // N: the bucket (value tables only)
	attrV   = "v"   // N (numeric stores) or B (BytesStore): the value
	attrTTL = "ttl" // N: expiry in Unix seconds, absent = never; DynamoDB's TTL attribute
	attrVer = "ver" // S: BytesStore's version: the tokens of its latest writes (storekey.PushToken)
	attrRev = "rev" // N: the item's revision, added to by every write (state.Revision)
	attrTok = "tok" // S: the token of the call that took a claim (dedup tables)
)

// TableAPI is the part of *ddb.Client the Create*Table functions call
// (CreateTable, DescribeTable, DescribeTimeToLive, UpdateTimeToLive): the one
// table-admin interface of the library, provider/ddbprovider's TableAPI too.
type TableAPI = ddbx.TableAPI

// tableWait bounds how long the Create*Table functions wait for ACTIVE.
const tableWait = 5 * time.Minute

// CreateStoreTable creates a value table for any store: Int64SumStore,
// Float64SumStore, Int64MaxStore and BytesStore. Its key is pk (S, hash) + sk (N,
// range), with on-demand billing and DynamoDB TTL on the ttl attribute. It waits
// until the table is ACTIVE (at most 5 minutes, or until ctx ends). An existing
// table with the same key schema is accepted; one with another schema returns an
// error and changes nothing. Stores of different kinds (and BytesStores of
// different monoid kinds) may share a table without sharing values; stores of one
// kind on one table share them, so give each logical store its own table. A nil
// client or an empty name is an error wrapping state.ErrInvalidArgument.
func CreateStoreTable(ctx context.Context, client TableAPI, table string) error {
	return createTable(ctx, client, table, true)
}

// CreateDedupTable creates a table for Deduper claims and MergeUpdateOnce event
// claims (WithDedupTable): key pk (S, hash), on-demand billing, DynamoDB TTL on ttl.
// It waits until ACTIVE like CreateStoreTable and accepts an existing table with the
// same key schema.
func CreateDedupTable(ctx context.Context, client TableAPI, table string) error {
	return createTable(ctx, client, table, false)
}

func createTable(ctx context.Context, client TableAPI, table string, ranged bool) error {
	if nilcheck.IsNil(client) {
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
		return fmt.Errorf("state/ddbstate: %w", err)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// ReplicaRegions returns the regions of the table's DynamoDB Global Tables
// replicas (DescribeTable), nil for a table that is not replicated. Global
// Tables replicate last-writer-wins across regions, which the stores'
// guarantees do not survive (see "Across regions" in the package doc): call it
// at start-up for the value and dedup tables and refuse a replicated one unless
// every writer uses one region. It needs dynamodb:DescribeTable on the table.
func ReplicaRegions(ctx context.Context, client TableAPI, table string) ([]string, error) {
	if nilcheck.IsNil(client) {
		return nil, fmt.Errorf("%w: state/ddbstate: ReplicaRegions: nil client", state.ErrInvalidArgument)
	}
	regions, err := ddbx.ReplicaRegions(ctx, client, table)
	if err != nil {
		return nil, fmt.Errorf("state/ddbstate: ReplicaRegions: %w", err)
	}
	return regions, nil
}
