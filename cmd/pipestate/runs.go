package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/types"
)

// scanLimit is how many of the newest items a filtered list (runs --status,
// replays PIPELINE) reads to find its matches.
const scanLimit = 1000

// runStatuses is every run status, for help and errors.
var runStatuses = []types.RunStatus{types.RunPending, types.RunTriggering, types.RunRunning, types.RunCompleted,
	types.RunCompletedMonitoring, types.RunFailed, types.RunCancelled}

// runsAtOnce bounds the ListRuns calls runs --all makes at once.
const runsAtOnce = 8

var runsCmd = &spec{
	name:    "runs",
	args:    "PIPELINE | --all",
	summary: "a pipeline's newest runs, or every pipeline's (--all, --status, --older-than, --limit)",
	about: "Lists a pipeline's runs, or with --all (and no PIPELINE) the runs of every registered\n" +
		"pipeline, newest (by creation) first. --status keeps the runs with one of the statuses\n" +
		"given (RUNNING,PENDING) and --older-than D those not updated for D or more (by UpdatedAt:\n" +
		"stuck work); with either, each pipeline's newest " + strconv.Itoa(scanLimit) + " runs are searched.\n" +
		"Cost of --all: 1 ListPipelines, then 1 ListRuns per pipeline (" + strconv.Itoa(runsAtOnce) + " at once), each reading\n" +
		"--limit runs, or " + strconv.Itoa(scanLimit) + " with a filter. Measured at 1,000 pipelines (go test\n" +
		"./cmd/pipestate -run TestCost -cost -v): Redis 2,008 round trips in 0.1 s, a 3-master\n" +
		"Cluster 3,521 in 0.2 s, DynamoDB Local 1,001 requests in 15 s to 107 s (see the README).\n" +
		"When stderr is a terminal, --all shows there how many pipelines it has read.\n" +
		"Runs of a pipeline that is not registered (or was deleted) are not found by --all.\n" +
		"With --status naming unfinished statuses only, --all reads the backend's active-runs\n" +
		"index instead (memory, Redis): every unfinished run, registered pipeline or not, at a\n" +
		"cost that does not grow with pipelines or history; it says on stderr when it scans.\n" +
		"--json prints one types.RunState per line.",
	example: "pipestate runs orders --status RUNNING --limit 5 --redis localhost:6379\n" +
		"pipestate runs --all --status RUNNING,PENDING --older-than 1h --redis localhost:6379",
	define: func(in *inv, fs *flag.FlagSet) action {
		all := fs.Bool("all", false, "the runs of every registered pipeline (give no PIPELINE)")
		status := fs.String("status", "", "only runs with one of these statuses, comma-separated: "+joinStatuses())
		olderThan := fs.Duration("older-than", 0, "only runs not updated for this long or longer (now - UpdatedAt), e.g. 1h")
		limit := fs.Int("limit", 20, "the most runs to print")
		return func(ctx context.Context, pos []string) error {
			want, err := parseStatuses(*status)
			if err != nil {
				return err
			}
			switch {
			case *all && len(pos) > 0:
				return usagef("give PIPELINE or --all, not both")
			case *olderThan < 0:
				return usagef("--older-than %s: give a duration of 0 or more", dur(*olderThan))
			}
			if err := checkLimit(*limit); err != nil {
				return err
			}
			f := runFilter{statuses: want, olderThan: *olderThan, now: in.now()}
			read := *limit
			if f.filters() {
				read = max(read, scanLimit)
			}
			if *all {
				return allRuns(ctx, in, f, read, *limit)
			}
			a, err := args(pos, "PIPELINE")
			if err != nil {
				return usagef("%v (or --all for every pipeline)", err)
			}
			p, err := in.provider(ctx)
			if err != nil {
				return err
			}
			found, err := p.ListRuns(ctx, a[0], read)
			if err != nil {
				return err
			}
			if len(found) == 0 {
				if err := requirePipeline(ctx, p, a[0], "runs"); err != nil {
					return err
				}
			}
			runs := f.keep(found, *limit)
			switch {
			case in.json:
				return emitAll(in, runs)
			case len(runs) == 0 && f.filters():
				in.say("no %s among the newest %d of pipeline %s", f, len(found), a[0])
				return nil
			case len(runs) == 0:
				in.say("no runs of pipeline %s", a[0])
				return nil
			}
			t := in.table("RUN", "STATUS", "VERSION", "CREATED", "UPDATED")
			for _, r := range runs {
				t.row(r.RunID, string(r.Status), strconv.Itoa(r.Version), in.ago(r.CreatedAt), in.ago(r.UpdatedAt))
			}
			return t.flush()
		}
	},
}

