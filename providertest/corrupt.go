package providertest

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// RunCorrupt tests what a backend does with stored records that do not decode,
// one subtest per provider.RecordKind, with Harness.Corrupt making one record of
// four undecodable in storage (it skips without the hook): a Get* of the record
// fails with an error wrapping provider.ErrCorrupt whose message names it, and its
// neighbours read as ever; every List* and iterator of the kind returns the good
// records, in order, honours its limit with good records only, and reports the
// skipped one once per call to the handler of provider.OnCorrupt; writing the
// record again replaces the corrupt value.
func RunCorrupt(t *testing.T, h Harness) {
	t.Helper()
	group(t, "Corrupt", h, func(t *testing.T, s *suite) {
		if s.h.Corrupt == nil {
			t.Skip("Harness.Corrupt is nil: the corrupt-record tests need a way to corrupt stored records")
		}
		for _, c := range corruptCases() {
			test(t, string(c.kind), func(t *testing.T) { s.checkCorrupt(t, c) })
		}
	})
}

// corruptRecords is how many records of a kind each test writes; corruptAt is the
// position, in list order, of the record Harness.Corrupt corrupts (an upsert's)
// or after which it appends a corrupt one (a log's): within the first limit of
// corruptLimit, so that a listing that counts it toward its limit comes up short.
const (
	corruptRecords = 4
	corruptAt      = 1
	corruptLimit   = corruptRecords - 1
)

// corruptKeys are the identifiers of one corrupt-record test.
type corruptKeys struct {
	pipeline string
	ids      [corruptRecords]string // record i's own ID, where the kind has one
	dates    [corruptRecords]string // record i's date, where the kind has one
}

func newCorruptKeys(t *testing.T) corruptKeys {
	k := corruptKeys{pipeline: uid(t, "pipe")}
	for i := range corruptRecords {
		k.ids[i] = fmt.Sprintf("%s-%d", uid(t, "rec"), i)
		k.dates[i] = fmt.Sprintf("2026-03-%02d", i+1)
	}
	return k
}

// corruptCase is the tests of one record kind.
type corruptCase struct {
	kind provider.RecordKind
	// needs is the optional interface the kind's reads need ("" for none).
	needs string
	// appended: the kind is a log's record; Harness.Corrupt appends a corrupt
	// one after record corruptAt instead of corrupting one already stored.
	appended bool
	// spaced: the records are written a few milliseconds apart (by
	// Harness.Sleep), so that the times the backend fills order them.
	spaced bool
	// order is the records' indexes in list order: the corrupted one (an
	// upsert's) is order[corruptAt].
	order []int
	// put writes record i.
	put func(ctx context.Context, p provider.Provider, k corruptKeys, i int) error
	// args are Harness.Corrupt's arguments for record i (for a log: any i).
	args func(k corruptKeys, i int) []string
	// id is how a message names record i: its ID, or the part of its
	// identity that is unique to it.
	id func(k corruptKeys, i int) string
	// get reads record i and reports whether it was found; nil: the kind has
	// no Get.
	get func(ctx context.Context, p provider.Provider, k corruptKeys, i int) (bool, error)
	// name is how a list shows record i (the field that tells the records
	// apart), as lists below return it.
	name func(k corruptKeys, i int) string
	// lists are the kind's List* calls and iterators.
	lists []corruptList
}

// corruptList is one List* or iterator of a kind: it returns the names of the
// records it returns (for an iterator, the first want it yields), at most limit
// (0: all it returns).
type corruptList struct {
	call    string
	limited bool
	// newest: with a limit, the list returns the newest records (the end of
	// order), like ListEvents.
	newest bool
	list   func(ctx context.Context, p provider.Provider, k corruptKeys, limit, want int) ([]string, error)
}

