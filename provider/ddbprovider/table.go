package ddbprovider

import (
	"context"
	"fmt"
	"slices"
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
// the sparse index ACTIVE on activePK/activeSK projecting the keys only (see
// "Active runs" in the package doc), on-demand billing and a NEW_AND_OLD_IMAGES
// stream. TTL is enabled separately, on
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
		AttributeDefinitions: []ddbtypes.AttributeDefinition{s(attrPK), s(attrSK), s(attrGSI1PK), s(attrGSI1SK), s(attrActPK), s(attrActSK)},
		KeySchema:            keys(attrPK, attrSK),
		GlobalSecondaryIndexes: []ddbtypes.GlobalSecondaryIndex{{
			IndexName:  aws.String(indexGSI1),
			KeySchema:  keys(attrGSI1PK, attrGSI1SK),
			Projection: &ddbtypes.Projection{ProjectionType: ddbtypes.ProjectionTypeAll},
		}, activeIndex()},
		StreamSpecification: &ddbtypes.StreamSpecification{
			StreamEnabled:  aws.Bool(true),
			StreamViewType: ddbtypes.StreamViewTypeNewAndOldImages,
		},
	}
}

// CreateTable creates the table described by TableInput, waits (up to
// CreateTableMaxWait, or until ctx ends) until it is ACTIVE, and enables TTL on the
// attribute "ttl". A table that already exists with the same key schema and GSI1 is
// not an error (its billing mode and stream are left as they are), with or
// without the index ACTIVE (a table made before it: add it with
// EnsureActiveRunIndex); one with another schema is an error wrapping
// ErrSchemaMismatch. Safe to call from many processes
// at once. A nil client (a typed nil included) or an empty table name is an error
// wrapping provider.ErrInvalidArgument.
func CreateTable(ctx context.Context, client TableAPI, table string) error {
	if nilcheck.IsNil(client) {
		return provider.Invalidf("dynamodb: CreateTable: nil client")
	}
	if table == "" {
		return provider.Invalidf("dynamodb: CreateTable: empty table name")
	}
	return ddbx.EnsureTable(ctx, client, TableInput(table), attrTTL, CreateTableMaxWait, indexActive)
}

// activeIndex is the definition of the index ACTIVE.
func activeIndex() ddbtypes.GlobalSecondaryIndex {
	return ddbtypes.GlobalSecondaryIndex{
		IndexName: aws.String(indexActive),
		KeySchema: []ddbtypes.KeySchemaElement{
			{AttributeName: aws.String(attrActPK), KeyType: ddbtypes.KeyTypeHash},
			{AttributeName: aws.String(attrActSK), KeyType: ddbtypes.KeyTypeRange},
		},
		Projection: &ddbtypes.Projection{ProjectionType: ddbtypes.ProjectionTypeKeysOnly},
	}
}

// IndexAPI is the subset of *ddb.Client that EnsureActiveRunIndex calls.
type IndexAPI interface {
	DescribeTable(ctx context.Context, in *ddb.DescribeTableInput, optFns ...func(*ddb.Options)) (*ddb.DescribeTableOutput, error)
	UpdateTable(ctx context.Context, in *ddb.UpdateTableInput, optFns ...func(*ddb.Options)) (*ddb.UpdateTableOutput, error)
}

var _ IndexAPI = (*ddb.Client)(nil)

// EnsureActiveRunIndex adds the index ACTIVE (see "Active runs" in the package
// doc) to an existing table that lacks it, with one UpdateTable (a provisioned
// table's index gets the table's capacity), and returns once DynamoDB accepted
// it; a table that has it already (being built or built) is left as it is.
// Idempotent, and safe from many processes at once. It does not wait for
// DynamoDB to build the index (on AWS, minutes to hours for a large table):
// until it is ACTIVE, ListActiveRuns fails with ErrNoActiveRunIndex; poll
// DescribeTable's IndexStatus to know. An index ACTIVE of another key schema or
// projection is an error wrapping ErrSchemaMismatch. A nil client or an empty
// table name is an error wrapping provider.ErrInvalidArgument. It needs
// dynamodb:DescribeTable and dynamodb:UpdateTable on the table.
func EnsureActiveRunIndex(ctx context.Context, client IndexAPI, table string) error {
	if nilcheck.IsNil(client) {
		return provider.Invalidf("dynamodb: EnsureActiveRunIndex: nil client")
	}
	if table == "" {
		return provider.Invalidf("dynamodb: EnsureActiveRunIndex: empty table name")
	}
	has := func() (*ddbtypes.TableDescription, bool, error) {
		out, err := client.DescribeTable(ctx, &ddb.DescribeTableInput{TableName: &table})
		if err != nil {
			return nil, false, fmt.Errorf("dynamodb: EnsureActiveRunIndex: %w", err)
		}
		want := activeIndex()
		for _, g := range out.Table.GlobalSecondaryIndexes {
			if aws.ToString(g.IndexName) != indexActive {
				continue
			}
			if !slices.EqualFunc(g.KeySchema, want.KeySchema, func(a, b ddbtypes.KeySchemaElement) bool {
				return aws.ToString(a.AttributeName) == aws.ToString(b.AttributeName) && a.KeyType == b.KeyType
			}) || g.Projection == nil || g.Projection.ProjectionType != want.Projection.ProjectionType {
				return nil, false, fmt.Errorf("dynamodb: EnsureActiveRunIndex: table %s: %w: index %s has another key schema or projection", table, ErrSchemaMismatch, indexActive)
			}
			return out.Table, true, nil
		}
		return out.Table, false, nil
	}
	desc, ok, err := has()
	if err != nil || ok {
		return err
	}
	create := &ddbtypes.CreateGlobalSecondaryIndexAction{
		IndexName: aws.String(indexActive), KeySchema: activeIndex().KeySchema, Projection: activeIndex().Projection,
	}
	if desc.BillingModeSummary == nil || desc.BillingModeSummary.BillingMode != ddbtypes.BillingModePayPerRequest {
		if t := desc.ProvisionedThroughput; t != nil && aws.ToInt64(t.ReadCapacityUnits) > 0 {
			create.ProvisionedThroughput = &ddbtypes.ProvisionedThroughput{ReadCapacityUnits: t.ReadCapacityUnits, WriteCapacityUnits: t.WriteCapacityUnits}
		}
	}
	in := TableInput(table)
	_, uerr := client.UpdateTable(ctx, &ddb.UpdateTableInput{
		TableName:                   &table,
		AttributeDefinitions:        in.AttributeDefinitions[len(in.AttributeDefinitions)-2:],
		GlobalSecondaryIndexUpdates: []ddbtypes.GlobalSecondaryIndexUpdate{{Create: create}},
	})
	if uerr == nil {
		return nil
	}
	// Another process may have added it meanwhile (ResourceInUse, or a
	// validation error naming the index that exists now).
	if _, ok, err := has(); err == nil && ok {
		return nil
	}
	return fmt.Errorf("dynamodb: EnsureActiveRunIndex: table %s: %w", table, uerr)
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
