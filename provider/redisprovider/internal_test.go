package redisprovider

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/internal/ids"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

func TestLockKeysInjective(t *testing.T) {
	k := keys{prefix: "p"}
	in := []string{"a", "{a}", "%7Ba}", "%257B", "a}b", "a:fence", "a}:fence", "%", "%25", "é{}", "}", "{"}
	seen := map[string]string{}
	for _, key := range in {
		l, f := k.lock(key)
		for _, x := range []string{l, f} {
			if prev, ok := seen[x]; ok {
				t.Errorf("lock keys %q and %q both map to %q", prev, key, x)
			}
			seen[x] = key
		}
		if strings.Count(l, "{") != 1 || strings.Count(l, "}") != 1 || !strings.HasSuffix(l, "}") {
			t.Errorf("lock(%q) = %q: want exactly one hash tag, at the end", key, l)
		}
	}
}

func TestParseStreamID(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"0-0", true}, {"1-2", true}, {"1700000000000-15", true},
		{"18446744073709551615-18446744073709551615", true},
		{"", false}, {"1", false}, {"-", false}, {"1-", false}, {"-1", false}, {"01-1", false},
		{"1-01", false}, {"+1-1", false}, {"1-+1", false}, {"a-1", false}, {"1-2-3", false},
		{"18446744073709551616-0", false}, {" 1-1", false}, {"1-1 ", false}, {"(1-1", false},
	} {
		if _, _, ok := parseStreamID(tc.in); ok != tc.ok {
			t.Errorf("parseStreamID(%q) ok = %v, want %v", tc.in, ok, tc.ok)
		}
	}
}

// newMini returns a provider on a fresh miniredis and the raw client.
func newMini(t *testing.T) (*Provider, *goredis.Client) {
	t.Helper()
	m := miniredis.RunT(t)
	c := goredis.NewClient(&goredis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	p, err := New(c, WithKeyPrefix("t"))
	if err != nil {
		t.Fatal(err)
	}
	return p, c
}

func run(pid, id string, created time.Time) types.RunState {
	return types.RunState{RunID: id, PipelineID: pid, Status: types.RunPending, CreatedAt: created, UpdatedAt: created}
}

// checkRunIndex fails unless the run list of pid holds exactly want (members), with
// a hash that agrees.
func checkRunIndex(t *testing.T, p *Provider, c *goredis.Client, pid string, want ...string) {
	t.Helper()
	ctx := context.Background()
	ix := p.k.runs(pid)
	got, err := c.ZRange(ctx, ix.z, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("run list members = %q, want %q", got, want)
	}
	h, err := c.HGetAll(ctx, ix.h).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range want {
		v := h[m[ids.TimeKeyLen:]]
		if _, member, _ := strings.Cut(v, "|"); member != m {
			t.Errorf("run list hash[%s] = %q, want member %q", m[ids.TimeKeyLen:], v, m)
		}
	}
}

func listRunIDs(t *testing.T, p *Provider, pid string) []string {
	t.Helper()
	runs, err := p.ListRuns(context.Background(), pid, 100)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.RunID)
	}
	return ids
}