// allRuns prints runs --all: the runs f keeps among the newest read of every
// registered pipeline, newest first, at most limit.
func allRuns(ctx context.Context, in *inv, f runFilter, read, limit int) error {
	p, err := in.provider(ctx)
	if err != nil {
		return err
	}
	why := "the backend has no active-runs index"
	if l, ok := p.(provider.ActiveRunLister); ok && f.unfinishedOnly() {
		err := activeRuns(ctx, in, l, f, limit)
		if !errors.Is(err, ddbprovider.ErrNoActiveRunIndex) {
			return err
		}
		why = "the table's active-runs index ACTIVE is missing or still being built (see ddbprovider.EnsureActiveRunIndex)"
	}
	if f.filters() {
		if !f.unfinishedOnly() {
			why = "without --status, or with a finished one, finished runs are wanted too"
		}
		fmt.Fprintf(in.stderr, "pipestate runs: %s: scanning the newest %d runs of each registered pipeline\n", why, read)
	}
	pipelines, err := p.ListPipelines(ctx)
	if err != nil {
		return err
	}
	found := make([][]types.RunState, len(pipelines))
	shown := in.progress("pipelines' runs read", len(pipelines))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runsAtOnce)
	for i, cfg := range pipelines {
		g.Go(func() error {
			runs, err := p.ListRuns(gctx, cfg.ID, read)
			if err != nil {
				return fmt.Errorf("pipeline %s: %w", cfg.ID, err)
			}
			found[i] = f.keep(runs, limit)
			shown.step()
			return nil
		})
	}
	err = g.Wait()
	shown.done()
	if err != nil {
		return err
	}
	runs := slices.Concat(found...)
	slices.SortStableFunc(runs, func(a, b types.RunState) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(a.PipelineID, b.PipelineID), strings.Compare(a.RunID, b.RunID))
	})
	runs = runs[:min(limit, len(runs))]
	switch {
	case in.json:
		return emitAll(in, runs)
	case len(runs) == 0 && f.filters():
		in.say("no %s among the newest %d runs of each of %d pipelines", f, read, len(pipelines))
		return nil
	case len(runs) == 0:
		in.say("no runs in any of %d pipelines", len(pipelines))
		return nil
	}
	t := in.table("PIPELINE", "RUN", "STATUS", "VERSION", "CREATED", "UPDATED")
	for _, r := range runs {
		t.row(r.PipelineID, r.RunID, string(r.Status), strconv.Itoa(r.Version), in.ago(r.CreatedAt), in.ago(r.UpdatedAt))
	}
	return t.flush()
}

// activeRuns prints runs --all from the backend's active-runs index: every
// unfinished run that f keeps, registered pipeline or not, newest (by creation)
// first, at most limit. It reads every match (pages of activePage), so its cost
// is the unfinished runs, not the pipelines or the history.
func activeRuns(ctx context.Context, in *inv, l provider.ActiveRunLister, f runFilter, limit int) error {
	filter := provider.ActiveRunFilter{Statuses: f.statuses}
	if f.olderThan > 0 {
		// f keeps now - UpdatedAt >= olderThan: UpdatedAt <= now - olderThan.
		filter.NotUpdatedSince = f.now.Add(-f.olderThan).Add(time.Nanosecond)
	}
	var runs []types.RunState
	for cursor := ""; ; {
		page, next, err := l.ListActiveRuns(ctx, filter, cursor, activePage)
		if err != nil {
			return err
		}
		runs = append(runs, page...)
		if next == "" {
			break
		}
		cursor = next
	}
	slices.SortStableFunc(runs, func(a, b types.RunState) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(a.PipelineID, b.PipelineID), strings.Compare(a.RunID, b.RunID))
	})
	runs = runs[:min(limit, len(runs))]
	switch {
	case in.json:
		return emitAll(in, runs)
	case len(runs) == 0:
		in.say("no %s (the active-runs index: every unfinished run)", f)
		return nil
	}
	t := in.table("PIPELINE", "RUN", "STATUS", "VERSION", "CREATED", "UPDATED")
	for _, r := range runs {
		t.row(r.PipelineID, r.RunID, string(r.Status), strconv.Itoa(r.Version), in.ago(r.CreatedAt), in.ago(r.UpdatedAt))
	}
	return t.flush()
}

