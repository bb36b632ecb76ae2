package providertest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// Sizes of the list concurrency tests: large enough that a backend which drops an
// entry written while it lists, or which pages without a snapshot, fails in most
// runs; small enough for a real server on two cores.
const (
	createWriters   = 4
	createPerWriter = 50
	createReaders   = 4
	// defaultLongList is the length of the long lists when Harness.ListPage is
	// zero: longer than the default internal pages of the built-in backends (Redis
	// pages by 256 entries), so a listing of all of them spans pages.
	defaultLongList = 300
	moverItems      = 4
	moverPuts       = 60
	// movingListings is how many whole listings each moves_while_listing test
	// reads while items move.
	movingListings = 10
)

// listKind is one List* method over entities that a test creates by ID.
type listKind struct {
	name string
	// put creates or re-puts entity id with sort time at, through p.
	put func(ctx context.Context, p provider.Provider, k ids, id string, at time.Time) error
	// list lists the entities' IDs, at most limit of them.
	list func(ctx context.Context, p provider.Provider, k ids, limit int) ([]string, error)
	// moves is whether a re-put with another time moves the entity in the list.
	moves bool
}

// listKinds are every list the contract's "lists" rule covers.
func listKinds() []listKind {
	runIDs := func(l []types.RunState) []string {
		out := make([]string, len(l))
		for i, r := range l {
			out[i] = r.RunID
		}
		return out
	}
	rerunIDs := func(l []types.RerunRecord) []string {
		out := make([]string, len(l))
		for i, r := range l {
			out[i] = r.RerunID
		}
		return out
	}
	putRerun := func(ctx context.Context, p provider.Provider, k ids, id string, at time.Time) error {
		return p.PutRerun(ctx, newRerun(id, k.pipeline, at))
	}
	return []listKind{
		{
			name: "runs", moves: true,
			put: func(ctx context.Context, p provider.Provider, k ids, id string, at time.Time) error {
				return p.PutRunState(ctx, newRun(k.pipeline, id, at))
			},
			list: func(ctx context.Context, p provider.Provider, k ids, limit int) ([]string, error) {
				l, err := p.ListRuns(ctx, k.pipeline, limit)
				return runIDs(l), err
			},
		},
		{
			name: "reruns", moves: true, put: putRerun,
			list: func(ctx context.Context, p provider.Provider, k ids, limit int) ([]string, error) {
				l, err := p.ListReruns(ctx, k.pipeline, limit)
				return rerunIDs(l), err
			},
		},
		{
			name: "all_reruns", moves: true, put: putRerun,
			list: func(ctx context.Context, p provider.Provider, k ids, limit int) ([]string, error) {
				l, err := p.ListAllReruns(ctx, limit)
				return rerunIDs(l), err
			},
		},
		{
			name: "replays", moves: true,
			put: func(ctx context.Context, p provider.Provider, k ids, id string, at time.Time) error {
				return p.PutReplay(ctx, newReplay(k.pipeline, id, "", at))
			},
			list: func(ctx context.Context, p provider.Provider, k ids, limit int) ([]string, error) {
				l, err := p.ListReplays(ctx, limit)
				out := make([]string, len(l))
				for i, r := range l {
					out[i] = r.Date
				}
				return out, err
			},
		},
		{
			name: "pipelines",
			put: func(ctx context.Context, p provider.Provider, k ids, id string, _ time.Time) error {
				// A small config: the readers list every pipeline, whole, again and again.
				return p.RegisterPipeline(ctx, types.PipelineConfig{ID: id, Archetype: "batch"})
			},
			list: func(ctx context.Context, p provider.Provider, _ ids, _ int) ([]string, error) {
				l, err := p.ListPipelines(ctx)
				out := make([]string, len(l))
				for i, c := range l {
					out[i] = c.ID
				}
				return out, err
			},
		},
	}
}

