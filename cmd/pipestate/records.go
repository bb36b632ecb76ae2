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

var runlogsCmd = &spec{
	name:    "runlogs",
	args:    "PIPELINE",
	summary: "a pipeline's run log: the newest dates, or one --date",
	about: "Lists a pipeline's run log entries, newest date first; with --date, shows the entry of\n" +
		"that date and schedule (--schedule, default " + types.DefaultScheduleID + ") with its retry history.\n" +
		"--json prints one types.RunLogEntry per line.",
	example: "pipestate runlogs orders --limit 7 --redis localhost:6379\n" +
		"pipestate runlogs orders --date 2026-11-20 --schedule hourly --redis localhost:6379",
	define: func(in *inv, fs *flag.FlagSet) action {
		date := fs.String("date", "", "show the entry of this date")
		sched := fs.String("schedule", "", "with --date: the schedule (default "+types.DefaultScheduleID+")")
		limit := fs.Int("limit", 10, "the most entries to list")
		return func(ctx context.Context, pos []string) error {
			a, err := args(pos, "PIPELINE")
			if err != nil {
				return err
			}
			if err := checkLimit(*limit); err != nil {
				return err
			}
			if *sched != "" && *date == "" {
				return usagef("--schedule needs --date: a run log entry is named by its date and schedule")
			}
			p, err := in.provider(ctx)
			if err != nil {
				return err
			}
			if *date != "" {
				return runlog(ctx, in, p, a[0], *date, *sched)
			}
			logs, err := p.ListRunLogs(ctx, a[0], *limit)
			if err != nil {
				return err
			}
			if len(logs) == 0 {
				if err := requirePipeline(ctx, p, a[0], "run log"); err != nil {
					return err
				}
			}
			switch {
			case in.json:
				return emitAll(in, logs)
			case len(logs) == 0:
				in.say("no run log entries of pipeline %s", a[0])
				return nil
			}
			t := in.table("DATE", "SCHEDULE", "STATUS", "ATTEMPT", "RUN", "STARTED", "COMPLETED", "FAILURE")
			for _, l := range logs {
				t.row(l.Date, types.ScheduleOrDefault(l.ScheduleID), string(l.Status), strconv.Itoa(l.AttemptNumber), l.RunID,
					in.ago(l.StartedAt), in.agoPtr(l.CompletedAt), failure(l.FailureCategory, l.FailureMessage))
			}
			return t.flush()
		}
	},
}

// runlog prints one run log entry and its retry history.
func runlog(ctx context.Context, in *inv, p provider.Provider, id, date, sched string) error {
	l, err := p.GetRunLog(ctx, id, date, sched)
	switch {
	case err != nil:
		return err
	case l == nil:
		return notFoundf("no run log entry of pipeline %q for date %s, schedule %s", id, date, types.ScheduleOrDefault(sched))
	case in.json:
		return in.emit(l)
	}
	alert := "no"
	if l.AlertSent {
		alert = "yes"
	}
	if err := in.fields("pipeline", l.PipelineID, "date", l.Date, "schedule", types.ScheduleOrDefault(l.ScheduleID),
		"status", string(l.Status), "attempt", strconv.Itoa(l.AttemptNumber), "run", l.RunID,
		"started", in.stamp(l.StartedAt), "completed", in.stampPtr(l.CompletedAt), "updated", in.stamp(l.UpdatedAt),
		"failure", failure(l.FailureCategory, l.FailureMessage), "alert sent", alert); err != nil {
		return err
	}
	if len(l.RetryHistory) == 0 {
		return nil
	}
	in.say("")
	t := in.table("ATTEMPT", "RUN", "STATUS", "AT", "FAILURE")
	for _, r := range l.RetryHistory {
		t.row(strconv.Itoa(r.Attempt), r.RunID, string(r.Status), in.ago(r.At), r.FailureMessage)
	}
	return t.flush()
}

// failure is a failure's category and message for display.
func failure(category, message string) string {
	if category == "" {
		return message
	}
	return strings.TrimSpace(category + ": " + message)
}

