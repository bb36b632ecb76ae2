package main

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// reindexCases run in order, after the fixtures lost their index entries.
var reindexCases = []goldenCase{
	{"reindex-missing", words("runs --all --status RUNNING,PENDING")},
	{"reindex-dry", words("runs reindex")},
	{"reindex-dry-json", words("runs reindex --from orders --json")},
	{"usage-reindex-reason", words("runs reindex --yes")},
	{"usage-reindex-from", []string{"runs", "reindex", "--from", "a b"}},
	{"usage-reindex-arg", words("runs reindex orders")},
	{"reindex-from", []string{"runs", "reindex", "--from", "orders", "--reason", "backfill, INC-7", "--as", "oncall@ops", "--yes"}},
	{"reindex", []string{"runs", "reindex", "--reason", "backfill, INC-7", "--as", "oncall@ops", "--yes"}},
	{"reindex-again", words("runs reindex")},
	{"reindex-found", words("runs --all --status RUNNING,PENDING")},
	{"reindex-history", words("run history r-b0")},
}

// TestReindex: runs written before the active-runs index (their entries
// removed) are missing from runs --all --status, the dry run lists them and
// writes nothing, --from resumes at a pipeline, and runs reindex --yes makes
// them found; each is indexed by ReindexRun, which leaves the run as it was
// (version, update time: a stuck run still looks stuck), also a run a fenced
// write wrote, with an audit event in the run's history.
func TestReindex(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		p := h.open(t, "")
		if _, ok := p.(provider.ActiveRunLister); !ok {
			t.Fatalf("%s does not implement provider.ActiveRunLister: every built-in backend keeps the active-runs index", h.name)
		}
		if h.unindex == nil {
			t.Fatalf("the harness of %s cannot remove its index entries (harness.unindex)", h.name)
		}
		fenced, err := provider.Fenced(p, h.lease)
		if err != nil {
			t.Fatal(err)
		}
		if err := fenced.PutRunState(ctx, types.RunState{RunID: "r-bf", PipelineID: "billing", Status: types.RunRunning,
			CreatedAt: at(21, 4, 30), UpdatedAt: at(21, 4, 30)}); err != nil {
			t.Fatal(err)
		}
		unfinished := []string{"r-0003", "r-0004", "r-b0", "r-b1", "r-bf"}
		before := map[string]types.RunState{}
		for _, id := range unfinished {
			r, err := p.GetRunState(ctx, id)
			if err != nil || r == nil {
				t.Fatalf("GetRunState(%s) = %v, %v", id, r, err)
			}
			before[id] = *r
		}
		h.unindex(t)
		// Written by this version: indexed by its write.
		if err := p.PutRunState(ctx, types.RunState{RunID: "r-0005", PipelineID: "orders", Status: types.RunPending,
			CreatedAt: at(21, 5, 58), UpdatedAt: at(21, 5, 58)}); err != nil {
			t.Fatal(err)
		}
		for _, c := range reindexCases {
			r := h.run(t, c.args...)
			compareGolden(t, h, c.name, transcript(t, c, r, h, nil))
			if strings.HasPrefix(c.name, "reindex-dry") || strings.HasPrefix(c.name, "usage-") {
				for _, id := range unfinished {
					if got, err := p.GetRunState(ctx, id); err != nil || !reflect.DeepEqual(*got, before[id]) {
						t.Fatalf("after %s: run %s = %+v, %v; want it unchanged %+v", c.name, id, got, err, before[id])
					}
				}
			}
		}
		for _, id := range unfinished {
			got, err := p.GetRunState(ctx, id)
			if err != nil || got == nil {
				t.Fatalf("GetRunState(%s) = %v, %v", id, got, err)
			}
			if want := before[id]; !reflect.DeepEqual(*got, want) {
				t.Errorf("run %s after runs reindex = %+v, want it unchanged %+v (ReindexRun writes nothing of the run)", id, *got, want)
			}
		}
		if got, err := p.GetRunState(ctx, "r-0005"); err != nil || got.Version != 0 {
			t.Errorf("r-0005, already indexed, = %+v, %v: want it not rewritten (version 0)", got, err)
		}
	})
}

