package providertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// RunFidelity tests that what is stored comes back exactly and apart:
//   - times: in every time-ordered list (runs, reruns of a pipeline and of all,
//     replays, late arrivals) and in event Timestamps, times near the zero time
//     (year 1, not zero: kept, not filled), before the Unix epoch, beyond int64
//     nanoseconds (year 2500 and 9999), in several zones and with monotonic
//     readings (time.Now), a nanosecond apart: each round-trips Equal and the list
//     is ordered by instant;
//   - zero times: every time a put does not fill from the clock (trait and
//     readiness EvaluatedAt, run log StartedAt, UpdatedAt, CompletedAt and retry
//     times, rerun CompletedAt), written as the zero time, reads back IsZero from
//     every read (not as the Unix epoch, the clock's now or nil);
//   - valid IDs: the shortest, every valid character alone and together, and the
//     longest (types.MaxIDLen) must be accepted by every method that takes an ID,
//     in every ID position, and round-trip;
//   - prefix-related IDs (prefixFamily: "p", "p-2", "p2", "p.", "p/x", "p-", "P",
//     "p_"...) never see each other's data in any read, FollowEvents included,
//     and a watch (WatchCascadeMarkers) delivers each marker write as written,
//     whatever position of the marker they are in.
func RunFidelity(t *testing.T, h Harness) {
	t.Helper()
	group(t, "Fidelity", h, func(t *testing.T, s *suite) {
		for _, kind := range timeKinds() {
			test(t, "times/"+kind.name, func(t *testing.T) { testFidelityTimes(t, s, kind) })
		}
		for _, kind := range zeroKinds() {
			test(t, "zero_times/"+kind.name, func(t *testing.T) { testFidelityZeroTimes(t, s, kind) })
		}
		for _, kind := range idKinds() {
			test(t, "valid_ids/"+kind.name, func(t *testing.T) { testFidelityValidIDs(t, s, kind) })
		}
		for _, kind := range prefixKinds() {
			test(t, "prefix_ids/"+kind.name, func(t *testing.T) { testFidelityPrefixIDs(t, s, kind) })
		}
		s.run(t, "prefix_ids/follow_events", testFidelityPrefixIDsFollowEvents)
		s.run(t, "prefix_ids/watch_markers", testFidelityPrefixIDsWatchMarkers)
	})
}

func testFidelityTimes(t *testing.T, s *suite, kind timeKind) {
	p, k := s.open(t), newIDs(t)
	times := fidelityTimes()
	n := len(times)
	// Item i has the i-th oldest time and an ID that sorts against time
	// order, so that a tie (a truncated time) breaks the wrong way.
	id := func(i int) string { return fmt.Sprintf("t%02d", n-i) }
	for _, i := range []int{3, 9, 0, 5, 7, 1, 8, 2, 6, 4} {
		noErr(t, kind.put(t.Context(), p, k, id(i), times[i]), kind.name+": put at "+times[i].String())
	}
	got, err := kind.list(t.Context(), p, k)
	noErr(t, err, kind.name+": list")
	var wantIDs []string
	var wantTimes []time.Time
	for i := range n {
		wantIDs = append(wantIDs, id(i))
		wantTimes = append(wantTimes, times[i])
	}
	if kind.newestFirst {
		slices.Reverse(wantIDs)
		slices.Reverse(wantTimes)
	}
	if kind.sorted {
		same(t, kind.name+": IDs in list order", wantIDs, got.ids)
	} else {
		got.ids, got.times = wantIDs, sortedTimes(got.times, kind.newestFirst)
	}
	same(t, kind.name+": times in list order (each Equal to what was put)", wantTimes, got.times)
}

func testFidelityZeroTimes(t *testing.T, s *suite, kind zeroKind) {
	p, k := s.open(t), newIDs(t)
	for _, err := range kind.roundTrip(t.Context(), p, k) {
		if err != nil {
			t.Errorf("%s: %v", kind.name, err)
		}
	}
}

func testFidelityValidIDs(t *testing.T, s *suite, kind idKind) {
	p, k := s.open(t), newIDs(t)
	if kind.reader {
		if _, ok := p.(provider.CascadeReader); !ok {
			t.Skip("the provider does not implement provider.CascadeReader")
		}
	}
	for _, id := range validIDs() {
		if err := kind.roundTrip(t.Context(), p, k, id); err != nil {
			t.Errorf("%s with every ID %q (%d bytes, valid): %v", kind.name, id, len(id), err)
		}
	}
}

func testFidelityPrefixIDs(t *testing.T, s *suite, kind prefixKind) {
	p := s.open(t)
	if kind.reader {
		if _, ok := p.(provider.CascadeReader); !ok {
			t.Skip("the provider does not implement provider.CascadeReader")
		}
	}
	family := prefixFamily
	for tag, id := range family {
		noErr(t, kind.put(t.Context(), p, id, tag), fmt.Sprintf("%s: put %q", kind.name, id))
	}
	for tag, id := range family {
		for _, read := range kind.reads {
			got, err := read.do(t.Context(), p, id)
			noErr(t, err, read.name)
			if !slices.Equal(got, []int{tag}) {
				names := make([]string, len(got))
				for i, g := range got {
					names[i] = fmt.Sprintf("%q", family[g])
				}
				t.Errorf("%s(%q) found the data of %v, want only its own: prefix-related IDs must never see each other's data",
					read.name, id, names)
			}
		}
	}
}

