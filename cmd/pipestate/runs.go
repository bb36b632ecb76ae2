package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// scanLimit is how many of the newest items a filtered list (runs --status,
// replays PIPELINE) reads to find its matches.
const scanLimit = 1000

// runStatuses is every run status, for help and errors.
var runStatuses = []types.RunStatus{types.RunPending, types.RunTriggering, types.RunRunning, types.RunCompleted,
	types.RunCompletedMonitoring, types.RunFailed, types.RunCancelled}

var runsCmd = &spec{
	name:    "runs",
	args:    "PIPELINE",
	summary: "a pipeline's newest runs (--status, --limit)",
	about: "Lists a pipeline's runs, newest (by creation) first. --status keeps the runs with that\n" +
		"status among the newest " + strconv.Itoa(scanLimit) + ". --json prints one types.RunState per line.",
	example: "pipestate runs orders --status RUNNING --limit 5 --redis localhost:6379",
	define: func(in *inv, fs *flag.FlagSet) action {
		status := fs.String("status", "", "only runs with this status: "+joinStatuses())
		limit := fs.Int("limit", 20, "the most runs to print")
		return func(ctx context.Context, pos []string) error {
			a, err := args(pos, "PIPELINE")
			if err != nil {
				return err
			}
			if err := checkLimit(*limit); err != nil {
				return err
			}
			want := types.RunStatus(strings.ToUpper(*status))
			if *status != "" && !want.Valid() {
				return usagef("--status %q: want one of %s", *status, joinStatuses())
			}
			p, err := in.provider(ctx)
			if err != nil {
				return err
			}
			read := *limit
			if want != "" {
				read = max(read, scanLimit)
			}
			all, err := p.ListRuns(ctx, a[0], read)
			if err != nil {
				return err
			}
			if len(all) == 0 {
				if err := requirePipeline(ctx, p, a[0], "runs"); err != nil {
					return err
				}
			}
			var runs []types.RunState
			for _, r := range all {
				if (want == "" || r.Status == want) && len(runs) < *limit {
					runs = append(runs, r)
				}
			}
			switch {
			case in.json:
				return emitAll(in, runs)
			case len(runs) == 0 && want != "":
				in.say("no %s runs among the newest %d of pipeline %s", want, len(all), a[0])
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
	args:    "RUN --version N",
	summary: "mark a run FAILED (compare-and-swap on version N)",
	about: "Marks a stuck run FAILED with a compare-and-swap on its current version, which you pass\n" +
		"explicitly (see 'pipestate run RUN'): if anything changed the run since you looked, nothing\n" +
		"is written and the command fails. Only the status changes (the version goes up by one and\n" +
		"the update time is now). A run already FAILED is left alone, whatever its version, and\n" +
		"the command says so and exits 0. --json prints the new types.RunState (or the run as it\n" +
		"is, when already FAILED).",
	example: "pipestate run fail r-0042 --version 4 --yes --redis localhost:6379   # 4: the version 'pipestate run r-0042' shows",
	write:   true,
	define: func(in *inv, fs *flag.FlagSet) action {
		version := fs.Int("version", 0, "the run's current version, as 'pipestate run RUN' shows it (required)")
		return func(ctx context.Context, pos []string) error {
			a, err := args(pos, "RUN")
			if err != nil {
				return err
			}
			switch {
			case !isSet(fs, "version"):
				return usagef("missing --version N: the run's current version, as 'pipestate run %s' shows it", a[0])
			case !in.yes:
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
			next := *r
			next.Status = types.RunFailed
			ok, err := p.CompareAndSwapRunState(ctx, r.RunID, *version, next)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("run %s changed between the read and the write (compare-and-swap on version %d lost): nothing was written; check 'pipestate run %s'",
					r.RunID, *version, r.RunID)
			}
			now, err := getRun(ctx, p, r.RunID)
			switch {
			case err != nil:
				return err
			case in.json:
				return in.emit(now)
			}
			in.say("run %s of pipeline %s: status %s -> %s, version %d -> %d", r.RunID, r.PipelineID, r.Status, now.Status, r.Version, now.Version)
			return nil
		}
	},
}
