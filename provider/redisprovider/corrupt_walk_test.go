package redisprovider_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/testkit/rediswalk"
	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/redisprovider"
	"github.com/pipestate/pipestate/types"
)

// TestCorruptEveryField writes one record of every kind (some fenced, so the
// fence memories exist), then corrupts every field of every key the provider
// wrote, one at a time (rediswalk: a word, JSON cut short, empty, a number past
// int64, the field removed), and runs every read: a Get* returns the record or
// an error wrapping ErrCorrupt; a List*, ReadEventsSince, FollowEvents,
// WatchCascadeMarkers, ListLocks and ListActiveRuns never fail; a corrupt record
// is noticed (an ErrCorrupt or an OnCorrupt report) by at least one read. Then
// the writes over it (a CAS, a fenced write, a renewal) succeed or fail with
// ErrCorrupt, and a refused one writes nothing. On miniredis, on the real
// server (its Lua decodes some fields itself) and on a Redis Cluster (the
// index and list steps cross slots); on miniredis only where no server is
// configured (its walk, a minute under -race, checks the same scripts as the
// real server's, and make test has servers).
func TestCorruptEveryField(t *testing.T) {
	if !testenv.RedisWanted() {
		t.Run("miniredis", func(t *testing.T) {
			walkProvider(t, goredis.NewClient(&goredis.Options{Addr: miniredis.RunT(t).Addr()}), "t")
		})
	}
	t.Run("redis", func(t *testing.T) {
		walkProvider(t, realClient(t), "pst:"+testenv.RedisPrefix(t))
	})
	t.Run("cluster", func(t *testing.T) {
		walkProvider(t, clusterClient(t), "pst:"+testenv.RedisPrefix(t))
	})
}

