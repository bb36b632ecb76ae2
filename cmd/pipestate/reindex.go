package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// reindexEvery is how many pipelines runs reindex reads between two progress
// lines when it finds nothing to index.
const reindexEvery = 1000

var runsReindexCmd = &spec{
	name:    "runs reindex",
	args:    "[--from PIPELINE]",
	summary: "add the unfinished runs that a scan finds to the active-runs index (the backfill after an upgrade)",
	about: "The backfill and repair of the active-runs index. A run last written by a version\n" +
		"before the index is not in it until its next write, and an entry can be lost (deleted by\n" +
		"hand, lost in a failover). This command reads the whole index once, then finds the\n" +
		"unfinished runs as runs --all scans (ListPipelines, then the newest --per-pipeline runs\n" +
		"of each registered pipeline, in pipeline ID order, one pipeline at a time): each one the\n" +
		"index did not list is drift, and is indexed. Where the backend repairs one run's entry\n" +
		"from its record (provider.ActiveRunReindexer: every built-in backend), that is how, and\n" +
		"the run is not written: its version and update time stay, so a run stuck for days still\n" +
		"looks stuck to --older-than. A backend without it gets a compare-and-swap of the run onto\n" +
		"itself at its version, so that its own run write indexes it; that changes what every\n" +
		"compare-and-swap changes (the version goes up by one, the update time is now), and the\n" +
		"command says so: run 'pipestate runs --all --status RUNNING,PENDING --older-than D' first\n" +
		"there if you want the stuck runs by their old update time (each rewrite's " + auditKind + "\n" +
		"event records the version and update time before it). A run that changed under the\n" +
		"command loses nothing: the write that changed it indexed it (every write of this version\n" +
		"does), so it counts as changed under it. Deploy this version to every writer first, then\n" +
		"run this. Without --yes it writes nothing and lists the drift: the runs it would index.\n" +
		"With --yes (and --reason) it indexes them, and appends an " + auditKind + " event for each run\n" +
		"to its pipeline's log ('pipestate run history RUN' shows it). Progress goes to stderr,\n" +
		"one line per pipeline with unfinished runs (and every " + strconv.Itoa(reindexEvery) + " pipelines), each naming\n" +
		"the --from PIPELINE that resumes after it; rerunning from any point is safe (indexed runs\n" +
		"are skipped). The summary says how many runs were scanned, already indexed, indexed (or\n" +
		"to index) and changed under it. Runs older than a pipeline's newest --per-pipeline, and\n" +
		"runs of a pipeline that is not registered, are not found. A backend without the index\n" +
		"is an error. --json prints one object per run to index, then {\"summary\": {...}}.",
	example: "pipestate runs reindex --redis localhost:6379   # what it would index\n" +
		"pipestate runs reindex --reason 'backfill after upgrading to v0.9' --yes --redis localhost:6379\n" +
		"pipestate runs reindex --from orders --reason 'backfill, resumed' --yes --redis localhost:6379",
	write:   true,
	audited: true,
	define: func(in *inv, fs *flag.FlagSet) action {
		from := fs.String("from", "", "start at this pipeline ID (inclusive), as a progress line names it")
		perPipeline := fs.Int("per-pipeline", scanLimit, "how many of each pipeline's newest runs to read")
		return func(ctx context.Context, pos []string) error {
			if _, err := args(pos); err != nil {
				return err
			}
			if isSet(fs, "from") {
				if err := types.ValidateID("--from", *from); err != nil {
					return usagef("%v", err)
				}
			}
			if *perPipeline < 1 {
				return usagef("--per-pipeline %d: give at least 1", *perPipeline)
			}
			if in.yes {
				if err := in.audit.check("reindex runs"); err != nil {
					return err
				}
			}
			p, err := in.provider(ctx)
			if err != nil {
				return err
			}
			l, ok := p.(provider.ActiveRunLister)
			if !ok {
				return errors.New("the backend has no active-runs index: nothing to reindex (runs --all scans it)")
			}
			r := &reindex{in: in, p: p, l: l, perPipeline: *perPipeline}
			if r.rx, ok = p.(provider.ActiveRunReindexer); !ok {
				fmt.Fprintln(in.stderr, "pipestate runs reindex: the backend cannot repair an entry alone (no provider.ActiveRunReindexer):"+
					" each run is indexed by a compare-and-swap onto itself, which sets its version +1 and its update time to now")
			}
			return r.run(ctx, *from)
		}
	},
}

