package types

import (
	"fmt"
	"time"
)

// RunStatus is the state of a run.
type RunStatus string

// Run statuses.
const (
	RunPending             RunStatus = "PENDING"
	RunTriggering          RunStatus = "TRIGGERING"
	RunRunning             RunStatus = "RUNNING"
	RunCompleted           RunStatus = "COMPLETED"
	RunCompletedMonitoring RunStatus = "COMPLETED_MONITORING"
	RunFailed              RunStatus = "FAILED"
	RunCancelled           RunStatus = "CANCELLED"
)

// Valid reports whether s is a known status.
func (s RunStatus) Valid() bool {
	switch s {
	case RunPending, RunTriggering, RunRunning, RunCompleted, RunCompletedMonitoring, RunFailed, RunCancelled:
		return true
	}
	return false
}

// Terminal reports whether s ends a run.
func (s RunStatus) Terminal() bool {
	return s == RunCompleted || s == RunFailed || s == RunCancelled
}

func validateRunStatus(s RunStatus) error {
	if !s.Valid() {
		return fmt.Errorf("%w: run status %q", ErrInvalid, s)
	}
	return nil
}

// MaxRunVersion is the largest run Version: 2^53-1, the largest integer that every
// backend stores exactly (JSON numbers and Redis Lua numbers are float64).
// A RunState with a larger Version is invalid, and a compare-and-swap may start from
// at most MaxRunVersion-1.
const MaxRunVersion = 1<<53 - 1

// RunState is one run of a pipeline. Version is its compare-and-swap version, in
// [0, MaxRunVersion].
type RunState struct {
	RunID      string         `json:"runId"`
	PipelineID string         `json:"pipelineId"`
	Status     RunStatus      `json:"status"`
	Version    int            `json:"version"`
	CreatedAt  time.Time      `json:"createdAt"`
	UpdatedAt  time.Time      `json:"updatedAt"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

// Validate checks the IDs, the status and the version.
func (r RunState) Validate() error {
	if err := ValidateID("run ID", r.RunID); err != nil {
		return err
	}
	if err := ValidateID("pipeline ID", r.PipelineID); err != nil {
		return err
	}
	if r.Version < 0 || int64(r.Version) > MaxRunVersion {
		return fmt.Errorf("%w: run version %d is outside [0, %d]", ErrInvalid, r.Version, int64(MaxRunVersion))
	}
	return validateRunStatus(r.Status)
}

// RunLogEntry is the record of a pipeline's run for one date and schedule.
type RunLogEntry struct {
	PipelineID      string        `json:"pipelineId"`
	Date            string        `json:"date"`
	ScheduleID      string        `json:"scheduleId"`
	Status          RunStatus     `json:"status"`
	AttemptNumber   int           `json:"attemptNumber"`
	RunID           string        `json:"runId,omitempty"`
	FailureMessage  string        `json:"failureMessage,omitempty"`
	FailureCategory string        `json:"failureCategory,omitempty"`
	AlertSent       bool          `json:"alertSent,omitempty"`
	RetryHistory    []RetryRecord `json:"retryHistory,omitempty"`
	StartedAt       time.Time     `json:"startedAt"`
	CompletedAt     *time.Time    `json:"completedAt,omitempty"`
	UpdatedAt       time.Time     `json:"updatedAt"`
}

// RetryRecord is one earlier attempt in a run log.
type RetryRecord struct {
	Attempt        int       `json:"attempt"`
	RunID          string    `json:"runId,omitempty"`
	Status         RunStatus `json:"status"`
	FailureMessage string    `json:"failureMessage,omitempty"`
	At             time.Time `json:"at"`
}

// Validate checks the key fields, the status and the attempt number. An empty
// ScheduleID is valid and means DefaultScheduleID.
func (e RunLogEntry) Validate() error {
	if err := ValidateID("pipeline ID", e.PipelineID); err != nil {
		return err
	}
	if err := ValidateID("date", e.Date); err != nil {
		return err
	}
	if err := validateSchedule(e.ScheduleID); err != nil {
		return err
	}
	if err := validateOptionalID("run ID", e.RunID); err != nil {
		return err
	}
	if e.AttemptNumber < 0 {
		return fmt.Errorf("%w: attempt number %d is negative", ErrInvalid, e.AttemptNumber)
	}
	return validateRunStatus(e.Status)
}
