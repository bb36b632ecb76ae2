package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// maxClearItems bounds how many items a pooled table may hold when its test ends
// for it to be emptied and reused; a fuller table is deleted instead, which is then
// cheaper. A variable for the pool's test.
var maxClearItems = 250

// DynamoDBPooledTable returns the name of an empty table for t's exclusive use
// until t ends: one of this process's tables of the same kind that an earlier
// test returned, or a new one made by create. When t ends, also when it fails, its
// items are deleted and the table goes back to the pool, unless t failed, the
// table holds more than 250 items, or its description (keys, indexes, stream,
// billing, TTL) changed since create made it: then it is deleted, as
// DynamoDBTable does. Main deletes the pooled tables after the tests.
//
// Creating a table on DynamoDB Local takes seconds; emptying a small one takes a
// few requests. kind names what create makes: every table of a kind must be
// interchangeable. create gets a client of its own, never one a test instruments,
// so that a test's counters and faults see the same requests whether its table is
// new or reused. A test whose package does not call Main from TestMain gets a new
// table that is deleted when it ends.
func DynamoDBPooledTable(t testing.TB, kind string, create func(ctx context.Context, client *dynamodb.Client, name string) error) string {
	t.Helper()
	endpoint := DynamoDBEndpoint(t)
	p := tablePools.get(endpoint, kind)
	if !mainRuns.Load() {
		name := UniqueName(t)
		DynamoDBTable(t, p.client, name, func(ctx context.Context, name string) error { return create(ctx, p.client, name) })
		return name
	}
	name, err := p.take(create)
	if err != nil {
		t.Fatalf("testenv: pooled table of kind %s: %v", kind, err)
	}
	t.Cleanup(func() {
		if err := p.give(name, t.Failed()); err != nil {
			t.Errorf("testenv: return pooled table %s: %v", name, err)
		}
	})
	return name
}

// mainRuns is set by RunChecked: its end deletes the pooled tables.
var mainRuns atomic.Bool

// tablePools holds the process's table pools, one per endpoint and kind.
var tablePools = &pools{m: map[[2]string]*tablePool{}}

type pools struct {
	mu sync.Mutex
	m  map[[2]string]*tablePool
}

func (ps *pools) get(endpoint, kind string) *tablePool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	k := [2]string{endpoint, kind}
	if p, ok := ps.m[k]; ok {
		return p
	}
	p := &tablePool{kind: kind, client: newDynamoDBClient(endpoint), shape: map[string]string{}}
	ps.m[k] = p
	return p
}

// drain deletes every pooled table, free or not.
func (ps *pools) drain() error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var errs []error
	for _, p := range ps.m {
		errs = append(errs, p.drain())
	}
	return errors.Join(errs...)
}

// tablePool is the tables of one kind on one endpoint.
type tablePool struct {
	kind   string
	client *dynamodb.Client

	mu     sync.Mutex
	free   []string
	shape  map[string]string // every table of the pool -> its description when made
	served int               // takes
	made   int               // tables created
}

// take returns a free table, or makes one.
func (p *tablePool) take(create func(ctx context.Context, client *dynamodb.Client, name string) error) (string, error) {
	p.mu.Lock()
	p.served++
	if n := len(p.free); n > 0 {
		name := p.free[n-1]
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return name, nil
	}
	p.mu.Unlock()
	name := uniqueName("pool-" + p.kind)
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	err := create(ctx, p.client, name)
	var shape string
	if err == nil {
		shape, _, err = describeShape(ctx, p.client, name)
	}
	if err != nil {
		return "", errors.Join(err, deleteTable(p.client, name))
	}
	p.mu.Lock()
	p.shape[name] = shape
	p.made++
	p.mu.Unlock()
	return name, nil
}

// give empties name and puts it back in the pool, or deletes it when failed, when
// it cannot be emptied cheaply, or when its description changed.
func (p *tablePool) give(name string, failed bool) error {
	p.mu.Lock()
	want := p.shape[name]
	p.mu.Unlock()
	reuse := false
	if !failed {
		// An error emptying it (a slow server) only costs the reuse: the
		// table is deleted, and a failed delete fails the test, as with
		// DynamoDBTable.
		reuse, _ = p.empty(name, want)
	}
	if !reuse {
		p.mu.Lock()
		delete(p.shape, name)
		p.mu.Unlock()
		return deleteTable(p.client, name)
	}
	p.mu.Lock()
	p.free = append(p.free, name)
	p.mu.Unlock()
	return nil
}