// RunLists tests the contract's list rule on every list of IDs (runs, reruns of a
// pipeline and across pipelines, replays, pipelines): a List*(limit) call returns
// no duplicates, and every item that existed, unchanged, for the whole call appears
// if it falls within the limit. It checks new IDs created by writers on two
// instances while readers list, long lists (several internal pages of any
// backend) read while other items move in the order, and lists of 300 pipelines,
// run logs, markers, late arrivals and events, whole and with a limit.
func RunLists(t *testing.T, h Harness) {
	t.Helper()
	group(t, "Lists", h, func(t *testing.T, s *suite) {
		for _, kind := range listKinds() {
			test(t, "create_while_listing/"+kind.name, func(t *testing.T) {
				s.createWhileListing(t, kind)
			})
			if kind.moves {
				test(t, "moves_while_listing/"+kind.name, func(t *testing.T) {
					s.movesWhileListing(t, kind)
				})
			}
		}
		for _, kind := range s.longKinds() {
			test(t, "long/"+kind.name, func(t *testing.T) { testListsLong(t, s, kind) })
		}
	})
}

func testListsLong(t *testing.T, s *suite, kind longKind) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	if kind.reader {
		if _, ok := p.(provider.CascadeReader); !ok {
			t.Skip("the provider does not implement provider.CascadeReader")
		}
	}
	var e errs
	runConcurrently(8, func(w int) {
		for i := w; i < s.longList(); i += 8 {
			if err := kind.put(t.Context(), []provider.Provider{p, q}[w%2], k, i); err != nil {
				e.add("put item %d: %v", i, err)
				return
			}
		}
	})
	e.report(t)
	all, err := kind.list(t.Context(), q, k, s.longList()+10)
	noErr(t, err, "list all")
	if d := duplicates(all); d != nil {
		t.Fatalf("a list of %d items holds duplicates: %v", s.longList(), d[:min(len(d), 10)])
	}
	want := make([]string, s.longList())
	for i := range want {
		want[i] = kind.id(k, i)
	}
	if kind.order != nil {
		kind.order(want)
		same(t, fmt.Sprintf("a list of %d items, longer than any page", s.longList()), want, all)
	} else {
		same(t, fmt.Sprintf("the items of a list of %d, longer than any page", s.longList()), sortedCopy(want), sortedCopy(all))
	}
	if !kind.limited {
		return
	}
	limit := s.longList() / 2 // spans more than one page too
	some, err := kind.list(t.Context(), q, k, limit)
	noErr(t, err, "list with a limit")
	if len(some) != limit || duplicates(some) != nil {
		t.Fatalf("list(limit %d) of %d items: %d items, duplicates %v", limit, s.longList(), len(some), duplicates(some))
	}
	switch {
	case kind.tail:
		same(t, fmt.Sprintf("list(limit %d): the last items of the whole list", limit), all[len(all)-limit:], some)
	case kind.order != nil:
		same(t, fmt.Sprintf("list(limit %d): the first items of the whole list", limit), all[:limit], some)
	}
}

// longKind is a list that Lists/long fills with s.longList() items, from eight
// writers on two instances.
type longKind struct {
	name    string
	reader  bool
	limited bool // list takes a limit
	tail    bool // a limit keeps the last items of the whole list (ListEvents)
	put     func(ctx context.Context, p provider.Provider, k ids, i int) error
	id      func(k ids, i int) string
	// order sorts the IDs of items 0..n-1 into list order; nil when the order is
	// not known in advance (it is checked by the group's own tests).
	order func(ids []string)
	list  func(ctx context.Context, p provider.Provider, k ids, limit int) ([]string, error)
}

