package providertest_test

import (
	"context"
	"errors"
	"iter"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pipestate/pipestate/fence"
	"github.com/pipestate/pipestate/internal/fencectx"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/providertest"
	"github.com/pipestate/pipestate/types"
)

// suitesTeeth are the broken backends of the rules of issue 35's "Rules the
// suites do not test yet" (fencing under concurrency, long lease keys, a
// follower's neighbours, read-only handles); init adds them to brokenBackends.
var suitesTeeth = []brokenBackend{
	// The fence is checked and the record written in one atomic step.
	{"fence_check_then_write", "FencingRace/PutRunState",
		func(p full, s *shared) provider.Provider { return fenceCheckThenWrite{p, s.ownFences()} }},
	// The fence memory keeps the whole lease key, however long.
	{"fence_key_truncated", "Limits/lease_keys_at_limit_fence_apart",
		func(p full, s *shared) provider.Provider { return fenceKeyTruncated{p, s.ownFences()} }},
	// A follower yields its own pipeline's events only, after its last one too.
	{"follow_then_neighbours", "EventFollower/no_neighbour_events",
		func(p full, s *shared) provider.Provider { return followThenNeighbours{p, pipelinesOf(s)} }},
	// A read-only handle refuses a write before it writes.
	{"read_only_writes_first", "ReadOnly/writes_refused",
		func(p full, s *shared) provider.Provider { return readOnlyWritesFirst{p, s} }},
	// Neither the writes the view of a read-only handle reads, on a backend
	// without the lists that would show them.
	{"read_only_readiness_first", "ReadOnly/writes_refused",
		func(p full, s *shared) provider.Provider { return withoutLists(readOnlyLeaks{p, s, "PutReadiness"}) }},
	{"read_only_lock_first", "ReadOnly/writes_refused",
		func(p full, s *shared) provider.Provider { return withoutLists(readOnlyLeaks{p, s, "AcquireLock"}) }},
	{"read_only_lease_first", "ReadOnly/writes_refused",
		func(p full, s *shared) provider.Provider { return withoutLists(readOnlyLeaks{p, s, "AcquireLease"}) }},
	{"read_only_marker_first", "ReadOnly/writes_refused",
		func(p full, s *shared) provider.Provider {
			return withoutLists(readOnlyLeaks{p, s, "WriteCascadeMarker"})
		}},
	// A read-only handle reads: no read needs a write.
	{"read_only_read_repairs", "ReadOnly/reads_work",
		func(p full, _ *shared) provider.Provider { return readOnlyReadRepairs{p} }},
	// A missing run is (nil, nil): the first step of the basics that fails
	// names the cause, and every group skips (TestFirstCauseOutput).
	{"get_missing_run_errors", "Basics/runs",
		func(p full, _ *shared) provider.Provider { return getMissingRunErrors{p} }},
	// ReleaseLock of a key another instance holds is ErrLockNotHeld: each
	// rule of a race reports once (TestFailureReportedOnce).
	{"release_by_other_wrong_error", "Locker/concurrent_one_winner",
		func(p full, _ *shared) provider.Provider { return releaseByOtherWrongError{p} }},
}

func init() { brokenBackends = append(brokenBackends, suitesTeeth...) }

// fenceCheckThenWrite checks a run's fence memory, lets another caller run, and
// then writes: a newer holder's write may land in the gap.
type fenceCheckThenWrite struct {
	full
	f *ownFences
}

func (b fenceCheckThenWrite) PutRunState(ctx context.Context, r types.RunState) error {
	t, ok := fence.FromContext(ctx)
	if !ok {
		return b.full.PutRunState(ctx, r)
	}
	record := "run " + r.RunID
	b.f.mu.Lock()
	err := b.f.sets[record].Check(t, record)
	b.f.mu.Unlock()
	if err != nil {
		return err
	}
	time.Sleep(time.Millisecond) // a round trip between the check and the write
	if err := b.full.PutRunState(unfenced(ctx), r); err != nil {
		return err
	}
	b.f.mu.Lock()
	defer b.f.mu.Unlock()
	b.f.remember(record, t)
	return nil
}

// fenceKeyTruncated remembers a run's fences under the first 256 bytes of the
// lease key, as a fixed-width column or a hashed prefix would.
type fenceKeyTruncated struct {
	full
	f *ownFences
}

func (b fenceKeyTruncated) PutRunState(ctx context.Context, r types.RunState) error {
	if t, ok := fence.FromContext(ctx); ok && len(t.Key) > 256 {
		t.Key = t.Key[:256]
		ctx = fencectx.With(ctx, t)
	}
	return b.f.write(ctx, "run "+r.RunID, func(ctx context.Context) error { return b.full.PutRunState(ctx, r) })
}

// knownPipelines are the pipelines the broken instances of one test appended
// to, by their shared state.
var knownPipelines sync.Map // *shared -> *pipelineSet