func corruptCases() []corruptCase {
	desc := []int{3, 2, 1, 0}
	asc := []int{0, 1, 2, 3}
	id := func(k corruptKeys, i int) string { return k.ids[i] }
	date := func(k corruptKeys, i int) string { return k.dates[i] }
	return []corruptCase{
		{
			kind: provider.KindPipeline, order: asc, id: id, name: id,
			put: func(ctx context.Context, p provider.Provider, k corruptKeys, i int) error {
				return p.RegisterPipeline(ctx, newPipeline(k.ids[i]))
			},
			args: func(k corruptKeys, i int) []string { return []string{k.ids[i]} },
			get: func(ctx context.Context, p provider.Provider, k corruptKeys, i int) (bool, error) {
				v, err := p.GetPipeline(ctx, k.ids[i])
				return v != nil, err
			},
			lists: []corruptList{{call: "ListPipelines", list: func(ctx context.Context, p provider.Provider, k corruptKeys, _, _ int) ([]string, error) {
				all, err := p.ListPipelines(ctx)
				var out []string
				for _, c := range all {
					if strings.HasPrefix(c.ID, k.ids[0][:len(k.ids[0])-1]) { // the test's pipelines only
						out = append(out, c.ID)
					}
				}
				return out, err
			}}},
		},
		{
			kind: provider.KindTrait, order: asc, id: id, name: id,
			put: func(ctx context.Context, p provider.Provider, k corruptKeys, i int) error {
				return p.PutTrait(ctx, k.pipeline, newTrait(k.ids[i]), 0)
			},
			args: func(k corruptKeys, i int) []string { return []string{k.pipeline, k.ids[i]} },
			get: func(ctx context.Context, p provider.Provider, k corruptKeys, i int) (bool, error) {
				v, err := p.GetTrait(ctx, k.pipeline, k.ids[i])
				return v != nil, err
			},
			lists: []corruptList{{call: "GetTraits", list: func(ctx context.Context, p provider.Provider, k corruptKeys, _, _ int) ([]string, error) {
				return namesOf(p.GetTraits(ctx, k.pipeline))(func(v types.TraitEvaluation) string { return v.TraitType })
			}}},
		},
		{
			kind: provider.KindRunState, order: desc, id: id, name: id,
			put: func(ctx context.Context, p provider.Provider, k corruptKeys, i int) error {
				return p.PutRunState(ctx, newRun(k.pipeline, k.ids[i], at(i)))
			},
			args: func(k corruptKeys, i int) []string { return []string{k.ids[i]} },
			get: func(ctx context.Context, p provider.Provider, k corruptKeys, i int) (bool, error) {
				v, err := p.GetRunState(ctx, k.ids[i])
				return v != nil, err
			},
			lists: []corruptList{{call: "ListRuns", limited: true, list: func(ctx context.Context, p provider.Provider, k corruptKeys, limit, _ int) ([]string, error) {
				return namesOf(p.ListRuns(ctx, k.pipeline, orAll(limit)))(func(v types.RunState) string { return v.RunID })
			}}},
		},
		{
			kind: provider.KindEvent, appended: true, order: asc,
			id:   func(k corruptKeys, _ int) string { return k.pipeline },
			name: func(_ corruptKeys, i int) string { return eventName(i) },
			put: func(ctx context.Context, p provider.Provider, k corruptKeys, i int) error {
				return p.AppendEvent(ctx, newEvent(k.pipeline, i))
			},
			args: func(k corruptKeys, _ int) []string { return []string{k.pipeline} },
			lists: []corruptList{
				{call: "ListEvents", limited: true, newest: true, list: func(ctx context.Context, p provider.Provider, k corruptKeys, limit, _ int) ([]string, error) {
					return namesOf(p.ListEvents(ctx, k.pipeline, orAll(limit)))(func(v types.Event) string { return v.Message })
				}},
				{call: "ReadEventsSince", limited: true, list: func(ctx context.Context, p provider.Provider, k corruptKeys, limit, _ int) ([]string, error) {
					return namesOf(p.ReadEventsSince(ctx, k.pipeline, "", int64(orAll(limit))))(func(v types.EventRecord) string { return v.Event.Message })
				}},
				{call: "ReadEventsSince_paged", list: func(ctx context.Context, p provider.Provider, k corruptKeys, _, _ int) ([]string, error) {
					var out []string
					for cursor := ""; ; {
						page, err := p.ReadEventsSince(ctx, k.pipeline, cursor, 1)
						if err != nil || len(page) == 0 {
							return out, err
						}
						out, cursor = append(out, page[0].Event.Message), page[0].StreamID
					}
				}},
				{call: "FollowEvents", list: func(ctx context.Context, p provider.Provider, k corruptKeys, _, want int) ([]string, error) {
					f, ok := p.(provider.EventFollower)
					if !ok {
						return nil, errSkip
					}
					return follow(ctx, f.FollowEvents(ctx, k.pipeline, ""), want, func(r types.EventRecord) string { return r.Event.Message })
				}},
			},
		},
		{
			kind: provider.KindRunLog, order: desc, id: date, name: date,
			put: func(ctx context.Context, p provider.Provider, k corruptKeys, i int) error {
				return p.PutRunLog(ctx, newRunLog(k.pipeline, k.dates[i], "daily"))
			},
			args: func(k corruptKeys, i int) []string { return []string{k.pipeline, k.dates[i], "daily"} },
			get: func(ctx context.Context, p provider.Provider, k corruptKeys, i int) (bool, error) {
				v, err := p.GetRunLog(ctx, k.pipeline, k.dates[i], "daily")
				return v != nil, err
			},
			lists: []corruptList{{call: "ListRunLogs", limited: true, list: func(ctx context.Context, p provider.Provider, k corruptKeys, limit, _ int) ([]string, error) {
				return namesOf(p.ListRunLogs(ctx, k.pipeline, orAll(limit)))(func(v types.RunLogEntry) string { return v.Date })
			}}},
		},
		{
			kind: provider.KindRerun, order: desc, id: id, name: id,
			put: func(ctx context.Context, p provider.Provider, k corruptKeys, i int) error {
				return p.PutRerun(ctx, newRerun(k.ids[i], k.pipeline, at(i)))
			},
			args: func(k corruptKeys, i int) []string { return []string{k.ids[i]} },
			get: func(ctx context.Context, p provider.Provider, k corruptKeys, i int) (bool, error) {
				v, err := p.GetRerun(ctx, k.ids[i])
				return v != nil, err
			},
			lists: []corruptList{
				{call: "ListReruns", limited: true, list: func(ctx context.Context, p provider.Provider, k corruptKeys, limit, _ int) ([]string, error) {
					return namesOf(p.ListReruns(ctx, k.pipeline, orAll(limit)))(func(v types.RerunRecord) string { return v.RerunID })
				}},
				{call: "ListAllReruns", limited: true, list: func(ctx context.Context, p provider.Provider, _ corruptKeys, limit, _ int) ([]string, error) {
					return namesOf(p.ListAllReruns(ctx, orAll(limit)))(func(v types.RerunRecord) string { return v.RerunID })
				}},
			},
		},
		{
			kind: provider.KindReplay, order: desc, id: date, name: date,
			put: func(ctx context.Context, p provider.Provider, k corruptKeys, i int) error {
				return p.PutReplay(ctx, newReplay(k.pipeline, k.dates[i], "daily", at(i)))
			},
			args: func(k corruptKeys, i int) []string { return []string{k.pipeline, k.dates[i], "daily"} },
			get: func(ctx context.Context, p provider.Provider, k corruptKeys, i int) (bool, error) {
				v, err := p.GetReplay(ctx, k.pipeline, k.dates[i], "daily")
				return v != nil, err
			},
			lists: []corruptList{{call: "ListReplays", limited: true, list: func(ctx context.Context, p provider.Provider, _ corruptKeys, limit, _ int) ([]string, error) {
				return namesOf(p.ListReplays(ctx, orAll(limit)))(func(v types.ReplayRequest) string { return v.Date })
			}}},
		},
		{
			kind: provider.KindLateArrival, appended: true, order: asc,
			id:   func(k corruptKeys, _ int) string { return k.pipeline },
			name: func(_ corruptKeys, i int) string { return strconv.Itoa(i) },
			put: func(ctx context.Context, p provider.Provider, k corruptKeys, i int) error {
				return p.PutLateArrival(ctx, newLateArrival(k.pipeline, k.dates[0], "daily", at(i), int64(i)))
			},
			args: func(k corruptKeys, _ int) []string { return []string{k.pipeline, k.dates[0], "daily"} },
			lists: []corruptList{{call: "ListLateArrivals", list: func(ctx context.Context, p provider.Provider, k corruptKeys, _, _ int) ([]string, error) {
				return namesOf(p.ListLateArrivals(ctx, k.pipeline, k.dates[0], "daily"))(func(v types.LateArrival) string {
					return strconv.FormatInt(v.RecordDelta, 10)
				})
			}}},
		},
		{
			kind: provider.KindCascadeMarker, needs: "CascadeReader", order: desc, id: date, name: date, spaced: true,
			put: func(ctx context.Context, p provider.Provider, k corruptKeys, i int) error {
				return p.WriteCascadeMarker(ctx, k.pipeline, "daily", k.dates[i], "upstream")
			},
			args: func(k corruptKeys, i int) []string { return []string{k.pipeline, k.dates[i], "daily"} },
			lists: []corruptList{{call: "ListCascadeMarkers", limited: true, list: func(ctx context.Context, p provider.Provider, k corruptKeys, limit, _ int) ([]string, error) {
				return namesOf(p.(provider.CascadeReader).ListCascadeMarkers(ctx, k.pipeline, orAll(limit)))(func(v types.CascadeMarker) string { return v.Date })
			}}},
		},
		{
			kind: provider.KindMarkerWrite, needs: "MarkerWatcher", appended: true, order: asc,
			id: func(corruptKeys, int) string { return "" }, name: date,
			put: func(ctx context.Context, p provider.Provider, k corruptKeys, i int) error {
				return p.WriteCascadeMarker(ctx, k.pipeline, "daily", k.dates[i], "upstream")
			},
			args: func(corruptKeys, int) []string { return nil },
			lists: []corruptList{{call: "WatchCascadeMarkers", list: func(ctx context.Context, p provider.Provider, _ corruptKeys, _, want int) ([]string, error) {
				return follow(ctx, p.(provider.MarkerWatcher).WatchCascadeMarkers(ctx, ""), want, func(r types.CascadeMarkerRecord) string { return r.Marker.Date })
			}}},
		},
		{
			kind: provider.KindReadiness, order: asc, id: id, name: id,
			put: func(ctx context.Context, p provider.Provider, k corruptKeys, i int) error {
				return p.PutReadiness(ctx, newReadiness(k.ids[i]))
			},
			args: func(k corruptKeys, i int) []string { return []string{k.ids[i]} },
			get: func(ctx context.Context, p provider.Provider, k corruptKeys, i int) (bool, error) {
				v, err := p.GetReadiness(ctx, k.ids[i])
				return v != nil, err
			},
		},
		{
			kind: provider.KindLock, needs: "LockInspector", order: asc, id: id, name: id,
			put: func(ctx context.Context, p provider.Provider, k corruptKeys, i int) error {
				ok, err := p.AcquireLock(ctx, k.ids[i], longTTL)
				if err == nil && !ok {
					err = fmt.Errorf("lock %s is held", k.ids[i])
				}
				return err
			},
			args: func(k corruptKeys, i int) []string { return []string{k.ids[i]} },
			get: func(ctx context.Context, p provider.Provider, k corruptKeys, i int) (bool, error) {
				v, err := p.(provider.LockInspector).GetLockInfo(ctx, k.ids[i])
				return v != nil, err
			},
			lists: []corruptList{{call: "ListLocks", limited: true, list: func(ctx context.Context, p provider.Provider, k corruptKeys, limit, _ int) ([]string, error) {
				l, ok := p.(provider.LockLister)
				if !ok {
					return nil, errSkip
				}
				return namesOf(l.ListLocks(ctx, "", orAll(limit)))(func(v types.LockInfo) string { return v.Key })
			}}},
		},
	}
}