// TestReindexRefusesWithoutIndex: a backend without the active-runs index is
// an error, and nothing is written.
func TestReindexRefusesWithoutIndex(t *testing.T) {
	h := memoryHarness(t)
	dial := func(ctx context.Context, tg target, now func() time.Time) (backend, error) {
		b, err := h.dial(ctx, tg, now)
		return noIndexBackend{b}, err
	}
	r := runInProcess(context.Background(), h.env, dial, "runs", "reindex", "--reason", "x", "--yes")
	if r.code != exitError || !strings.Contains(r.stderr, "no active-runs index") {
		t.Errorf("runs reindex without an index: exit %d, stderr %q; want exit %d naming the missing index", r.code, r.stderr, exitError)
	}
}

// noIndexBackend opens providers without provider.ActiveRunLister.
type noIndexBackend struct{ backend }

func (b noIndexBackend) provider(owner string, write bool) (provider.Provider, error) {
	p, err := b.backend.provider(owner, write)
	return struct{ provider.Provider }{p}, err
}

// TestReindexRestoresLostEntries: entries lost from a Redis index (the runs
// keep their mark that the entry was added, which a compare-and-swap trusts)
// are found as drift and restored, the runs unchanged. (The backfill's
// compare-and-swap onto itself restored none.)
func TestReindexRestoresLostEntries(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, h *harness) {
		if h.loseEntries == nil {
			t.Skip("the index is not kept apart from the runs")
		}
		ctx := context.Background()
		p := h.open(t, "")
		unfinished := []string{"r-0003", "r-0004", "r-b0", "r-b1"}
		before := map[string]types.RunState{}
		for _, id := range unfinished {
			r, err := p.GetRunState(ctx, id)
			if err != nil || r == nil {
				t.Fatalf("GetRunState(%s) = %v, %v", id, r, err)
			}
			before[id] = *r
		}
		h.loseEntries(t)
		r := h.run(t, "runs", "reindex", "--reason", "entries lost", "--yes")
		if r.code != exitOK || !strings.Contains(r.stdout, "indexed: 4, changed under it: 0 ") {
			t.Fatalf("runs reindex: exit %d, stdout %q, stderr %q; want 4 runs indexed", r.code, r.stdout, r.stderr)
		}
		runs, _, err := p.(provider.ActiveRunLister).ListActiveRuns(ctx, provider.ActiveRunFilter{}, "", 100)
		if err != nil || len(runs) != len(unfinished) {
			t.Fatalf("ListActiveRuns after runs reindex = %d runs, %v; want %d", len(runs), err, len(unfinished))
		}
		for _, run := range runs {
			if want := before[run.RunID]; !reflect.DeepEqual(run, want) {
				t.Errorf("run %s after runs reindex = %+v, want it unchanged %+v", run.RunID, run, want)
			}
		}
	})
}

// TestReindexFallsBackToCAS: a backend with the index but without
// provider.ActiveRunReindexer gets each run swapped onto itself (version +1,
// update time now), and the command says so on stderr.
func TestReindexFallsBackToCAS(t *testing.T) {
	h := memoryHarness(t)
	ctx := context.Background()
	p := h.open(t, "")
	before, err := p.GetRunState(ctx, "r-0003")
	if err != nil || before == nil {
		t.Fatalf("GetRunState(r-0003) = %v, %v", before, err)
	}
	h.unindex(t)
	dial := func(ctx context.Context, tg target, now func() time.Time) (backend, error) {
		b, err := h.dial(ctx, tg, now)
		return noReindexBackend{b}, err
	}
	r := runInProcess(context.Background(), h.env, dial, "runs", "reindex", "--from", "orders", "--reason", "backfill", "--yes")
	if r.code != exitOK || !strings.Contains(r.stderr, "no provider.ActiveRunReindexer") || !strings.Contains(r.stdout, "indexed: 2, changed under it: 0 ") {
		t.Fatalf("runs reindex: exit %d, stdout %q, stderr %q; want two runs indexed by a CAS, said on stderr", r.code, r.stdout, r.stderr)
	}
	after, err := p.GetRunState(ctx, "r-0003")
	if err != nil || after == nil || after.Version != before.Version+1 {
		t.Fatalf("r-0003 after the fallback = %+v, %v; want version %d", after, err, before.Version+1)
	}
}

