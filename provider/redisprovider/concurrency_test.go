package redisprovider_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider/redisprovider"
	"github.com/pipestate/pipestate/types"
)

// listKind is one kind of indexed list: create makes a new record with ID i, poll
// lists the way a busy reader does, and all returns the IDs the list shows.
type listKind struct {
	name   string
	create func(ctx context.Context, p *redisprovider.Provider, i int) error
	poll   func(ctx context.Context, p *redisprovider.Provider) error
	all    func(ctx context.Context, p *redisprovider.Provider) ([]string, error)
}

func listKinds() []listKind {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	id := func(i int) string { return fmt.Sprintf("id%04d", i) }
	date := func(i int) string { return base.AddDate(0, 0, i).Format(time.DateOnly) }
	rerun := func(i int) types.RerunRecord {
		return types.RerunRecord{RerunID: id(i), PipelineID: "p", OriginalDate: "2026-01-01", Status: types.RequestPending}
	}
	ids := func(n int, get func(j int) string) []string {
		out := make([]string, n)
		for j := range out {
			out[j] = get(j)
		}
		return out
	}
	return []listKind{
		{"runs",
			func(ctx context.Context, p *redisprovider.Provider, i int) error {
				return p.PutRunState(ctx, types.RunState{RunID: id(i), PipelineID: "p", Status: types.RunPending})
			},
			func(ctx context.Context, p *redisprovider.Provider) error {
				_, err := p.ListRuns(ctx, "p", 5)
				return err
			},
			func(ctx context.Context, p *redisprovider.Provider) ([]string, error) {
				rs, err := p.ListRuns(ctx, "p", 100000)
				return ids(len(rs), func(j int) string { return rs[j].RunID }), err
			}},
		{"reruns",
			func(ctx context.Context, p *redisprovider.Provider, i int) error { return p.PutRerun(ctx, rerun(i)) },
			func(ctx context.Context, p *redisprovider.Provider) error {
				_, err := p.ListReruns(ctx, "p", 5)
				return err
			},
			func(ctx context.Context, p *redisprovider.Provider) ([]string, error) {
				rs, err := p.ListReruns(ctx, "p", 100000)
				return ids(len(rs), func(j int) string { return rs[j].RerunID }), err
			}},
		{"all_reruns",
			func(ctx context.Context, p *redisprovider.Provider, i int) error { return p.PutRerun(ctx, rerun(i)) },
			func(ctx context.Context, p *redisprovider.Provider) error {
				_, err := p.ListAllReruns(ctx, 5)
				return err
			},
			func(ctx context.Context, p *redisprovider.Provider) ([]string, error) {
				rs, err := p.ListAllReruns(ctx, 100000)
				return ids(len(rs), func(j int) string { return rs[j].RerunID }), err
			}},
		{"pipelines",
			func(ctx context.Context, p *redisprovider.Provider, i int) error {
				return p.RegisterPipeline(ctx, types.PipelineConfig{ID: id(i)})
			},
			func(ctx context.Context, p *redisprovider.Provider) error { _, err := p.ListPipelines(ctx); return err },
			func(ctx context.Context, p *redisprovider.Provider) ([]string, error) {
				cs, err := p.ListPipelines(ctx)
				return ids(len(cs), func(j int) string { return cs[j].ID }), err
			}},
		{"replays",
			func(ctx context.Context, p *redisprovider.Provider, i int) error {
				return p.PutReplay(ctx, types.ReplayRequest{PipelineID: "p", Date: date(i), Status: types.RequestPending})
			},
			func(ctx context.Context, p *redisprovider.Provider) error {
				_, err := p.ListReplays(ctx, 5)
				return err
			},
			func(ctx context.Context, p *redisprovider.Provider) ([]string, error) {
				rs, err := p.ListReplays(ctx, 100000)
				return ids(len(rs), func(j int) string { return rs[j].Date }), err
			}},
	}
}

// TestListsKeepNewEntries runs writers that create new IDs while readers list
// (which repairs what it skips): when the writers are done, every record they
// created is listed. A reader's repair must never undo a writer's final step.
func TestListsKeepNewEntries(t *testing.T) {
	const writers, readers, perWriter = 4, 4, 50
	for name, h := range lockHarnesses(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, k := range listKinds() {
				t.Run(k.name, func(t *testing.T) {
					ctx := t.Context()
					ps := []*redisprovider.Provider{h.open(t), h.open(t)}
					var wg, rg sync.WaitGroup
					done := make(chan struct{})
					for r := range readers {
						rg.Add(1)
						go func() {
							defer rg.Done()
							for {
								select {
								case <-done:
									return
								default:
								}
								if err := k.poll(ctx, ps[r%2]); err != nil {
									t.Error(err)
									return
								}
							}
						}()
					}
					for w := range writers {
						wg.Add(1)
						go func() {
							defer wg.Done()
							for i := range perWriter {
								if err := k.create(ctx, ps[w%2], w*perWriter+i); err != nil {
									t.Error(err)
									return
								}
							}
						}()
					}
					wg.Wait()
					close(done)
					rg.Wait()
					got, err := k.all(ctx, ps[0])
					if err != nil {
						t.Fatal(err)
					}
					seen := map[string]bool{}
					for _, id := range got {
						if seen[id] {
							t.Errorf("%s listed twice", id)
						}
						seen[id] = true
					}
					if len(seen) != writers*perWriter {
						t.Fatalf("listed %d of the %d records created", len(seen), writers*perWriter)
					}
				})
			}
		})
	}
}