// activePage is the page size of runs --all's reads of the active-runs index.
const activePage = 1000

// unfinishedOnly reports whether f keeps unfinished runs only (--status names
// no terminal status), which the active-runs index answers.
func (f runFilter) unfinishedOnly() bool {
	if len(f.statuses) == 0 {
		return false
	}
	for _, s := range f.statuses {
		if s.Terminal() {
			return false
		}
	}
	return true
}

// runFilter is what runs --status and --older-than keep.
type runFilter struct {
	statuses  []types.RunStatus // none: every status
	olderThan time.Duration     // 0: any age
	now       time.Time
}

// filters reports whether f leaves any run out.
func (f runFilter) filters() bool { return len(f.statuses) > 0 || f.olderThan > 0 }

// keep returns the runs f keeps, in order, at most limit.
func (f runFilter) keep(runs []types.RunState, limit int) []types.RunState {
	var out []types.RunState
	for _, r := range runs {
		if len(out) == limit {
			break
		}
		if (len(f.statuses) == 0 || slices.Contains(f.statuses, r.Status)) && f.now.Sub(r.UpdatedAt) >= f.olderThan {
			out = append(out, r)
		}
	}
	return out
}

// String says what f keeps, for "no ... among": "RUNNING or PENDING runs not
// updated for 1h".
func (f runFilter) String() string {
	s := "runs"
	if len(f.statuses) > 0 {
		names := make([]string, len(f.statuses))
		for i, st := range f.statuses {
			names[i] = string(st)
		}
		s = strings.Join(names, " or ") + " runs"
	}
	if f.olderThan > 0 {
		s += " not updated for " + dur(f.olderThan)
	}
	return s
}

// parseStatuses parses --status: run statuses, comma-separated, any case.
func parseStatuses(list string) ([]types.RunStatus, error) {
	var out []types.RunStatus
	for w := range strings.SplitSeq(list, ",") {
		if w = strings.TrimSpace(w); w == "" {
			continue
		}
		st := types.RunStatus(strings.ToUpper(w))
		if !st.Valid() {
			return nil, usagef("--status %q: want one or more (comma-separated) of %s", w, joinStatuses())
		}
		if !slices.Contains(out, st) {
			out = append(out, st)
		}
	}
	return out, nil
}

func joinStatuses() string {
	s := make([]string, len(runStatuses))
	for i, st := range runStatuses {
		s[i] = string(st)
	}
	return strings.Join(s, ", ")
}

var runShowCmd = &spec{
	name:    "run show",
	args:    "RUN",
	summary: "one run ('pipestate run RUN' too)",
	about:   "Shows one run: its pipeline, status, version and metadata. --json prints one types.RunState.",
	example: "pipestate run show r-0042 --redis localhost:6379   # or: pipestate run r-0042",
	define: func(in *inv, _ *flag.FlagSet) action {
		return func(ctx context.Context, pos []string) error {
			a, err := args(pos, "RUN")
			if err != nil {
				return err
			}
			p, err := in.provider(ctx)
			if err != nil {
				return err
			}
			r, err := getRun(ctx, p, a[0])
			switch {
			case err != nil:
				return err
			case in.json:
				return in.emit(r)
			}
			return in.fields("run", r.RunID, "pipeline", r.PipelineID, "status", string(r.Status),
				"version", strconv.Itoa(r.Version), "created", in.stamp(r.CreatedAt), "updated", in.stamp(r.UpdatedAt),
				"metadata", compact(r.Metadata))
		}
	},
}

