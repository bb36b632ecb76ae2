package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// goldenCase is a command line whose output must equal testdata/NAME.golden on
// every backend. In args, "{STORE}" stands for the backend's store flags, "{Cn}"
// for the cursor of the fixtures' n-th event of orders and "{An}" for that of
// the audit pipeline (whose first three events retention dropped).
type goldenCase struct {
	name string
	args []string
}

func words(s string) []string { return strings.Fields(s) }

// readCases change nothing; writeCases run after them, in order.
var (
	readCases = []goldenCase{
		{"pipelines-list", words("pipelines list")},
		{"pipelines-default", words("pipelines --json")},
		{"pipelines-show", words("pipelines show orders")},
		{"pipelines-show-missing", words("pipelines show nosuch")},
		{"runs", words("runs orders")},
		{"runs-status", words("runs orders --status running")},
		{"runs-status-none", words("runs orders --status CANCELLED")},
		{"runs-limit", words("runs --limit 2 orders")},
		{"runs-empty", words("runs empty")},
		{"runs-missing", words("runs nosuch")},
		{"runs-all", words("runs --all")},
		{"runs-all-stuck", words("runs --all --status RUNNING,PENDING --older-than 1h")},
		{"runs-all-statuses", words("runs --all --status running,pending --limit 3")},
		{"runs-all-none", words("runs --all --status CANCELLED,RUNNING --older-than 3h")},
		{"runs-all-json", words("runs --all --older-than 1h --json")},
		{"runs-older-than", words("runs orders --older-than 12m")},
		{"run-history", words("run history r-0003")},
		{"run-history-none", words("run history r-0001")},
		{"locks-list", words("locks list")},
		{"locks-list-match", words("locks list --match sched:*")},
		{"locks-list-none", words("locks list --match nosuch*")},
		{"locks-list-json", words("locks list --match eval:* --json")}, // a lease's expiry is the server's on Redis
		{"run", words("run r-0003")},
		{"run-show", words("run show r-0002")},
		{"run-missing", words("run r-nosuch")},
		{"events", words("events orders")},
		{"events-limit", words("events orders --limit 2")},
		{"events-since", words("events orders --since {C2} --limit 3")},
		{"events-since-start", []string{"events", "orders", "--since", "", "--limit", "10"}},
		{"events-since-end", words("events orders --since {C6}")},
		{"events-missing", words("events nosuch")},
		{"usage-events-from-end", words("events orders --from-end")},
		{"usage-events-from-end-since", words("events orders --follow --from-end --since {C2}")},
		{"usage-events-from-end-limit", words("events orders --follow --from-end --limit 5")},
		{"events-since-expired", words("events audit --since {A1}")},
		{"events-since-expired-json", words("events audit --since {A2} --json")},
		{"events-follow-expired", words("events audit --follow --since {A1}")},
		{"events-since-newest-dropped", words("events audit --since {A3}")},
		{"events-since-oldest-kept", []string{"events", "audit", "--since", ""}},
		{"runlogs", words("runlogs orders")},
		{"runlogs-date", words("runlogs orders --date 2026-11-21")},
		{"runlogs-hourly", words("runlogs orders --date 2026-11-21T04 --schedule hourly")},
		{"runlogs-missing", words("runlogs orders --date 2026-01-01")},
		{"reruns", words("reruns orders")},
		{"reruns-all", words("reruns --all")},
		{"reruns-none", words("reruns empty")},
		{"replays", words("replays")},
		{"replays-pipeline", words("replays orders")},
		{"replays-date", words("replays billing --date 2026-11-20")},
		{"replays-missing", words("replays orders --date 2026-01-01")},
		{"late", words("late orders --date 2026-11-20")},
		{"late-none", words("late orders --date 2026-11-21")},
		{"markers", words("markers billing")},
		{"markers-none", words("markers orders")},
		{"traits", words("traits orders")},
		{"traits-missing", words("traits nosuch")},
		{"readiness", words("readiness orders")},
		{"readiness-missing", words("readiness billing")},
		{"lock-show", words("lock show eval:orders:daily")},
		{"lock-lease", words("lock sched:orders")},
		{"lock-free", words("lock show nosuch")},
		{"state-int64sum", words("state get int64sum --entity page:/home {STORE}")},
		{"state-int64sum-range", words("state get int64sum --entity page:/home --window 1h --from 2026-11-21 --to now {STORE}")},
		{"state-int64max", words("state get int64max --entity latency {STORE}")},
		{"state-float64sum", words("state get float64sum --entity revenue {STORE}")},
		{"state-hll", words("state get hll --entity site {STORE}")},
		{"state-hll-range", words("state get hll --entity site --window 1h --from -6h --to now {STORE}")},
		{"state-topk-range", words("state get topk --entity pages --window 1h --from 2026-11-21T03:00 --to 2026-11-21T06:00 --capacity 10 {STORE}")},
		{"state-topk-shape", words("state get topk --entity pages --window 1h --from 2026-11-21T03:00 --to 2026-11-21T06:00 --capacity 5 {STORE}")},
		{"state-bloom", words("state get bloom --entity urls --contains /a --contains /z {STORE}")},
		{"state-json", words("state get hll --entity site --window 1h --from -6h --to now --json {STORE}")},
		{"state-missing", words("state get hll --entity nosuch {STORE}")},
		{"state-missing-range", words("state get int64sum --entity page:/home --window 1h --from 2026-11-20 --to 2026-11-21 {STORE}")},
		{"usage-unknown", words("bogus")},
		{"usage-group", words("state")},
		{"usage-bad-flag", words("runs orders --bogus")},
		{"usage-status", words("runs orders --status BOGUS")},
		{"usage-limit", words("runs orders --limit 0")},
		{"usage-missing-arg", words("runs")},
		{"usage-extra-arg", words("run r-1 r-2")},
		{"usage-bad-id", []string{"runs", "bad id"}},
		{"usage-reruns", words("reruns")},
		{"usage-late", words("late orders")},
		{"usage-runlogs-schedule", words("runlogs orders --schedule hourly")},
		{"usage-state-kind", words("state get counter --entity x {STORE}")},
		{"usage-state-entity", words("state get int64sum {STORE}")},
		{"usage-state-window", words("state get hll --entity site --window 1h {STORE}")},
		{"usage-state-capacity", words("state get topk --entity pages --window 1h --from -1h --to now {STORE}")},
		{"usage-state-time", words("state get hll --entity site --window 1h --from yesterday --to now {STORE}")},
		{"usage-fail-yes", words("run fail r-0003 --version 4 --reason stuck")},
		{"usage-fail-version", words("run fail r-0003 --yes")},
		{"usage-fail-reason", words("run fail r-0003 --version 4 --yes")},
		{"usage-lock-owner", words("lock release eval:orders:daily --reason gone --yes")},
		{"usage-lock-yes", words("lock release eval:orders:daily --owner worker-7 --reason gone")},
		{"usage-lock-reason", words("lock release sched:orders --token t-1 --yes")},
		{"usage-lock-both", words("lock release sched:orders --owner worker-7 --token t-1 --reason gone --yes")},
		{"usage-lock-pipeline", words("lock release sched:orders --token t-1 --pipeline a:b --reason gone --yes")},
		{"usage-runs-all-pipeline", words("runs orders --all")},
		{"usage-runs-statuses", words("runs --all --status RUNNING,STUCK")},
		{"usage-older-than", words("runs --all --older-than -1h")},
		{"usage-locks-match", []string{"locks", "list", "--match", `sched\`}},
		{"usage-lock-key", []string{"lock", "show", ""}},
		{"help-runs", words("runs --help")},
		{"help-run-fail", words("run fail --help")},
		{"help-run-history", words("run history --help")},
		{"help-locks-list", words("locks list --help")},
		{"help-lock-release", words("lock release --help")},
		{"help-version", words("version --help")},
		{"help-runs-reindex", words("runs reindex --help")},
		{"help-overview", words("help")},
		{"usage-did-you-mean", words("runz orders")},
		{"usage-did-you-mean-sub", words("pipelines shwo orders")},
		{"usage-did-you-mean-default", words("run fial r-0003 --version 4 --reason stuck --yes")},
		{"usage-did-you-mean-flag", words("runs orders --limt 3")},
		{"usage-single-dash", words("runs orders -bogus")},
		{"usage-flag-value", words("runs orders --limit many")},
		{"usage-flag-no-value", words("runs orders --limit")},
		{"usage-timeout", words("runs orders --timeout 0")},
		{"json-error-unknown", words("bogus --json")},
		{"json-error-flag", words("runs orders --json --limt 3")},
		{"json-error-usage", words("runs orders --limit 0 --json")},
		{"json-error-not-found", words("run r-nosuch --json")},
		{"json-error-default", words("lock relase eval:orders:daily --json")},
		{"lock-show-json", words("lock show eval:orders:daily --json")},
	}
	writeCases = []goldenCase{
		{"run-fail-stale", words("run fail r-0003 --version 3 --reason stuck --as oncall@ops --yes")},
		{"run-fail", []string{"run", "fail", "r-0003", "--version", "4", "--reason", "worker-7 died, INC-42", "--as", "oncall@ops", "--yes"}},
		{"run-fail-again", words("run fail r-0003 --version 5 --reason stuck --as oncall@ops --yes")},
		{"run-fail-failed", words("run fail r-0003 --version 4 --reason stuck --as oncall@ops --yes")},
		{"run-fail-failed-json", words("run fail r-0002 --version 1 --reason stuck --as oncall@ops --yes --json")},
		{"run-fail-missing", words("run fail r-nosuch --version 1 --reason stuck --as oncall@ops --yes")},
		{"run-fail-json", words("run fail r-0004 --version 0 --reason stuck --as oncall@ops --yes --json")},
		{"run-fail-stuck", []string{"run", "fail", "r-b0", "--version", "2", "--reason", "worker lost, INC-42", "--as", "alice@ops", "--yes"}},
		{"run-history-stuck", words("run history r-b0")},
		{"run-history-failed", words("run history r-0003")},
		{"run-history-failed-json", words("run history r-0003 --json")},
		{"usage-lock-no-pipeline", words("lock release nightly:compaction --owner worker-7 --reason gone --as oncall@ops --yes")},
		{"lock-release-other", words("lock release eval:orders:daily --owner worker-8 --reason gone --as oncall@ops --yes")},
		{"lock-release", words("lock release eval:orders:daily --owner worker-7 --reason gone --as oncall@ops --yes")},
		{"lock-release-again", words("lock release eval:orders:daily --owner worker-7 --reason gone --as oncall@ops --yes")},
		{"lock-show-released", words("lock show eval:orders:daily")},
		{"lock-release-token-other", words("lock release sched:orders --token t-nosuch --reason gone --as oncall@ops --yes")},
		{"lock-release-token", []string{"lock", "release", "sched:orders", "--token", "{TOKEN}", "--pipeline", "orders",
			"--reason", "scheduler OOM-killed, INC-42", "--as", "alice@ops", "--yes"}},
		{"locks-list-released", words("locks list")},
		{"events-audit-orders", words("events orders --limit 4")},
	}
)

func TestGolden(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, h *harness) {
		cursors := eventCursors(t, h)
		for _, c := range slices.Concat(readCases, writeCases) {
			t.Run(c.name, func(t *testing.T) {
				r := h.run(t, expand(c.args, h, cursors)...)
				compareGolden(t, h, c.name, transcript(t, c, r, h, cursors))
			})
		}
		ctx := context.Background()
		run, err := h.open(t, "").GetRunState(ctx, "r-0003")
		if err != nil || run == nil || run.Status != "FAILED" || run.Version != 5 || run.UpdatedAt != now {
			t.Errorf("after run fail: run = %+v, %v; want FAILED at version 5, updated now", run, err)
		}
		if held, err := h.open(t, "worker-9").AcquireLock(ctx, "eval:orders:daily", 0); !held || err != nil {
			t.Errorf("after lock release: AcquireLock by another owner = %v, %v; want true, nil", held, err)
		}
		// The lease released with its token: its holder can no longer renew it.
		if renewed, err := h.open(t, "").(provider.Leaser).RenewLease(ctx, h.lease, time.Hour); !errors.Is(err, provider.ErrLockNotHeld) {
			t.Errorf("after lock release --token: RenewLease by its holder = %+v, %v; want an error wrapping ErrLockNotHeld", renewed, err)
		}
		checkAudit(t, h)
	})
}

// eventCursors returns the cursors of the fixtures' events, oldest first.
func eventCursors(t *testing.T, h *harness) []string {
	t.Helper()
	recs, err := h.open(t, "").ReadEventsSince(context.Background(), "orders", "", 100)
	if err != nil {
		t.Fatal(err)
	}
	cursors := make([]string, len(recs))
	for i, r := range recs {
		cursors[i] = r.StreamID
	}
	return cursors
}

// expand replaces the placeholders of args.
func expand(args []string, h *harness, cursors []string) []string {
	var out []string
	for _, a := range args {
		if a == "{STORE}" {
			out = append(out, h.storeFlags...)
			continue
		}
		a = strings.ReplaceAll(a, "{TOKEN}", h.lease.Token)
		for i, c := range cursors {
			a = strings.ReplaceAll(a, fmt.Sprintf("{C%d}", i+1), c)
		}
		for i, c := range h.audit {
			a = strings.ReplaceAll(a, fmt.Sprintf("{A%d}", i+1), c)
		}
		out = append(out, a)
	}
	return out
}

// transcript is what a golden file holds: the command line, the exit status,
// stdout and stderr, with what differs between backends replaced (the backend
// line, checked against h.line, event cursors at the end of a line, and the
// fixture lease's token).
func transcript(t *testing.T, c goldenCase, r result, h *harness, cursors []string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "$ pipestate %s\nexit %d\n", strings.Join(quoteArgs(c.args), " "), r.code)
	name := "C"
	switch {
	case !strings.HasPrefix(c.name, "events"):
		cursors = nil // only event lines hold cursors
	case slices.Contains(c.args, "audit"):
		cursors, name = h.audit, "A"
	}
	line := h.line
	if slices.Contains(c.args, "{STORE}") {
		line = h.storeLine
	}
	b.WriteString(normalize(t, r.stdout, line, cursors, name))
	if r.stderr != "" {
		b.WriteString("--- stderr\n")
		b.WriteString(normalize(t, r.stderr, line, cursors, name))
	}
	return strings.ReplaceAll(b.String(), h.lease.Token, "TOKEN")
}

// quoteArgs quotes the arguments a shell would need quoted.
func quoteArgs(args []string) []string {
	out := slices.Clone(args)
	for i, a := range out {
		if a == "" || strings.ContainsAny(a, " '") {
			out[i] = "'" + a + "'"
		}
	}
	return out
}

// normalize replaces, in each line of s, the backend description (which must be
// backend), a trailing event cursor and one after the word "cursor" (as name and
// the cursor's number).
func normalize(t *testing.T, s, backend string, cursors []string, name string) string {
	t.Helper()
	lines := strings.SplitAfter(s, "\n")
	for i, line := range lines {
		for _, pre := range []string{"backend: ", "(looked in ", "(backend "} {
			if rest, ok := strings.CutPrefix(line, pre); ok {
				if !strings.HasPrefix(rest, backend) {
					t.Errorf("backend in %q, want %q", line, backend)
				}
				line = pre + "BACKEND" + strings.TrimPrefix(rest, backend)
			}
		}
		if i := strings.Index(line, "; chosen by "); i >= 0 {
			line = line[:i] + ")\n"
		}
		if strings.HasPrefix(line, "{") { // a JSON error: its backend and what chose it
			line = strings.ReplaceAll(line, `"backend":"`+backend+`"`, `"backend":"BACKEND"`)
			line = chosenBy.ReplaceAllString(line, "")
		}
		fields := strings.Fields(line)
		if len(fields) > 0 {
			last := fields[len(fields)-1]
			for n, c := range cursors {
				if last == c || last == "cursor="+c {
					cut := strings.LastIndex(line, c)
					line = line[:cut] + fmt.Sprintf("%s%d", name, n+1) + line[cut+len(c):]
					break
				}
			}
		}
		for n, c := range cursors {
			line = strings.ReplaceAll(line, "cursor "+c+" ", fmt.Sprintf("cursor %s%d ", name, n+1))
		}
		lines[i] = line
	}
	return strings.Join(lines, "")
}

// noIndexNote is runs --all's note that the backend has no active-runs index.
var noIndexNote = regexp.MustCompile(`(--- stderr\n)?pipestate runs: the backend has no active-runs index: [^\n]*\n`)

// chosenBy is the chosenBy field of a JSON error.
var chosenBy = regexp.MustCompile(`,"chosenBy":\[[^\]]*\]`)

// compareGolden compares got with testdata/name.golden; with -update, the memory
// backend rewrites the file.
func compareGolden(t *testing.T, h *harness, name, got string) {
	t.Helper()
	got = noIndexNote.ReplaceAllString(got, "") // a backend without the active-runs index says it scans
	path := filepath.Join("testdata", name+".golden")
	if *update && h.name == "memory" {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs on %s:\n--- got\n%s--- want\n%s", path, h.name, got, want)
	}
}

// checkAudit reads back what the golden writes recorded: run fail's record on
// the run and its event in the pipeline's log, and lock release's events.
func checkAudit(t *testing.T, h *harness) {
	t.Helper()
	ctx := context.Background()
	p := h.open(t, "")
	run, err := p.GetRunState(ctx, "r-0003")
	if err != nil || run == nil {
		t.Fatalf("GetRunState(r-0003) = %+v, %v", run, err)
	}
	want := auditRecord{Action: "run fail", Operator: "oncall@ops", Reason: "worker-7 died, INC-42", At: now,
		Before: map[string]any{"status": "RUNNING", "version": float64(4)}, After: map[string]any{"status": "FAILED", "version": float64(5)}}
	if got, ok := auditOf(run.Metadata[auditMetadata]); !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("run r-0003's %s = %+v, want %+v", auditMetadata, got, want)
	}
	if run.Metadata["host"] != "worker-7" {
		t.Errorf("run r-0003's metadata = %v: run fail lost the run's own keys", run.Metadata)
	}
	events := func(pipeline string) []types.Event {
		evs, err := p.ListEvents(ctx, pipeline, 100)
		if err != nil {
			t.Fatalf("ListEvents(%s): %v", pipeline, err)
		}
		var out []types.Event
		for _, e := range evs {
			if e.Kind == auditKind {
				out = append(out, e)
			}
		}
		return out
	}
	orders := events("orders")
	if len(orders) != 4 {
		t.Fatalf("%s events of orders: %+v, want run fail's of r-0003 and r-0004 and lock release --owner's and --token's", auditKind, orders)
	}
	if e := orders[0]; e.RunID != "r-0003" || e.Status != "FAILED" || e.Message != want.Reason || !e.Timestamp.Equal(now) {
		t.Errorf("run fail's event = %+v, want run r-0003, status FAILED, the reason, at now", e)
	} else if got, ok := auditOf(e.Details); !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("run fail's event details = %+v, want %+v", got, want)
	}
	// lock release eval:orders:daily --owner, without --pipeline: in the log of
	// the pipeline its key names.
	if lock, ok := auditOf(orders[2].Details); !ok || lock.Action != "lock release" || lock.Before["key"] != "eval:orders:daily" ||
		lock.Before["owner"] != "worker-7" {
		t.Errorf("lock release --owner's event details = %+v, want the lock's key and owner", orders[2].Details)
	}
	lease, ok := auditOf(orders[3].Details)
	if !ok || lease.Action != "lock release" || lease.Before["key"] != "sched:orders" || lease.Before["token"] != h.lease.Token ||
		lease.Before["fence"] != float64(h.lease.Fence) || lease.Reason != "scheduler OOM-killed, INC-42" {
		t.Errorf("lock release --token's event details = %+v, want the lease's key, token and fence and the reason", orders[3].Details)
	}
}

// TestOperatorDefault: without --as, a write records $USER@host as its
// operator.
func TestOperatorDefault(t *testing.T) {
	h := memoryHarness(t)
	host, err := os.Hostname()
	if err != nil {
		t.Skip("no host name:", err)
	}
	env := append(slices.Clone(h.env), "USER=alice")
	r := runInProcess(context.Background(), env, h.dial, words("run fail r-0003 --version 4 --reason stuck --yes")...)
	if want := "recorded: run fail by alice@" + host + ", "; r.code != exitOK || !strings.Contains(r.stdout, want) {
		t.Errorf("run fail without --as: exit %d, stdout %q, stderr %q; want exit 0 and %q", r.code, r.stdout, r.stderr, want)
	}
}
