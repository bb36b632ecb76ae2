package provider

import (
	"context"
	"strings"
	"time"

	"github.com/pipestate/pipestate/types"
)

// ActiveRunLister is an optional interface for finding unfinished runs without
// reading every pipeline's run list: the backend keeps an index of the runs whose
// status is not terminal (types.RunStatus.Terminal) as part of every run write
// (see "active runs" in the package doc).
type ActiveRunLister interface {
	// ListActiveRuns returns at most limit unfinished, live runs that match
	// filter, in ascending RunID order, strictly after cursor (a RunID; "" is
	// the start), and the cursor of the next page: "" when the index holds no
	// run after this page. A full page may be followed by an empty one. Each
	// run is read from its truth record, as GetRunState returns it. A cursor
	// that is not a valid run ID, limit < 1 or an invalid filter is an error
	// wrapping ErrInvalidArgument.
	ListActiveRuns(ctx context.Context, filter ActiveRunFilter, cursor string, limit int) (runs []types.RunState, next string, err error)
}

// ActiveRunFilter selects unfinished runs; its zero value selects every one.
type ActiveRunFilter struct {
	// Statuses, when not empty, keeps the runs with one of these statuses;
	// each must be valid and not terminal.
	Statuses []types.RunStatus
	// NotUpdatedSince, when not zero, keeps the runs whose UpdatedAt is before
	// it (strictly): stuck runs.
	NotUpdatedSince time.Time
	// PipelinePrefix keeps the runs whose PipelineID starts with it.
	PipelinePrefix string
}

// Check returns an error wrapping ErrInvalidArgument when f asks for a status
// that is invalid or terminal (no terminal run is ever in the index).
func (f ActiveRunFilter) Check() error {
	for _, s := range f.Statuses {
		if !s.Valid() {
			return Invalidf("active run filter: invalid run status %q", s)
		}
		if s.Terminal() {
			return Invalidf("active run filter: run status %s is terminal: finished runs are not indexed", s)
		}
	}
	return nil
}

// Match reports whether run is unfinished and passes f: the one rule of the
// index's filter, which every backend applies to the truth it read.
func (f ActiveRunFilter) Match(run types.RunState) bool {
	if run.Status.Terminal() || !run.Status.Valid() {
		return false
	}
	if len(f.Statuses) > 0 {
		ok := false
		for _, s := range f.Statuses {
			ok = ok || s == run.Status
		}
		if !ok {
			return false
		}
	}
	if !f.NotUpdatedSince.IsZero() && !run.UpdatedAt.Before(f.NotUpdatedSince) {
		return false
	}
	return strings.HasPrefix(run.PipelineID, f.PipelinePrefix)
}

// CheckActiveRuns checks ListActiveRuns's arguments in the contract's order: the
// filter, the cursor ("" or a valid run ID), then limit.
func CheckActiveRuns(filter ActiveRunFilter, cursor string, limit int) error {
	if err := filter.Check(); err != nil {
		return err
	}
	if cursor != "" {
		if err := CheckID("active runs cursor", cursor); err != nil {
			return err
		}
	}
	return CheckLimit(limit)
}

// ActivePage is the ListActiveRuns page of a backend that read its index in
// ascending RunID order from after the cursor and kept the runs that Match the
// filter, until it had more than limit or the index ran out: at most limit of
// them, and the next cursor (the last RunID when the page is full).
func ActivePage(matched []types.RunState, limit int) ([]types.RunState, string) {
	if len(matched) < limit {
		return matched, ""
	}
	matched = matched[:limit]
	return matched, matched[limit-1].RunID
}

// ActiveRunReindexer is an optional interface of a backend whose active-runs
// index is kept apart from its run records (see "active runs" in the package
// doc): it repairs one run's entry from the run's truth record, for a backfill
// (runs a version before the index wrote) or after an entry was lost (deleted
// by hand, lost in a failover). The CLI's runs reindex uses it.
type ActiveRunReindexer interface {
	// ReindexRun makes the index agree with run runID's truth record: an entry
	// while the run is unfinished and live, none otherwise. It writes nothing
	// of the run itself: its Version, UpdatedAt and body stay as they are, so a
	// stuck run still looks stuck to ActiveRunFilter.NotUpdatedSince. The repair
	// is made only if the run is unchanged since the call read it (a write in
	// between is read again and repaired from); it is safe to repeat and to run
	// beside any write. changed reports whether the index had to change: an
	// entry added or restored, one removed, or the backend's record that the
	// entry exists set. A missing run is not an error (its entry, if any, is
	// removed). runID that is not a valid ID is an error wrapping
	// ErrInvalidArgument; a read-only provider refuses with ErrReadOnly.
	ReindexRun(ctx context.Context, runID string) (changed bool, err error)
}
