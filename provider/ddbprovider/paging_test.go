package ddbprovider_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/types"
)

// pagingAPI caps every Query page at two items and calls afterFirst once, after
// the first page, to change the list while a call pages through it.
type pagingAPI struct {
	ddbprovider.API
	afterFirst func()
}

func (a *pagingAPI) Query(ctx context.Context, in *ddb.QueryInput, optFns ...func(*ddb.Options)) (*ddb.QueryOutput, error) {
	page := *in
	if page.Limit == nil || *page.Limit > 2 {
		two := int32(2)
		page.Limit = &two
	}
	out, err := a.API.Query(ctx, &page, optFns...)
	if f := a.afterFirst; f != nil {
		a.afterFirst = nil
		f()
	}
	return out, err
}

// TestListsAcrossPages lists six entities through pages of two while the first one
// listed (newest) is re-put with an older sort key after the first page: every
// List*(6) returns no duplicates and every entity that did not change.
func TestListsAcrossPages(t *testing.T) {
	e := testEnv(t)
	p := open(t)
	ctx := context.Background()
	t0 := e.clock.Now()
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }
	const n = 6
	for _, tc := range []struct {
		name string
		put  func(i int, when time.Time) error // entity i, sort time when
		list func(p *ddbprovider.Provider) ([]string, error)
	}{
		{"ListRuns", func(i int, when time.Time) error {
			return p.PutRunState(ctx, types.RunState{RunID: fmt.Sprint("r", i), PipelineID: "pr", Status: types.RunPending, CreatedAt: when})
		}, func(p *ddbprovider.Provider) ([]string, error) {
			rs, err := p.ListRuns(ctx, "pr", n)
			return ids(rs, func(r types.RunState) string { return r.RunID }), err
		}},
		{"ListReruns", func(i int, when time.Time) error { return putRerun(ctx, p, i, when) },
			func(p *ddbprovider.Provider) ([]string, error) {
				rs, err := p.ListReruns(ctx, "pq", n)
				return ids(rs, func(r types.RerunRecord) string { return r.RerunID }), err
			}},
		{"ListAllReruns", func(i int, when time.Time) error { return putRerun(ctx, p, i, when) },
			func(p *ddbprovider.Provider) ([]string, error) {
				rs, err := p.ListAllReruns(ctx, n)
				return ids(rs, func(r types.RerunRecord) string { return r.RerunID }), err
			}},
		{"ListReplays", func(i int, when time.Time) error {
			return p.PutReplay(ctx, types.ReplayRequest{PipelineID: "pp", Date: fmt.Sprint("d", i), Status: types.RequestPending, CreatedAt: when})
		}, func(p *ddbprovider.Provider) ([]string, error) {
			rs, err := p.ListReplays(ctx, n)
			return ids(rs, func(r types.ReplayRequest) string { return r.Date }), err
		}},
		{"ListCascadeMarkers", func(i int, when time.Time) error {
			back := e.clock.Now().Sub(when)
			e.clock.Advance(-back) // markers take WrittenAt from the clock
			defer e.clock.Advance(back)
			return p.WriteCascadeMarker(ctx, "pm", "", fmt.Sprint("d", i), "up")
		}, func(p *ddbprovider.Provider) ([]string, error) {
			ms, err := p.ListCascadeMarkers(ctx, "pm", n)
			return ids(ms, func(m types.CascadeMarker) string { return m.Date }), err
		}},
		{"ListRunLogs", func(i int, when time.Time) error {
			return p.PutRunLog(ctx, types.RunLogEntry{PipelineID: "pl", Date: fmt.Sprint("d", i), Status: types.RunRunning, UpdatedAt: when})
		}, func(p *ddbprovider.Provider) ([]string, error) {
			ls, err := p.ListRunLogs(ctx, "pl", n)
			return ids(ls, func(l types.RunLogEntry) string { return l.Date }), err
		}},
		{"ListPipelines", func(i int, when time.Time) error {
			return p.RegisterPipeline(ctx, types.PipelineConfig{ID: fmt.Sprint("p", i), Archetype: when.String()})
		}, func(p *ddbprovider.Provider) ([]string, error) {
			ps, err := p.ListPipelines(ctx)
			return ids(ps, func(c types.PipelineConfig) string { return c.ID }), err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range n {
				if err := tc.put(i, at(10+i)); err != nil {
					t.Fatal(err)
				}
			}
			api := &pagingAPI{API: e.client, afterFirst: func() {
				// Move the newest entity, already listed, between the two oldest:
				// within the limit, where it takes the oldest one's place.
				if err := tc.put(n-1, at(10).Add(time.Second/2)); err != nil {
					t.Error(err)
				}
			}}
			got, err := tc.list(openOn(t, api, e))
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for _, id := range got {
				if seen[id] {
					t.Errorf("%s listed twice in %v", id, got)
				}
				seen[id] = true
			}
			if len(seen) != n {
				t.Errorf("listed %v; want all %d entities once", got, n)
			}
		})
	}
}

func putRerun(ctx context.Context, p *ddbprovider.Provider, i int, when time.Time) error {
	return p.PutRerun(ctx, types.RerunRecord{RerunID: fmt.Sprint("x", i), PipelineID: "pq", OriginalDate: "2026-01-01",
		Status: types.RequestPending, RequestedAt: when})
}

func ids[T any](vs []T, id func(T) string) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = id(v)
	}
	return out
}

// TestGetTraitsPastFilteredPages reads a live trait before and one after five
// expired ones through pages of two items: DynamoDB's expiry filter leaves whole
// pages empty (but not last), and GetTraits reads on past them, returning the live
// traits only, in trait-type order.
func TestGetTraitsPastFilteredPages(t *testing.T) {
	e := testEnv(t)
	p := open(t)
	ctx := context.Background()
	for i := range 5 {
		if err := p.PutTrait(ctx, "p", types.TraitEvaluation{TraitType: fmt.Sprint("m", i), Status: types.TraitPass}, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []string{"a", "z"} {
		if err := p.PutTrait(ctx, "p", types.TraitEvaluation{TraitType: tt, Status: types.TraitPass}, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.Advance(time.Minute)
	trs, err := openOn(t, &pagingAPI{API: e.client}, e).GetTraits(ctx, "p")
	if got := ids(trs, func(tr types.TraitEvaluation) string { return tr.TraitType }); err != nil || fmt.Sprint(got) != "[a z]" {
		t.Fatalf("GetTraits = %v, %v; want [a z]", got, err)
	}
}
