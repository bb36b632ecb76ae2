package providertest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// RunActiveRunLister tests the optional provider.ActiveRunLister: a run is listed
// exactly while it is unfinished and live (put, CAS, create; finished, expired),
// refused writes (a lost CAS, a fenced refusal, a create of an existing run)
// leave the listing as the truth is, the filter, and paging that is complete and
// duplicate-free while runs change between pages; with the optional
// provider.ActiveRunReindexer, that ReindexRun changes no run (its version and
// UpdatedAt stay: a stuck run still looks stuck) and restores an entry the index
// lost (Harness.DropActiveEntry). It skips when the provider
// does not implement provider.ActiveRunLister. Like every test of the suite it
// relies on the harness rule that different tests never see each other's data.
func RunActiveRunLister(t *testing.T, h Harness) {
	t.Helper()
	group(t, "ActiveRunLister", h, func(t *testing.T, s *suite) {
		s.probe = probeRuns
		if _, ok := s.open(t).(provider.ActiveRunLister); !ok {
			t.Skip("the provider does not implement provider.ActiveRunLister")
		}
		s.run(t, "listed_while_unfinished", testActiveListedWhileUnfinished)
		s.run(t, "refused_writes_match_truth", testActiveRefusedWritesMatchTruth)
		s.run(t, "filter", testActiveFilter)
		s.run(t, "expired_not_listed", testActiveExpiredNotListed)
		s.run(t, "paging_while_runs_change", testActivePagingWhileRunsChange)
		testActiveBadInputAndCancelled(t, s)
		if _, ok := s.open(t).(provider.ActiveRunReindexer); ok {
			s.run(t, "reindex_keeps_runs", testActiveReindexKeepsRuns)
			s.run(t, "reindex_restores_lost_entry", testActiveReindexRestoresLostEntry)
		}
	})
}

// activeIDs pages through every active run of p that matches f, pages of n,
// failing t on an error or a page that breaks the paging rules, and returns the
// IDs in the order listed; between pages it calls between (nil: nothing).
func activeIDs(t *testing.T, p provider.Provider, f provider.ActiveRunFilter, n int, between func(page int)) []string {
	t.Helper()
	var out []string
	cursor := ""
	for page := 0; ; page++ {
		runs, next, err := p.(provider.ActiveRunLister).ListActiveRuns(t.Context(), f, cursor, n)
		noErr(t, err, fmt.Sprintf("ListActiveRuns page %d after %q", page, cursor))
		if len(runs) > n {
			t.Fatalf("ListActiveRuns(limit %d) returned %d runs", n, len(runs))
		}
		for _, r := range runs {
			if r.RunID <= cursor {
				t.Fatalf("ListActiveRuns after %q returned run %s: pages are in ascending RunID strictly after the cursor", cursor, r.RunID)
			}
			if r.Status.Terminal() {
				t.Fatalf("ListActiveRuns returned run %s with terminal status %s", r.RunID, r.Status)
			}
			cursor = r.RunID
			out = append(out, r.RunID)
		}
		if next == "" {
			return out
		}
		if next != cursor {
			t.Fatalf("ListActiveRuns next cursor %q, want the last RunID of the page %q", next, cursor)
		}
		if page > 10000 {
			t.Fatal("ListActiveRuns: more than 10000 pages")
		}
		if between != nil {
			between(page)
		}
	}
}

func wantActive(t *testing.T, p provider.Provider, want []string, what string) {
	t.Helper()
	got := activeIDs(t, p, provider.ActiveRunFilter{}, listAll, nil)
	if !slices.Equal(got, want) {
		t.Fatalf("%s: ListActiveRuns = %q, want %q", what, got, want)
	}
}

func activeRun(pipelineID, runID string, status types.RunStatus) types.RunState {
	r := newRun(pipelineID, runID, at(0))
	r.Status = status
	return r
}

