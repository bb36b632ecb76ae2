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
	about: "The backfill of the active-runs index. A run last written by a version before the index\n" +
		"is not in it until its next write. This command reads the whole index once, then finds\n" +
		"the unfinished runs as runs --all scans (ListPipelines, then the newest --per-pipeline\n" +
		"runs of each registered pipeline, in pipeline ID order, one pipeline at a time), and\n" +
		"rewrites each one the index did not list unchanged: a compare-and-swap of the run onto\n" +
		"itself at its version, so that the backend's own run write indexes it. The\n" +
		"rewrite changes what every compare-and-swap changes: the version goes up by one and the\n" +
		"update time is now, so run 'pipestate runs --all --status RUNNING,PENDING --older-than D'\n" +
		"first if you want the stuck runs by their old update time (the dry run lists them too,\n" +
		"and each rewrite's " + auditKind + " event records the version and update time before it).\n" +
		"A run that changed between the read and the rewrite loses nothing: the compare-and-swap\n" +
		"fails and the write that changed it indexed it (every write of this version does), so it\n" +
		"counts as changed under it. Deploy this version to every writer first, then run this.\n" +
		"Without --yes it writes nothing and lists the runs it would index. With --yes (and\n" +
		"--reason) it rewrites them, and appends an " + auditKind + " event for each run to its\n" +
		"pipeline's log ('pipestate run history RUN' shows it). Progress goes to stderr, one line\n" +
		"per pipeline with unfinished runs (and every " + strconv.Itoa(reindexEvery) + " pipelines), each naming the\n" +
		"--from PIPELINE that resumes after it; rerunning from any point is safe (indexed runs\n" +
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
			return r.run(ctx, *from)
		}
	},
}

// reindex is one run of runs reindex.
type reindex struct {
	in          *inv
	p           provider.Provider
	l           provider.ActiveRunLister
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

// rewrite swaps run onto itself at its version, so that the backend's run write
// indexes it, then records the write in the pipeline's log; it returns the
// outcome: "indexed", or "changed under it" when the swap lost (the write that
// changed the run indexed it).
func (r *reindex) rewrite(ctx context.Context, run types.RunState) (string, error) {
	rec := r.in.record("runs reindex",
		map[string]any{"status": run.Status, "version": run.Version, "updatedAt": run.UpdatedAt},
		map[string]any{"status": run.Status, "version": run.Version + 1})
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
		in.say("to index: %d; nothing was written (add --reason TEXT --yes to index them)", s.ToIndex)
	case !in.yes:
		in.say("nothing to index")
	default:
		in.say("indexed: %d, changed under it: %d (the write that changed each one indexed it)", s.Indexed, s.ChangedUnderIt)
	}
	return nil
}