func testFidelityPrefixIDsFollowEvents(t *testing.T, s *suite) {
	f, ok := s.open(t).(provider.EventFollower)
	if !ok {
		t.Skip("the provider does not implement provider.EventFollower")
	}
	// Followers started before anything is written see the writes live; the
	// ones started after see them stored. Every ID's tagged event is written
	// before any ID's last event, so a follower that yields another ID's
	// events in commit order yields them before its own last one.
	live := make([]<-chan item[types.EventRecord], len(prefixFamily))
	for i, id := range prefixFamily {
		live[i] = consume(f.FollowEvents(t.Context(), id, ""))
	}
	w := s.open(t)
	for _, msg := range []func(tag int) string{strconv.Itoa, func(int) string { return "end" }} {
		for tag, id := range prefixFamily {
			ev := newEvent(id, tag)
			ev.Message = msg(tag)
			noErr(t, w.AppendEvent(t.Context(), ev), fmt.Sprintf("AppendEvent(%q)", id))
		}
	}
	for tag, id := range prefixFamily {
		checkFollowed(t, live[tag], tag, "FollowEvents started before the writes")
		checkFollowed(t, consume(f.FollowEvents(t.Context(), id, "")), tag, "FollowEvents started after the writes")
	}
}

func testFidelityPrefixIDsWatchMarkers(t *testing.T, s *suite) {
	p := s.open(t)
	mw, ok := p.(provider.MarkerWatcher)
	if !ok {
		t.Skip("the provider does not implement provider.MarkerWatcher")
	}
	ch := consume(mw.WatchCascadeMarkers(t.Context(), ""))
	// Each ID of the family in each position of a marker write; a watch
	// delivers every write as written, never attributed to a neighbour.
	want := map[string]bool{}
	for tag, id := range prefixFamily {
		for _, m := range []types.CascadeMarker{
			{PipelineID: id, ScheduleID: "s", Date: "d", Source: fmt.Sprintf("a%d", tag)},
			{PipelineID: "x", ScheduleID: id, Date: "d", Source: fmt.Sprintf("b%d", tag)},
			{PipelineID: "x", ScheduleID: "s", Date: id, Source: fmt.Sprintf("c%d", tag)},
			{PipelineID: "y", ScheduleID: "s", Date: "d", Source: id},
		} {
			noErr(t, p.WriteCascadeMarker(t.Context(), m.PipelineID, m.ScheduleID, m.Date, m.Source), "WriteCascadeMarker "+markerKey(m))
			want[markerKey(m)] = true
		}
	}
	seen := map[string]bool{}
	timeout := time.After(deliveryWait)
	for len(seen) < len(want) {
		select {
		case it, ok := <-ch:
			if !ok || it.err != nil {
				t.Fatalf("watch ended (%v) with %d of %d writes delivered", it.err, len(seen), len(want))
			}
			key := markerKey(it.r.Marker)
			if !want[key] {
				t.Fatalf("watch delivered %q (pipeline|schedule|date|source), a marker nobody wrote: "+
					"prefix-related IDs must never be taken for one another", key)
			}
			seen[key] = true
		case <-timeout:
			t.Fatalf("%d of %d writes delivered after %v", len(seen), len(want), deliveryWait)
		}
	}
}

// prefixFamily are IDs that share prefixes, differ in case, or end in or contain a
// character that ValidateID allows and a backend might use as a key delimiter, a
// path separator or a pattern's wildcard ('_' in SQL LIKE).
var prefixFamily = []string{"p", "p-2", "p2", "p.", "p/x", "p-", "P", "p_", "p+x", "p=x", "p@x"}

// checkFollowed receives from a follower of prefixFamily[tag] until its own last
// event ("end") and fails unless it yielded exactly its own two events.
func checkFollowed(t *testing.T, ch <-chan item[types.EventRecord], tag int, what string) {
	t.Helper()
	id := prefixFamily[tag]
	var got []string
	timeout := time.After(deliveryWait)
	for {
		select {
		case it, ok := <-ch:
			if !ok || it.err != nil {
				t.Fatalf("%s(%q): ended (%v) after %v", what, id, it.err, got)
			}
			ev := it.r.Event
			got = append(got, fmt.Sprintf("%s:%s", ev.PipelineID, ev.Message))
			if ev.PipelineID != id || ev.Message != "end" {
				continue
			}
			if want := []string{id + ":" + strconv.Itoa(tag), id + ":end"}; !slices.Equal(got, want) {
				t.Errorf("%s(%q) yielded %q (pipeline:message), want %q: prefix-related IDs must never see each other's data",
					what, id, got, want)
			}
			return
		case <-timeout:
			t.Fatalf("%s(%q): no last event after %v (got %q)", what, id, deliveryWait, got)
		}
	}
}