func testActiveListedWhileUnfinished(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	a, b, c := k.run+"-a", k.run+"-b", k.run+"-c"
	wantActive(t, q, nil, "no runs")
	noErr(t, p.PutRunState(t.Context(), activeRun(k.pipeline, a, types.RunRunning)), "PutRunState RUNNING")
	noErr(t, p.PutRunState(t.Context(), activeRun(k.other, b, types.RunCompleted)), "PutRunState COMPLETED")
	wantActive(t, q, []string{a}, "a RUNNING run and a COMPLETED one (of an unregistered pipeline each)")
	ok, err := p.CompareAndSwapRunState(t.Context(), a, 0, activeRun(k.pipeline, a, types.RunFailed))
	if !ok || err != nil {
		t.Fatalf("CAS to FAILED = (%v, %v), want (true, nil)", ok, err)
	}
	wantActive(t, q, nil, "after the CAS that finished it")
	noErr(t, p.PutRunState(t.Context(), activeRun(k.other, b, types.RunPending)), "PutRunState PENDING of the completed run")
	wantActive(t, q, []string{b}, "after a put made a finished run unfinished")
	ok, err = p.CompareAndSwapRunState(t.Context(), b, 0, activeRun(k.other, b, types.RunTriggering))
	if !ok || err != nil {
		t.Fatalf("CAS PENDING to TRIGGERING = (%v, %v), want (true, nil)", ok, err)
	}
	ok, err = p.CompareAndSwapRunState(t.Context(), b, 1, activeRun(k.other, b, types.RunCancelled))
	if !ok || err != nil {
		t.Fatalf("CAS to CANCELLED = (%v, %v), want (true, nil)", ok, err)
	}
	wantActive(t, q, nil, "after the CAS that cancelled it")
	if rc, ok := p.(provider.RunCreator); ok {
		created, err := rc.CreateRunState(t.Context(), activeRun(k.pipeline, c, types.RunPending))
		if !created || err != nil {
			t.Fatalf("CreateRunState = (%v, %v), want (true, nil)", created, err)
		}
		wantActive(t, q, []string{c}, "after CreateRunState PENDING")
	}
}

func testActiveRefusedWritesMatchTruth(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	a, b := k.run+"-a", k.run+"-b"
	noErr(t, p.PutRunState(t.Context(), activeRun(k.pipeline, a, types.RunRunning)), "PutRunState RUNNING")
	noErr(t, p.PutRunState(t.Context(), activeRun(k.pipeline, b, types.RunCompleted)), "PutRunState COMPLETED")
	// A CAS that loses on its version writes nothing: the index neither.
	if ok, err := p.CompareAndSwapRunState(t.Context(), a, 7, activeRun(k.pipeline, a, types.RunCompleted)); ok || err != nil {
		t.Fatalf("CAS to COMPLETED from a wrong version = (%v, %v), want (false, nil)", ok, err)
	}
	if ok, err := p.CompareAndSwapRunState(t.Context(), b, 7, activeRun(k.pipeline, b, types.RunRunning)); ok || err != nil {
		t.Fatalf("CAS to RUNNING from a wrong version = (%v, %v), want (false, nil)", ok, err)
	}
	wantActive(t, q, []string{a}, "after two lost CAS")
	if rc, ok := p.(provider.RunCreator); ok {
		created, err := rc.CreateRunState(t.Context(), activeRun(k.pipeline, a, types.RunCompleted))
		if created || err != nil {
			t.Fatalf("CreateRunState of an existing run = (%v, %v), want (false, nil)", created, err)
		}
		created, err = rc.CreateRunState(t.Context(), activeRun(k.pipeline, b, types.RunPending))
		if created || err != nil {
			t.Fatalf("CreateRunState of an existing run = (%v, %v), want (false, nil)", created, err)
		}
		wantActive(t, q, []string{a}, "after two refused creates")
	}
	// Fenced writes refused after a newer fence wrote the runs.
	noErr(t, fenced(t, p, k.lock, 6).PutRunState(t.Context(), activeRun(k.pipeline, a, types.RunRunning)), "PutRunState fenced 6")
	noErr(t, fenced(t, p, k.lock, 6).PutRunState(t.Context(), activeRun(k.pipeline, b, types.RunCompleted)), "PutRunState fenced 6")
	stale := fenced(t, q, k.lock, 5)
	wantFenced(t, stale.PutRunState(t.Context(), activeRun(k.pipeline, a, types.RunCompleted)), "PutRunState COMPLETED fenced 5")
	wantFenced(t, stale.PutRunState(t.Context(), activeRun(k.pipeline, b, types.RunRunning)), "PutRunState RUNNING fenced 5")
	_, err := stale.CompareAndSwapRunState(t.Context(), a, 1, activeRun(k.pipeline, a, types.RunFailed))
	wantFenced(t, err, "CAS to FAILED fenced 5")
	_, err = stale.CompareAndSwapRunState(t.Context(), b, 1, activeRun(k.pipeline, b, types.RunPending))
	wantFenced(t, err, "CAS to PENDING fenced 5")
	wantActive(t, q, []string{a}, "after four refused fenced writes")
}

