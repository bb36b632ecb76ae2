package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// The active-runs index (provider.ActiveRunLister), as the referee judges it
// from the contract row "active runs" of package provider: a page returns, in
// ascending RunID strictly after its cursor and without a run seen earlier in
// its paging, only runs that are live, unfinished and matching the filter now,
// each as its truth is now; every run that matched for the whole paging so far
// (steady) and lies after the cursor is on the page unless the next cursor
// ("" ends the paging) is before it; the next cursor is not before the page's
// last run (ActivePage makes it that run when the page is full, "" otherwise;
// a backend may also stop a page early and resume after a run it skipped). A
// run that changed during the paging may or may not appear.

// pagingM is one paging of the index the simulation keeps open: the filter,
// the cursor of its next page, the runs it returned, and the runs that have
// matched surely at every step since it began.
type pagingM struct {
	filter provider.ActiveRunFilter
	cursor string
	seen   map[string]bool
	steady map[string]bool
}

// maxPagings is how many pagings stay open; a new one beyond them replaces the
// oldest.
const maxPagings = 3

// matchSlack is how near NotUpdatedSince a run's UpdatedAt may be and match
// either way: a backend may store times at a coarser granularity.
const matchSlack = time.Second

// match tells whether run i matches f at the model's now: sure (in), and
// maybe (in or out, at the UpdatedAt boundary).
func (m *model) match(i int, f provider.ActiveRunFilter) (sure, maybe bool) {
	r := m.runs[i]
	if !r.live(m.now) || r.status.Terminal() {
		return false, false
	}
	in := f.Match(types.RunState{RunID: runID(i), PipelineID: pipelineID, Status: r.status, UpdatedAt: r.updated})
	if r.unindexed {
		return false, in // its entry may be gone
	}
	if f.NotUpdatedSince.IsZero() {
		return in, in
	}
	near := r.updated.Sub(f.NotUpdatedSince).Abs() < matchSlack
	probe := f
	probe.NotUpdatedSince = time.Time{}
	inAnyTime := probe.Match(types.RunState{RunID: runID(i), PipelineID: pipelineID, Status: r.status, UpdatedAt: r.updated})
	return in && !near, inAnyTime && (in || near)
}

// trackPagings runs after every operation: a run that does not surely match
// any more is no longer steady in any open paging.
func (m *model) trackPagings() {
	for _, pg := range m.pagings {
		for id := range pg.steady {
			if sure, _ := m.match(runIndex(id), pg.filter); !sure {
				delete(pg.steady, id)
			}
		}
	}
}

// activeFilter is the filter o asks for: statuses by o.m%4, the pipeline
// prefix by o.m/4%3, NotUpdatedSince by o.n%4 (none, now, an hour ago, a
// minute ago).
func (w *world) activeFilter(o op) provider.ActiveRunFilter {
	var f provider.ActiveRunFilter
	f.Statuses = [][]types.RunStatus{nil, {types.RunPending}, {types.RunRunning}, {types.RunPending, types.RunRunning}}[o.m%4]
	f.PipelinePrefix = []string{"", "sim-", "other-"}[o.m/4%3]
	switch o.n % 4 {
	case 1:
		f.NotUpdatedSince = w.m.now
	case 2:
		f.NotUpdatedSince = w.m.now.Add(-time.Hour)
	case 3:
		f.NotUpdatedSince = w.m.now.Add(-time.Minute)
	}
	return f
}

