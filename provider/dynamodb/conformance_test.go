package dynamodb_test

import (
	"context"
	"testing"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/dynamodb"
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
	dynamodb.API
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
	open := func(t *testing.T, opts ...dynamodb.Option) provider.Provider {
		e := testEnv(t)
		return openOn(t, pageCap{e.client, conformancePage}, e, append([]dynamodb.Option{dynamodb.WithEventRetention(conformanceRetention)}, opts...)...)
	}
	providertest.Run(t, providertest.Harness{
		Open:         func(t *testing.T) provider.Provider { return open(t) },
		OpenOwner:    func(t *testing.T, owner string) provider.Provider { return open(t, dynamodb.WithOwner(owner)) },
		Sleep:        func(t *testing.T, d time.Duration) { testEnv(t).clock.Advance(d) },
		Now:          func(t *testing.T) time.Time { return testEnv(t).clock.Now() },
		ExpireEvents: func(t *testing.T, _ string) { testEnv(t).clock.Advance(conformanceRetention) },
		// The marker log keeps entries for DefaultMarkerRetention.
		ExpireMarkers: func(t *testing.T) { testEnv(t).clock.Advance(dynamodb.DefaultMarkerRetention) },
		ListPage:      conformancePage,
		Corrupt: func(t *testing.T, kind provider.RecordKind, id ...string) {
			corruptRecord(t, testEnv(t), kind, id...)
		},
	})
}