func testActiveFilter(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	base := s.now(t, p)
	mk := func(pipe, id string, st types.RunStatus, updated int) {
		r := activeRun(pipe, id, st)
		r.UpdatedAt = base.Add(-time.Duration(updated) * time.Minute)
		noErr(t, p.PutRunState(t.Context(), r), "PutRunState "+id)
	}
	mk(k.pipeline+"-x", k.run+"-1", types.RunRunning, 120)
	mk(k.pipeline+"-x", k.run+"-2", types.RunRunning, 1)
	mk(k.pipeline+"-y", k.run+"-3", types.RunPending, 120)
	mk(k.other, k.run+"-4", types.RunRunning, 120)
	mk(k.pipeline+"-x", k.run+"-5", types.RunCompletedMonitoring, 120)
	mk(k.pipeline+"-x", k.run+"-6", types.RunCompleted, 120)
	for _, c := range []struct {
		name string
		f    provider.ActiveRunFilter
		want []string
	}{
		{"all", provider.ActiveRunFilter{}, []string{k.run + "-1", k.run + "-2", k.run + "-3", k.run + "-4", k.run + "-5"}},
		{"running", provider.ActiveRunFilter{Statuses: []types.RunStatus{types.RunRunning}}, []string{k.run + "-1", k.run + "-2", k.run + "-4"}},
		{"running_or_pending", provider.ActiveRunFilter{Statuses: []types.RunStatus{types.RunPending, types.RunRunning}},
			[]string{k.run + "-1", k.run + "-2", k.run + "-3", k.run + "-4"}},
		{"not_updated_since", provider.ActiveRunFilter{NotUpdatedSince: base.Add(-time.Hour)},
			[]string{k.run + "-1", k.run + "-3", k.run + "-4", k.run + "-5"}},
		{"prefix", provider.ActiveRunFilter{PipelinePrefix: k.pipeline + "-"}, []string{k.run + "-1", k.run + "-2", k.run + "-3", k.run + "-5"}},
		{"all_three", provider.ActiveRunFilter{Statuses: []types.RunStatus{types.RunRunning}, NotUpdatedSince: base.Add(-time.Hour),
			PipelinePrefix: k.pipeline + "-x"}, []string{k.run + "-1"}},
	} {
		for _, n := range []int{1, 2, listAll} {
			if got := activeIDs(t, q, c.f, n, nil); !slices.Equal(got, c.want) {
				t.Errorf("filter %s, pages of %d: ListActiveRuns = %q, want %q", c.name, n, got, c.want)
			}
		}
	}
}