// noReindexBackend opens providers with provider.ActiveRunLister but without
// provider.ActiveRunReindexer.
type noReindexBackend struct{ backend }

func (b noReindexBackend) provider(owner string, write bool) (provider.Provider, error) {
	p, err := b.backend.provider(owner, write)
	return listerOnly{p}, err
}

// listerOnly is a provider whose only optional interface is ActiveRunLister.
type listerOnly struct{ provider.Provider }

func (p listerOnly) ListActiveRuns(ctx context.Context, f provider.ActiveRunFilter, cursor string, limit int) ([]types.RunState, string, error) {
	return p.Provider.(provider.ActiveRunLister).ListActiveRuns(ctx, f, cursor, limit)
}

// TestReindexChangedUnderIt: a run that another writer changes between the
// scan and the rewrite keeps that writer's change (the CAS loses), is counted
// as changed under it, and is found, indexed by that writer's write.
func TestReindexChangedUnderIt(t *testing.T) {
	h := memoryHarness(t)
	ctx := context.Background()
	p := h.open(t, "")
	h.unindex(t)
	u := h.unindexed
	u.beforeWrite = func(id string) {
		r, err := p.GetRunState(ctx, id)
		if err != nil || r == nil {
			t.Errorf("GetRunState(%s) = %v, %v", id, r, err)
			return
		}
		r.Metadata = map[string]any{"by": "worker-2"}
		if ok, err := (unindexedProvider{p, u}).CompareAndSwapRunState(ctx, id, r.Version, *r); !ok || err != nil {
			t.Errorf("the concurrent CAS of %s = %v, %v", id, ok, err)
		}
	}
	r := h.run(t, "runs", "reindex", "--from", "orders", "--reason", "backfill", "--as", "oncall@ops", "--yes")
	if r.code != exitOK || !strings.Contains(r.stdout, "indexed: 1, changed under it: 1 ") {
		t.Fatalf("runs reindex: exit %d, stdout %q, stderr %q; want one run indexed and one changed under it", r.code, r.stdout, r.stderr)
	}
	r = h.run(t, "runs", "--all", "--status", "RUNNING,PENDING", "--json")
	for _, id := range []string{`"runId":"r-0003"`, `"runId":"r-0004"`, `"by":"worker-2"`} {
		if !strings.Contains(r.stdout, id) {
			t.Errorf("runs --all after the reindex: stdout %q lacks %s", r.stdout, id)
		}
	}
}

// TestSelfSwap: CompareAndSwapRunState(run, run), the backfill's rewrite, is
// accepted on every backend, for a run a fenced write wrote (its record
// remembers the fence) and for one rewritten before (a sequence past its
// first), and changes only what every swap changes: the version (+1) and
// UpdatedAt (the backend's now).
func TestSelfSwap(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		p := h.open(t, "")
		fenced, err := provider.Fenced(p, h.lease)
		if err != nil {
			t.Fatal(err)
		}
		if err := fenced.PutRunState(ctx, types.RunState{RunID: "r-sf", PipelineID: "billing", Status: types.RunRunning,
			Metadata: map[string]any{"host": "w-1"}, CreatedAt: at(21, 4, 30), UpdatedAt: at(21, 4, 30)}); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"r-sf", "r-0003", "r-0003"} { // r-0003 twice: the second after a swap
			before, err := p.GetRunState(ctx, id)
			if err != nil || before == nil {
				t.Fatalf("GetRunState(%s) = %v, %v", id, before, err)
			}
			ok, err := p.CompareAndSwapRunState(ctx, id, before.Version, *before)
			if !ok || err != nil {
				t.Fatalf("CompareAndSwapRunState(%s, %d, itself) = %v, %v; want it accepted", id, before.Version, ok, err)
			}
			after, err := p.GetRunState(ctx, id)
			if err != nil || after == nil {
				t.Fatalf("GetRunState(%s) after the swap = %v, %v", id, after, err)
			}
			want := *before
			want.Version++
			want.UpdatedAt = after.UpdatedAt
			if !reflect.DeepEqual(*after, want) || after.UpdatedAt.Before(before.UpdatedAt) {
				t.Errorf("run %s after swapping it onto itself = %+v, want %+v with UpdatedAt not before %v", id, *after, want, before.UpdatedAt)
			}
		}
	})
}