// fidelityTimes returns distinct instants, oldest first, that a backend may
// mishandle.
func fidelityTimes() []time.Time {
	now := time.Now() // with a monotonic reading
	east, west, nepal := time.FixedZone("east", 14*3600), time.FixedZone("west", -12*3600), time.FixedZone("nepal", 5*3600+45*60)
	return []time.Time{
		time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),                 // a nanosecond after the zero time: not zero
		time.Date(1, 1, 1, 0, 0, 1, 0, time.UTC).In(east),        // year 1, in a zone
		time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC), // before the Unix epoch
		now,                                // monotonic
		now.Add(time.Nanosecond),           // a nanosecond later, monotonic
		now.Add(30 * time.Minute).In(east), // reads later than the next, is earlier
		now.Add(90 * time.Minute).In(west),
		now.Add(2 * time.Hour).In(nepal),
		time.Date(2500, 1, 1, 0, 0, 0, 0, time.UTC), // beyond int64 nanoseconds since 1970
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), // the last instant JSON encodes
	}
}

func sortedTimes(ts []time.Time, newestFirst bool) []time.Time {
	out := slices.Clone(ts)
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	if newestFirst {
		slices.Reverse(out)
	}
	return out
}

// listed is what a time-ordered list returned: IDs and times in list order.
type listed struct {
	ids   []string
	times []time.Time
}

// timeKind is one time-ordered list: put writes item id at time at.
type timeKind struct {
	name        string
	newestFirst bool
	sorted      bool // ordered by the time (events are in append order)
	put         func(ctx context.Context, p provider.Provider, k ids, id string, at time.Time) error
	list        func(ctx context.Context, p provider.Provider, k ids) (listed, error)
}

func timeKinds() []timeKind {
	rerun := func(k ids, id string, at time.Time) types.RerunRecord {
		r := newRerun(id, k.pipeline, at)
		r.CompletedAt = nil
		return r
	}
	reruns := func(l []types.RerunRecord, err error) (listed, error) {
		var out listed
		for _, r := range l {
			out.ids, out.times = append(out.ids, r.RerunID), append(out.times, r.RequestedAt)
		}
		return out, err
	}
	putRerun := func(ctx context.Context, p provider.Provider, k ids, id string, at time.Time) error {
		return p.PutRerun(ctx, rerun(k, id, at))
	}
	return []timeKind{
		{name: "runs", newestFirst: true, sorted: true,
			put: func(ctx context.Context, p provider.Provider, k ids, id string, at time.Time) error {
				run := newRun(k.pipeline, id, at)
				run.UpdatedAt = at
				return p.PutRunState(ctx, run)
			},
			list: func(ctx context.Context, p provider.Provider, k ids) (listed, error) {
				l, err := p.ListRuns(ctx, k.pipeline, listAll)
				var out listed
				for _, r := range l {
					out.ids, out.times = append(out.ids, r.RunID), append(out.times, r.CreatedAt)
				}
				return out, err
			}},
		{name: "reruns", newestFirst: true, sorted: true, put: putRerun,
			list: func(ctx context.Context, p provider.Provider, k ids) (listed, error) {
				return reruns(p.ListReruns(ctx, k.pipeline, listAll))
			}},
		{name: "all_reruns", newestFirst: true, sorted: true, put: putRerun,
			list: func(ctx context.Context, p provider.Provider, _ ids) (listed, error) {
				return reruns(p.ListAllReruns(ctx, listAll))
			}},
		{name: "replays", newestFirst: true, sorted: true,
			put: func(ctx context.Context, p provider.Provider, k ids, id string, at time.Time) error {
				return p.PutReplay(ctx, newReplay(k.pipeline, id, "", at))
			},
			list: func(ctx context.Context, p provider.Provider, _ ids) (listed, error) {
				l, err := p.ListReplays(ctx, listAll)
				var out listed
				for _, r := range l {
					out.ids, out.times = append(out.ids, r.Date), append(out.times, r.CreatedAt)
				}
				return out, err
			}},
		{name: "late_arrivals", sorted: true,
			put: func(ctx context.Context, p provider.Provider, k ids, id string, at time.Time) error {
				n, _ := strconv.Atoi(id[1:])
				return p.PutLateArrival(ctx, newLateArrival(k.pipeline, k.date, "", at, int64(n)))
			},
			list: func(ctx context.Context, p provider.Provider, k ids) (listed, error) {
				l, err := p.ListLateArrivals(ctx, k.pipeline, k.date, "")
				var out listed
				for _, la := range l {
					out.ids, out.times = append(out.ids, fmt.Sprintf("t%02d", la.RecordDelta)), append(out.times, la.DetectedAt)
				}
				return out, err
			}},
		{name: "event_timestamps",
			put: func(ctx context.Context, p provider.Provider, k ids, id string, at time.Time) error {
				ev := newEvent(k.pipeline, 0)
				ev.Message, ev.Timestamp = id, at
				return p.AppendEvent(ctx, ev)
			},
			list: func(ctx context.Context, p provider.Provider, k ids) (listed, error) {
				l, err := p.ListEvents(ctx, k.pipeline, listAll)
				var out listed
				for _, ev := range l {
					out.ids, out.times = append(out.ids, ev.Message), append(out.times, ev.Timestamp)
				}
				return out, err
			}},
	}
}

