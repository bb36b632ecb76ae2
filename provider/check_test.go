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
		{"owner ok", provider.CheckOwner("worker-1"), true},
		{"owner empty", provider.CheckOwner(""), false},
		{"owner newline", provider.CheckOwner("a\nb"), false},
		{"clock nil", provider.CheckClock(nil), false},
		{"clock ok", provider.CheckClock(time.Now), true},
		{"readiness ttl 1ms", provider.CheckReadinessTTL(time.Millisecond), true},
		{"readiness ttl below 1ms", provider.CheckReadinessTTL(time.Microsecond), false},
		{"readiness ttl max", provider.CheckReadinessTTL(provider.MaxTTL), true},
		{"readiness ttl over max", provider.CheckReadinessTTL(provider.MaxTTL + 1), false},
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

func TestParseSeqCursor(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"", 0, true}, {"0", 0, true}, {"1", 1, true}, {"9223372036854775807", 1<<63 - 1, true},
		{"01", 0, false}, {"+1", 0, false}, {"-1", 0, false}, {"00", 0, false}, {" 1", 0, false},
		{"1-0", 0, false}, {"9223372036854775808", 0, false}, {"x", 0, false},
	} {
		got, err := provider.ParseSeqCursor(tc.in)
		if tc.ok != (err == nil) || (tc.ok && got != tc.want) {
			t.Errorf("ParseSeqCursor(%q) = %d, %v; want %d, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
		if err != nil && !errors.Is(err, provider.ErrInvalidArgument) {
			t.Errorf("ParseSeqCursor(%q): %v does not wrap ErrInvalidArgument", tc.in, err)
		}
		if tc.ok && tc.in != "" && provider.FormatSeqCursor(got) != tc.in {
			t.Errorf("FormatSeqCursor(%d) = %q, want %q", got, provider.FormatSeqCursor(got), tc.in)
		}
	}
}

// TestPrepareFillsDefaults pins each write's defaults: zero times are now, an empty
// schedule is the default one, a set value is kept.
func TestPrepareFillsDefaults(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	set := now.Add(-time.Hour)
	run, err := provider.PrepareRunState(types.RunState{RunID: "r", PipelineID: "p", Status: types.RunPending}, now)
	if err != nil || !run.CreatedAt.Equal(now) || !run.UpdatedAt.Equal(now) {
		t.Errorf("PrepareRunState = %+v, %v", run, err)
	}
	run, _ = provider.PrepareRunState(types.RunState{RunID: "r", PipelineID: "p", Status: types.RunPending, CreatedAt: set}, now)
	if !run.CreatedAt.Equal(set) {
		t.Errorf("PrepareRunState replaced a set CreatedAt: %v", run.CreatedAt)
	}
	ev, err := provider.PrepareEvent(types.Event{Kind: "K", PipelineID: "p"}, now)
	if err != nil || !ev.Timestamp.Equal(now) {
		t.Errorf("PrepareEvent = %+v, %v", ev, err)
	}
	rr, err := provider.PrepareRerun(types.RerunRecord{RerunID: "x", PipelineID: "p", OriginalDate: "d", Status: types.RequestPending}, now)
	if err != nil || !rr.RequestedAt.Equal(now) {
		t.Errorf("PrepareRerun = %+v, %v", rr, err)
	}
	rp, err := provider.PrepareReplay(types.ReplayRequest{PipelineID: "p", Date: "d", Status: types.RequestPending}, now)
	if err != nil || !rp.CreatedAt.Equal(now) || rp.ScheduleID != types.DefaultScheduleID {
		t.Errorf("PrepareReplay = %+v, %v", rp, err)
	}
	la, err := provider.PrepareLateArrival(types.LateArrival{PipelineID: "p", Date: "d"}, now)
	if err != nil || !la.DetectedAt.Equal(now) || la.ScheduleID != types.DefaultScheduleID {
		t.Errorf("PrepareLateArrival = %+v, %v", la, err)
	}
	rl, err := provider.PrepareRunLog(types.RunLogEntry{PipelineID: "p", Date: "d", Status: types.RunCompleted})
	if err != nil || rl.ScheduleID != types.DefaultScheduleID {
		t.Errorf("PrepareRunLog = %+v, %v", rl, err)
	}
	m, err := provider.PrepareCascadeMarker("p", "", "d", "src", now)
	if err != nil || !m.WrittenAt.Equal(now) || m.ScheduleID != types.DefaultScheduleID {
		t.Errorf("PrepareCascadeMarker = %+v, %v", m, err)
	}
	tr, err := provider.PrepareTrait("p", types.TraitEvaluation{TraitType: "t", Status: types.TraitPass}, time.Minute, now)
	if err != nil || tr.PipelineID != "p" || tr.ExpiresAt == nil || !tr.ExpiresAt.Equal(now.Add(time.Minute)) {
		t.Errorf("PrepareTrait = %+v, %v", tr, err)
	}
	tr, err = provider.PrepareTrait("p", types.TraitEvaluation{TraitType: "t", Status: types.TraitPass, ExpiresAt: &set}, 0, now)
	if err != nil || tr.ExpiresAt != nil {
		t.Errorf("PrepareTrait with ttl 0 kept ExpiresAt: %+v, %v", tr, err)
	}
	if _, err := provider.PrepareTrait("p", types.TraitEvaluation{TraitType: "t", Status: types.TraitPass, PipelineID: "q"}, 0, now); !errors.Is(err, provider.ErrInvalidArgument) {
		t.Errorf("PrepareTrait with another pipeline's trait: %v", err)
	}
	if _, err := provider.PrepareEvent(types.Event{}, now); !errors.Is(err, provider.ErrInvalidArgument) {
		t.Errorf("PrepareEvent of an invalid event: %v", err)
	}
}

// TestCheckCASDoesNotAllocate keeps the hot path's argument check free of heap
// allocations (Validate took an interface, which boxed every RunState).
func TestCheckCASDoesNotAllocate(t *testing.T) {
	s := types.RunState{RunID: "r", PipelineID: "p", Status: types.RunRunning, Metadata: map[string]any{"a": 1}, UpdatedAt: time.Now()}
	if n := testing.AllocsPerRun(100, func() { _ = provider.CheckCAS("r", 1, s) }); n != 0 {
		t.Errorf("CheckCAS allocates %v times per call", n)
	}
}

// TestDecodeRefusesAnotherRecordsID: a run or a rerun whose stored ID is not
// its key's is corrupt; other kinds, and matching IDs, decode.
func TestDecodeRefusesAnotherRecordsID(t *testing.T) {
	name := func(id string) func() (string, string) { return func() (string, string) { return id, "k:" + id } }
	var run types.RunState
	if err := provider.Decode(provider.KindRunState, []byte(`{"runId":"r1","pipelineId":"p"}`), &run, name("r1")); err != nil {
		t.Errorf("Decode of run r1 under its key = %v", err)
	}
	err := provider.Decode(provider.KindRunState, []byte(`{"runId":"r2","pipelineId":"p"}`), &run, name("r1"))
	var c *provider.CorruptError
	if !errors.As(err, &c) || c.ID != "r1" || c.Key != "k:r1" {
		t.Errorf("Decode of a body naming r2 under r1's key = %v, want a CorruptError naming r1", err)
	}
	var rerun types.RerunRecord
	if err := provider.Decode(provider.KindRerun, []byte(`{"rerunId":"x2"}`), &rerun, name("x1")); !errors.Is(err, provider.ErrCorrupt) {
		t.Errorf("Decode of a rerun naming x2 under x1's key = %v, want ErrCorrupt", err)
	}
	var ev types.Event
	if err := provider.Decode(provider.KindEvent, []byte(`{"runId":"other"}`), &ev, name("p:1")); err != nil {
		t.Errorf("Decode of an event naming a run = %v, want nil (an event's runId is not its own)", err)
	}
}