func testActiveExpiredNotListed(t *testing.T, s *suite) {
	d := s.h.Retention.Runs
	if d <= 0 || s.h.Sleep == nil {
		t.Skip("needs Harness.Retention.Runs and a clock the harness moves (Harness.Sleep)")
	}
	p, k := s.open(t), newIDs(t)
	a, b := k.run+"-a", k.run+"-b"
	noErr(t, p.PutRunState(t.Context(), activeRun(k.pipeline, a, types.RunRunning)), "PutRunState a")
	s.sleep(t, d/2)
	noErr(t, p.PutRunState(t.Context(), activeRun(k.pipeline, b, types.RunRunning)), "PutRunState b")
	s.sleep(t, d-d/2)
	wantActive(t, p, []string{b}, "at a's expiry")
	s.sleep(t, d/2)
	wantActive(t, p, nil, "at b's expiry")
}

func testActivePagingWhileRunsChange(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	n := s.longList()
	stay := map[string]bool{}
	var finish []string
	for i := range n {
		id := fmt.Sprintf("%s-%04d", k.run, i)
		noErr(t, p.PutRunState(t.Context(), activeRun(k.pipeline, id, types.RunRunning)), "PutRunState")
		if i%3 == 0 {
			finish = append(finish, id)
		} else {
			stay[id] = true
		}
	}
	made := 0
	between := func(page int) {
		// Finish a run, heartbeat (CAS) two that stay, and create a new one, in
		// places before and after the cursor.
		if len(finish) > 0 {
			id := finish[len(finish)-1-page%len(finish)]
			r, err := p.GetRunState(t.Context(), id)
			if cur := mustGet(t, r, err, "GetRunState"); !cur.Status.Terminal() {
				ok, err := p.CompareAndSwapRunState(t.Context(), id, cur.Version, activeRun(k.pipeline, id, types.RunCompleted))
				if !ok || err != nil {
					t.Fatalf("CAS to COMPLETED = (%v, %v)", ok, err)
				}
			}
		}
		for id := range stay {
			r, err := p.GetRunState(t.Context(), id)
			cur := mustGet(t, r, err, "GetRunState")
			if ok, err := p.CompareAndSwapRunState(t.Context(), id, cur.Version, activeRun(k.pipeline, id, types.RunRunning)); !ok || err != nil {
				t.Fatalf("heartbeat CAS = (%v, %v)", ok, err)
			}
			break
		}
		made++
		noErr(t, p.PutRunState(t.Context(), activeRun(k.pipeline, fmt.Sprintf("%s-%04d-new", k.run, made*7%n), types.RunPending)), "PutRunState new")
	}
	got := activeIDs(t, q, provider.ActiveRunFilter{}, 17, between)
	seen := map[string]bool{}
	for _, id := range got {
		if seen[id] {
			t.Fatalf("ListActiveRuns paging returned %s twice", id)
		}
		seen[id] = true
	}
	for id := range stay {
		if !seen[id] {
			t.Errorf("ListActiveRuns paging missed %s, unfinished for the whole paging", id)
		}
	}
}

