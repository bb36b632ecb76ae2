package types

import (
	"fmt"
	"time"
)

// TraitStatus is the outcome of a trait evaluation.
type TraitStatus string

// Trait statuses.
const (
	TraitPass  TraitStatus = "PASS"
	TraitFail  TraitStatus = "FAIL"
	TraitStale TraitStatus = "STALE"
)

// Valid reports whether s is a known status.
func (s TraitStatus) Valid() bool { return s == TraitPass || s == TraitFail || s == TraitStale }

// TraitEvaluation is one evaluation of one trait of a pipeline.
type TraitEvaluation struct {
	PipelineID      string         `json:"pipelineId,omitempty"`
	TraitType       string         `json:"traitType"`
	Status          TraitStatus    `json:"status"`
	Value           map[string]any `json:"value,omitempty"`
	Reason          string         `json:"reason,omitempty"`
	FailureCategory string         `json:"failureCategory,omitempty"`
	EvaluatedAt     time.Time      `json:"evaluatedAt"`
	// ExpiresAt is set by TraitStore.PutTrait from its ttl (nil: no expiry).
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
}

// Validate checks the trait type, the status and the pipeline ID when set.
func (t TraitEvaluation) Validate() error {
	if err := validateOptionalID("pipeline ID", t.PipelineID); err != nil {
		return err
	}
	if err := ValidateID("trait type", t.TraitType); err != nil {
		return err
	}
	if !t.Status.Valid() {
		return fmt.Errorf("%w: trait status %q (want PASS, FAIL or STALE)", ErrInvalid, t.Status)
	}
	return nil
}

// ReadinessStatus says whether a pipeline may be triggered.
type ReadinessStatus string

// Readiness statuses.
const (
	Ready    ReadinessStatus = "READY"
	NotReady ReadinessStatus = "NOT_READY"
)

// ReadinessResult is the cached verdict of a readiness evaluation.
type ReadinessResult struct {
	PipelineID  string            `json:"pipelineId"`
	Status      ReadinessStatus   `json:"status"`
	Traits      []TraitEvaluation `json:"traits,omitempty"`
	Blocking    []string          `json:"blocking,omitempty"` // trait types that block
	EvaluatedAt time.Time         `json:"evaluatedAt"`
}

// Validate checks the pipeline ID and the status.
func (r ReadinessResult) Validate() error {
	if err := ValidateID("pipeline ID", r.PipelineID); err != nil {
		return err
	}
	if r.Status != Ready && r.Status != NotReady {
		return fmt.Errorf("%w: readiness status %q (want READY or NOT_READY)", ErrInvalid, r.Status)
	}
	return nil
}