// errSkip is what a corruptList returns when the provider lacks what it needs.
var errSkip = errors.New("providertest: skip")

// orAll is limit, or listAll when it is 0.
func orAll(limit int) int {
	if limit == 0 {
		return listAll
	}
	return limit
}

// namesOf returns a function that maps list to the names name gives, or err.
func namesOf[T any](list []T, err error) func(name func(T) string) ([]string, error) {
	return func(name func(T) string) ([]string, error) {
		if err != nil {
			return nil, err
		}
		out := make([]string, len(list))
		for i, v := range list {
			out[i] = name(v)
		}
		return out, nil
	}
}

// follow iterates seq until it has yielded want records, ctx ends or it yields an
// error, and returns the names of what it yielded.
func follow[R any](ctx context.Context, seq iter.Seq2[R, error], want int, name func(R) string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, deliveryWait)
	defer cancel()
	var out []string
	for r, err := range seq {
		if err != nil {
			if ctx.Err() != nil {
				return out, fmt.Errorf("%d of %d records yielded within %v", len(out), want, deliveryWait)
			}
			return out, err
		}
		if out = append(out, name(r)); len(out) == want {
			break
		}
	}
	return out, nil
}

// reports collects what a provider reports through provider.OnCorrupt.
type reports struct {
	mu  sync.Mutex
	got []*provider.CorruptError
}