func testActiveBadInputAndCancelled(t *testing.T, s *suite) {
	list := func(ctx context.Context, p provider.Provider, f provider.ActiveRunFilter, cursor string, limit int) error {
		_, _, err := p.(provider.ActiveRunLister).ListActiveRuns(ctx, f, cursor, limit)
		return err
	}
	cases := []badCase{
		{name: "limit_zero", call: func(ctx context.Context, p provider.Provider, k ids) error {
			return list(ctx, p, provider.ActiveRunFilter{}, "", 0)
		}},
		{name: "terminal_status", call: func(ctx context.Context, p provider.Provider, k ids) error {
			return list(ctx, p, provider.ActiveRunFilter{Statuses: []types.RunStatus{types.RunCompleted}}, "", 10)
		}},
		{name: "invalid_status", call: func(ctx context.Context, p provider.Provider, k ids) error {
			return list(ctx, p, provider.ActiveRunFilter{Statuses: []types.RunStatus{"running"}}, "", 10)
		}},
		{name: "cursor_not_an_id", call: func(ctx context.Context, p provider.Provider, k ids) error {
			return list(ctx, p, provider.ActiveRunFilter{}, "a b\x00", 10)
		}},
	}
	calls := []call{{"ListActiveRuns", func(ctx context.Context, p provider.Provider, k ids) error {
		return list(ctx, p, provider.ActiveRunFilter{}, "", 10)
	}}}
	if _, ok := s.open(t).(provider.ActiveRunReindexer); ok {
		reindex := func(ctx context.Context, p provider.Provider, runID string) error {
			_, err := p.(provider.ActiveRunReindexer).ReindexRun(ctx, runID)
			return err
		}
		cases = append(cases,
			badCase{name: "reindex_empty_run_id", call: func(ctx context.Context, p provider.Provider, k ids) error { return reindex(ctx, p, "") }},
			badCase{name: "reindex_run_id_not_an_id", call: func(ctx context.Context, p provider.Provider, k ids) error {
				return reindex(ctx, p, "a b\x00")
			}})
		calls = append(calls, call{"ReindexRun", func(ctx context.Context, p provider.Provider, k ids) error { return reindex(ctx, p, k.run) }})
	}
	s.checkBadInput(t, cases, nil)
	s.checkCancelled(t, calls, nil, nil)
}

// reindex calls ReindexRun of p, failing t on an error, and returns changed.
func reindex(t *testing.T, p provider.Provider, runID string) bool {
	t.Helper()
	changed, err := p.(provider.ActiveRunReindexer).ReindexRun(t.Context(), runID)
	noErr(t, err, "ReindexRun "+runID)
	return changed
}

// wantSameRun requires that run id reads as before: ReindexRun writes nothing
// of a run.
func wantSameRun(t *testing.T, p provider.Provider, before types.RunState, what string) {
	t.Helper()
	after, err := p.GetRunState(t.Context(), before.RunID)
	noErr(t, err, "GetRunState "+before.RunID)
	if after == nil {
		t.Fatalf("%s: run %s is missing", what, before.RunID)
	}
	if after.Version != before.Version || !after.UpdatedAt.Equal(before.UpdatedAt) || after.Status != before.Status {
		t.Fatalf("%s: run %s is at version %d, updated %v, %s; want it unchanged at version %d, updated %v, %s (ReindexRun writes nothing of the run)",
			what, before.RunID, after.Version, after.UpdatedAt, after.Status, before.Version, before.UpdatedAt, before.Status)
	}
}

// testActiveReindexKeepsRuns: ReindexRun of a run whose entry is right changes
// nothing and says so, of a missing run too; a stuck run keeps its version and
// UpdatedAt (time moves first, where the harness can move it, so that a
// rewrite would show).
func testActiveReindexKeepsRuns(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	a, b := k.run+"-a", k.run+"-b"
	noErr(t, p.PutRunState(t.Context(), activeRun(k.pipeline, a, types.RunRunning)), "PutRunState RUNNING")
	noErr(t, p.PutRunState(t.Context(), activeRun(k.pipeline, b, types.RunCompleted)), "PutRunState COMPLETED")
	ra, rb := getRun(t, p, a), getRun(t, p, b)
	if s.h.Sleep != nil {
		s.h.Sleep(t, 2*time.Second)
	} else {
		time.Sleep(20 * time.Millisecond)
	}
	for _, id := range []string{a, b, k.run + "-missing"} {
		if reindex(t, p, id) {
			t.Errorf("ReindexRun %s = changed, want unchanged: its entry was right", id)
		}
	}
	wantSameRun(t, q, ra, "after ReindexRun of a RUNNING run")
	wantSameRun(t, q, rb, "after ReindexRun of a COMPLETED run")
	wantActive(t, q, []string{a}, "after ReindexRun of each")
	stuck := provider.ActiveRunFilter{NotUpdatedSince: ra.UpdatedAt.Add(time.Millisecond)}
	if got := activeIDs(t, q, stuck, listAll, nil); !slices.Equal(got, []string{a}) {
		t.Fatalf("stuck runs after ReindexRun = %q, want [%s]", got, a)
	}
	// A CAS after it works as after any write.
	if ok, err := p.CompareAndSwapRunState(t.Context(), a, ra.Version, activeRun(k.pipeline, a, types.RunCompleted)); !ok || err != nil {
		t.Fatalf("CAS to COMPLETED after ReindexRun = (%v, %v), want (true, nil)", ok, err)
	}
	wantActive(t, q, nil, "after the CAS that finished it")
}

