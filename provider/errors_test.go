package provider_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

func TestChecks(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		ok   bool
	}{
		{"id ok", provider.CheckID("run ID", "r-1"), true},
		{"id delimiter", provider.CheckID("run ID", "r:1"), false},
		{"ids second bad", provider.CheckIDs("pipeline ID", "p", "date", ""), false},
		{"ids ok", provider.CheckIDs("pipeline ID", "p", "date", "2026-11-21"), true},
		{"lock key free-form", provider.CheckLockKey("eval:{p}#s"), true},
		{"lock key empty", provider.CheckLockKey(""), false},
		{"ttl zero", provider.CheckTTL(0), true},
		{"ttl negative", provider.CheckTTL(-time.Second), false},
		{"lease ttl zero", provider.CheckLeaseTTL(0), false},
		{"limit zero", provider.CheckLimit(0), false},
		{"limit one", provider.CheckLimit(1), true},
		{"count zero", provider.CheckCount(0), false},
		{"validate bad", provider.Validate(types.RunState{RunID: "r"}), false},
		{"validate ok", provider.Validate(types.Event{Kind: "K", PipelineID: "p"}), true},
		{"invalidf", provider.Invalidf("limit %d", 3), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if (tc.err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok=%v", tc.err, tc.ok)
			}
			if tc.err != nil && !errors.Is(tc.err, provider.ErrInvalidArgument) {
				t.Errorf("%v does not wrap ErrInvalidArgument", tc.err)
			}
			if tc.err != nil && !strings.HasPrefix(tc.err.Error(), "pipestate: ") {
				t.Errorf("message %q lacks the pipestate: prefix", tc.err)
			}
		})
	}
}

func TestInvalidKeepsCause(t *testing.T) {
	err := provider.Validate(types.RunState{})
	if !errors.Is(err, types.ErrInvalid) || !errors.Is(err, provider.ErrInvalidArgument) {
		t.Errorf("Validate error %v should wrap both types.ErrInvalid and provider.ErrInvalidArgument", err)
	}
}

func TestCheckSchedule(t *testing.T) {
	if s, err := provider.CheckSchedule(""); err != nil || s != types.DefaultScheduleID {
		t.Errorf(`CheckSchedule("") = %q, %v`, s, err)
	}
	if _, err := provider.CheckSchedule("a b"); !errors.Is(err, provider.ErrInvalidArgument) {
		t.Errorf(`CheckSchedule("a b") = %v`, err)
	}
}