// getRun reads a run; a missing one is a not-found error.
func getRun(ctx context.Context, p provider.Provider, id string) (*types.RunState, error) {
	r, err := p.GetRunState(ctx, id)
	if err == nil && r == nil {
		err = notFoundf("no run %q", id)
	}
	return r, err
}

var runFailCmd = &spec{
	name:    "run fail",
	args:    "RUN --version N --reason TEXT",
	summary: "mark a run FAILED (compare-and-swap on version N), recording why",
	about: "Marks a stuck run FAILED with a compare-and-swap on its current version, which you pass\n" +
		"explicitly (see 'pipestate run RUN'): if anything changed the run since you looked, nothing\n" +
		"is written and the command fails. The status changes (the version goes up by one and the\n" +
		"update time is now), and the run's metadata key " + auditMetadata + " records the write: action,\n" +
		"operator (--as), reason (--reason, required) and the status and version before and after.\n" +
		"Then an " + auditKind + " event with the same record is appended to the pipeline's log\n" +
		"('pipestate run history RUN' shows both). The run and its metadata change in one step; the\n" +
		"event follows, so a crash between the two leaves the record on the run, where run history\n" +
		"finds it, and an append that fails is an error (exit 1) that says the run was failed.\n" +
		"A run already FAILED is left alone, whatever its version, and the command says so and\n" +
		"exits 0. --json prints the new types.RunState (or the run as it is, when already FAILED).",
	example: "pipestate run fail r-0042 --version 4 --reason 'worker died, INC-123' --yes --redis localhost:6379",
	write:   true,
	audited: true,
	define: func(in *inv, fs *flag.FlagSet) action {
		version := fs.Int("version", 0, "the run's current version, as 'pipestate run RUN' shows it (required)")
		return func(ctx context.Context, pos []string) error {
			a, err := args(pos, "RUN")
			if err != nil {
				return err
			}
			if !isSet(fs, "version") {
				return usagef("missing --version N: the run's current version, as 'pipestate run %s' shows it", a[0])
			}
			if err := in.audit.check("fail run " + a[0]); err != nil {
				return err
			}
			if !in.yes {
				return usagef("this writes: add --yes to mark run %s FAILED if it is still at version %d", a[0], *version)
			}
			p, err := in.provider(ctx)
			if err != nil {
				return err
			}
			r, err := getRun(ctx, p, a[0])
			switch {
			case err != nil:
				return err
			case r.Status == types.RunFailed && in.json:
				return in.emit(r)
			case r.Status == types.RunFailed && r.Version == *version:
				in.say("run %s is already FAILED at version %d: nothing changed", r.RunID, r.Version)
				return nil
			case r.Status == types.RunFailed:
				in.say("run %s is already FAILED, at version %d (not %d: it changed since you looked): nothing changed", r.RunID, r.Version, *version)
				return nil
			case r.Version != *version:
				return fmt.Errorf("run %s is at version %d, not %d: it changed since you looked; nothing was written (check 'pipestate run %s', then pass --version %d if it should still fail)",
					r.RunID, r.Version, *version, r.RunID, r.Version)
			}
			rec := in.record("run fail", map[string]any{"status": r.Status, "version": r.Version},
				map[string]any{"status": types.RunFailed, "version": r.Version + 1})
			ev, err := auditEvent(r.PipelineID, r.RunID, string(types.RunFailed), rec)
			if err != nil {
				return err
			}
			next := *r
			next.Status = types.RunFailed
			next.Metadata = maps.Clone(r.Metadata)
			if next.Metadata == nil {
				next.Metadata = map[string]any{}
			}
			next.Metadata[auditMetadata] = rec.asMap()
			ok, err := p.CompareAndSwapRunState(ctx, r.RunID, *version, next)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("run %s changed between the read and the write (compare-and-swap on version %d lost): nothing was written; check 'pipestate run %s'",
					r.RunID, *version, r.RunID)
			}
			done := fmt.Sprintf("run %s was marked FAILED (version %d)", r.RunID, r.Version+1)
			if err := appendAudit(ctx, p, ev, done); err != nil {
				return err
			}
			now, err := getRun(ctx, p, r.RunID)
			switch {
			case err != nil:
				return err
			case in.json:
				return in.emit(now)
			}
			in.say("run %s of pipeline %s: status %s -> %s, version %d -> %d", r.RunID, r.PipelineID, r.Status, now.Status, r.Version, now.Version)
			in.say("recorded: %s by %s, reason %q (%s event in pipeline %s's log; 'pipestate run history %s')",
				rec.Action, rec.Operator, rec.Reason, auditKind, r.PipelineID, r.RunID)
			return nil
		}
	},
}