// zeroKind writes an entity whose times that the backend does not fill are all
// the zero time and reads it back by every read; roundTrip returns what went
// wrong.
type zeroKind struct {
	name      string
	roundTrip func(ctx context.Context, p provider.Provider, k ids) []error
}

// zeroDiff is diff for a value written with zero times: each must come back as
// the zero time (IsZero), not as the Unix epoch, the clock's now or nil.
func zeroDiff[T any](what string, want, got T) error {
	if err := diff(what, want, got); err != nil {
		return fmt.Errorf("a zero time must round-trip as the zero time (time.Time{}): %w", err)
	}
	return nil
}

func zeroKinds() []zeroKind {
	zero := func() *time.Time { return new(time.Time) }
	return []zeroKind{
		{name: "traits", roundTrip: func(ctx context.Context, p provider.Provider, k ids) []error {
			tr := newTrait(k.trait)
			tr.PipelineID, tr.EvaluatedAt = k.pipeline, time.Time{}
			if err := p.PutTrait(ctx, k.pipeline, tr, longTTL); err != nil {
				return []error{fmt.Errorf("PutTrait: %w", err)}
			}
			var errs []error
			got, err := found(p.GetTrait(ctx, k.pipeline, k.trait))
			if err != nil {
				return []error{fmt.Errorf("GetTrait: %w", err)}
			}
			tr.ExpiresAt = got.ExpiresAt // filled by PutTrait
			errs = append(errs, zeroDiff("GetTrait", tr, got))
			listed, err := one(p.GetTraits(ctx, k.pipeline))
			if err != nil {
				return append(errs, fmt.Errorf("GetTraits: %w", err))
			}
			return append(errs, zeroDiff("GetTraits", tr, listed))
		}},
		{name: "readiness", roundTrip: func(ctx context.Context, p provider.Provider, k ids) []error {
			r := newReadiness(k.pipeline)
			r.EvaluatedAt = time.Time{}
			r.Traits[0].EvaluatedAt, r.Traits[0].ExpiresAt = time.Time{}, zero()
			r.Traits[1].EvaluatedAt = time.Time{}
			if err := p.PutReadiness(ctx, r); err != nil {
				return []error{fmt.Errorf("PutReadiness: %w", err)}
			}
			got, err := found(p.GetReadiness(ctx, k.pipeline))
			if err != nil {
				return []error{fmt.Errorf("GetReadiness: %w", err)}
			}
			return []error{zeroDiff("GetReadiness", r, got)}
		}},
		{name: "run_logs", roundTrip: func(ctx context.Context, p provider.Provider, k ids) []error {
			e := newRunLog(k.pipeline, k.date, "")
			e.ScheduleID = types.DefaultScheduleID
			e.StartedAt, e.UpdatedAt, e.CompletedAt = time.Time{}, time.Time{}, zero()
			e.RetryHistory = append(e.RetryHistory, types.RetryRecord{Attempt: 2, Status: types.RunFailed})
			e.RetryHistory[0].At = time.Time{}
			if err := p.PutRunLog(ctx, e); err != nil {
				return []error{fmt.Errorf("PutRunLog: %w", err)}
			}
			var errs []error
			got, err := found(p.GetRunLog(ctx, k.pipeline, k.date, ""))
			if err != nil {
				return []error{fmt.Errorf("GetRunLog: %w", err)}
			}
			errs = append(errs, zeroDiff("GetRunLog", e, got))
			listed, err := one(p.ListRunLogs(ctx, k.pipeline, 10))
			if err != nil {
				return append(errs, fmt.Errorf("ListRunLogs: %w", err))
			}
			return append(errs, zeroDiff("ListRunLogs", e, listed))
		}},
		{name: "reruns", roundTrip: func(ctx context.Context, p provider.Provider, k ids) []error {
			r := newRerun(k.rerun, k.pipeline, t0)
			r.CompletedAt = zero()
			if err := p.PutRerun(ctx, r); err != nil {
				return []error{fmt.Errorf("PutRerun: %w", err)}
			}
			var errs []error
			got, err := found(p.GetRerun(ctx, k.rerun))
			if err != nil {
				return []error{fmt.Errorf("GetRerun: %w", err)}
			}
			errs = append(errs, zeroDiff("GetRerun", r, got))
			for _, l := range []struct {
				name string
				list func() ([]types.RerunRecord, error)
			}{
				{"ListReruns", func() ([]types.RerunRecord, error) { return p.ListReruns(ctx, k.pipeline, 10) }},
				{"ListAllReruns", func() ([]types.RerunRecord, error) { return p.ListAllReruns(ctx, 10) }},
			} {
				listed, err := one(l.list())
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", l.name, err))
					continue
				}
				errs = append(errs, zeroDiff(l.name, r, listed))
			}
			return errs
		}},
	}
}