func (s *suite) longKinds() []longKind {
	dateOf := func(_ ids, i int) string { return fmt.Sprintf("d%03d", i) }
	return []longKind{
		{name: "pipelines",
			id: func(k ids, i int) string { return fmt.Sprintf("%s-%03d", k.pipeline, i) },
			put: func(ctx context.Context, p provider.Provider, k ids, i int) error {
				return p.RegisterPipeline(ctx, types.PipelineConfig{ID: fmt.Sprintf("%s-%03d", k.pipeline, i)})
			},
			order: slices.Sort[[]string],
			list: func(ctx context.Context, p provider.Provider, _ ids, _ int) ([]string, error) {
				l, err := p.ListPipelines(ctx)
				out := make([]string, len(l))
				for i, c := range l {
					out[i] = c.ID
				}
				return out, err
			}},
		{name: "run_logs", limited: true, id: dateOf,
			put: func(ctx context.Context, p provider.Provider, k ids, i int) error {
				return p.PutRunLog(ctx, newRunLog(k.pipeline, dateOf(k, i), ""))
			},
			order: func(ids []string) { slices.Sort(ids); slices.Reverse(ids) },
			list: func(ctx context.Context, p provider.Provider, k ids, limit int) ([]string, error) {
				l, err := p.ListRunLogs(ctx, k.pipeline, limit)
				return runLogDates(l), err
			}},
		{name: "markers", reader: true, limited: true, id: dateOf,
			put: func(ctx context.Context, p provider.Provider, k ids, i int) error {
				return p.WriteCascadeMarker(ctx, k.pipeline, "", dateOf(k, i), k.other)
			},
			list: func(ctx context.Context, p provider.Provider, k ids, limit int) ([]string, error) {
				l, err := p.(provider.CascadeReader).ListCascadeMarkers(ctx, k.pipeline, limit)
				out := make([]string, len(l))
				for i, m := range l {
					if i > 0 && m.WrittenAt.After(l[i-1].WrittenAt) {
						return nil, fmt.Errorf("marker %d is newer than marker %d before it", i, i-1)
					}
					out[i] = m.Date
				}
				return out, err
			}},
		{name: "late_arrivals",
			id: func(_ ids, i int) string { return fmt.Sprintf("%03d", i) },
			put: func(ctx context.Context, p provider.Provider, k ids, i int) error {
				return p.PutLateArrival(ctx, newLateArrival(k.pipeline, k.date, "", at(i), int64(i)))
			},
			order: slices.Sort[[]string],
			list: func(ctx context.Context, p provider.Provider, k ids, _ int) ([]string, error) {
				l, err := p.ListLateArrivals(ctx, k.pipeline, k.date, "")
				out := make([]string, len(l))
				for i, la := range l {
					out[i] = fmt.Sprintf("%03d", la.RecordDelta)
				}
				return out, err
			}},
		{name: "events", limited: true, tail: true, id: func(_ ids, i int) string { return eventName(i) },
			put: func(ctx context.Context, p provider.Provider, k ids, i int) error {
				return p.AppendEvent(ctx, newEvent(k.pipeline, i))
			},
			list: func(ctx context.Context, p provider.Provider, k ids, limit int) ([]string, error) {
				l, err := p.ListEvents(ctx, k.pipeline, limit)
				if err != nil {
					return nil, err
				}
				recs, err := p.ReadEventsSince(ctx, k.pipeline, "", int64(limit))
				if err != nil {
					return nil, err
				}
				names := eventNames(l)
				if limit >= s.longList() && !slices.Equal(names, recordNames(recs)) {
					return nil, fmt.Errorf("ListEvents and ReadEventsSince disagree on %d events", len(names))
				}
				return names, nil
			}},
	}
}

// createWhileListing: writers on two instances create new IDs while readers list a
// few at a time. No listing may hold a duplicate, and once the writers are done,
// one listing must hold every ID.
func (s *suite) createWhileListing(t *testing.T, kind listKind) {
	ps, k := []provider.Provider{s.open(t), s.open(t)}, newIDs(t)
	ctx := t.Context()
	var e errs
	var done atomic.Bool
	var readers sync.WaitGroup
	for r := range createReaders {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for !done.Load() {
				got, err := kind.list(ctx, ps[r%2], k, 5)
				if err != nil {
					e.add("list while writers create: %v", err)
					return
				}
				if d := duplicates(got); d != nil {
					e.add("a listing while writers create holds duplicates %v: %v", d, got)
					return
				}
			}
		}()
	}
	runConcurrently(createWriters, func(w int) {
		for i := range createPerWriter {
			id := fmt.Sprintf("%s-w%d-%03d", k.rerun, w, i)
			if err := kind.put(ctx, ps[(w+i)%2], k, id, at(w*createPerWriter+i)); err != nil {
				e.add("create %s: %v", id, err)
				return
			}
		}
	})
	done.Store(true)
	readers.Wait()
	e.report(t)
	total := createWriters * createPerWriter
	for i, p := range ps {
		got, err := kind.list(ctx, p, k, total+10)
		noErr(t, err, "list after the writers finished")
		if d := duplicates(got); d != nil {
			t.Errorf("instance %d: the final listing holds duplicates %v", i, d)
		}
		var missing []string
		for w := range createWriters {
			for j := range createPerWriter {
				if id := fmt.Sprintf("%s-w%d-%03d", k.rerun, w, j); !slices.Contains(got, id) {
					missing = append(missing, id)
				}
			}
		}
		if len(missing) > 0 {
			t.Errorf("instance %d: %d of %d created IDs never appear in the list after the writers finished (lost while listed concurrently): %v",
				i, len(missing), total, missing[:min(len(missing), 10)])
		}
	}
}