func (r *reports) ctx(ctx context.Context) context.Context {
	return provider.OnCorrupt(ctx, func(err *provider.CorruptError) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.got = append(r.got, err)
	})
}

func (r *reports) take() []*provider.CorruptError {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.got
	r.got = nil
	return got
}

// checkCorrupt runs the tests of one kind on one storage: it writes the
// records, has Harness.Corrupt corrupt one, and checks each read, then a
// rewrite.
func (s *suite) checkCorrupt(t *testing.T, c corruptCase) {
	p, k := s.open(t), newCorruptKeys(t)
	switch c.needs {
	case "CascadeReader":
		if _, ok := p.(provider.CascadeReader); !ok {
			t.Skip("the provider is not a provider.CascadeReader")
		}
	case "MarkerWatcher":
		if _, ok := p.(provider.MarkerWatcher); !ok {
			t.Skip("the provider is not a provider.MarkerWatcher")
		}
	case "LockInspector":
		if _, ok := p.(provider.LockInspector); !ok {
			t.Skip("the provider is not a provider.LockInspector")
		}
	}
	ctx := t.Context()
	bad := c.order[corruptAt] // the corrupt record (an upsert's)
	var good []int            // the good records in list order
	for i := range corruptRecords {
		if c.spaced && i > 0 {
			s.sleep(t, 5*time.Millisecond)
		}
		noErr(t, c.put(ctx, p, k, i), fmt.Sprintf("put %s %d", c.kind, i))
		if c.appended && i == c.order[corruptAt] {
			s.h.Corrupt(t, c.kind, c.args(k, i)...)
		}
	}
	for _, i := range c.order {
		if c.appended || i != bad {
			good = append(good, i)
		}
	}
	if !c.appended {
		s.h.Corrupt(t, c.kind, c.args(k, bad)...)
	}
	want := func(idx []int) []string {
		out := make([]string, len(idx))
		for j, i := range idx {
			out[j] = c.name(k, i)
		}
		return out
	}
	// what names the record a report or an error must name, where it has a
	// name of its own; a log's corrupt record is named by its log.
	what := c.id(k, bad)

	if c.get != nil && !c.appended {
		t.Run("get", func(t *testing.T) {
			found, err := c.get(ctx, p, k, bad)
			switch {
			case err == nil:
				t.Errorf("Get of the corrupt %s %s: got (found %v, nil), want an error wrapping provider.ErrCorrupt", c.kind, what, found)
			case !errors.Is(err, provider.ErrCorrupt):
				t.Errorf("Get of the corrupt %s %s: got %v, want an error wrapping provider.ErrCorrupt", c.kind, what, err)
			case !strings.Contains(err.Error(), what):
				t.Errorf("Get of the corrupt %s %s: the error %q does not name the record", c.kind, what, err)
			}
			for _, i := range good {
				found, err := c.get(ctx, p, k, i)
				if err != nil || !found {
					t.Errorf("Get of the good %s %s beside a corrupt one: got (found %v, %v), want it", c.kind, c.id(k, i), found, err)
				}
			}
		})
	}
	for _, l := range c.lists {
		check := func(t *testing.T, limit int, wantNames []string) {
			t.Helper()
			var r reports
			got, err := l.list(r.ctx(ctx), p, k, limit, len(wantNames))
			if errors.Is(err, errSkip) {
				t.Skipf("the provider lacks %s", l.call)
			}
			if err != nil {
				t.Fatalf("%s beside a corrupt %s: %v (it must skip the record and return the others)", l.call, c.kind, err)
			}
			same(t, fmt.Sprintf("%s beside a corrupt %s (limit %d)", l.call, c.kind, limit), wantNames, got)
		}
		t.Run("skip/"+l.call, func(t *testing.T) { check(t, 0, want(good)) })
		if l.limited {
			t.Run("limit/"+l.call, func(t *testing.T) {
				w := good[:corruptLimit]
				if l.newest {
					w = good[len(good)-corruptLimit:]
				}
				check(t, corruptLimit, want(w))
			})
		}
		t.Run("report/"+l.call, func(t *testing.T) {
			var r reports
			if _, err := l.list(r.ctx(ctx), p, k, 0, len(good)); errors.Is(err, errSkip) {
				t.Skipf("the provider lacks %s", l.call)
			} else if err != nil {
				t.Fatalf("%s beside a corrupt %s: %v", l.call, c.kind, err)
			}
			got := r.take()
			if len(got) != 1 {
				t.Fatalf("%s beside one corrupt %s reported %d corrupt records to the provider.OnCorrupt handler, want 1: %v",
					l.call, c.kind, len(got), got)
			}
			if err := got[0]; !errors.Is(err, provider.ErrCorrupt) || err.Kind != c.kind || !strings.Contains(err.Error(), what) {
				t.Errorf("%s reported %q (kind %q), want an error of kind %q wrapping provider.ErrCorrupt that names %q",
					l.call, err, err.Kind, c.kind, what)
			}
		})
	}
	if !c.appended && c.kind != provider.KindLock {
		t.Run("rewrite", func(t *testing.T) {
			noErr(t, c.put(ctx, p, k, bad), fmt.Sprintf("put the corrupt %s %s again", c.kind, what))
			if c.get != nil {
				if found, err := c.get(ctx, p, k, bad); err != nil || !found {
					t.Errorf("Get of the %s %s written again over its corrupt value: got (found %v, %v), want it", c.kind, what, found, err)
				}
			}
			all := slices.Sorted(slices.Values(want(c.order)))
			for _, l := range c.lists {
				var r reports
				got, err := l.list(r.ctx(ctx), p, k, 0, len(all))
				noErr(t, err, l.call)
				slices.Sort(got) // writing it again may move it (a marker's WrittenAt)
				same(t, fmt.Sprintf("%s after the corrupt %s was written again (sorted)", l.call, c.kind), all, got)
				if n := len(r.take()); n != 0 {
					t.Errorf("%s after the corrupt %s was written again reported %d corrupt records, want 0", l.call, c.kind, n)
				}
			}
		})
	}
}