// reindex is one run of runs reindex.
type reindex struct {
	in          *inv
	p           provider.Provider
	l           provider.ActiveRunLister
	rx          provider.ActiveRunReindexer // nil: rewrite the run (rewrite)
	perPipeline int
	indexed     map[string]bool // the runs the index listed when the command started
	sum         reindexSummary
	rows        [][]string // the table of runs to index (or indexed), without --json
}

// reindexSummary is what runs reindex found and did.
type reindexSummary struct {
	Pipelines      int  `json:"pipelines"`      // pipelines read
	Scanned        int  `json:"scanned"`        // runs read
	Unfinished     int  `json:"unfinished"`     // of which unfinished
	AlreadyIndexed int  `json:"alreadyIndexed"` // of which in the index
	ToIndex        int  `json:"toIndex"`        // of which not in it
	Indexed        int  `json:"indexed"`        // rewritten (with --yes)
	ChangedUnderIt int  `json:"changedUnderIt"` // changed before the rewrite: their write indexed them
	Wrote          bool `json:"wrote"`          // --yes
}

// reindexRun is one run to index, with --json.
type reindexRun struct {
	PipelineID string          `json:"pipelineId"`
	RunID      string          `json:"runId"`
	Status     types.RunStatus `json:"status"`
	Version    int             `json:"version"`
	UpdatedAt  time.Time       `json:"updatedAt"`
	Outcome    string          `json:"outcome"` // "to index", "indexed", "changed under it"
}

func (r *reindex) run(ctx context.Context, from string) error {
	in := r.in
	if err := r.readIndex(ctx); err != nil {
		return err
	}
	pipelines, err := r.p.ListPipelines(ctx)
	if err != nil {
		return err
	}
	start := len(pipelines)
	for i, cfg := range pipelines {
		if cfg.ID >= from {
			start = i
			break
		}
	}
	todo := pipelines[start:]
	for i, cfg := range todo {
		resume := "done"
		if i+1 < len(todo) {
			resume = "resume with --from " + todo[i+1].ID
		}
		before := r.sum
		if err := r.pipeline(ctx, cfg.ID); err != nil {
			return fmt.Errorf("pipeline %s: %w (resume with --from %s)", cfg.ID, err, cfg.ID)
		}
		r.sum.Pipelines++
		if found := r.sum.Unfinished - before.Unfinished; found > 0 {
			done := fmt.Sprintf("%d to index", r.sum.ToIndex-before.ToIndex)
			if r.sum.Wrote {
				done = fmt.Sprintf("%d indexed, %d changed under it", r.sum.Indexed-before.Indexed, r.sum.ChangedUnderIt-before.ChangedUnderIt)
			}
			fmt.Fprintf(in.stderr, "pipestate runs reindex: pipeline %s (%d of %d): %d unfinished, %d already indexed, %s; %s\n",
				cfg.ID, start+i+1, len(pipelines), found, r.sum.AlreadyIndexed-before.AlreadyIndexed, done, resume)
		} else if (i+1)%reindexEvery == 0 {
			fmt.Fprintf(in.stderr, "pipestate runs reindex: %d of %d pipelines read; %s\n", start+i+1, len(pipelines), resume)
		}
	}
	return r.report()
}

// pipeline reindexes the unfinished runs of pipeline id that its newest
// perPipeline runs hold and the index lacks.
func (r *reindex) pipeline(ctx context.Context, id string) error {
	runs, err := r.p.ListRuns(ctx, id, r.perPipeline)
	if err != nil {
		return err
	}
	r.sum.Scanned += len(runs)
	var unfinished []types.RunState
	for _, run := range runs {
		if !run.Status.Terminal() {
			unfinished = append(unfinished, run)
		}
	}
	if len(unfinished) == 0 {
		return nil
	}
	r.sum.Unfinished += len(unfinished)
	for _, run := range unfinished {
		if r.indexed[run.RunID] {
			r.sum.AlreadyIndexed++
			continue
		}
		r.sum.ToIndex++
		outcome := "to index"
		if r.in.yes {
			r.sum.Wrote = true
			if outcome, err = r.rewrite(ctx, run); err != nil {
				return fmt.Errorf("run %s: %w", run.RunID, err)
			}
		}
		if err := r.show(reindexRun{PipelineID: id, RunID: run.RunID, Status: run.Status, Version: run.Version,
			UpdatedAt: run.UpdatedAt, Outcome: outcome}); err != nil {
			return err
		}
	}
	return nil
}