var rerunsCmd = &spec{
	name:    "reruns",
	args:    "PIPELINE|--all",
	summary: "rerun requests of a pipeline, or of all",
	about: "Lists rerun requests, newest first: a pipeline's, or with --all every pipeline's (on\n" +
		"DynamoDB read from an eventually consistent index). --json prints one types.RerunRecord\n" +
		"per line.",
	example: "pipestate reruns orders --redis localhost:6379\npipestate reruns --all --limit 50 --redis localhost:6379",
	define: func(in *inv, fs *flag.FlagSet) action {
		all := fs.Bool("all", false, "the reruns of every pipeline")
		limit := fs.Int("limit", 20, "the most reruns to print")
		return func(ctx context.Context, pos []string) error {
			a, err := optionalArgs(pos, "PIPELINE")
			if err != nil {
				return err
			}
			id := a[0]
			switch {
			case id == "" && !*all:
				return usagef("missing PIPELINE: give a pipeline ID, or --all for every pipeline")
			case id != "" && *all:
				return usagef("give a PIPELINE or --all, not both")
			}
			if err := checkLimit(*limit); err != nil {
				return err
			}
			p, err := in.provider(ctx)
			if err != nil {
				return err
			}
			var reruns []types.RerunRecord
			if *all {
				reruns, err = p.ListAllReruns(ctx, *limit)
			} else {
				reruns, err = p.ListReruns(ctx, id, *limit)
			}
			if err != nil {
				return err
			}
			if len(reruns) == 0 && id != "" {
				if err := requirePipeline(ctx, p, id, "reruns"); err != nil {
					return err
				}
			}
			switch {
			case in.json:
				return emitAll(in, reruns)
			case len(reruns) == 0 && id != "":
				in.say("no reruns of pipeline %s", id)
				return nil
			case len(reruns) == 0:
				in.say("no reruns")
				return nil
			}
			t := in.table("RERUN", "PIPELINE", "DATE", "STATUS", "REQUESTED", "COMPLETED", "RUN", "REASON")
			for _, r := range reruns {
				t.row(r.RerunID, r.PipelineID, r.OriginalDate, string(r.Status), in.ago(r.RequestedAt), in.agoPtr(r.CompletedAt),
					r.RerunRunID, r.Reason)
			}
			return t.flush()
		}
	},
}

var replaysCmd = &spec{
	name:    "replays",
	args:    "[PIPELINE]",
	summary: "replay requests, of every pipeline or one",
	about: "Lists replay requests, newest first: of every pipeline, or of PIPELINE among the newest\n" +
		strconv.Itoa(scanLimit) + ", or with --date the one request of PIPELINE's date and schedule. On DynamoDB\n" +
		"the list is read from an eventually consistent index. --json prints one types.ReplayRequest\n" +
		"per line.",
	example: "pipestate replays --redis localhost:6379\npipestate replays orders --date 2026-11-20 --redis localhost:6379",
	define: func(in *inv, fs *flag.FlagSet) action {
		date := fs.String("date", "", "with PIPELINE: the request of this date")
		sched := fs.String("schedule", "", "with --date: the schedule (default "+types.DefaultScheduleID+")")
		limit := fs.Int("limit", 20, "the most requests to print")
		return func(ctx context.Context, pos []string) error {
			a, err := optionalArgs(pos, "PIPELINE")
			if err != nil {
				return err
			}
			id := a[0]
			switch {
			case *date != "" && id == "":
				return usagef("--date needs a PIPELINE: a replay is named by its pipeline, date and schedule")
			case *sched != "" && *date == "":
				return usagef("--schedule needs --date")
			}
			if err := checkLimit(*limit); err != nil {
				return err
			}
			p, err := in.provider(ctx)
			if err != nil {
				return err
			}
			reqs, err := replays(ctx, p, id, *date, *sched, *limit)
			if err != nil {
				return err
			}
			switch {
			case in.json:
				return emitAll(in, reqs)
			case len(reqs) == 0 && id != "":
				in.say("no replays of pipeline %s among the newest %d", id, scanLimit)
				return nil
			case len(reqs) == 0:
				in.say("no replays")
				return nil
			}
			t := in.table("PIPELINE", "DATE", "SCHEDULE", "STATUS", "CREATED", "BY", "REASON")
			for _, r := range reqs {
				t.row(r.PipelineID, r.Date, types.ScheduleOrDefault(r.ScheduleID), string(r.Status), in.ago(r.CreatedAt),
					r.RequestedBy, r.Reason)
			}
			return t.flush()
		}
	},
}

