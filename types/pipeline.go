package types

import (
	"fmt"
	"time"
)

// PipelineConfig is a pipeline's registered configuration.
type PipelineConfig struct {
	ID         string                 `json:"id"`
	Archetype  string                 `json:"archetype,omitempty"`
	Tier       int                    `json:"tier,omitempty"`
	Traits     map[string]TraitConfig `json:"traits,omitempty"` // keyed by trait type
	Trigger    *TriggerConfig         `json:"trigger,omitempty"`
	Retry      *RetryPolicy           `json:"retry,omitempty"`
	SLA        *SLAConfig             `json:"sla,omitempty"`
	Schedules  []ScheduleConfig       `json:"schedules,omitempty"`
	Exclusions *ExclusionConfig       `json:"exclusions,omitempty"`
	Downstream []string               `json:"downstream,omitempty"` // pipeline IDs
	Metadata   map[string]any         `json:"metadata,omitempty"`
}

// TraitConfig says how one trait of a pipeline is evaluated.
type TraitConfig struct {
	Evaluator string         `json:"evaluator,omitempty"`
	Config    map[string]any `json:"config,omitempty"`
	// TTL is how long an evaluation stays valid; 0 means no expiry.
	TTL time.Duration `json:"ttl,omitempty"`
	// Timeout bounds one evaluation; 0 means the caller's default.
	Timeout time.Duration `json:"timeout,omitempty"`
	// Required traits block readiness when they do not PASS.
	Required bool `json:"required,omitempty"`
}

// TriggerConfig says what starts the pipeline's job.
type TriggerConfig struct {
	Type   string         `json:"type"`
	Config map[string]any `json:"config,omitempty"`
}

// RetryPolicy bounds retries of a failed run.
type RetryPolicy struct {
	MaxAttempts int           `json:"maxAttempts"`
	Backoff     time.Duration `json:"backoff,omitempty"`
	MaxBackoff  time.Duration `json:"maxBackoff,omitempty"`
}

// SLAConfig holds deadlines as "15:04" wall-clock times in Timezone (UTC when empty).
type SLAConfig struct {
	EvaluationDeadline string `json:"evaluationDeadline,omitempty"`
	CompletionDeadline string `json:"completionDeadline,omitempty"`
	Timezone           string `json:"timezone,omitempty"`
}

// ScheduleConfig is one schedule of a pipeline.
type ScheduleConfig struct {
	ID       string `json:"id"`
	Cron     string `json:"cron,omitempty"`
	Time     string `json:"time,omitempty"` // "15:04"
	Timezone string `json:"timezone,omitempty"`
}

// ExclusionConfig names the days a pipeline does not run.
type ExclusionConfig struct {
	Weekends bool     `json:"weekends,omitempty"`
	Dates    []string `json:"dates,omitempty"` // "2006-01-02"
}

// Excludes reports whether day (in its own location) is excluded.
func (e *ExclusionConfig) Excludes(day time.Time) bool {
	if e == nil {
		return false
	}
	if e.Weekends && (day.Weekday() == time.Saturday || day.Weekday() == time.Sunday) {
		return true
	}
	d := day.Format(time.DateOnly)
	for _, x := range e.Dates {
		if x == d {
			return true
		}
	}
	return false
}

// Validate checks the config's identifiers and settings.
func (c PipelineConfig) Validate() error {
	if err := ValidateID("pipeline ID", c.ID); err != nil {
		return err
	}
	if c.Tier < 0 {
		return fmt.Errorf("%w: pipeline %s: tier %d is negative", ErrInvalid, c.ID, c.Tier)
	}
	for tt, tc := range c.Traits {
		if err := ValidateID("trait type", tt); err != nil {
			return err
		}
		if tc.TTL < 0 || tc.Timeout < 0 {
			return fmt.Errorf("%w: trait %s: negative ttl or timeout", ErrInvalid, tt)
		}
	}
	if c.Trigger != nil && c.Trigger.Type == "" {
		return fmt.Errorf("%w: pipeline %s: trigger type is empty", ErrInvalid, c.ID)
	}
	if r := c.Retry; r != nil && (r.MaxAttempts < 0 || r.Backoff < 0 || r.MaxBackoff < 0) {
		return fmt.Errorf("%w: pipeline %s: negative retry setting", ErrInvalid, c.ID)
	}
	if s := c.SLA; s != nil {
		if err := validateClock("evaluation deadline", s.EvaluationDeadline); err != nil {
			return err
		}
		if err := validateClock("completion deadline", s.CompletionDeadline); err != nil {
			return err
		}
		if err := validateZone(s.Timezone); err != nil {
			return err
		}
	}
	seen := map[string]bool{}
	for _, s := range c.Schedules {
		if err := ValidateID("schedule ID", s.ID); err != nil {
			return err
		}
		if seen[s.ID] {
			return fmt.Errorf("%w: pipeline %s: schedule %s listed twice", ErrInvalid, c.ID, s.ID)
		}
		seen[s.ID] = true
		if err := validateClock("schedule time", s.Time); err != nil {
			return err
		}
		if err := validateZone(s.Timezone); err != nil {
			return err
		}
	}
	if e := c.Exclusions; e != nil {
		for _, d := range e.Dates {
			if _, err := time.Parse(time.DateOnly, d); err != nil {
				return fmt.Errorf("%w: exclusion date %q is not YYYY-MM-DD", ErrInvalid, d)
			}
		}
	}
	for _, d := range c.Downstream {
		if err := ValidateID("downstream pipeline ID", d); err != nil {
			return err
		}
		if d == c.ID {
			return fmt.Errorf("%w: pipeline %s lists itself downstream", ErrInvalid, c.ID)
		}
	}
	return nil
}

func validateClock(what, s string) error {
	if s == "" {
		return nil
	}
	if _, err := time.Parse("15:04", s); err != nil {
		return fmt.Errorf("%w: %s %q is not HH:MM", ErrInvalid, what, s)
	}
	return nil
}

func validateZone(tz string) error {
	if tz == "" {
		return nil
	}
	if _, err := time.LoadLocation(tz); err != nil {
		return fmt.Errorf("%w: timezone %q: %v", ErrInvalid, tz, err)
	}
	return nil
}
