package ddbx

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ErrSchemaMismatch is wrapped by EnsureTable's error when the table exists with
// another key schema, another GSI key schema or projection, or TTL on another
// attribute.
var ErrSchemaMismatch = errors.New("ddbx: table exists with a different schema")

// TableAPI is the subset of *ddb.Client that EnsureTable calls. The backends'
// table-creating functions take it, exported under their own name by a type alias
// (provider/ddbprovider.TableAPI), so that one client wrapper serves them all.
type TableAPI interface {
	CreateTable(ctx context.Context, in *ddb.CreateTableInput, optFns ...func(*ddb.Options)) (*ddb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *ddb.DescribeTableInput, optFns ...func(*ddb.Options)) (*ddb.DescribeTableOutput, error)
	DescribeTimeToLive(ctx context.Context, in *ddb.DescribeTimeToLiveInput, optFns ...func(*ddb.Options)) (*ddb.DescribeTimeToLiveOutput, error)
	UpdateTimeToLive(ctx context.Context, in *ddb.UpdateTimeToLiveInput, optFns ...func(*ddb.Options)) (*ddb.UpdateTimeToLiveOutput, error)
}

var _ TableAPI = (*ddb.Client)(nil)

// EnsureTable creates the table described by in unless a table of that name
// exists, waits up to maxWait until it is ACTIVE, and enables TTL on ttlAttribute
// (when not empty). An existing table is accepted when its key schema, the key
// types, and the key schema and projection type of every GSI in in match; extra
// GSIs, billing mode and stream settings are not compared; a GSI of in named in
// optional may be missing (a table made before it), but when present it must
// match. A mismatch returns an error wrapping ErrSchemaMismatch and changes
// nothing. Creating concurrently from several processes is safe.
func EnsureTable(ctx context.Context, api TableAPI, in *ddb.CreateTableInput, ttlAttribute string, maxWait time.Duration, optional ...string) error {
	name := deref(in.TableName)
	desc, err := describe(ctx, api, name)
	if err != nil {
		return err
	}
	if desc == nil {
		out, err := api.CreateTable(ctx, in)
		var inUse *ddbtypes.ResourceInUseException
		switch {
		case errors.As(err, &inUse): // created concurrently: compare below
			if desc, err = describe(ctx, api, name); err != nil {
				return err
			}
		case err != nil:
			return fmt.Errorf("create table %s: %w", name, err)
		default:
			desc = out.TableDescription
		}
	}
	if desc == nil {
		return fmt.Errorf("create table %s: table vanished while being created", name)
	}
	if err := sameSchema(in, desc, optional); err != nil {
		return fmt.Errorf("table %s: %w: %v", name, ErrSchemaMismatch, err)
	}
	if desc.TableStatus != ddbtypes.TableStatusActive {
		w := ddb.NewTableExistsWaiter(api, func(o *ddb.TableExistsWaiterOptions) {
			o.MinDelay, o.MaxDelay = time.Second, 10*time.Second
		})
		if err := w.Wait(ctx, &ddb.DescribeTableInput{TableName: &name}, maxWait); err != nil {
			return fmt.Errorf("wait for table %s: %w", name, err)
		}
	}
	if ttlAttribute == "" {
		return nil
	}
	return ensureTTL(ctx, api, name, ttlAttribute)
}

// describe returns the table's description, or nil when it does not exist.
func describe(ctx context.Context, api TableAPI, name string) (*ddbtypes.TableDescription, error) {
	out, err := api.DescribeTable(ctx, &ddb.DescribeTableInput{TableName: &name})
	var notFound *ddbtypes.ResourceNotFoundException
	if errors.As(err, &notFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("describe table %s: %w", name, err)
	}
	return out.Table, nil
}

// ensureTTL enables TTL on attr unless it is enabled (or being enabled) already.
// When the update fails, TTL is described again: a concurrent EnsureTable may have
// enabled it in between (DynamoDB then refuses the update with "TimeToLive is
// already enabled"), which is success.
func ensureTTL(ctx context.Context, api TableAPI, name, attr string) error {
	if on, err := ttlOn(ctx, api, name, attr); on || err != nil {
		return err
	}
	enabled := true
	_, err := api.UpdateTimeToLive(ctx, &ddb.UpdateTimeToLiveInput{
		TableName:               &name,
		TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{AttributeName: &attr, Enabled: &enabled},
	})
	if err == nil {
		return nil
	}
	switch on, derr := ttlOn(ctx, api, name, attr); {
	case on:
		return nil
	case errors.Is(derr, ErrSchemaMismatch):
		return derr
	}
	return fmt.Errorf("enable ttl on %s: %w", name, err)
}