type pipelineSet struct {
	mu  sync.Mutex
	ids []string
}

func pipelinesOf(s *shared) *pipelineSet {
	v, _ := knownPipelines.LoadOrStore(s, &pipelineSet{})
	return v.(*pipelineSet)
}

// followThenNeighbours follows a pipeline by polling its log, page by page,
// and after each page yields what every pipeline its ID prefixes appended
// since (a follower of a key pattern).
type followThenNeighbours struct {
	full
	known *pipelineSet
}

func (b followThenNeighbours) AppendEvent(ctx context.Context, ev types.Event) error {
	b.known.mu.Lock()
	if !slices.Contains(b.known.ids, ev.PipelineID) {
		b.known.ids = append(b.known.ids, ev.PipelineID)
	}
	b.known.mu.Unlock()
	return b.full.AppendEvent(ctx, ev)
}

func (b followThenNeighbours) FollowEvents(ctx context.Context, pipelineID, cursor string) iter.Seq2[types.EventRecord, error] {
	if cursor != "" || types.ValidateID("pipeline ID", pipelineID) != nil {
		return b.full.FollowEvents(ctx, pipelineID, cursor)
	}
	return func(yield func(types.EventRecord, error) bool) {
		cursors := map[string]string{}
		for {
			ids := []string{pipelineID}
			b.known.mu.Lock()
			for _, id := range b.known.ids {
				if id != pipelineID && strings.HasPrefix(id, pipelineID) {
					ids = append(ids, id)
				}
			}
			b.known.mu.Unlock()
			for _, id := range ids {
				recs, err := b.full.ReadEventsSince(ctx, id, cursors[id], 100)
				if err != nil {
					yield(types.EventRecord{}, err)
					return
				}
				for _, r := range recs {
					cursors[id] = r.StreamID
					if !yield(r, nil) {
						return
					}
				}
			}
			select {
			case <-ctx.Done():
				yield(types.EventRecord{}, ctx.Err())
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}
}

// readOnly reports whether p is a read-only handle.
func readOnly(p full) bool {
	ro, ok := p.(interface{ ReadOnly() bool })
	return ok && ro.ReadOnly()
}

// readOnlyWritesFirst appends an event through a writable handle of the same
// storage before it reports that the handle is read-only.
type readOnlyWritesFirst struct {
	full
	s *shared
}

func (b readOnlyWritesFirst) AppendEvent(ctx context.Context, ev types.Event) error {
	err := b.full.AppendEvent(ctx, ev)
	if !readOnly(b.full) {
		return err
	}
	b.s.mu.Lock()
	writers := slices.Clone(b.s.instances)
	b.s.mu.Unlock()
	for _, w := range writers {
		if !readOnly(w) {
			_ = w.AppendEvent(ctx, ev)
			break
		}
	}
	return err
}

// readOnlyLeaks makes the write it names through a writable handle of the same
// storage before it reports that the handle is read-only, and hides the lists
// (provider.LockLister, provider.CascadeReader) that would show it: the
// read-only check must look where the write lands.
type readOnlyLeaks struct {
	full
	s     *shared
	write string
}

// leak makes the write through a writable instance when b is read-only.
func (b readOnlyLeaks) leak(name string, write func(w full)) {
	if name != b.write || !readOnly(b.full) {
		return
	}
	b.s.mu.Lock()
	writers := slices.Clone(b.s.instances)
	b.s.mu.Unlock()
	for _, w := range writers {
		if !readOnly(w) {
			write(w)
			return
		}
	}
}

func (b readOnlyLeaks) PutReadiness(ctx context.Context, r types.ReadinessResult) error {
	b.leak("PutReadiness", func(w full) { _ = w.PutReadiness(ctx, r) })
	return b.full.PutReadiness(ctx, r)
}

func (b readOnlyLeaks) AcquireLock(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	b.leak("AcquireLock", func(w full) { _, _ = w.AcquireLock(ctx, key, ttl) })
	return b.full.AcquireLock(ctx, key, ttl)
}

func (b readOnlyLeaks) AcquireLease(ctx context.Context, key string, ttl time.Duration) (*types.Lease, error) {
	b.leak("AcquireLease", func(w full) { _, _ = w.AcquireLease(ctx, key, ttl) })
	return b.full.AcquireLease(ctx, key, ttl)
}

func (b readOnlyLeaks) WriteCascadeMarker(ctx context.Context, pipelineID, scheduleID, date, source string) error {
	b.leak("WriteCascadeMarker", func(w full) { _ = w.WriteCascadeMarker(ctx, pipelineID, scheduleID, date, source) })
	return b.full.WriteCascadeMarker(ctx, pipelineID, scheduleID, date, source)
}

// withoutLists is p without provider.LockLister and provider.CascadeReader.
func withoutLists(p full) provider.Provider {
	return struct {
		provider.Provider
		provider.Leaser
		provider.RunCreator
		provider.EventFollower
		provider.MarkerWatcher
		provider.LockInspector
	}{p, p, p, p, p, p}
}

// readOnlyReadRepairs repairs the run index on ListRuns, a write that a
// read-only handle refuses, so the read fails.
type readOnlyReadRepairs struct{ full }

func (b readOnlyReadRepairs) ListRuns(ctx context.Context, pipelineID string, limit int) ([]types.RunState, error) {
	if readOnly(b.full) {
		return nil, provider.ReadOnly("broken", "ListRuns (index repair)")
	}
	return b.full.ListRuns(ctx, pipelineID, limit)
}

// getMissingRunErrors returns an error, not (nil, nil), for a missing run.
type getMissingRunErrors struct{ full }

func (b getMissingRunErrors) GetRunState(ctx context.Context, runID string) (*types.RunState, error) {
	r, err := b.full.GetRunState(ctx, runID)
	if r == nil && err == nil {
		return nil, errors.New("run not found")
	}
	return r, err
}

// releaseByOtherWrongError answers a ReleaseLock of a key another instance
// holds with an error of its own instead of ErrLockNotHeld.
type releaseByOtherWrongError struct{ full }

func (b releaseByOtherWrongError) ReleaseLock(ctx context.Context, key string) error {
	if err := b.full.ReleaseLock(ctx, key); errors.Is(err, provider.ErrLockNotHeld) {
		return errors.New("not the holder")
	} else {
		return err
	}
}

// runBrokenSuite runs the suite, or the subtests run selects below
// TestBrokenBackend, on the broken backend name in a subprocess, and returns
// its output; the run must fail.
func runBrokenSuite(t *testing.T, name, run string) string {
	t.Helper()
	if os.Getenv(brokenEnv) != "" {
		t.Skip("running as a subprocess")
	}
	if testing.Short() {
		t.Skip("runs the suite in a subprocess")
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestBrokenBackend$"+run, "-test.count=1", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), brokenEnv+"="+name)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("the suite on %s: got %v, want a non-zero exit; output:\n%s", name, err, out)
	}
	return string(out)
}

// TestFirstCauseOutput (issue 39): one wrong error for a missing run fails the
// first step of the basics and nothing else, in under 100 lines of output that
// name the step.
func TestFirstCauseOutput(t *testing.T) {
	out := runBrokenSuite(t, "get_missing_run_errors", "")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var failed []string
	for _, line := range lines {
		if name, ok := strings.CutPrefix(strings.TrimSpace(line), "--- FAIL: "); ok {
			failed = append(failed, strings.Fields(name)[0])
		}
	}
	slices.Sort(failed)
	if want := []string{"TestBrokenBackend", "TestBrokenBackend/Basics", "TestBrokenBackend/Basics/runs"}; !slices.Equal(failed, want) {
		t.Errorf("failed %q, want only %q:\n%s", failed, want, tail(out, 60))
	}
	if len(lines) >= 100 {
		t.Errorf("the output has %d lines, want under 100:\n%s", len(lines), tail(out, 60))
	}
	if !strings.Contains(out, "GetRunState of a missing run") {
		t.Errorf("the output does not name the rule (GetRunState of a missing run):\n%s", out)
	}
}

// TestFailureReportedOnce (issue 39): a rule a race breaks in every round is
// reported once, not once a round.
func TestFailureReportedOnce(t *testing.T) {
	out := runBrokenSuite(t, "release_by_other_wrong_error", "/^Locker$/^concurrent_one_winner$")
	if n := strings.Count(out, "ReleaseLock by the losing instance"); n != 1 {
		t.Errorf("the failure is reported %d times, want once:\n%s", n, tail(out, 30))
	}
}

// TestBasicsDocumented: the package doc prints the order of the basics as
// the suite runs them, which covers each method of provider.Provider once, and
// every group it names is one the full suite runs (testdata/subtests.golden).
func TestBasicsDocumented(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSuffix(providertest.BasicsTable(), "\n"), "\n") {
		if !strings.Contains(string(doc), "//\t"+strings.TrimRight(line, " ")+"\n") {
			t.Errorf("doc.go does not print the basics' line %q", line)
		}
	}
	golden, err := os.ReadFile("testdata/subtests.golden")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range providertest.BasicsGroups() {
		if !strings.Contains(string(golden), "\nfull/"+g+"\n") {
			t.Errorf("the basics name the group %q, which the full suite does not run (testdata/subtests.golden has no full/%s)", g, g)
		}
	}
	methods := providertest.BasicsMethods()
	typ := reflect.TypeFor[provider.Provider]()
	var want []string
	for i := range typ.NumMethod() {
		want = append(want, typ.Method(i).Name)
	}
	slices.Sort(methods)
	if !slices.Equal(methods, want) {
		t.Errorf("the basics' methods are %q, want each method of provider.Provider once: %q", methods, want)
	}
}
