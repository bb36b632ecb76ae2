package dynamodb_test

import (
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/dynamodb"
	"github.com/pipestate/pipestate/providertest"
)

// TestConformance runs the whole provider conformance suite against DynamoDB Local:
// one table and one fake clock per subtest, shared by the providers it opens.
func TestConformance(t *testing.T) {
	testEnv(t) // skip (or fail under make test) early without DynamoDB Local
	providertest.Run(t, providertest.Harness{
		Open:      func(t *testing.T) provider.Provider { return open(t) },
		OpenOwner: func(t *testing.T, owner string) provider.Provider { return open(t, dynamodb.WithOwner(owner)) },
		Sleep:     func(t *testing.T, d time.Duration) { testEnv(t).clock.Advance(d) },
	})
}