// validIDs are valid IDs a backend may mishandle: the shortest, each character
// the rule allows besides letters and digits, alone and as path elements, all of
// them together, and the longest.
func validIDs() []string {
	every := "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./+=@"
	longest := every + strings.Repeat("z", types.MaxIDLen-len(every)-1) + "@"
	return []string{"a", "-", "_", ".", "..", "/", "+", "=", "@", "./..", "a/../b", every, longest}
}

// idKind writes one entity with id in every ID position and reads it back by
// every read that takes those IDs; roundTrip returns what went wrong.
type idKind struct {
	name      string
	reader    bool
	roundTrip func(ctx context.Context, p provider.Provider, k ids, id string) error
}

// diff returns an error when got (after a JSON round trip of want) differs.
func diff[T any](what string, want, got T) error {
	var w T
	if err := roundTripJSON(want, &w); err != nil {
		return err
	}
	if d := cmpDiff(w, got); d != "" {
		return fmt.Errorf("%s mismatch (-want +got):\n%s", what, d)
	}
	return nil
}

// one returns list[0], or an error unless the list has exactly one item.
func one[T any](list []T, err error) (T, error) {
	var zero T
	if err != nil {
		return zero, err
	}
	if len(list) != 1 {
		return zero, fmt.Errorf("%d items, want 1", len(list))
	}
	return list[0], nil
}

// found returns *v, or an error when v is nil or err is set.
func found[T any](v *T, err error) (T, error) {
	var zero T
	if err != nil {
		return zero, err
	}
	if v == nil {
		return zero, errors.New("not found after the put")
	}
	return *v, nil
}