// movesWhileListing: s.longList() items that never change are listed, whole, while a
// writer re-puts a few other items with new times, moving them across the order.
// Every listing must hold each stable item exactly once and no duplicate.
func (s *suite) movesWhileListing(t *testing.T, kind listKind) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	ctx := t.Context()
	stable := make([]string, s.longList())
	for i := range s.longList() {
		stable[i] = fmt.Sprintf("%s-s%03d", k.rerun, i)
	}
	var e errs
	runConcurrently(8, func(w int) {
		for i := w; i < s.longList(); i += 8 {
			if err := kind.put(ctx, p, k, stable[i], at(2*i+1)); err != nil {
				e.add("put stable item %s: %v", stable[i], err)
				return
			}
		}
	})
	e.report(t)
	movers := make([]string, moverItems)
	for i := range movers {
		movers[i] = fmt.Sprintf("%s-m%d", k.rerun, i)
		noErr(t, kind.put(ctx, p, k, movers[i], at(0)), "put a moving item")
	}
	var done, stop atomic.Bool
	var listed atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the mover: jumps items between the newest and the oldest end
		defer wg.Done()
		defer done.Store(true)
		// It keeps moving until movingListings listings have completed, so that
		// every one of them overlaps moves however fast the backend lists.
		for i := 0; !stop.Load() && (i < moverPuts || listed.Load() < movingListings); i++ {
			m := movers[i%moverItems]
			when := at(2*s.longList() + 10 + i) // newest
			if (i/moverItems)%2 == 1 {          // each mover crosses the list every time
				when = at(-10 - i) // oldest
			}
			if err := kind.put(ctx, q, k, m, when); err != nil {
				e.add("re-put %s: %v", m, err)
				return
			}
		}
	}()
	limit := s.longList() + moverItems + 10
	listings := 0
	for !done.Load() || listings == 0 {
		got, err := kind.list(ctx, p, k, limit)
		if err != nil {
			e.add("list while items move: %v", err)
			break
		}
		listings++
		listed.Add(1)
		if d := duplicates(got); d != nil {
			e.add("listing %d holds duplicates %v (an item moved during the call)", listings, d)
		}
		var missing []string
		for _, id := range stable {
			if !slices.Contains(got, id) {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			e.add("listing %d misses %d items that existed, unchanged, for the whole call: %v", listings, len(missing), missing[:min(len(missing), 10)])
		}
		if e.failed() {
			break
		}
	}
	stop.Store(true)
	wg.Wait()
	e.report(t)
}

// longList is the length of the long lists: more than two of the backend's internal
// pages (Harness.ListPage), or defaultLongList.
func (s *suite) longList() int {
	if s.h.ListPage > 0 {
		return 2*s.h.ListPage + 10
	}
	return defaultLongList
}

// duplicates returns the IDs that appear more than once in ids, or nil.
func duplicates(ids []string) []string {
	seen := make(map[string]int, len(ids))
	var dup []string
	for _, id := range ids {
		if seen[id]++; seen[id] == 2 {
			dup = append(dup, id)
		}
	}
	return dup
}
