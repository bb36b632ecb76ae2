package observe

import (
	"testing"

	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/provider/memprovider"
	"github.com/pipestate/pipestate/provider/redisprovider"
	"github.com/pipestate/pipestate/state/ddbstate"
	"github.com/pipestate/pipestate/state/memstate"
	"github.com/pipestate/pipestate/state/redisstate"
)

// TestSystemOfBuiltins: each built-in backend keeps the db.system.name it had
// before its package was renamed (memprovider is "memory", not "memprovider"),
// so dashboards and alerts keyed on it keep working; another package is named
// by its package name.
func TestSystemOfBuiltins(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{(*memprovider.Provider)(nil), "memory"},
		{(*memstate.Deduper)(nil), "memory"},
		{(*redisprovider.Provider)(nil), "redis"},
		{(*redisstate.Int64SumStore)(nil), "redis"},
		{(*ddbprovider.Provider)(nil), "aws.dynamodb"},
		{(*ddbstate.Int64SumStore)(nil), "aws.dynamodb"},
		{(*testing.T)(nil), "testing"},
	} {
		if got := systemOf(tc.v); got != tc.want {
			t.Errorf("systemOf(%T) = %q, want %q", tc.v, got, tc.want)
		}
	}
}