func idKinds() []idKind {
	return []idKind{
		{name: "pipelines", roundTrip: func(ctx context.Context, p provider.Provider, _ ids, id string) error {
			cfg := newPipeline(id)
			cfg.Traits = map[string]types.TraitConfig{id: {Evaluator: "sql"}}
			cfg.Schedules = []types.ScheduleConfig{{ID: id, Cron: "0 * * * *"}}
			cfg.Downstream = []string{"d" + id[1:]} // valid, and not the pipeline itself
			if err := p.RegisterPipeline(ctx, cfg); err != nil {
				return fmt.Errorf("RegisterPipeline: %w", err)
			}
			got, err := found(p.GetPipeline(ctx, id))
			if err != nil {
				return fmt.Errorf("GetPipeline: %w", err)
			}
			return diff("GetPipeline", cfg, got)
		}},
		{name: "traits", roundTrip: func(ctx context.Context, p provider.Provider, _ ids, id string) error {
			tr := newTrait(id)
			tr.PipelineID = id
			if err := p.PutTrait(ctx, id, tr, longTTL); err != nil {
				return fmt.Errorf("PutTrait: %w", err)
			}
			got, err := found(p.GetTrait(ctx, id, id))
			if err != nil {
				return fmt.Errorf("GetTrait: %w", err)
			}
			tr.ExpiresAt = got.ExpiresAt
			if err := diff("GetTrait", tr, got); err != nil {
				return err
			}
			listedTrait, err := one(p.GetTraits(ctx, id))
			if err != nil {
				return fmt.Errorf("GetTraits: %w", err)
			}
			return diff("GetTraits", tr, listedTrait)
		}},
		{name: "runs", roundTrip: func(ctx context.Context, p provider.Provider, _ ids, id string) error {
			run := newRun(id, id, t0)
			if err := p.PutRunState(ctx, run); err != nil {
				return fmt.Errorf("PutRunState: %w", err)
			}
			next := run
			next.Status = types.RunRunning
			if ok, err := p.CompareAndSwapRunState(ctx, id, 0, next); err != nil || !ok {
				return fmt.Errorf("CompareAndSwapRunState = (%v, %v), want (true, nil)", ok, err)
			}
			got, err := found(p.GetRunState(ctx, id))
			if err != nil {
				return fmt.Errorf("GetRunState: %w", err)
			}
			next.Version, next.UpdatedAt = 1, got.UpdatedAt
			if err := diff("GetRunState", next, got); err != nil {
				return err
			}
			listedRun, err := one(p.ListRuns(ctx, id, 10))
			if err != nil {
				return fmt.Errorf("ListRuns: %w", err)
			}
			return diff("ListRuns", next, listedRun)
		}},
		{name: "events", roundTrip: func(ctx context.Context, p provider.Provider, _ ids, id string) error {
			ev := newEvent(id, 1)
			ev.RunID, ev.TraitType = id, id
			if err := p.AppendEvent(ctx, ev); err != nil {
				return fmt.Errorf("AppendEvent: %w", err)
			}
			listedEvent, err := one(p.ListEvents(ctx, id, 10))
			if err != nil {
				return fmt.Errorf("ListEvents: %w", err)
			}
			if err := diff("ListEvents", ev, listedEvent); err != nil {
				return err
			}
			rec, err := one(p.ReadEventsSince(ctx, id, "", 10))
			if err != nil {
				return fmt.Errorf("ReadEventsSince: %w", err)
			}
			if err := diff("ReadEventsSince", ev, rec.Event); err != nil {
				return err
			}
			rest, err := p.ReadEventsSince(ctx, id, rec.StreamID, 10)
			if err != nil || len(rest) != 0 {
				return fmt.Errorf("ReadEventsSince(its own cursor) = %d events, %v; want none", len(rest), err)
			}
			return nil
		}},
		{name: "run_logs", roundTrip: func(ctx context.Context, p provider.Provider, _ ids, id string) error {
			e := newRunLog(id, id, id)
			e.RunID = id
			if err := p.PutRunLog(ctx, e); err != nil {
				return fmt.Errorf("PutRunLog: %w", err)
			}
			got, err := found(p.GetRunLog(ctx, id, id, id))
			if err != nil {
				return fmt.Errorf("GetRunLog: %w", err)
			}
			if err := diff("GetRunLog", e, got); err != nil {
				return err
			}
			listedLog, err := one(p.ListRunLogs(ctx, id, 10))
			if err != nil {
				return fmt.Errorf("ListRunLogs: %w", err)
			}
			return diff("ListRunLogs", e, listedLog)
		}},
		{name: "reruns", roundTrip: func(ctx context.Context, p provider.Provider, _ ids, id string) error {
			r := newRerun(id, id, t0)
			r.OriginalDate, r.OriginalRunID, r.RerunRunID = id, id, id
			if err := p.PutRerun(ctx, r); err != nil {
				return fmt.Errorf("PutRerun: %w", err)
			}
			got, err := found(p.GetRerun(ctx, id))
			if err != nil {
				return fmt.Errorf("GetRerun: %w", err)
			}
			if err := diff("GetRerun", r, got); err != nil {
				return err
			}
			listedRerun, err := one(p.ListReruns(ctx, id, 10))
			if err != nil {
				return fmt.Errorf("ListReruns: %w", err)
			}
			return diff("ListReruns", r, listedRerun)
		}},
		{name: "replays", roundTrip: func(ctx context.Context, p provider.Provider, _ ids, id string) error {
			r := newReplay(id, id, id, t0)
			r.RequestedBy = id
			if err := p.PutReplay(ctx, r); err != nil {
				return fmt.Errorf("PutReplay: %w", err)
			}
			got, err := found(p.GetReplay(ctx, id, id, id))
			if err != nil {
				return fmt.Errorf("GetReplay: %w", err)
			}
			return diff("GetReplay", r, got)
		}},
		{name: "late_arrivals", roundTrip: func(ctx context.Context, p provider.Provider, _ ids, id string) error {
			la := newLateArrival(id, id, id, t0, 3)
			la.TraitType = id
			if err := p.PutLateArrival(ctx, la); err != nil {
				return fmt.Errorf("PutLateArrival: %w", err)
			}
			got, err := one(p.ListLateArrivals(ctx, id, id, id))
			if err != nil {
				return fmt.Errorf("ListLateArrivals: %w", err)
			}
			return diff("ListLateArrivals", la, got)
		}},
		{name: "markers", reader: true, roundTrip: func(ctx context.Context, p provider.Provider, _ ids, id string) error {
			if err := p.WriteCascadeMarker(ctx, id, id, id, id); err != nil {
				return fmt.Errorf("WriteCascadeMarker: %w", err)
			}
			got, err := one(p.(provider.CascadeReader).ListCascadeMarkers(ctx, id, 10))
			if err != nil {
				return fmt.Errorf("ListCascadeMarkers: %w", err)
			}
			return diff("ListCascadeMarkers", types.CascadeMarker{PipelineID: id, ScheduleID: id, Date: id, Source: id, WrittenAt: got.WrittenAt}, got)
		}},
		{name: "readiness", roundTrip: func(ctx context.Context, p provider.Provider, _ ids, id string) error {
			r := newReadiness(id)
			r.Blocking = []string{id}
			r.Traits[1].TraitType = id
			if err := p.PutReadiness(ctx, r); err != nil {
				return fmt.Errorf("PutReadiness: %w", err)
			}
			got, err := found(p.GetReadiness(ctx, id))
			if err != nil {
				return fmt.Errorf("GetReadiness: %w", err)
			}
			return diff("GetReadiness", r, got)
		}},
	}
}

// prefixRead is one read of the data under an ID; it returns the tags it finds.
type prefixRead struct {
	name string
	do   func(ctx context.Context, p provider.Provider, id string) ([]int, error)
}

// prefixKind writes data tagged tag under id (in one ID position) and reads it
// back by every read that takes that ID.
type prefixKind struct {
	name   string
	reader bool
	put    func(ctx context.Context, p provider.Provider, id string, tag int) error
	reads  []prefixRead
}