var runHistoryCmd = &spec{
	name:    "run history",
	args:    "RUN",
	summary: "a run's state changes and who made them, oldest first",
	about: "Shows the events of the run's pipeline that name the run, oldest first, among the newest\n" +
		strconv.Itoa(scanLimit) + " events of the pipeline: the orchestrator's state changes and the\n" +
		auditKind + " events of the CLI's writes (run fail), with who (--as) and why (--reason).\n" +
		"A write recorded on the run (its metadata key " + auditMetadata + ") whose event is missing (the\n" +
		"CLI stopped between the two) is shown too, marked \"on the run only\". The last line is the\n" +
		"run as it is now. --json prints one types.Event per line (the run-only record as an event\n" +
		"of kind " + auditKind + " whose details say recordedOn: run).",
	example: "pipestate run history r-0042 --redis localhost:6379",
	define: func(in *inv, _ *flag.FlagSet) action {
		return func(ctx context.Context, pos []string) error {
			a, err := args(pos, "RUN")
			if err != nil {
				return err
			}
			p, err := in.provider(ctx)
			if err != nil {
				return err
			}
			r, err := getRun(ctx, p, a[0])
			if err != nil {
				return err
			}
			evs, err := p.ListEvents(ctx, r.PipelineID, scanLimit)
			if err != nil {
				return err
			}
			var history []types.Event
			recorded := false // the run's own record has its event
			onRun, hasOnRun := auditOf(r.Metadata[auditMetadata])
			for _, e := range evs {
				if e.RunID != r.RunID {
					continue
				}
				history = append(history, e)
				if rec, ok := auditOf(e.Details); ok && e.Kind == auditKind && hasOnRun && rec.At.Equal(onRun.At) && rec.Action == onRun.Action {
					recorded = true
				}
			}
			if hasOnRun && !recorded {
				d := onRun.asMap()
				d["recordedOn"] = "run"
				history = append(history, types.Event{Kind: auditKind, PipelineID: r.PipelineID, RunID: r.RunID,
					Status: fmt.Sprint(onRun.After["status"]), Message: onRun.Reason, Details: d, Timestamp: onRun.At})
				slices.SortStableFunc(history, func(a, b types.Event) int { return a.Timestamp.Compare(b.Timestamp) })
			}
			if in.json {
				return emitAll(in, history)
			}
			if len(history) == 0 {
				in.say("no events name run %s among the newest %d of pipeline %s", r.RunID, len(evs), r.PipelineID)
			} else {
				t := in.table("TIME", "KIND", "STATUS", "BY", "MESSAGE")
				for _, e := range history {
					by, msg := "-", e.Message
					if rec, ok := auditOf(e.Details); ok && e.Kind == auditKind {
						by = rec.Operator
						msg = fmt.Sprintf("%s: %v v%v -> %v v%v: %s", rec.Action, rec.Before["status"], rec.Before["version"],
							rec.After["status"], rec.After["version"], rec.Reason)
						if e.Details["recordedOn"] == "run" {
							msg += " (on the run only: its event is missing)"
						}
					}
					t.row(in.stamp(e.Timestamp), e.Kind, e.Status, by, msg)
				}
				if err := t.flush(); err != nil {
					return err
				}
			}
			in.say("now: run %s of pipeline %s is %s at version %d, updated %s", r.RunID, r.PipelineID, r.Status, r.Version, in.ago(r.UpdatedAt))
			return nil
		}
	},
}
