package ddbprovider_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/internal/testkit/steadyload"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/providertest"
)

// conformancePage caps every Query page of the conformance providers, so that the
// suite's long lists span several pages (DynamoDB's own 1 MB pages would hold them
// whole) and stay short enough for DynamoDB Local.
const conformancePage = 20

// conformanceRetention is the event retention of the conformance providers.
const conformanceRetention = 30 * 24 * time.Hour

// pageCap caps the Limit of every Query at n items.
type pageCap struct {
	ddbprovider.API
	n int32
}

func (a pageCap) Query(ctx context.Context, in *ddb.QueryInput, optFns ...func(*ddb.Options)) (*ddb.QueryOutput, error) {
	page := *in
	if page.Limit == nil || *page.Limit > a.n {
		page.Limit = &a.n
	}
	return a.API.Query(ctx, &page, optFns...)
}

// TestConformance runs the whole provider conformance suite against DynamoDB Local:
// one table and one fake clock per subtest, shared by the providers it opens.
func TestConformance(t *testing.T) {
	testEnv(t) // skip (or fail under make test) early without DynamoDB Local
	providertest.Run(t, conformanceHarness())
}

// conformanceHarness is the suite's harness on DynamoDB Local, for providers
// opened with opts.
func conformanceHarness(opts ...ddbprovider.Option) providertest.Harness {
	open := func(t *testing.T, more ...ddbprovider.Option) provider.Provider {
		e := testEnv(t)
		all := append([]ddbprovider.Option{ddbprovider.WithEventRetention(conformanceRetention)}, opts...)
		return openOn(t, pageCap{e.client, conformancePage}, e, append(all, more...)...)
	}
	return providertest.Harness{
		Open:         func(t *testing.T) provider.Provider { return open(t) },
		OpenOwner:    func(t *testing.T, owner string) provider.Provider { return open(t, ddbprovider.WithOwner(owner)) },
		Sleep:        func(t *testing.T, d time.Duration) { testEnv(t).clock.Advance(d) },
		Now:          func(t *testing.T) time.Time { return testEnv(t).clock.Now() },
		ExpireEvents: func(t *testing.T, _ string) { testEnv(t).clock.Advance(conformanceRetention) },
		// The marker log keeps entries for DefaultMarkerRetention.
		ExpireMarkers: func(t *testing.T) { testEnv(t).clock.Advance(ddbprovider.DefaultMarkerRetention) },
		ListPage:      conformancePage,
		Corrupt: func(t *testing.T, kind provider.RecordKind, id ...string) {
			corruptRecord(t, testEnv(t), kind, id...)
		},
		DropActiveEntry: func(t *testing.T, runID string) { dropActiveEntry(t, testEnv(t), runID) },
		Retention:       provider.DefaultRetention(), // the default, whose Events is conformanceRetention
		OpenReadOnly:    func(t *testing.T) provider.Provider { return open(t, ddbprovider.WithReadOnly()) },
	}
}

// TestRetentionPlateau runs steadyload's workload (one run a simulated day, with
// every record kind) for 21 simulated days with a 7-day retention of every kind
// and checks that the live items of the table (those DynamoDB's TTL keeps, by the
// provider's clock; DynamoDB Local never deletes by TTL) are as many on day 21 as
// at the end of week 2, within 5%. (DynamoDB Local takes 100-300 ms a write on a
// loaded machine, hence the small scale; the Redis test runs the same workload
// larger.)
func TestRetentionPlateau(t *testing.T) {
	if testing.Short() {
		t.Skip("60 simulated days of writes on DynamoDB Local")
	}
	e := testEnv(t)
	r := steadyload.Retention(7 * 24 * time.Hour)
	r.Events, r.MarkerLog = r.Runs, r.Runs
	p := openOn(t, e.client, e, ddbprovider.WithRetention(r))
	var live []int
	measure := func(int) error {
		n, err := liveItems(t.Context(), e)
		live = append(live, n)
		return err
	}
	load := steadyload.Load{RunsPerDay: 1, Pipelines: 1, Days: 21}
	if err := load.Run(t.Context(), p, e.clock.Advance, measure); err != nil {
		t.Fatal(err)
	}
	week2, last := live[13], live[len(live)-1]
	t.Logf("live items: day 14 %d, day 21 %d", week2, last)
	if float64(last) > 1.05*float64(week2) {
		t.Errorf("the live items grow after the first week: day 14 %d, day 21 %d", week2, last)
	}
}

// liveItems counts the items of e's table that have not expired by its clock.
func liveItems(ctx context.Context, e *env) (int, error) {
	now := strconv.FormatInt(e.clock.Now().UnixNano(), 10)
	in := &ddb.ScanInput{
		TableName:                 &e.table,
		Select:                    ddbtypes.SelectCount,
		FilterExpression:          aws.String("attribute_not_exists(#exp) OR #exp > :now"),
		ExpressionAttributeNames:  map[string]string{"#exp": "exp"},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":now": &ddbtypes.AttributeValueMemberN{Value: now}},
	}
	n := 0
	for {
		out, err := e.client.Scan(ctx, in)
		if err != nil {
			return 0, err
		}
		n += int(out.Count)
		if len(out.LastEvaluatedKey) == 0 {
			return n, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}