// TestRunCrashWindows simulates a crash between each step of PutRunState and checks
// that nothing wrong is visible and that a listing repairs the index.
func TestRunCrashWindows(t *testing.T) {
	ctx := context.Background()
	t1 := time.Date(2026, 1, 1, 0, 0, 0, 1, time.UTC)
	t2 := t1.Add(time.Hour)

	t.Run("after_provisional", func(t *testing.T) {
		p, c := newMini(t)
		r := run("pipe", "r1", t1)
		m := ids.TimeKey(t1) + "r1"
		if _, err := p.runBatch(ctx, "test", []call{idxCall(p.k.runs("pipe"), "p", "r1", m, time.Now().UnixMilli())}); err != nil {
			t.Fatal(err)
		}
		if ids := listRunIDs(t, p, "pipe"); len(ids) != 0 {
			t.Errorf("ListRuns = %v, want nothing: the run was never written", ids)
		}
		// The writer may still be about to write the truth: the entry stays until
		// it is older than provisionalGrace.
		checkRunIndex(t, p, c, "pipe", m)
		later, err := New(c, WithKeyPrefix("t"), WithClock(func() time.Time { return time.Now().Add(provisionalGrace + time.Second) }))
		if err != nil {
			t.Fatal(err)
		}
		if ids := listRunIDs(t, later, "pipe"); len(ids) != 0 {
			t.Errorf("ListRuns = %v, want nothing: the run was never written", ids)
		}
		checkRunIndex(t, p, c, "pipe")
		// The interrupted writer (or any other) completes later: the run is listed.
		if err := p.PutRunState(ctx, r); err != nil {
			t.Fatal(err)
		}
		if ids := listRunIDs(t, p, "pipe"); !slices.Equal(ids, []string{"r1"}) {
			t.Errorf("ListRuns = %v, want [r1]", ids)
		}
		checkRunIndex(t, p, c, "pipe", m)
	})

	t.Run("after_truth", func(t *testing.T) {
		p, c := newMini(t)
		for _, r := range []types.RunState{run("pipe", "r1", t1), run("pipe", "r2", t1.Add(time.Minute))} {
			if err := p.PutRunState(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		// Re-put r1 with a later CreatedAt, crashing before step 3: the truth moved,
		// the list still has the old member.
		r := run("pipe", "r1", t2)
		data, _ := p.encode(r)
		m2 := ids.TimeKey(t2) + "r1"
		if err := lua(scriptRecordPut).Run(ctx, c, []string{p.k.run("r1"), p.k.call(p.k.run("r1"), "n")}, m2, data, "pipe", "strict", 1000, 0, 0, 0,
			"v", 0, "c", t2.Format(time.RFC3339Nano), "", "").Err(); err != nil {
			t.Fatal(err)
		}
		if ids := listRunIDs(t, p, "pipe"); !slices.Equal(ids, []string{"r1", "r2"}) {
			t.Errorf("ListRuns = %v, want [r1 r2] (r1 is now the newest)", ids)
		}
		checkRunIndex(t, p, c, "pipe", m2, ids.TimeKey(t1.Add(time.Minute))+"r2")
	})

	t.Run("late_final_step", func(t *testing.T) {
		p, c := newMini(t)
		if err := p.PutRunState(ctx, run("pipe", "r1", t1)); err != nil {
			t.Fatal(err)
		}
		if err := p.PutRunState(ctx, run("pipe", "r1", t2)); err != nil {
			t.Fatal(err)
		}
		// The first writer's step 3 arrives last: the sequence guard ignores it.
		if _, err := p.runBatch(ctx, "test", []call{setCall(p.k.runs("pipe"), "r1", ids.TimeKey(t1)+"r1", 1, 0, 0)}); err != nil {
			t.Fatal(err)
		}
		checkRunIndex(t, p, c, "pipe", ids.TimeKey(t2)+"r1")
	})

	t.Run("truth_lost", func(t *testing.T) {
		p, c := newMini(t)
		for _, id := range []string{"r1", "r2"} {
			if err := p.PutRunState(ctx, run("pipe", id, t1)); err != nil {
				t.Fatal(err)
			}
		}
		c.Del(ctx, p.k.run("r1")) // e.g. evicted under maxmemory
		if ids := listRunIDs(t, p, "pipe"); !slices.Equal(ids, []string{"r2"}) {
			t.Errorf("ListRuns = %v, want [r2]", ids)
		}
		checkRunIndex(t, p, c, "pipe", ids.TimeKey(t1)+"r2")
	})

	t.Run("rejected_pipeline", func(t *testing.T) {
		p, c := newMini(t)
		if err := p.PutRunState(ctx, run("pipe", "r1", t1)); err != nil {
			t.Fatal(err)
		}
		if err := p.PutRunState(ctx, run("other", "r1", t1)); err == nil {
			t.Fatal("re-put under another pipeline succeeded")
		}
		checkRunIndex(t, p, c, "pipe", ids.TimeKey(t1)+"r1")
		if n, _ := c.Exists(ctx, p.k.runs("other").z, p.k.runs("other").h).Result(); n != 0 {
			t.Errorf("the other pipeline's run list exists after a rejected put")
		}
	})
}

// TestCreateRunLoserKeepsEntry interleaves two creates of one run: the loser adds
// the provisional list entry, the winner (finding it, adding none) writes the truth
// first and crashes before its final step. The loser must leave the entry, which
// is now the winner's: the run is listed and the index repaired to its member.
func TestCreateRunLoserKeepsEntry(t *testing.T) {
	ctx := context.Background()
	m := miniredis.RunT(t)
	c := goredis.NewClient(&goredis.Options{Addr: m.Addr()})
	w := goredis.NewClient(&goredis.Options{Addr: m.Addr()}) // the winner's
	t.Cleanup(func() { _, _ = c.Close(), w.Close() })
	p, err := New(c, WithKeyPrefix("t"))
	if err != nil {
		t.Fatal(err)
	}
	t1 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	winner := run("pipe", "r1", t1.Add(time.Second))
	data, _ := p.encode(winner)
	mw := ids.TimeKey(winner.CreatedAt) + "r1"
	var once sync.Once
	c.AddHook(hookFunc(func(next goredis.ProcessHook) goredis.ProcessHook {
		return func(ctx context.Context, cmd goredis.Cmder) error {
			if isScript(cmd, scriptRecordPut, 0, "") {
				once.Do(func() { // the winner's truth, just before the loser's
					key := p.k.run("r1")
					if err := lua(scriptRecordPut).Run(ctx, w, []string{key, p.k.call(key, "w")}, mw, data, "pipe", "create", 1000, 0, 0, 0,
						"v", 0, "c", winner.CreatedAt.Format(time.RFC3339Nano), "", "").Err(); err != nil {
						t.Error(err)
					}
				})
			}
			return next(ctx, cmd)
		}
	}))
	created, err := p.CreateRunState(ctx, run("pipe", "r1", t1))
	if err != nil || created {
		t.Fatalf("the loser's CreateRunState = %v, %v; want false", created, err)
	}
	if ids := listRunIDs(t, p, "pipe"); !slices.Equal(ids, []string{"r1"}) {
		t.Errorf("ListRuns = %v, want [r1]: the winner's run lost its list entry", ids)
	}
	checkRunIndex(t, p, c, "pipe", mw)
	if got, err := p.GetRunState(ctx, "r1"); err != nil || got == nil || !got.CreatedAt.Equal(winner.CreatedAt) {
		t.Errorf("GetRunState = %+v, %v; want the winner's run", got, err)
	}

	// A create under another pipeline undoes its own entry there.
	if created, err := p.CreateRunState(ctx, run("other", "r1", t1)); err != nil || created {
		t.Fatalf("CreateRunState under another pipeline = %v, %v; want false", created, err)
	}
	if n, _ := c.Exists(ctx, p.k.runs("other").z, p.k.runs("other").h).Result(); n != 0 {
		t.Errorf("the other pipeline's run list exists after a refused create")
	}
}

// TestRerunMoveCrash crashes a rerun's move between pipelines after its truth was
// written: the old pipeline's list must not show it, and ListReruns repairs both.
func TestRerunMoveCrash(t *testing.T) {
	ctx := context.Background()
	p, c := newMini(t)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rr := types.RerunRecord{RerunID: "x", PipelineID: "a", OriginalDate: "2026-01-01", Status: types.RequestPending, RequestedAt: at}
	if err := p.PutRerun(ctx, rr); err != nil {
		t.Fatal(err)
	}
	rr.PipelineID = "b"
	data, _ := p.encode(rr)
	m := ids.TimeKey(at) + "x"
	// Steps 1 and 2 of the move only.
	if _, err := p.runBatch(ctx, "test", []call{idxCall(p.k.reruns("b"), "p", "x", m, 0), idxCall(p.k.globalReruns(), "p", "x", m, 0)}); err != nil {
		t.Fatal(err)
	}
	if err := lua(scriptRecordPut).Run(ctx, c, []string{p.k.rerun("x"), p.k.call(p.k.rerun("x"), "n")}, m, data, "b", "move", 1000, 0, 0, 0, "", "").Err(); err != nil {
		t.Fatal(err)
	}
	for pid, want := range map[string]int{"a": 0, "b": 1} {
		got, err := p.ListReruns(ctx, pid, 10)
		if err != nil || len(got) != want {
			t.Errorf("ListReruns(%s) = %d reruns, %v; want %d", pid, len(got), err, want)
		}
	}
	if n, _ := c.ZCard(ctx, p.k.reruns("a").z).Result(); n != 0 {
		t.Errorf("pipeline a's rerun list still has %d members after a listing repaired it", n)
	}
	all, err := p.ListAllReruns(ctx, 10)
	if err != nil || len(all) != 1 || all[0].PipelineID != "b" {
		t.Errorf("ListAllReruns = %+v, %v; want the rerun under b", all, err)
	}
}

// TestPipelineDeleteCrash deletes a config without its list step, and interleaves
// a reader's repair with a register.
func TestPipelineDeleteCrash(t *testing.T) {
	ctx := context.Background()
	p, c := newMini(t)
	if err := p.RegisterPipeline(ctx, types.PipelineConfig{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := lua(scriptRecordDel).Run(ctx, c, []string{p.k.config("a"), p.k.call(p.k.config("a"), "n")}, 1000, 60000, p.now().UnixMicro()).Err(); err != nil {
		t.Fatal(err)
	}
	got, err := p.ListPipelines(ctx)
	if err != nil || len(got) != 0 {
		t.Fatalf("ListPipelines = %+v, %v; want none", got, err)
	}
	if n, _ := c.ZCard(ctx, p.k.globalPipelines().z).Result(); n != 0 {
		t.Errorf("global pipeline list has %d members after repair, want 0", n)
	}
	if err := p.RegisterPipeline(ctx, types.PipelineConfig{ID: "a", Tier: 2}); err != nil {
		t.Fatal(err)
	}
	got, err = p.ListPipelines(ctx)
	if err != nil || len(got) != 1 || got[0].Tier != 2 {
		t.Fatalf("ListPipelines = %+v, %v; want a with tier 2", got, err)
	}
}

// TestRetriedCallsApplyOnce replays the exact command of AcquireLock, AcquireLease
// and CAS, as go-redis does after a lost reply: the replay reports the same success
// and changes nothing more.
func TestRetriedCallsApplyOnce(t *testing.T) {
	ctx := context.Background()
	p, c := newMini(t)
	lk, fk := p.k.lock("k")
	mine := p.lockHolder() + "\nnonce1"
	for i, want := range []int64{1, 1} {
		if n, err := lua(scriptLockAcquire).Run(ctx, c, []string{lk, p.k.call(lk, "nonce1")}, mine, 0, 60000).Int64(); err != nil || n != want {
			t.Fatalf("lock attempt %d = %d, %v; want %d", i, n, err, want)
		}
	}
	if n, _ := lua(scriptLockAcquire).Run(ctx, c, []string{lk, p.k.call(lk, "nonce2")}, p.lockHolder()+"\nnonce2", 0, 60000).Int64(); n != 0 {
		t.Fatalf("a second call of the same owner acquired a held lock: not re-entrant expected")
	}
	if err := p.ReleaseLock(ctx, "k"); err != nil {
		t.Fatal(err)
	}

	lease := leaseHolder("tok")
	f1, err := lua(scriptLeaseAcquire).Run(ctx, c, []string{lk, fk, p.k.call(lk, "tok")}, lease, 1000, 60000).Int64()
	f2, err2 := lua(scriptLeaseAcquire).Run(ctx, c, []string{lk, fk, p.k.call(lk, "tok")}, lease, 1000, 60000).Int64()
	if err != nil || err2 != nil || f1 == 0 || f1 != f2 {
		t.Fatalf("lease replay: fences %d, %d (%v, %v); want the same, non-zero", f1, f2, err, err2)
	}
	if n, _ := c.Get(ctx, fk).Int64(); n != f1 {
		t.Fatalf("fence counter %d after a replay, want %d", n, f1)
	}

	if err := p.PutRunState(ctx, run("pipe", "r", time.Now())); err != nil {
		t.Fatal(err)
	}
	cas := func(nonce string) (int64, error) {
		return lua(scriptRunCAS).Run(ctx, c, []string{p.k.run("r"), p.k.call(p.k.run("r"), nonce)}, "0", "pipe", `{}`, "1", 60000, 0, 0, 0, "", "").Int64()
	}
	for i := range 2 {
		n, err := cas("n1")
		if err != nil || n < 1 {
			t.Fatalf("CAS replay %d = %d, %v; want the swap's sequence (>= 1)", i, n, err)
		}
	}
	if v, _ := c.HGet(ctx, p.k.run("r"), "v").Result(); v != "1" {
		t.Fatalf("version %s after a replayed CAS, want 1", v)
	}
	if n, _ := cas("n2"); n != 0 {
		t.Fatalf("another CAS from version 0 succeeded")
	}
}

// TestIndexLeavesNoTombstones checks that what leaves a list leaves nothing behind
// in its index: a deleted pipeline, a rerun moved to another pipeline.
func TestIndexLeavesNoTombstones(t *testing.T) {
	ctx := context.Background()
	p, c := newMini(t)
	for i := range 3 {
		if err := p.RegisterPipeline(ctx, types.PipelineConfig{ID: "a"}); err != nil {
			t.Fatal(err)
		}
		if err := p.DeletePipeline(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		rr := types.RerunRecord{RerunID: "x", PipelineID: []string{"a", "b"}[i%2], OriginalDate: "2026-01-01", Status: types.RequestPending}
		if err := p.PutRerun(ctx, rr); err != nil {
			t.Fatal(err)
		}
	}
	for name, ix := range map[string]index{"pipelines": p.k.globalPipelines(), "reruns of b": p.k.reruns("b")} {
		if n, _ := c.HLen(ctx, ix.h).Result(); n != 0 {
			t.Errorf("index of %s keeps %d entries for records that left it", name, n)
		}
	}
}

// TestRecreatedAfterServerDeletion: a run whose truth the server deleted (its TTL
// ran out) while its list entry stayed, no write of its list having pruned it,
// is created again under another CreatedAt: the new truth's sequence starts
// above the old entry's, so its list entry moves and the run is listed, by a
// writer's listing and a read-only one.
func TestRecreatedAfterServerDeletion(t *testing.T) {
	ctx := t.Context()
	_, c := newMini(t)
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	p, err := New(c, WithKeyPrefix("t"), WithClock(func() time.Time { return now }),
		WithRetention(provider.Retention{Runs: time.Hour}))
	must(t, err)
	first := run("pipe", "r1", now)
	for range 5 { // a few writes: the old sequence is above 1
		if err := p.PutRunState(ctx, first); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(2 * time.Hour)
	must(t, c.Del(ctx, p.k.run("r1")).Err()) // the server's TTL
	again := run("pipe", "r1", now)
	if ok, err := p.CreateRunState(ctx, again); err != nil || !ok {
		t.Fatalf("CreateRunState after the truth was deleted = %v, %v; want true", ok, err)
	}
	checkRunIndex(t, p, c, "pipe", ids.TimeKey(now)+"r1")
	ro, err := New(c, WithKeyPrefix("t"), WithReadOnly(), WithClock(p.now))
	must(t, err)
	for _, q := range []*Provider{ro, p} {
		list, err := q.ListRuns(ctx, "pipe", 10)
		if err != nil || len(list) != 1 || !list[0].CreatedAt.Equal(now) {
			t.Fatalf("ListRuns (read-only %v) = %v, %v; want the run created again", q.ReadOnly(), list, err)
		}
	}
}

// lua returns s as a go-redis script, for tests that run it on a client of their own.
func lua(s script) *goredis.Script { return goredis.NewScript(s.Source()) }

// TestActiveCASTrustsOnlyItsOwnMark: a CAS between unfinished statuses skips the
// index only when the run's field a equals its version (the entry is known); a
// write that left a behind (an older version's CAS, which bumps v and not a)
// makes the next CAS to an unfinished status add the entry first, so a run
// whose stale entry a reader removed is listed again.
func TestActiveCASTrustsOnlyItsOwnMark(t *testing.T) {
	p, c := newMini(t)
	ctx := t.Context()
	r := run("pipe", "run1", time.Now())
	r.Status = types.RunRunning
	if err := p.PutRunState(ctx, r); err != nil {
		t.Fatal(err)
	}
	// An older version finishes the run: v and j change, a stays "0".
	done := r
	done.Status, done.Version = types.RunFailed, 1
	data, err := p.encode(done)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.HSet(ctx, p.k.run("run1"), "v", "1", "j", data).Err(); err != nil {
		t.Fatal(err)
	}
	if runs, _, err := p.ListActiveRuns(ctx, provider.ActiveRunFilter{}, "", 10); err != nil || len(runs) != 0 {
		t.Fatalf("after the old version's finish: ListActiveRuns = %v, %v; want none", runs, err)
	}
	if n := c.HLen(ctx, p.k.activeRuns().h).Val(); n != 0 {
		t.Fatalf("the reader left %d entries; want its repair to remove the finished run's", n)
	}
	if ok, err := p.CompareAndSwapRunState(ctx, "run1", 1, r); !ok || err != nil {
		t.Fatalf("CAS = %v, %v", ok, err)
	}
	runs, _, err := p.ListActiveRuns(ctx, provider.ActiveRunFilter{}, "", 10)
	if err != nil || len(runs) != 1 || runs[0].RunID != "run1" {
		t.Fatalf("after reopening: ListActiveRuns = %v, %v; want run1", runs, err)
	}
}