// TestListsAreSnapshots lists more records than one internal page while writers
// keep moving some of them (re-puts with another sort time): no listing returns a
// record twice, and every record that did not move is in every listing.
func TestListsAreSnapshots(t *testing.T) {
	const total, movers = 300, 12 // more than one page of 256
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(i, round int) time.Time {
		if i < movers && round%2 == 1 {
			return base.Add(-time.Duration(i+1) * time.Hour) // older than all
		}
		if i < movers {
			return base.Add(time.Duration(total+i) * time.Minute) // newer than all
		}
		return base.Add(time.Duration(i) * time.Minute)
	}
	id := func(i int) string { return fmt.Sprintf("id%04d", i) }
	type kind struct {
		name string
		put  func(ctx context.Context, p *redisprovider.Provider, i, round int) error
		list []func(ctx context.Context, p *redisprovider.Provider) ([]string, error)
	}
	kinds := []kind{
		{"runs", func(ctx context.Context, p *redisprovider.Provider, i, round int) error {
			return p.PutRunState(ctx, types.RunState{RunID: id(i), PipelineID: "p", Status: types.RunPending, CreatedAt: at(i, round)})
		}, []func(ctx context.Context, p *redisprovider.Provider) ([]string, error){
			func(ctx context.Context, p *redisprovider.Provider) ([]string, error) {
				rs, err := p.ListRuns(ctx, "p", total)
				return mapIDs(rs, func(r types.RunState) string { return r.RunID }), err
			}}},
		{"reruns", func(ctx context.Context, p *redisprovider.Provider, i, round int) error {
			return p.PutRerun(ctx, types.RerunRecord{RerunID: id(i), PipelineID: "p", OriginalDate: "2026-01-01",
				Status: types.RequestPending, RequestedAt: at(i, round)})
		}, []func(ctx context.Context, p *redisprovider.Provider) ([]string, error){
			func(ctx context.Context, p *redisprovider.Provider) ([]string, error) {
				rs, err := p.ListReruns(ctx, "p", total)
				return mapIDs(rs, func(r types.RerunRecord) string { return r.RerunID }), err
			},
			func(ctx context.Context, p *redisprovider.Provider) ([]string, error) {
				rs, err := p.ListAllReruns(ctx, total)
				return mapIDs(rs, func(r types.RerunRecord) string { return r.RerunID }), err
			}}},
		{"replays", func(ctx context.Context, p *redisprovider.Provider, i, round int) error {
			return p.PutReplay(ctx, types.ReplayRequest{PipelineID: "p", Date: id(i), Status: types.RequestPending, CreatedAt: at(i, round)})
		}, []func(ctx context.Context, p *redisprovider.Provider) ([]string, error){
			func(ctx context.Context, p *redisprovider.Provider) ([]string, error) {
				rs, err := p.ListReplays(ctx, total)
				return mapIDs(rs, func(r types.ReplayRequest) string { return r.Date }), err
			}}},
	}
	for name, h := range lockHarnesses(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, k := range kinds {
				t.Run(k.name, func(t *testing.T) {
					ctx := t.Context()
					ps := []*redisprovider.Provider{h.open(t), h.open(t)}
					var setup sync.WaitGroup
					for w := range 4 {
						setup.Add(1)
						go func() {
							defer setup.Done()
							for i := w; i < total; i += 4 {
								if err := k.put(ctx, ps[0], i, 0); err != nil {
									t.Error(err)
									return
								}
							}
						}()
					}
					setup.Wait()
					if t.Failed() {
						return
					}
					done := make(chan struct{})
					var wg sync.WaitGroup
					for w := range 2 {
						wg.Add(1)
						go func() {
							defer wg.Done()
							for round := 1; ; round++ {
								for i := w; i < movers; i += 2 {
									select {
									case <-done:
										return
									default:
									}
									if err := k.put(ctx, ps[1], i, round); err != nil {
										t.Error(err)
										return
									}
								}
							}
						}()
					}
					defer func() { close(done); wg.Wait() }()
					for range 5 {
						for _, list := range k.list {
							got, err := list(ctx, ps[0])
							if err != nil {
								t.Fatal(err)
							}
							seen := map[string]bool{}
							for _, x := range got {
								if seen[x] {
									t.Errorf("%s listed twice", x)
								}
								seen[x] = true
							}
							for i := movers; i < total; i++ {
								if !seen[id(i)] {
									t.Errorf("%s, never moved, is missing from a listing of %d", id(i), len(got))
								}
							}
							if t.Failed() {
								return
							}
						}
					}
				})
			}
		})
	}
}

func mapIDs[T any](xs []T, id func(T) string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = id(x)
	}
	return out
}