// ttlOn reports whether TTL on table name is enabled or being enabled on attr; TTL
// on another attribute is an error wrapping ErrSchemaMismatch.
func ttlOn(ctx context.Context, api TableAPI, name, attr string) (bool, error) {
	out, err := api.DescribeTimeToLive(ctx, &ddb.DescribeTimeToLiveInput{TableName: &name})
	if err != nil {
		return false, fmt.Errorf("describe ttl of %s: %w", name, err)
	}
	d := out.TimeToLiveDescription
	if d == nil || (d.TimeToLiveStatus != ddbtypes.TimeToLiveStatusEnabled && d.TimeToLiveStatus != ddbtypes.TimeToLiveStatusEnabling) {
		return false, nil
	}
	if got := deref(d.AttributeName); got != attr {
		return false, fmt.Errorf("table %s: %w: ttl is on %q, want %q", name, ErrSchemaMismatch, got, attr)
	}
	return true, nil
}

func sameSchema(want *ddb.CreateTableInput, got *ddbtypes.TableDescription, optional []string) error {
	if !sameKeys(want.KeySchema, got.KeySchema) {
		return fmt.Errorf("key schema %s, want %s", keysString(got.KeySchema), keysString(want.KeySchema))
	}
	types := map[string]ddbtypes.ScalarAttributeType{}
	for _, a := range got.AttributeDefinitions {
		types[deref(a.AttributeName)] = a.AttributeType
	}
	for _, a := range want.AttributeDefinitions {
		if t, ok := types[deref(a.AttributeName)]; (ok || !onlyOptionalKey(want, deref(a.AttributeName), optional)) && t != a.AttributeType {
			return fmt.Errorf("attribute %s has type %q, want %q", deref(a.AttributeName), t, a.AttributeType)
		}
	}
	for _, w := range want.GlobalSecondaryIndexes {
		i := slices.IndexFunc(got.GlobalSecondaryIndexes, func(g ddbtypes.GlobalSecondaryIndexDescription) bool {
			return deref(g.IndexName) == deref(w.IndexName)
		})
		if i < 0 && slices.Contains(optional, deref(w.IndexName)) {
			continue
		}
		if i < 0 {
			return fmt.Errorf("missing index %s", deref(w.IndexName))
		}
		g := got.GlobalSecondaryIndexes[i]
		if !sameKeys(w.KeySchema, g.KeySchema) {
			return fmt.Errorf("index %s key schema %s, want %s", deref(w.IndexName), keysString(g.KeySchema), keysString(w.KeySchema))
		}
		if w.Projection != nil && (g.Projection == nil || g.Projection.ProjectionType != w.Projection.ProjectionType) {
			return fmt.Errorf("index %s has another projection", deref(w.IndexName))
		}
	}
	return nil
}

// onlyOptionalKey reports whether attr is a key attribute of optional GSIs of
// want only: a table without those GSIs need not define it.
func onlyOptionalKey(want *ddb.CreateTableInput, attr string, optional []string) bool {
	in := func(ks []ddbtypes.KeySchemaElement) bool {
		return slices.ContainsFunc(ks, func(k ddbtypes.KeySchemaElement) bool { return deref(k.AttributeName) == attr })
	}
	if in(want.KeySchema) {
		return false
	}
	found := false
	for _, g := range want.GlobalSecondaryIndexes {
		if in(g.KeySchema) {
			if !slices.Contains(optional, deref(g.IndexName)) {
				return false
			}
			found = true
		}
	}
	return found
}

func sameKeys(a, b []ddbtypes.KeySchemaElement) bool {
	return slices.EqualFunc(a, b, func(x, y ddbtypes.KeySchemaElement) bool {
		return deref(x.AttributeName) == deref(y.AttributeName) && x.KeyType == y.KeyType
	})
}

func keysString(ks []ddbtypes.KeySchemaElement) string {
	s := ""
	for i, k := range ks {
		if i > 0 {
			s += ","
		}
		s += deref(k.AttributeName) + "/" + string(k.KeyType)
	}
	return "[" + s + "]"
}

// ReplicaRegions returns the regions of the table's Global Tables replicas as
// DescribeTable reports them (its Replicas), nil for a table that is not
// replicated. It fails for a table that does not exist.
func ReplicaRegions(ctx context.Context, api TableAPI, name string) ([]string, error) {
	t, err := describe(ctx, api, name)
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, fmt.Errorf("describe table %s: no such table", name)
	}
	var regions []string
	for _, r := range t.Replicas {
		if r.RegionName != nil {
			regions = append(regions, *r.RegionName)
		}
	}
	return regions, nil
}