// replays reads the replay requests replaysCmd prints: the one of (id, date,
// sched) when date is set (not found otherwise), or the newest limit of pipeline
// id ("" for every pipeline).
func replays(ctx context.Context, p provider.Provider, id, date, sched string, limit int) ([]types.ReplayRequest, error) {
	if date != "" {
		r, err := p.GetReplay(ctx, id, date, sched)
		switch {
		case err != nil:
			return nil, err
		case r == nil:
			return nil, notFoundf("no replay of pipeline %q for date %s, schedule %s", id, date, types.ScheduleOrDefault(sched))
		}
		return []types.ReplayRequest{*r}, nil
	}
	if id == "" {
		return p.ListReplays(ctx, limit)
	}
	all, err := p.ListReplays(ctx, scanLimit)
	if err != nil {
		return nil, err
	}
	var out []types.ReplayRequest
	for _, r := range all {
		if r.PipelineID == id && len(out) < limit {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return nil, requirePipeline(ctx, p, id, "replays")
	}
	return out, nil
}

var lateCmd = &spec{
	name:    "late",
	args:    "PIPELINE --date DATE",
	summary: "late arrivals of a pipeline's date",
	about: "Lists the late arrivals recorded for a pipeline's date and schedule (--schedule, default\n" +
		types.DefaultScheduleID + "), oldest first. --json prints one types.LateArrival per line.",
	example: "pipestate late orders --date 2026-11-20 --redis localhost:6379",
	define: func(in *inv, fs *flag.FlagSet) action {
		date := fs.String("date", "", "the date (required)")
		sched := fs.String("schedule", "", "the schedule (default "+types.DefaultScheduleID+")")
		return func(ctx context.Context, pos []string) error {
			a, err := args(pos, "PIPELINE")
			if err != nil {
				return err
			}
			if *date == "" {
				return usagef("missing --date: late arrivals are kept per date (and schedule)")
			}
			p, err := in.provider(ctx)
			if err != nil {
				return err
			}
			las, err := p.ListLateArrivals(ctx, a[0], *date, *sched)
			if err != nil {
				return err
			}
			if len(las) == 0 {
				if err := requirePipeline(ctx, p, a[0], "late arrivals"); err != nil {
					return err
				}
			}
			switch {
			case in.json:
				return emitAll(in, las)
			case len(las) == 0:
				in.say("no late arrivals of pipeline %s for %s, schedule %s", a[0], *date, types.ScheduleOrDefault(*sched))
				return nil
			}
			t := in.table("DETECTED", "RECORDS", "TRAIT")
			for _, l := range las {
				t.row(in.ago(l.DetectedAt), fmt.Sprintf("%+d", l.RecordDelta), l.TraitType)
			}
			return t.flush()
		}
	},
}

var markersCmd = &spec{
	name:    "markers",
	args:    "PIPELINE",
	summary: "cascade markers written for a pipeline",
	about: "Lists the cascade markers written for a (downstream) pipeline, newest first: which\n" +
		"upstream pipeline finished which date and schedule. Needs a backend with\n" +
		"provider.CascadeReader (every built-in one). --json prints one types.CascadeMarker per line.",
	example: "pipestate markers billing --redis localhost:6379",
	define: func(in *inv, fs *flag.FlagSet) action {
		limit := fs.Int("limit", 20, "the most markers to print")
		return func(ctx context.Context, pos []string) error {
			a, err := args(pos, "PIPELINE")
			if err != nil {
				return err
			}
			if err := checkLimit(*limit); err != nil {
				return err
			}
			p, err := in.provider(ctx)
			if err != nil {
				return err
			}
			cr, ok := p.(provider.CascadeReader)
			if !ok {
				return fmt.Errorf("this backend cannot list cascade markers: it does not implement provider.CascadeReader")
			}
			ms, err := cr.ListCascadeMarkers(ctx, a[0], *limit)
			if err != nil {
				return err
			}
			if len(ms) == 0 {
				if err := requirePipeline(ctx, p, a[0], "cascade markers"); err != nil {
					return err
				}
			}
			switch {
			case in.json:
				return emitAll(in, ms)
			case len(ms) == 0:
				in.say("no cascade markers of pipeline %s", a[0])
				return nil
			}
			t := in.table("DATE", "SCHEDULE", "SOURCE", "WRITTEN")
			for _, m := range ms {
				t.row(m.Date, types.ScheduleOrDefault(m.ScheduleID), m.Source, in.ago(m.WrittenAt))
			}
			return t.flush()
		}
	},
}