func describeFilter(f provider.ActiveRunFilter) string {
	var parts []string
	if len(f.Statuses) > 0 {
		parts = append(parts, fmt.Sprint(f.Statuses))
	}
	if f.PipelinePrefix != "" {
		parts = append(parts, "prefix "+f.PipelinePrefix)
	}
	if !f.NotUpdatedSince.IsZero() {
		parts = append(parts, "not updated since "+f.NotUpdatedSince.Format(time.RFC3339Nano))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// listActive reads one page of the index: of a new paging (o.n/16%3 == 0, or
// none open), or the next page of an open one (o.n/48 picks it), with limit
// 1 + o.n/4%3, through o's slot or the fenced view o names.
func (w *world) listActive(o op) (string, error) {
	p, _, how := w.fenced(o)
	if w.viaRO {
		p, how = w.ro, "read-only"
	}
	l, ok := p.(provider.ActiveRunLister)
	if !ok {
		return "ListActiveRuns (not implemented)", nil
	}
	var pg *pagingM
	fresh := o.n/16%3 == 0 || len(w.m.pagings) == 0
	if fresh {
		pg = &pagingM{filter: w.activeFilter(o), seen: map[string]bool{}, steady: map[string]bool{}}
		for i := range w.m.runs {
			if sure, _ := w.m.match(i, pg.filter); sure {
				pg.steady[runID(i)] = true
			}
		}
		if len(w.m.pagings) == maxPagings {
			w.m.pagings = w.m.pagings[1:]
		}
		w.m.pagings = append(w.m.pagings, pg)
	} else {
		pg = w.m.pagings[o.n/48%len(w.m.pagings)]
	}
	limit := 1 + o.n/4%3
	desc := fmt.Sprintf("ListActiveRuns(%s, cursor %q, limit %d) [slot %d, %s]", describeFilter(pg.filter), pg.cursor, limit, o.slot, how)
	ctx, cancel := w.ctx()
	defer cancel()
	runs, next, err := l.ListActiveRuns(ctx, pg.filter, pg.cursor, limit)
	var ids []string
	for _, r := range runs {
		ids = append(ids, fmt.Sprintf("%s v%d %s", r.RunID, r.Version, r.Status))
	}
	desc += fmt.Sprintf(" → %v, next %q, %v", ids, next, err)
	if err != nil {
		return desc, fmt.Errorf("ListActiveRuns: %w", err)
	}
	if err := w.judgePage(pg, runs, next, limit); err != nil {
		return desc, err
	}
	if next == "" {
		w.m.pagings = slices.DeleteFunc(w.m.pagings, func(q *pagingM) bool { return q == pg })
	} else {
		pg.cursor = next
	}
	return desc, nil
}

// judgePage checks one page of paging pg against the model (see the comment
// at the top of the file).
func (w *world) judgePage(pg *pagingM, runs []types.RunState, next string, limit int) error {
	if len(runs) > limit {
		return fmt.Errorf("ListActiveRuns: %d runs, limit %d", len(runs), limit)
	}
	last := pg.cursor
	got := map[string]bool{}
	for _, r := range runs {
		if r.RunID <= last {
			return fmt.Errorf("ListActiveRuns: %s is not after %q: want ascending RunIDs after the cursor", r.RunID, last)
		}
		last = r.RunID
		if pg.seen[r.RunID] {
			return fmt.Errorf("ListActiveRuns: %s again in one paging", r.RunID)
		}
		got[r.RunID] = true
		i := runIndex(r.RunID)
		if i < 0 || i >= len(w.m.runs) {
			return fmt.Errorf("ListActiveRuns: %s, a run never written", r.RunID)
		}
		if _, maybe := w.m.match(i, pg.filter); !maybe {
			return fmt.Errorf("ListActiveRuns: %s, which is %s: not a live unfinished run matching the filter", r.RunID, w.describeRun(i, w.m.runs[i].live(w.m.now)))
		}
		m := w.m.runs[i]
		if r.Version != m.version || r.Status != m.status || r.PipelineID != pipelineID {
			return fmt.Errorf("ListActiveRuns: %s v%d %s, want its truth %s", r.RunID, r.Version, r.Status, w.describeRun(i, true))
		}
	}
	if next != "" && next < last {
		return fmt.Errorf("ListActiveRuns: next %q before the page's last run %s", next, last)
	}
	for id := range pg.steady {
		if id <= pg.cursor || got[id] || pg.seen[id] {
			continue
		}
		if next != "" && id > next {
			continue // on a later page
		}
		return fmt.Errorf("ListActiveRuns: %s missing (next %q): it matched the filter for the whole paging (%s)", id, next, w.describeRun(runIndex(id), true))
	}
	for id := range got {
		pg.seen[id] = true
	}
	return nil
}

// runIndex is the index of the run named id (runID's inverse), -1 for a name
// runID never makes.
func runIndex(id string) int {
	var i int
	if _, err := fmt.Sscanf(id, "sim-r%d", &i); err != nil || runID(i) != id {
		return -1
	}
	return i
}

// reindex damages or repairs the active-runs entry of o's run. With
// Harness.DropActiveEntry, one in three drops it, as an operator or a
// failover would; the others call ReindexRun (provider.ActiveRunReindexer),
// through o's slot or the fenced view o names, which must report a change
// where the entry of a live unfinished run was dropped and nothing wrote the
// run since, and none where no entry was dropped; after it, ListActiveRuns
// must find the run again.
func (w *world) reindex(o op) (string, error) {
	id, r := runID(o.run), w.m.runs[o.run]
	active := r.live(w.m.now) && !r.status.Terminal()
	if o.m%3 == 0 && w.h.DropActiveEntry != nil {
		w.h.DropActiveEntry(w.t, id)
		r.unindexed, r.surelyUnindexed = true, active
		return fmt.Sprintf("drop the active-runs entry of %s (Harness.DropActiveEntry)", id), nil
	}
	p, _, how := w.fenced(o)
	ri, ok := p.(provider.ActiveRunReindexer)
	if !ok {
		return "ReindexRun (not implemented)", nil
	}
	ctx, cancel := w.ctx()
	defer cancel()
	changed, err := ri.ReindexRun(ctx, id)
	desc := fmt.Sprintf("ReindexRun(%s) [slot %d, %s] → %t, %v", id, o.slot, how, changed, err)
	switch {
	case err != nil:
		return desc, fmt.Errorf("ReindexRun: %w", err)
	case active && r.surelyUnindexed && !changed:
		return desc, fmt.Errorf("ReindexRun: unchanged, but the entry of %s (%s) was dropped", id, w.describeRun(o.run, true))
	case active && !r.unindexed && changed:
		return desc, fmt.Errorf("ReindexRun: changed the sound entry of %s (%s)", id, w.describeRun(o.run, true))
	}
	r.unindexed, r.surelyUnindexed = false, false
	return desc, nil
}