// testActiveReindexRestoresLostEntry drops the entry of an unfinished run
// (Harness.DropActiveEntry): ListActiveRuns misses it until ReindexRun restores
// it, which reports the change and leaves the run as it was; later writes keep
// the index as they do for any run.
func testActiveReindexRestoresLostEntry(t *testing.T, s *suite) {
	if s.h.DropActiveEntry == nil {
		t.Skip("Harness.DropActiveEntry is nil: the backend's index cannot lose an entry")
	}
	p, q, k := s.open(t), s.open(t), newIDs(t)
	a, b := k.run+"-a", k.run+"-b"
	noErr(t, p.PutRunState(t.Context(), activeRun(k.pipeline, a, types.RunRunning)), "PutRunState RUNNING")
	noErr(t, p.PutRunState(t.Context(), activeRun(k.pipeline, b, types.RunPending)), "PutRunState PENDING")
	ok, err := p.CompareAndSwapRunState(t.Context(), b, 0, activeRun(k.pipeline, b, types.RunRunning))
	if !ok || err != nil {
		t.Fatalf("CAS PENDING to RUNNING = (%v, %v), want (true, nil)", ok, err)
	}
	ra, rb := getRun(t, p, a), getRun(t, p, b)
	s.h.DropActiveEntry(t, a)
	s.h.DropActiveEntry(t, b)
	wantActive(t, q, nil, "after Harness.DropActiveEntry of both runs")
	if s.h.Sleep != nil {
		s.h.Sleep(t, 2*time.Second)
	}
	for _, id := range []string{a, b} {
		if !reindex(t, p, id) {
			t.Errorf("ReindexRun %s = unchanged, want changed: its entry was lost", id)
		}
	}
	wantActive(t, q, []string{a, b}, "after ReindexRun restored both entries")
	wantSameRun(t, q, ra, "after ReindexRun restored its entry")
	wantSameRun(t, q, rb, "after ReindexRun restored its entry")
	if reindex(t, p, a) {
		t.Errorf("ReindexRun %s again = changed, want unchanged", a)
	}
	// Writes after the repair: an unfinished CAS keeps the entry, a finishing one removes it.
	if ok, err := p.CompareAndSwapRunState(t.Context(), a, ra.Version, activeRun(k.pipeline, a, types.RunRunning)); !ok || err != nil {
		t.Fatalf("CAS RUNNING to RUNNING after ReindexRun = (%v, %v), want (true, nil)", ok, err)
	}
	if ok, err := p.CompareAndSwapRunState(t.Context(), b, rb.Version, activeRun(k.pipeline, b, types.RunFailed)); !ok || err != nil {
		t.Fatalf("CAS to FAILED after ReindexRun = (%v, %v), want (true, nil)", ok, err)
	}
	wantActive(t, q, []string{a}, "after a CAS kept one unfinished and another finished the other")
	// A finished run whose entry is gone needs nothing.
	s.h.DropActiveEntry(t, b)
	if reindex(t, p, b) {
		t.Errorf("ReindexRun of finished run %s without an entry = changed, want unchanged", b)
	}
	wantActive(t, q, []string{a}, "after ReindexRun of the finished run")
}