// empty deletes name's items and reports whether the table can be reused: it still
// has the description want and was found empty after the deletions.
func (p *tablePool) empty(name, want string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	got, keys, err := describeShape(ctx, p.client, name)
	if err != nil || got != want {
		return false, nil // gone, or changed by the test: deleted instead
	}
	names := map[string]string{}
	var proj []string
	for i, k := range keys {
		ph := fmt.Sprintf("#k%d", i)
		names[ph] = aws.ToString(k.AttributeName)
		proj = append(proj, ph)
	}
	var items []map[string]types.AttributeValue
	pages := dynamodb.NewScanPaginator(p.client, &dynamodb.ScanInput{
		TableName: aws.String(name), ConsistentRead: aws.Bool(true),
		ProjectionExpression: aws.String(strings.Join(proj, ",")), ExpressionAttributeNames: names,
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return false, err
		}
		items = append(items, page.Items...)
		if len(items) > maxClearItems {
			return false, nil
		}
	}
	for chunk := range slices.Chunk(items, 25) {
		var reqs []types.WriteRequest
		for _, key := range chunk {
			reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: key}})
		}
		for len(reqs) > 0 {
			out, err := p.client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{name: reqs}})
			if err != nil {
				return false, err
			}
			reqs = out.UnprocessedItems[name]
		}
	}
	left, err := p.client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(name), ConsistentRead: aws.Bool(true), Select: types.SelectCount})
	if err != nil {
		return false, err
	}
	return left.Count == 0 && left.LastEvaluatedKey == nil, nil
}

// drain deletes every table of the pool; with -test.v it says how many tests the
// tables it made served.
func (p *tablePool) drain() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if testing.Verbose() && p.served > 0 {
		fmt.Fprintf(os.Stderr, "testenv: %d pooled %s tables served %d tests\n", p.made, p.kind, p.served)
	}
	var errs []error
	for name := range p.shape {
		errs = append(errs, deleteTable(p.client, name))
	}
	p.free, p.shape, p.served, p.made = nil, map[string]string{}, 0, 0
	return errors.Join(errs...)
}

// describeShape returns what of name's description a test could change and the
// next test would notice: status, keys, attribute types, indexes, stream, billing
// mode and TTL (ENABLING counts as ENABLED); and its key schema.
func describeShape(ctx context.Context, client *dynamodb.Client, name string) (string, []types.KeySchemaElement, error) {
	out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		return "", nil, err
	}
	d := out.Table
	var sb strings.Builder
	fmt.Fprintf(&sb, "status=%s keys=%s attrs=", d.TableStatus, keyString(d.KeySchema))
	attrs := make([]string, 0, len(d.AttributeDefinitions))
	for _, a := range d.AttributeDefinitions {
		attrs = append(attrs, aws.ToString(a.AttributeName)+":"+string(a.AttributeType))
	}
	slices.Sort(attrs)
	sb.WriteString(strings.Join(attrs, ","))
	var idx []string
	for _, g := range d.GlobalSecondaryIndexes {
		s := "gsi:" + aws.ToString(g.IndexName) + keyString(g.KeySchema) + string(g.IndexStatus)
		if g.Projection != nil {
			s += string(g.Projection.ProjectionType) + strings.Join(g.Projection.NonKeyAttributes, "+")
		}
		idx = append(idx, s)
	}
	for _, l := range d.LocalSecondaryIndexes {
		idx = append(idx, "lsi:"+aws.ToString(l.IndexName)+keyString(l.KeySchema))
	}
	slices.Sort(idx)
	fmt.Fprintf(&sb, " indexes=%s", strings.Join(idx, ","))
	if s := d.StreamSpecification; s != nil {
		fmt.Fprintf(&sb, " stream=%v/%s", aws.ToBool(s.StreamEnabled), s.StreamViewType)
	}
	if b := d.BillingModeSummary; b != nil {
		fmt.Fprintf(&sb, " billing=%s", b.BillingMode)
	}
	ttl, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err != nil {
		return "", nil, err
	}
	if t := ttl.TimeToLiveDescription; t != nil {
		status := t.TimeToLiveStatus
		if status == types.TimeToLiveStatusEnabling {
			status = types.TimeToLiveStatusEnabled
		}
		fmt.Fprintf(&sb, " ttl=%s/%s", status, aws.ToString(t.AttributeName))
	}
	return sb.String(), d.KeySchema, nil
}

func keyString(ks []types.KeySchemaElement) string {
	parts := make([]string, 0, len(ks))
	for _, k := range ks {
		parts = append(parts, aws.ToString(k.AttributeName)+"/"+string(k.KeyType))
	}
	return "[" + strings.Join(parts, ",") + "]"
}
