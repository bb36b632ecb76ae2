package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/user"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// Audited writes. Every write that changes provider state (run fail, lock
// release) needs --reason and records who (--as) and why in a pipeline's event
// log, as one event of kind auditKind whose Details are an auditRecord.
const (
	// auditKind is the Kind of the events the CLI's writes append.
	auditKind = "OPERATOR_WRITE"
	// auditMetadata is the run metadata key where run fail keeps its
	// auditRecord, written with the run in one compare-and-swap.
	auditMetadata = "pipestate.audit"
	// maxReason is the longest --reason and --as, in bytes.
	maxReason = 1000
)

// auditFlags are --reason and --as.
type auditFlags struct{ reason, as string }

func (a *auditFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&a.reason, "reason", "", "why you write (required): recorded in the event log with --as")
	fs.StringVar(&a.as, "as", "", "who writes, as recorded with the reason (default $USER@host)")
}

// check returns a usage error for a missing or bad --reason or --as; what says
// what the write does, for the message.
func (a *auditFlags) check(what string) error {
	for name, v := range map[string]string{"--reason": a.reason, "--as": a.as} {
		if len(v) > maxReason || !utf8.ValidString(v) {
			return usagef("%s: give at most %d bytes of UTF-8 text", name, maxReason)
		}
	}
	if strings.TrimSpace(a.reason) == "" {
		return usagef("missing --reason TEXT: say why you %s (it is recorded in the event log, with --as)", what)
	}
	return nil
}

// operator is --as, or by default $USER (or the OS user) @ the host name.
func (a *auditFlags) operator(getenv func(string) string) string {
	if a.as != "" {
		return a.as
	}
	name := getenv("USER")
	if name == "" {
		if u, err := user.Current(); err == nil {
			name = u.Username
		}
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		return name
	}
	return name + "@" + host
}

// auditRecord is what a write records: the event's Details, and run fail's
// run metadata under auditMetadata.
type auditRecord struct {
	Action   string         `json:"action"` // the command: "run fail", "lock release"
	Operator string         `json:"operator"`
	Reason   string         `json:"reason"`
	At       time.Time      `json:"at"`
	Before   map[string]any `json:"before,omitempty"` // what it changed, as it was
	After    map[string]any `json:"after,omitempty"`  // and as it is now
}

// record returns the auditRecord of action by in's operator at in's now.
func (in *inv) record(action string, before, after map[string]any) auditRecord {
	return auditRecord{Action: action, Operator: in.audit.operator(in.getenv), Reason: in.audit.reason,
		At: in.now().UTC(), Before: before, After: after}
}

// asMap is r as a JSON object, for Event.Details and RunState.Metadata.
func (r auditRecord) asMap() map[string]any {
	b, _ := json.Marshal(r) // a struct of strings, times and JSON maps
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// auditOf reads the auditRecord in v (an event's Details or a run's
// auditMetadata); ok is false when v holds none.
func auditOf(v any) (r auditRecord, ok bool) {
	b, err := json.Marshal(v)
	if err != nil || json.Unmarshal(b, &r) != nil {
		return r, false
	}
	return r, r.Action != "" && r.Operator != ""
}

// auditEvent is the event of r in pipeline's log, about run (may be empty),
// with status the new status, checked as AppendEvent will check it, so that a
// write whose event the provider would refuse is not made: an error (exit 1)
// that says nothing was written.
func auditEvent(pipeline, run, status string, r auditRecord) (types.Event, error) {
	ev, err := provider.PrepareEvent(types.Event{Kind: auditKind, PipelineID: pipeline, RunID: run, Status: status,
		Message: r.Reason, Details: r.asMap(), Timestamp: r.At}, r.At)
	if err != nil {
		return ev, fmt.Errorf("the %s event of this write could not be recorded (%v): nothing was written", auditKind, err)
	}
	return ev, nil
}

// appendAudit appends ev, the event of a write that happened (done says
// which); its error (exit 1) says that the write happened and its event is
// missing.
func appendAudit(ctx context.Context, p provider.Provider, ev types.Event, done string) error {
	if err := p.AppendEvent(ctx, ev); err != nil {
		return fmt.Errorf("%s, but its %s event was not recorded in pipeline %s's log: %v", done, auditKind, ev.PipelineID, err)
	}
	return nil
}
