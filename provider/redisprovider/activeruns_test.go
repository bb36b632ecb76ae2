package redisprovider_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/redisprovider"
	"github.com/pipestate/pipestate/types"
)

// TestActiveRunsCostIndependentOfPipelines: finding the 5 stuck runs among
// pipelines that each have finished runs costs the same round trips with 10
// pipelines as with 1,000 (the scan it replaces: 1 + 1 per pipeline).
func TestActiveRunsCostIndependentOfPipelines(t *testing.T) {
	trips := map[int]int64{}
	for _, pipelines := range []int{10, 1000} {
		m := miniredis.RunT(t)
		c := goredis.NewClient(&goredis.Options{Addr: m.Addr()})
		t.Cleanup(func() { _ = c.Close() })
		counter := testenv.CountRedis(c)
		p, err := redisprovider.New(c)
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		if err := p.Start(ctx); err != nil { // loads the scripts
			t.Fatal(err)
		}
		old := time.Now().Add(-2 * time.Hour)
		var want []string
		for i := range pipelines {
			pid := fmt.Sprintf("pipe-%04d", i)
			for j := range 2 {
				r := types.RunState{RunID: fmt.Sprintf("%s-run-%d", pid, j), PipelineID: pid, Status: types.RunCompleted, CreatedAt: old, UpdatedAt: old}
				if i%(pipelines/5) == 0 && j == 1 {
					r.Status = types.RunRunning
					want = append(want, r.RunID)
				}
				if err := p.PutRunState(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
		}
		counter.Reset()
		got, next, err := p.ListActiveRuns(ctx, provider.ActiveRunFilter{
			Statuses: []types.RunStatus{types.RunRunning}, NotUpdatedSince: time.Now().Add(-time.Hour)}, "", 1000)
		if err != nil || next != "" {
			t.Fatalf("ListActiveRuns = next %q, %v", next, err)
		}
		trips[pipelines] = counter.Load()
		var ids []string
		for _, r := range got {
			ids = append(ids, r.RunID)
		}
		if !slices.Equal(ids, want) {
			t.Fatalf("%d pipelines: ListActiveRuns = %q, want %q", pipelines, ids, want)
		}
	}
	if trips[10] != trips[1000] || trips[10] > 2 {
		t.Errorf("round trips: %d with 10 pipelines, %d with 1,000; want the same, at most 2", trips[10], trips[1000])
	}
}
