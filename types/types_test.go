package types

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValidateID(t *testing.T) {
	for _, tc := range []struct {
		name, id string
		ok       bool
	}{
		{"simple", "orders", true},
		{"all allowed punctuation", "a-b_c.d/e+f=g@h", true},
		{"date", "2026-11-21", true},
		{"max length", strings.Repeat("x", MaxIDLen), true},
		{"empty", "", false},
		{"too long", strings.Repeat("x", MaxIDLen+1), false},
		{"colon", "a:b", false},
		{"hash", "a#b", false},
		{"open brace", "a{b", false},
		{"close brace", "a}b", false},
		{"pipe", "a|b", false},
		{"space", "a b", false},
		{"tab", "a\tb", false},
		{"newline", "a\nb", false},
		{"nul", "a\x00b", false},
		{"non-ascii", "café", false},
		{"percent", "a%2Fb", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateID("pipeline ID", tc.id)
			if (err == nil) != tc.ok {
				t.Fatalf("ValidateID(%q) = %v, want ok=%v", tc.id, err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
		})
	}
}

func TestValidateLockKey(t *testing.T) {
	for _, tc := range []struct {
		name, key string
		ok        bool
	}{
		{"delimiters allowed", "eval:{orders}#daily|x y", true},
		{"unicode", "verrou-café", true},
		{"max length", strings.Repeat("k", MaxLockKeyLen), true},
		{"empty", "", false},
		{"too long", strings.Repeat("k", MaxLockKeyLen+1), false},
		{"control", "a\x01b", false},
		{"newline", "a\nb", false},
		{"invalid utf8", "a\xffb", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := ValidateLockKey(tc.key); (err == nil) != tc.ok {
				t.Fatalf("ValidateLockKey(%q) = %v, want ok=%v", tc.key, err, tc.ok)
			}
		})
	}
}

func TestScheduleOrDefault(t *testing.T) {
	if got := ScheduleOrDefault(""); got != DefaultScheduleID {
		t.Errorf(`ScheduleOrDefault("") = %q`, got)
	}
	if got := ScheduleOrDefault("hourly"); got != "hourly" {
		t.Errorf(`ScheduleOrDefault("hourly") = %q`, got)
	}
}

type validator interface{ Validate() error }

