package providertest

import (
	"fmt"
	"time"

	"github.com/pipestate/pipestate/types"
)

// The builders below return valid entities with every field set, so a round trip
// checks every field. Numbers in maps are ints on purpose: they come back float64.

func sampleMetadata() map[string]any {
	return map[string]any{
		"owner":   "team-data",
		"count":   42,
		"ratio":   0.25,
		"enabled": true,
		"nothing": nil,
		"tags":    []any{"a", 1, map[string]any{"deep": "yes"}},
		"nested":  map[string]any{"k": "v", "n": int64(7)},
		"unicode": "héllo ✓ #:{}|",
	}
}

func newPipeline(id string) types.PipelineConfig {
	return types.PipelineConfig{
		ID:        id,
		Archetype: "batch",
		Tier:      2,
		Traits: map[string]types.TraitConfig{
			"freshness": {Evaluator: "sql", Config: map[string]any{"query": "select 1", "threshold": 3},
				TTL: time.Hour, Timeout: time.Minute, Required: true},
			"volume": {Evaluator: "count"},
		},
		Trigger:    &types.TriggerConfig{Type: "http", Config: map[string]any{"url": "https://example.com", "retries": 2}},
		Retry:      &types.RetryPolicy{MaxAttempts: 3, Backoff: time.Second, MaxBackoff: time.Minute},
		SLA:        &types.SLAConfig{EvaluationDeadline: "06:00", CompletionDeadline: "08:30", Timezone: "UTC"},
		Schedules:  []types.ScheduleConfig{{ID: "daily", Time: "05:00", Timezone: "UTC"}, {ID: "hourly", Cron: "0 * * * *"}},
		Exclusions: &types.ExclusionConfig{Weekends: true, Dates: []string{"2026-12-25"}},
		Downstream: []string{"downstream-a", "downstream-b"},
		Metadata:   sampleMetadata(),
	}
}

func newTrait(traitType string) types.TraitEvaluation {
	return types.TraitEvaluation{
		TraitType:       traitType,
		Status:          types.TraitPass,
		Value:           map[string]any{"rows": 1200, "lag": 1.5, "parts": []any{"a", "b"}},
		Reason:          "fresh enough",
		FailureCategory: "none",
		EvaluatedAt:     t0,
	}
}

func newRun(pipelineID, runID string, createdAt time.Time) types.RunState {
	return types.RunState{
		RunID:      runID,
		PipelineID: pipelineID,
		Status:     types.RunPending,
		Version:    0,
		CreatedAt:  createdAt,
		UpdatedAt:  createdAt.Add(time.Second),
		Metadata:   sampleMetadata(),
	}
}

// newEvent returns the i-th event of a test; Message identifies it.
func newEvent(pipelineID string, i int) types.Event {
	return types.Event{
		Kind:       "TEST_EVENT",
		PipelineID: pipelineID,
		RunID:      "run-1",
		TraitType:  "freshness",
		Status:     "PASS",
		Message:    eventName(i),
		Details:    map[string]any{"i": i, "list": []any{1, "x"}},
		Timestamp:  t0.Add(time.Duration(i) * time.Second),
	}
}

func eventName(i int) string { return fmt.Sprintf("e%05d", i) }

func newRunLog(pipelineID, date, scheduleID string) types.RunLogEntry {
	done := t0.Add(time.Hour)
	return types.RunLogEntry{
		PipelineID:      pipelineID,
		Date:            date,
		ScheduleID:      scheduleID,
		Status:          types.RunCompleted,
		AttemptNumber:   2,
		RunID:           "run-2",
		FailureMessage:  "first attempt timed out",
		FailureCategory: "timeout",
		AlertSent:       true,
		RetryHistory: []types.RetryRecord{
			{Attempt: 1, RunID: "run-1", Status: types.RunFailed, FailureMessage: "timeout", At: t0},
		},
		StartedAt:   t0,
		CompletedAt: &done,
		UpdatedAt:   done,
	}
}

func newRerun(rerunID, pipelineID string, requestedAt time.Time) types.RerunRecord {
	done := requestedAt.Add(time.Hour)
	return types.RerunRecord{
		RerunID:       rerunID,
		PipelineID:    pipelineID,
		OriginalDate:  "2026-03-01",
		OriginalRunID: "run-1",
		Reason:        "bad data",
		Description:   "upstream fixed a bug",
		Status:        types.RequestCompleted,
		RerunRunID:    "run-9",
		RequestedAt:   requestedAt,
		CompletedAt:   &done,
		Metadata:      sampleMetadata(),
	}
}

func newReplay(pipelineID, date, scheduleID string, createdAt time.Time) types.ReplayRequest {
	return types.ReplayRequest{
		PipelineID:  pipelineID,
		Date:        date,
		ScheduleID:  scheduleID,
		Reason:      "late data",
		RequestedBy: "alice",
		Status:      types.RequestPending,
		CreatedAt:   createdAt,
	}
}

func newLateArrival(pipelineID, date, scheduleID string, detectedAt time.Time, delta int64) types.LateArrival {
	return types.LateArrival{
		PipelineID:  pipelineID,
		Date:        date,
		ScheduleID:  scheduleID,
		DetectedAt:  detectedAt,
		RecordDelta: delta,
		TraitType:   "volume",
	}
}

func newReadiness(pipelineID string) types.ReadinessResult {
	exp := t0.Add(time.Hour)
	tr := newTrait("freshness")
	tr.PipelineID = pipelineID
	tr.ExpiresAt = &exp
	fail := newTrait("volume")
	fail.Status = types.TraitFail
	return types.ReadinessResult{
		PipelineID:  pipelineID,
		Status:      types.NotReady,
		Traits:      []types.TraitEvaluation{tr, fail},
		Blocking:    []string{"volume"},
		EvaluatedAt: t0,
	}
}
