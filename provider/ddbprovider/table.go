package ddbprovider

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/internal/ddbx"
	"github.com/pipestate/pipestate/internal/nilcheck"
	"github.com/pipestate/pipestate/provider"
)

// TableAPI is the subset of *ddb.Client that CreateTable calls: CreateTable,
// DescribeTable, DescribeTimeToLive and UpdateTimeToLive; the same methods as
// state/ddbstate.TableAPI, so one client wrapper serves both.
type TableAPI = ddbx.TableAPI

// CreateTableMaxWait bounds how long CreateTable waits for a new table to become
// ACTIVE.
const CreateTableMaxWait = 5 * time.Minute

// TableInput returns the CreateTableInput of a pipestate table named table: keys PK
// and SK (strings), the index GSI1 on GSI1PK/GSI1SK projecting all attributes,
// on-demand billing and a NEW_AND_OLD_IMAGES stream. TTL is enabled separately, on
// the attribute "ttl". Use it to create the table your own way.
func TableInput(table string) *ddb.CreateTableInput {
	s := func(name string) ddbtypes.AttributeDefinition {
		return ddbtypes.AttributeDefinition{AttributeName: aws.String(name), AttributeType: ddbtypes.ScalarAttributeTypeS}
	}
	keys := func(hash, rng string) []ddbtypes.KeySchemaElement {
		return []ddbtypes.KeySchemaElement{
			{AttributeName: aws.String(hash), KeyType: ddbtypes.KeyTypeHash},
			{AttributeName: aws.String(rng), KeyType: ddbtypes.KeyTypeRange},
		}
	}
	return &ddb.CreateTableInput{
		TableName:            aws.String(table),
		BillingMode:          ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{s(attrPK), s(attrSK), s(attrGSI1PK), s(attrGSI1SK)},
		KeySchema:            keys(attrPK, attrSK),
		GlobalSecondaryIndexes: []ddbtypes.GlobalSecondaryIndex{{
			IndexName:  aws.String(indexGSI1),
			KeySchema:  keys(attrGSI1PK, attrGSI1SK),
			Projection: &ddbtypes.Projection{ProjectionType: ddbtypes.ProjectionTypeAll},
		}},
		StreamSpecification: &ddbtypes.StreamSpecification{
			StreamEnabled:  aws.Bool(true),
			StreamViewType: ddbtypes.StreamViewTypeNewAndOldImages,
		},
	}
}

// CreateTable creates the table described by TableInput, waits (up to
// CreateTableMaxWait, or until ctx ends) until it is ACTIVE, and enables TTL on the
// attribute "ttl". A table that already exists with the same key schema and GSI1 is
// not an error (its billing mode and stream are left as they are); one with another
// schema is an error wrapping ErrSchemaMismatch. Safe to call from many processes
// at once. A nil client (a typed nil included) or an empty table name is an error
// wrapping provider.ErrInvalidArgument.
func CreateTable(ctx context.Context, client TableAPI, table string) error {
	if nilcheck.IsNil(client) {
		return provider.Invalidf("dynamodb: CreateTable: nil client")
	}
	if table == "" {
		return provider.Invalidf("dynamodb: CreateTable: empty table name")
	}
	return ddbx.EnsureTable(ctx, client, TableInput(table), attrTTL, CreateTableMaxWait)
}

// ErrSchemaMismatch is wrapped by CreateTable's error when the table exists with
// another schema.
var ErrSchemaMismatch = ddbx.ErrSchemaMismatch

// ReplicaRegions returns the regions of the table's DynamoDB Global Tables
// replicas (DescribeTable), nil for a table that is not replicated. Global
// Tables replicate last-writer-wins across regions, which the provider's
// guarantees do not survive (see "Across regions" in the package doc): call it
// at start-up and refuse a replicated table unless every writer uses one
// region. It needs dynamodb:DescribeTable on the table.
func ReplicaRegions(ctx context.Context, client TableAPI, table string) ([]string, error) {
	if nilcheck.IsNil(client) {
		return nil, provider.Invalidf("dynamodb: ReplicaRegions: nil client")
	}
	regions, err := ddbx.ReplicaRegions(ctx, client, table)
	if err != nil {
		return nil, fmt.Errorf("dynamodb: ReplicaRegions: %w", err)
	}
	return regions, nil
}