func TestValidate(t *testing.T) {
	now := time.Now()
	run := RunState{RunID: "r1", PipelineID: "p1", Status: RunPending}
	cfg := PipelineConfig{ID: "p1"}
	for _, tc := range []struct {
		name string
		v    validator
		ok   bool
	}{
		{"pipeline ok", PipelineConfig{ID: "p1", Traits: map[string]TraitConfig{"fresh": {TTL: time.Hour}},
			Schedules: []ScheduleConfig{{ID: "daily", Time: "06:30", Timezone: "UTC"}},
			SLA:       &SLAConfig{EvaluationDeadline: "09:00"}, Downstream: []string{"p2"},
			Exclusions: &ExclusionConfig{Dates: []string{"2026-12-25"}}}, true},
		{"pipeline bad id", PipelineConfig{ID: "p:1"}, false},
		{"pipeline bad trait key", PipelineConfig{ID: "p1", Traits: map[string]TraitConfig{"a#b": {}}}, false},
		{"pipeline negative trait ttl", PipelineConfig{ID: "p1", Traits: map[string]TraitConfig{"t": {TTL: -1}}}, false},
		{"pipeline duplicate schedule", PipelineConfig{ID: "p1", Schedules: []ScheduleConfig{{ID: "d"}, {ID: "d"}}}, false},
		{"pipeline bad sla clock", PipelineConfig{ID: "p1", SLA: &SLAConfig{CompletionDeadline: "25:00"}}, false},
		{"pipeline bad timezone", PipelineConfig{ID: "p1", SLA: &SLAConfig{Timezone: "Mars/Olympus"}}, false},
		{"pipeline self downstream", PipelineConfig{ID: "p1", Downstream: []string{"p1"}}, false},
		{"pipeline bad exclusion date", PipelineConfig{ID: "p1", Exclusions: &ExclusionConfig{Dates: []string{"12/25"}}}, false},
		{"pipeline negative retry", PipelineConfig{ID: "p1", Retry: &RetryPolicy{MaxAttempts: -1}}, false},
		{"pipeline empty trigger", PipelineConfig{ID: "p1", Trigger: &TriggerConfig{}}, false},
		{"pipeline minimal", cfg, true},
		{"trait ok", TraitEvaluation{TraitType: "fresh", Status: TraitPass}, true},
		{"trait bad status", TraitEvaluation{TraitType: "fresh", Status: "MAYBE"}, false},
		{"trait bad pipeline", TraitEvaluation{PipelineID: "a b", TraitType: "fresh", Status: TraitFail}, false},
		{"readiness ok", ReadinessResult{PipelineID: "p1", Status: Ready}, true},
		{"readiness bad status", ReadinessResult{PipelineID: "p1", Status: "SOON"}, false},
		{"run ok", run, true},
		{"run bad status", RunState{RunID: "r1", PipelineID: "p1", Status: "DONE"}, false},
		{"run negative version", RunState{RunID: "r1", PipelineID: "p1", Status: RunPending, Version: -1}, false},
		{"run empty id", RunState{PipelineID: "p1", Status: RunPending}, false},
		{"run log ok", RunLogEntry{PipelineID: "p1", Date: "2026-11-21", Status: RunRunning}, true},
		{"run log bad schedule", RunLogEntry{PipelineID: "p1", Date: "2026-11-21", ScheduleID: "a:b", Status: RunRunning}, false},
		{"run log negative attempt", RunLogEntry{PipelineID: "p1", Date: "d", Status: RunRunning, AttemptNumber: -1}, false},
		{"event ok", Event{Kind: "X", PipelineID: "p1"}, true},
		{"event empty kind", Event{PipelineID: "p1"}, false},
		{"event long kind", Event{Kind: strings.Repeat("k", MaxEventKindLen+1), PipelineID: "p1"}, false},
		{"rerun ok", RerunRecord{RerunID: "x", PipelineID: "p1", OriginalDate: "2026-11-20", Status: RequestPending, RequestedAt: now}, true},
		{"rerun bad status", RerunRecord{RerunID: "x", PipelineID: "p1", OriginalDate: "d", Status: "NOPE"}, false},
		{"replay ok", ReplayRequest{PipelineID: "p1", Date: "d", Status: RequestPending}, true},
		{"replay no date", ReplayRequest{PipelineID: "p1", Status: RequestPending}, false},
		{"late arrival ok", LateArrival{PipelineID: "p1", Date: "d"}, true},
		{"late arrival bad trait", LateArrival{PipelineID: "p1", Date: "d", TraitType: "#"}, false},
		{"marker ok", CascadeMarker{PipelineID: "p2", Date: "d", Source: "p1"}, true},
		{"marker no source", CascadeMarker{PipelineID: "p2", Date: "d"}, false},
		{"lease ok", Lease{Key: "k:{x}", Token: "t"}, true},
		{"lease no token", Lease{Key: "k"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.v.Validate()
			if (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
		})
	}
}

func TestRunStatus(t *testing.T) {
	for _, s := range []RunStatus{RunPending, RunTriggering, RunRunning, RunCompletedMonitoring} {
		if !s.Valid() || s.Terminal() {
			t.Errorf("%s: Valid=%v Terminal=%v", s, s.Valid(), s.Terminal())
		}
	}
	for _, s := range []RunStatus{RunCompleted, RunFailed, RunCancelled} {
		if !s.Valid() || !s.Terminal() {
			t.Errorf("%s: Valid=%v Terminal=%v", s, s.Valid(), s.Terminal())
		}
	}
	if RunStatus("running").Valid() {
		t.Error("statuses are case-sensitive")
	}
}

func TestExcludes(t *testing.T) {
	sat := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	mon := sat.AddDate(0, 0, 2)
	var none *ExclusionConfig
	for _, tc := range []struct {
		name string
		e    *ExclusionConfig
		day  time.Time
		want bool
	}{
		{"nil config", none, sat, false},
		{"weekend excluded", &ExclusionConfig{Weekends: true}, sat, true},
		{"weekday kept", &ExclusionConfig{Weekends: true}, mon, false},
		{"listed date", &ExclusionConfig{Dates: []string{"2026-11-23"}}, mon, true},
		{"other date", &ExclusionConfig{Dates: []string{"2026-11-24"}}, mon, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.e.Excludes(tc.day); got != tc.want {
				t.Errorf("Excludes(%v) = %v, want %v", tc.day, got, tc.want)
			}
		})
	}
}
