package types

import (
	"fmt"
	"time"
)

// MaxEventKindLen is the longest Event.Kind, in bytes.
const MaxEventKindLen = 128

// Event is one entry of a pipeline's append-only event log.
type Event struct {
	Kind       string         `json:"kind"` // e.g. "TRAIT_EVALUATED", "RUN_STATE_CHANGED"
	PipelineID string         `json:"pipelineId"`
	RunID      string         `json:"runId,omitempty"`
	TraitType  string         `json:"traitType,omitempty"`
	Status     string         `json:"status,omitempty"`
	Message    string         `json:"message,omitempty"`
	Details    map[string]any `json:"details,omitempty"`
	Timestamp  time.Time      `json:"timestamp"`
}

// EventRecord is an event with its position in the log. StreamID is an opaque cursor
// for EventStore.ReadEventsSince; it is only meaningful to the backend that made it.
type EventRecord struct {
	StreamID string `json:"streamId"`
	Event    Event  `json:"event"`
}

// Validate checks the kind and the IDs.
func (e Event) Validate() error {
	if e.Kind == "" || len(e.Kind) > MaxEventKindLen {
		return fmt.Errorf("%w: event kind must be 1 to %d bytes", ErrInvalid, MaxEventKindLen)
	}
	if err := ValidateID("pipeline ID", e.PipelineID); err != nil {
		return err
	}
	if err := validateOptionalID("run ID", e.RunID); err != nil {
		return err
	}
	return validateOptionalID("trait type", e.TraitType)
}