func walkProvider(t *testing.T, c goredis.UniversalClient, prefix string) {
	p := openProvider(t, c, redisprovider.WithKeyPrefix(prefix), redisprovider.WithMaxEvents(100))
	ctx := t.Context()
	at := time.Now().UTC().Truncate(time.Millisecond)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	old, err := p.AcquireLease(ctx, "l", time.Hour)
	must(err)
	must(p.ReleaseLease(ctx, *old))
	stale, err := provider.Fenced(p, *old) // fence 1
	must(err)
	lease, err := p.AcquireLease(ctx, "l", time.Hour)
	must(err)
	fp, err := provider.Fenced(p, *lease) // fence 2
	must(err)
	ok, err := p.AcquireLock(ctx, "k", time.Hour)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	must(p.RegisterPipeline(ctx, types.PipelineConfig{ID: "p"}))
	must(p.PutTrait(ctx, "p", types.TraitEvaluation{TraitType: "t", Status: types.TraitPass}, time.Hour))
	must(p.PutTrait(ctx, "p", types.TraitEvaluation{TraitType: "u", Status: types.TraitPass}, 0))
	must(p.PutReadiness(ctx, types.ReadinessResult{PipelineID: "p", Status: types.Ready}))
	must(fp.PutRunState(ctx, types.RunState{RunID: "r", PipelineID: "p", Status: types.RunPending, CreatedAt: at}))
	must(p.PutRunState(ctx, types.RunState{RunID: "q", PipelineID: "p", Status: types.RunRunning, CreatedAt: at.Add(time.Second)}))
	must(fp.PutRunLog(ctx, types.RunLogEntry{PipelineID: "p", Date: "2026-01-01", RunID: "r", Status: types.RunPending}))
	must(fp.PutRerun(ctx, types.RerunRecord{RerunID: "x", PipelineID: "p", OriginalDate: "2026-01-01", Status: types.RequestPending, RequestedAt: at}))
	must(fp.PutReplay(ctx, types.ReplayRequest{PipelineID: "p", Date: "2026-01-01", Status: types.RequestPending, CreatedAt: at}))
	must(fp.PutLateArrival(ctx, types.LateArrival{PipelineID: "p", Date: "2026-01-01", DetectedAt: at, RecordDelta: 1}))
	must(fp.WriteCascadeMarker(ctx, "p", "", "2026-01-01", "s"))
	must(p.WriteCascadeMarker(ctx, "p", "", "2026-01-02", "s"))
	for range 2 {
		must(fp.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p"}))
	}
	evs, err := p.ReadEventsSince(ctx, "p", "", 10)
	must(err)
	if len(evs) != 2 {
		t.Fatalf("%d events", len(evs))
	}
	run, err := p.GetRunState(ctx, "r")
	must(err)

	type result struct {
		bad     []string
		noticed int
	}
	reads := func(cs rediswalk.Case) (r result) {
		rctx := provider.OnCorrupt(ctx, func(*provider.CorruptError) { r.noticed++ })
		get := func(name string, err error) {
			switch {
			case errors.Is(err, provider.ErrCorrupt):
				r.noticed++
			case err != nil:
				r.bad = append(r.bad, fmt.Sprintf("%s: %v", name, err))
			}
		}
		list := func(name string, err error) {
			if err != nil {
				r.bad = append(r.bad, fmt.Sprintf("%s: %v", name, err))
			}
		}
		var err error
		_, err = p.GetPipeline(rctx, "p")
		get("GetPipeline", err)
		_, err = p.ListPipelines(rctx)
		list("ListPipelines", err)
		_, err = p.GetTrait(rctx, "p", "t")
		get("GetTrait", err)
		_, err = p.GetTraits(rctx, "p")
		list("GetTraits", err)
		_, err = p.GetReadiness(rctx, "p")
		get("GetReadiness", err)
		for _, id := range []string{"r", "q"} {
			_, err = p.GetRunState(rctx, id)
			get("GetRunState "+id, err)
		}
		_, err = p.ListRuns(rctx, "p", 10)
		list("ListRuns", err)
		_, _, err = p.ListActiveRuns(rctx, provider.ActiveRunFilter{}, "", 10)
		list("ListActiveRuns", err)
		_, err = p.GetRunLog(rctx, "p", "2026-01-01", "")
		get("GetRunLog", err)
		_, err = p.ListRunLogs(rctx, "p", 10)
		list("ListRunLogs", err)
		_, err = p.GetRerun(rctx, "x")
		get("GetRerun", err)
		_, err = p.ListReruns(rctx, "p", 10)
		list("ListReruns", err)
		_, err = p.ListAllReruns(rctx, 10)
		list("ListAllReruns", err)
		_, err = p.GetReplay(rctx, "p", "2026-01-01", "")
		get("GetReplay", err)
		_, err = p.ListReplays(rctx, 10)
		list("ListReplays", err)
		_, err = p.ListLateArrivals(rctx, "p", "2026-01-01", "")
		list("ListLateArrivals", err)
		_, err = p.ListCascadeMarkers(rctx, "p", 10)
		list("ListCascadeMarkers", err)
		_, err = p.ListEvents(rctx, "p", 10)
		list("ListEvents", err)
		for _, cursor := range []string{"", evs[0].StreamID} {
			_, err = p.ReadEventsSince(rctx, "p", cursor, 10)
			list("ReadEventsSince("+cursor+")", err)
		}
		for _, k := range []string{"k", "l"} {
			_, err = p.GetLockInfo(rctx, k)
			get("GetLockInfo "+k, err)
		}
		_, err = p.ListLocks(rctx, "*", 10)
		list("ListLocks", err)
		switch {
		case strings.HasSuffix(cs.Key, "}:events"):
			list("FollowEvents", follow(rctx, func(ctx context.Context) iter.Seq2[types.EventRecord, error] { return p.FollowEvents(ctx, "p", "") }))
		case strings.HasSuffix(cs.Key, "{:markers}"):
			list("WatchCascadeMarkers", follow(rctx, func(ctx context.Context) iter.Seq2[types.CascadeMarkerRecord, error] {
				return p.WatchCascadeMarkers(ctx, "")
			}))
		}
		return r
	}
	match := prefix + ":*"
	writes := func(cs rediswalk.Case) (bad []string) {
		for _, w := range []struct {
			name string
			do   func() error
		}{
			// first: the writes below remember fence 2 again
			{"stale fenced PutRunLog", func() error {
				return stale.PutRunLog(ctx, types.RunLogEntry{PipelineID: "p", Date: "2026-01-01", RunID: "r", Status: types.RunFailed})
			}},
			{"stale fenced PutRunState", func() error {
				return stale.PutRunState(ctx, types.RunState{RunID: "r", PipelineID: "p", Status: types.RunFailed, CreatedAt: at})
			}},
			{"ReindexRun", func() error { _, err := p.ReindexRun(ctx, "r"); return err }},
			{"CompareAndSwapRunState", func() error {
				next := *run
				next.Status = types.RunRunning
				_, err := p.CompareAndSwapRunState(ctx, "r", run.Version, next)
				return err
			}},
			{"fenced PutRunState", func() error {
				return fp.PutRunState(ctx, types.RunState{RunID: "r", PipelineID: "p", Status: types.RunRunning, CreatedAt: at})
			}},
			{"fenced PutRunLog", func() error {
				return fp.PutRunLog(ctx, types.RunLogEntry{PipelineID: "p", Date: "2026-01-01", RunID: "r", Status: types.RunRunning})
			}},
			{"fenced AppendEvent", func() error { return fp.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p"}) }},
			{"fenced PutRerun", func() error {
				return fp.PutRerun(ctx, types.RerunRecord{RerunID: "x", PipelineID: "p", OriginalDate: "2026-01-01", Status: types.RequestPending, RequestedAt: at})
			}},
			{"RenewLease", func() error { _, err := p.RenewLease(ctx, *lease, time.Hour); return err }},
			{"DeletePipeline", func() error { return p.DeletePipeline(ctx, "p") }}, // last: the walk restores it
		} {
			before, err := rediswalk.Snapshot(ctx, c, match)
			if err != nil {
				t.Fatal(err)
			}
			err = w.do()
			staleWrite := strings.HasPrefix(w.name, "stale")
			if err == nil {
				if staleWrite && cs.Value != rediswalk.Missing {
					bad = append(bad, w.name+" accepted")
				}
				continue
			}
			switch {
			case errors.Is(err, provider.ErrCorrupt):
			case staleWrite && errors.Is(err, provider.ErrFenced):
				continue
			case w.name == "RenewLease" && errors.Is(err, provider.ErrLockNotHeld):
				continue // the lease's value is not its holder's: not held
			case cs.Field == "p" && errors.Is(err, provider.ErrInvalidArgument):
				continue // the run's stored pipeline is another
			default:
				bad = append(bad, fmt.Sprintf("%s: %v", w.name, err))
				continue
			}
			after, serr := rediswalk.Snapshot(ctx, c, match)
			if serr != nil {
				t.Fatal(serr)
			}
			if d := rediswalk.Diff(withoutCalls(before), withoutCalls(after)); d != "" {
				bad = append(bad, fmt.Sprintf("%s failed (%v) but wrote: %s", w.name, err, d))
			}
		}
		return bad
	}
	// Call markers are read by a retry of their call only (and expire in 2
	// minutes, within a walk on a loaded server).
	calls := func(key string) bool { return strings.Contains(key, ":call:") }
	n := rediswalk.Walk(t, c, match, calls, func(cs rediswalk.Case) {
		r := reads(cs)
		wbad := writes(cs)
		if len(r.bad) > 0 || len(wbad) > 0 || (r.noticed == 0 && mustNotice(prefix, cs)) {
			t.Errorf("%s: failed reads %v, failed writes %v, %d noticed", cs, r.bad, wbad, r.noticed)
		}
	})
	t.Logf("%d corruptions", n)
}

// withoutCalls is a snapshot without its call markers (a refused fenced call
// keeps its outcome for a retry) and the step-1 stamps of its list entries
// (which every cross-slot write leaves, refused or not: see "Cross-slot
// writes" in the package doc).
func withoutCalls(s map[string]string) map[string]string {
	out := maps.Clone(s)
	maps.DeleteFunc(out, func(k, _ string) bool { return strings.Contains(k, ":call:") })
	for k, v := range out {
		if strings.HasSuffix(k, ":ids") {
			out[k] = stamp.ReplaceAllString(v, "|")
		}
	}
	return out
}

var stamp = regexp.MustCompile(`#[0-9]+\|`)

// mustNotice says whether some read must notice the corruption of cs: false for
// keys no read decodes (fence memories and counters, expiry indexes) and for
// a field whose loss leaves a consistent record.
func mustNotice(prefix string, cs rediswalk.Case) bool {
	truth := strings.HasPrefix(cs.Key, prefix+":{run:") || strings.HasPrefix(cs.Key, prefix+":{rerun:") ||
		strings.HasSuffix(cs.Key, ":config") || strings.Contains(cs.Key, ":replay:")
	switch {
	case cs.Value == rediswalk.Missing, // the record, or a list's entry, is gone: nothing to notice
		cs.Type == "zset",                           // an index's order or expiry: a dangling entry is skipped
		strings.Contains(cs.Key, ":call:"),          // a call's outcome, read by its retry only
		strings.HasSuffix(cs.Key, ":fence"),         // a fence counter, read by the next acquisition
		strings.HasSuffix(cs.Key, ":fences"),        // a fence memory, read by fenced writes (see writes)
		strings.HasSuffix(cs.Key, ":ids"),           // an index entry: readers check it against the truth
		truth && cs.Field != "j" && cs.Field != "s": // a truth's bookkeeping, which readers tolerate
		return false
	}
	return true
}

// follow reads open(ctx) until it is quiet for a moment after its first item (or
// for 2s without one: a loaded server may take long over the first read), and
// returns its first error that is not the end of the read.
func follow[T any](ctx context.Context, open func(ctx context.Context) iter.Seq2[T, error]) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := make(chan error)
	go func() {
		defer close(got)
		for _, err := range open(ctx) {
			if ctx.Err() != nil {
				return
			}
			got <- err
			if err != nil {
				return
			}
		}
	}()
	quiet := 2 * time.Second
	for {
		select {
		case err, ok := <-got:
			if !ok || err != nil {
				cancel()
				for range got {
				}
				return err
			}
			quiet = 30 * time.Millisecond
		case <-time.After(quiet):
			cancel()
			for range got {
			}
			return nil
		}
	}
}