// tagOf returns the tag in s, or -1.
func tagOf(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

func prefixKinds() []prefixKind {
	getTag := func(name string, get func(ctx context.Context, p provider.Provider, id string) (string, bool, error)) prefixRead {
		return prefixRead{name, func(ctx context.Context, p provider.Provider, id string) ([]int, error) {
			s, ok, err := get(ctx, p, id)
			if !ok || err != nil {
				return nil, err
			}
			return []int{tagOf(s)}, nil
		}}
	}
	listTags := func(name string, list func(ctx context.Context, p provider.Provider, id string) ([]string, error)) prefixRead {
		return prefixRead{name, func(ctx context.Context, p provider.Provider, id string) ([]int, error) {
			ss, err := list(ctx, p, id)
			var out []int
			for _, s := range ss {
				out = append(out, tagOf(s))
			}
			return out, err
		}}
	}
	runLogRead := func(key func(id string) [3]string) prefixRead {
		return getTag("GetRunLog", func(ctx context.Context, p provider.Provider, id string) (string, bool, error) {
			k := key(id)
			e, err := p.GetRunLog(ctx, k[0], k[1], k[2])
			if e == nil {
				return "", false, err
			}
			return e.FailureMessage, true, err
		})
	}
	// runLogReads reads by the key, and lists the pipeline's run logs when the ID
	// is the pipeline's.
	runLogReads := func(key func(id string) [3]string) []prefixRead {
		reads := []prefixRead{runLogRead(key)}
		if key("p")[0] != "p" {
			return reads
		}
		return append(reads, listTags("ListRunLogs", func(ctx context.Context, p provider.Provider, id string) ([]string, error) {
			l, err := p.ListRunLogs(ctx, id, listAll)
			var out []string
			for _, e := range l {
				out = append(out, e.FailureMessage)
			}
			return out, err
		}))
	}
	replayRead := func(key func(id string) [3]string) prefixRead {
		return getTag("GetReplay", func(ctx context.Context, p provider.Provider, id string) (string, bool, error) {
			k := key(id)
			r, err := p.GetReplay(ctx, k[0], k[1], k[2])
			if r == nil {
				return "", false, err
			}
			return r.Reason, true, err
		})
	}
	lateRead := func(key func(id string) [3]string) prefixRead {
		return listTags("ListLateArrivals", func(ctx context.Context, p provider.Provider, id string) ([]string, error) {
			k := key(id)
			l, err := p.ListLateArrivals(ctx, k[0], k[1], k[2])
			var out []string
			for _, la := range l {
				out = append(out, strconv.FormatInt(la.RecordDelta, 10))
			}
			return out, err
		})
	}
	slotKinds := func(name string, key func(id string) [3]string) []prefixKind {
		return []prefixKind{
			{name: "run_logs_by_" + name, put: func(ctx context.Context, p provider.Provider, id string, tag int) error {
				k := key(id)
				e := newRunLog(k[0], k[1], k[2])
				e.FailureMessage = strconv.Itoa(tag)
				return p.PutRunLog(ctx, e)
			}, reads: runLogReads(key)},
			{name: "replays_by_" + name, put: func(ctx context.Context, p provider.Provider, id string, tag int) error {
				k := key(id)
				r := newReplay(k[0], k[1], k[2], at(tag))
				r.Reason = strconv.Itoa(tag)
				return p.PutReplay(ctx, r)
			}, reads: []prefixRead{replayRead(key)}},
			{name: "late_arrivals_by_" + name, put: func(ctx context.Context, p provider.Provider, id string, tag int) error {
				k := key(id)
				return p.PutLateArrival(ctx, newLateArrival(k[0], k[1], k[2], at(tag), int64(tag)))
			}, reads: []prefixRead{lateRead(key)}},
		}
	}
	kinds := []prefixKind{
		{name: "pipelines", put: func(ctx context.Context, p provider.Provider, id string, tag int) error {
			return p.RegisterPipeline(ctx, types.PipelineConfig{ID: id, Archetype: strconv.Itoa(tag)})
		}, reads: []prefixRead{getTag("GetPipeline", func(ctx context.Context, p provider.Provider, id string) (string, bool, error) {
			c, err := p.GetPipeline(ctx, id)
			if c == nil {
				return "", false, err
			}
			return c.Archetype, true, err
		})}},
		{name: "traits_by_pipeline", put: func(ctx context.Context, p provider.Provider, id string, tag int) error {
			tr := newTrait("t")
			tr.Reason = strconv.Itoa(tag)
			return p.PutTrait(ctx, id, tr, 0)
		}, reads: []prefixRead{
			listTags("GetTraits", func(ctx context.Context, p provider.Provider, id string) ([]string, error) {
				l, err := p.GetTraits(ctx, id)
				var out []string
				for _, tr := range l {
					out = append(out, tr.Reason)
				}
				return out, err
			}),
			getTag("GetTrait", func(ctx context.Context, p provider.Provider, id string) (string, bool, error) {
				tr, err := p.GetTrait(ctx, id, "t")
				if tr == nil {
					return "", false, err
				}
				return tr.Reason, true, err
			}),
		}},
		{name: "traits_by_type", put: func(ctx context.Context, p provider.Provider, id string, tag int) error {
			tr := newTrait(id)
			tr.Reason = strconv.Itoa(tag)
			return p.PutTrait(ctx, "x", tr, 0)
		}, reads: []prefixRead{getTag("GetTrait", func(ctx context.Context, p provider.Provider, id string) (string, bool, error) {
			tr, err := p.GetTrait(ctx, "x", id)
			if tr == nil {
				return "", false, err
			}
			return tr.Reason, true, err
		})}},
		{name: "runs_by_run_id", put: func(ctx context.Context, p provider.Provider, id string, tag int) error {
			run := newRun("x", id, at(tag))
			run.Version = tag
			return p.PutRunState(ctx, run)
		}, reads: []prefixRead{getTag("GetRunState", func(ctx context.Context, p provider.Provider, id string) (string, bool, error) {
			r, err := p.GetRunState(ctx, id)
			if r == nil {
				return "", false, err
			}
			return strconv.Itoa(r.Version), true, err
		})}},
		{name: "runs_by_pipeline", put: func(ctx context.Context, p provider.Provider, id string, tag int) error {
			run := newRun(id, fmt.Sprintf("r%d", tag), at(tag))
			run.Version = tag
			return p.PutRunState(ctx, run)
		}, reads: []prefixRead{listTags("ListRuns", func(ctx context.Context, p provider.Provider, id string) ([]string, error) {
			l, err := p.ListRuns(ctx, id, listAll)
			var out []string
			for _, r := range l {
				out = append(out, strconv.Itoa(r.Version))
			}
			return out, err
		})}},
		{name: "events", put: func(ctx context.Context, p provider.Provider, id string, tag int) error {
			ev := newEvent(id, tag)
			ev.Message = strconv.Itoa(tag)
			return p.AppendEvent(ctx, ev)
		}, reads: []prefixRead{
			listTags("ListEvents", func(ctx context.Context, p provider.Provider, id string) ([]string, error) {
				l, err := p.ListEvents(ctx, id, listAll)
				return eventNames(l), err
			}),
			listTags("ReadEventsSince", func(ctx context.Context, p provider.Provider, id string) ([]string, error) {
				l, err := p.ReadEventsSince(ctx, id, "", listAll)
				return recordNames(l), err
			}),
		}},
		{name: "reruns_by_rerun_id", put: func(ctx context.Context, p provider.Provider, id string, tag int) error {
			r := newRerun(id, "x", at(tag))
			r.Reason = strconv.Itoa(tag)
			return p.PutRerun(ctx, r)
		}, reads: []prefixRead{getTag("GetRerun", func(ctx context.Context, p provider.Provider, id string) (string, bool, error) {
			r, err := p.GetRerun(ctx, id)
			if r == nil {
				return "", false, err
			}
			return r.Reason, true, err
		})}},
		{name: "reruns_by_pipeline", put: func(ctx context.Context, p provider.Provider, id string, tag int) error {
			r := newRerun(fmt.Sprintf("r%d", tag), id, at(tag))
			r.Reason = strconv.Itoa(tag)
			return p.PutRerun(ctx, r)
		}, reads: []prefixRead{listTags("ListReruns", func(ctx context.Context, p provider.Provider, id string) ([]string, error) {
			l, err := p.ListReruns(ctx, id, listAll)
			var out []string
			for _, r := range l {
				out = append(out, r.Reason)
			}
			return out, err
		})}},
		{name: "markers_by_pipeline", reader: true, put: func(ctx context.Context, p provider.Provider, id string, tag int) error {
			return p.WriteCascadeMarker(ctx, id, "", "d", fmt.Sprintf("s%d", tag))
		}, reads: []prefixRead{listTags("ListCascadeMarkers", func(ctx context.Context, p provider.Provider, id string) ([]string, error) {
			l, err := p.(provider.CascadeReader).ListCascadeMarkers(ctx, id, listAll)
			var out []string
			for _, m := range l {
				out = append(out, strings.TrimPrefix(m.Source, "s"))
			}
			return out, err
		})}},
		{name: "readiness", put: func(ctx context.Context, p provider.Provider, id string, tag int) error {
			return p.PutReadiness(ctx, types.ReadinessResult{PipelineID: id, Status: types.Ready, Blocking: []string{strconv.Itoa(tag)}})
		}, reads: []prefixRead{getTag("GetReadiness", func(ctx context.Context, p provider.Provider, id string) (string, bool, error) {
			r, err := p.GetReadiness(ctx, id)
			if r == nil || len(r.Blocking) != 1 {
				return "", r != nil, err
			}
			return r.Blocking[0], true, err
		})}},
	}
	kinds = append(kinds, slotKinds("pipeline", func(id string) [3]string { return [3]string{id, "d", "s"} })...)
	kinds = append(kinds, slotKinds("date", func(id string) [3]string { return [3]string{"x", id, "s"} })...)
	kinds = append(kinds, slotKinds("schedule", func(id string) [3]string { return [3]string{"x", "d", id} })...)
	return kinds
}