// readIndex reads the whole active-runs index once: the runs it lists now, by
// ID. One read of every unfinished run, rather than one per pipeline, whose
// cost would grow with pipelines times unfinished runs (a filtered page still
// reads the entries its filter skips).
func (r *reindex) readIndex(ctx context.Context) error {
	r.indexed = map[string]bool{}
	for cursor := ""; ; {
		page, next, err := r.l.ListActiveRuns(ctx, provider.ActiveRunFilter{}, cursor, activePage)
		if err != nil {
			return err
		}
		for _, run := range page {
			r.indexed[run.RunID] = true
		}
		if next == "" {
			return nil
		}
		cursor = next
	}
}

// rewrite indexes run, then records the write in the pipeline's log; it
// returns the outcome: "indexed", or "changed under it" when another write
// indexed it first. With the backend's ActiveRunReindexer, ReindexRun repairs
// its entry and writes nothing of the run; without, the run is swapped onto
// itself at its version, so that the backend's run write indexes it.
func (r *reindex) rewrite(ctx context.Context, run types.RunState) (string, error) {
	before := map[string]any{"status": run.Status, "version": run.Version, "updatedAt": run.UpdatedAt}
	if r.rx != nil {
		rec := r.in.record("runs reindex", before, map[string]any{"status": run.Status, "version": run.Version, "updatedAt": run.UpdatedAt})
		ev, err := auditEvent(run.PipelineID, run.RunID, string(run.Status), rec)
		if err != nil {
			return "", err
		}
		changed, err := r.rx.ReindexRun(ctx, run.RunID)
		switch {
		case err != nil:
			return "", err
		case !changed:
			r.sum.ChangedUnderIt++
			return "changed under it", nil
		}
		r.sum.Indexed++
		done := fmt.Sprintf("run %s was indexed (the run is unchanged, at version %d)", run.RunID, run.Version)
		return "indexed", appendAudit(ctx, r.p, ev, done)
	}
	rec := r.in.record("runs reindex", before, map[string]any{"status": run.Status, "version": run.Version + 1})
	ev, err := auditEvent(run.PipelineID, run.RunID, string(run.Status), rec)
	if err != nil {
		return "", err
	}
	ok, err := r.p.CompareAndSwapRunState(ctx, run.RunID, run.Version, run)
	switch {
	case err != nil:
		return "", err
	case !ok:
		r.sum.ChangedUnderIt++
		return "changed under it", nil
	}
	r.sum.Indexed++
	done := fmt.Sprintf("run %s was indexed (version %d)", run.RunID, run.Version+1)
	return "indexed", appendAudit(ctx, r.p, ev, done)
}

// show prints one run to index (or indexed): a JSON line now, or a table row
// at the end.
func (r *reindex) show(run reindexRun) error {
	if r.in.json {
		return r.in.emit(run)
	}
	r.rows = append(r.rows, []string{run.PipelineID, run.RunID, string(run.Status), strconv.Itoa(run.Version),
		r.in.ago(run.UpdatedAt), run.Outcome})
	return nil
}

// report prints the table of runs and the summary.
func (r *reindex) report() error {
	in, s := r.in, r.sum
	if in.json {
		return in.emit(map[string]reindexSummary{"summary": s})
	}
	if len(r.rows) > 0 {
		t := in.table("PIPELINE", "RUN", "STATUS", "VERSION", "UPDATED", "OUTCOME")
		for _, row := range r.rows {
			t.row(row...)
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	in.say("pipelines read: %d; runs scanned: %d (at most the newest %d of each); unfinished: %d, already indexed: %d",
		s.Pipelines, s.Scanned, r.perPipeline, s.Unfinished, s.AlreadyIndexed)
	switch {
	case !in.yes && s.ToIndex > 0:
		in.say("to index: %d (drift: unfinished runs the index does not list); nothing was written (add --reason TEXT --yes to index them)", s.ToIndex)
	case !in.yes:
		in.say("nothing to index")
	default:
		in.say("indexed: %d, changed under it: %d (the write that changed each one indexed it)", s.Indexed, s.ChangedUnderIt)
	}
	return nil
}
