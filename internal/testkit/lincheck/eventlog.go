package lincheck

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// EventKind is the kind of every event the EventLog workload appends.
const EventKind = "LINCHECK"

// EventOp is an operation on a pipeline's event log.
type EventOp int

// Event log operations.
const (
	AppendEvent EventOp = iota // AppendEvent of an event carrying Msg
	ReadEvents                 // ReadEventsSince from "" with a count above the log's length
	ReadAfter                  // ReadEventsSince from the cursor of the event carrying Msg
	ListEvents                 // ListEvents with Limit
)

var eventOpNames = [...]string{"append", "read", "readAfter", "list"}

// EventInput is the input of an event log operation.
type EventInput struct {
	Op       EventOp
	Pipeline string
	// Msg is, for AppendEvent, the event's Message, unique in the history; for
	// ReadAfter, the Message of the event whose cursor (StreamID, as an earlier
	// read returned it) the read starts after.
	Msg   string
	Limit int // ListEvents
}

// EventOutput is the output of an event log operation (or Unknown).
type EventOutput struct {
	// Log is, for a read, the Messages of the events returned, in order, each
	// preceded by '|' (see EventLogModel).
	Log string
	// Expired (ReadAfter) reports a read that failed with ErrCursorExpired.
	Expired bool
	// Bad (reads) describes a read that is wrong in itself: an event of another
	// pipeline or kind, a record without a cursor, or two records with one.
	Bad string
}

// logSuffix returns the part of log after the message msg and whether msg is
// in log.
func logSuffix(log, msg string) (string, bool) {
	i := strings.Index(log+"|", "|"+msg+"|")
	if i < 0 {
		return "", false
	}
	return log[i+1+len(msg):], true
}

// logLast returns the last n messages of log.
func logLast(log string, n int) string {
	i := len(log)
	for ; n > 0 && i > 0; n-- {
		i = strings.LastIndexByte(log[:i], '|')
	}
	return log[i:]
}

// logMessages returns the messages of log.
func logMessages(log string) []string {
	if log == "" {
		return nil
	}
	return strings.Split(log[1:], "|")
}

func describeLog(log string) string { return "[" + strings.Join(logMessages(log), " ") + "]" }

// EventLogModel is the sequential specification of the event log, per pipeline.
// Its state is the sequence of the Messages appended (each one preceded by '|':
// a string, so that states compare with ==). AppendEvent appends its message at
// the end, exactly once wherever porcupine places it (or never, for an unknown
// outcome placed last). ReadEvents returns the whole log, in order; ReadAfter
// returns exactly the messages after Msg, which must be in the log; ListEvents
// returns its last Limit messages (all when fewer). The model has no retention:
// the workload keeps every event, so a read from a cursor never expires
// (EventOutput.Expired is wrong), and a read must be well formed
// (EventOutput.Bad empty).
func EventLogModel() porcupine.Model {
	return porcupine.Model{
		Partition: partitionBy(func(in any) string { return in.(EventInput).Pipeline }),
		Init:      func() any { return "" },
		Step: func(st, in, out any) (bool, any) {
			s, i := st.(string), in.(EventInput)
			if i.Op == AppendEvent {
				return true, s + "|" + i.Msg
			}
			if isUnknown(out) {
				return true, s
			}
			o := out.(EventOutput)
			if o.Bad != "" || o.Expired {
				return false, s
			}
			switch i.Op {
			case ReadEvents:
				return o.Log == s, s
			case ReadAfter:
				after, ok := logSuffix(s, i.Msg)
				return ok && o.Log == after, s
			default: // ListEvents
				return o.Log == logLast(s, i.Limit), s
			}
		},
		DescribeOperation: func(in, out any) string {
			i := in.(EventInput)
			var call string
			switch i.Op {
			case AppendEvent, ReadAfter:
				call = fmt.Sprintf("%s(%s, %s)", eventOpNames[i.Op], i.Pipeline, i.Msg)
			case ReadEvents:
				call = fmt.Sprintf("read(%s)", i.Pipeline)
			default:
				call = fmt.Sprintf("list(%s, %d)", i.Pipeline, i.Limit)
			}
			if isUnknown(out) {
				return call + " → " + fmt.Sprint(out)
			}
			o := out.(EventOutput)
			switch {
			case i.Op == AppendEvent:
				return call
			case o.Expired:
				return call + " → ErrCursorExpired"
			case o.Bad != "":
				return fmt.Sprintf("%s → %s BAD: %s", call, describeLog(o.Log), o.Bad)
			}
			return call + " → " + describeLog(o.Log)
		},
		DescribeState: func(st any) string { return describeLog(st.(string)) },
	}
}

// EventLog runs the event log workload for EventLogModel and returns its history:
// cfg.Clients clients over stores (which share one storage) each run cfg.Ops
// operations on cfg.Keys pipelines (Pipeline+"-"+k): half of them AppendEvent of
// an event whose Message is unique ("<client>.<op>"), so that the instances
// append to each pipeline at once; the others reads: ReadEventsSince from "",
// ReadEventsSince from the cursor of an event that an earlier read of any client
// returned (a cursor of any instance), or ListEvents with a limit of 1 to 4, or
// one above the log's length. Reads ask for more events than the workload
// appends. ErrCursorExpired from a cursor is an output (the model refuses it:
// nothing is dropped); every other error is an unknown outcome. stores must keep
// every event the workload appends (no retention shorter than it).
func EventLog(t testing.TB, ctx context.Context, stores []provider.EventStore, cfg Config) []porcupine.Operation {
	t.Helper()
	cfg = cfg.withDefaults()
	checkInstances(t, len(stores), cfg)
	all := cfg.Clients*cfg.Ops + 1 // more than the workload appends
	type cursor struct{ msg, id string }
	var (
		mu      sync.Mutex
		cursors = map[string][]cursor{} // per pipeline: the events read, with their cursors
		seen    = map[string]bool{}     // the messages in cursors
	)
	rec := NewRecorder()
	runClients(rec, cfg, func(i int, c *Client, r *rand.Rand, more func() bool) {
		s := stores[i%len(stores)]
		for n := 0; n < cfg.Ops && more(); n++ {
			pl := fmt.Sprintf("%s-%d", Pipeline, r.IntN(cfg.Keys))
			mu.Lock()
			known := cursors[pl]
			var from cursor
			if len(known) > 0 {
				from = known[r.IntN(len(known))]
			}
			mu.Unlock()
			read := func(recs []types.EventRecord) EventOutput {
				o := recordsOutput(pl, recs)
				if o.Bad == "" {
					mu.Lock()
					for _, e := range recs {
						if !seen[e.Event.Message] {
							seen[e.Event.Message] = true
							cursors[pl] = append(cursors[pl], cursor{e.Event.Message, e.StreamID})
						}
					}
					mu.Unlock()
				}
				return o
			}
			switch p := r.IntN(10); {
			case p < 5:
				msg := fmt.Sprintf("%d.%d", i, n)
				_, _ = c.Do(EventInput{Op: AppendEvent, Pipeline: pl, Msg: msg}, func() (any, error) {
					return EventOutput{}, s.AppendEvent(ctx, types.Event{Kind: EventKind, PipelineID: pl, Message: msg})
				})
			case p < 7 || from.id == "":
				_, _ = c.Do(EventInput{Op: ReadEvents, Pipeline: pl}, func() (any, error) {
					recs, err := s.ReadEventsSince(ctx, pl, "", int64(all))
					return read(recs), err
				})
			case p < 9:
				_, _ = c.Do(EventInput{Op: ReadAfter, Pipeline: pl, Msg: from.msg}, func() (any, error) {
					recs, err := s.ReadEventsSince(ctx, pl, from.id, int64(all))
					if errors.Is(err, provider.ErrCursorExpired) {
						return EventOutput{Expired: true}, nil
					}
					return read(recs), err
				})
			default:
				limit := 1 + r.IntN(4)
				if r.IntN(4) == 0 {
					limit = all
				}
				_, _ = c.Do(EventInput{Op: ListEvents, Pipeline: pl, Limit: limit}, func() (any, error) {
					evs, err := s.ListEvents(ctx, pl, limit)
					return eventsOutput(pl, evs), err
				})
			}
		}
	})
	// An append of unknown outcome whose message no read returned only ever adds
	// a constraint (reads placed after it must return it) wherever it is placed,
	// and none when placed last: leaving it out decides the same. Reads of
	// unknown outcome have no effect.
	ops := rec.Operations()
	returned := map[string]bool{}
	for _, o := range ops {
		if out, ok := o.Output.(EventOutput); ok {
			for _, m := range logMessages(out.Log) {
				returned[m] = true
			}
		}
	}
	return withoutIdle(ops, func(in any) bool {
		i := in.(EventInput)
		return i.Op != AppendEvent || !returned[i.Msg]
	})
}

// recordsOutput describes the records a ReadEventsSince of pipeline returned.
func recordsOutput(pipeline string, recs []types.EventRecord) EventOutput {
	evs := make([]types.Event, len(recs))
	var bad []string
	ids := map[string]bool{}
	for j, r := range recs {
		evs[j] = r.Event
		switch {
		case r.StreamID == "":
			bad = append(bad, fmt.Sprintf("event %q has no cursor", r.Event.Message))
		case ids[r.StreamID]:
			bad = append(bad, fmt.Sprintf("event %q has the cursor %q of an event before it", r.Event.Message, r.StreamID))
		}
		ids[r.StreamID] = true
	}
	o := eventsOutput(pipeline, evs)
	if o.Bad != "" {
		bad = append(bad, o.Bad)
	}
	o.Bad = strings.Join(bad, "; ")
	return o
}

// eventsOutput describes the events a read of pipeline returned.
func eventsOutput(pipeline string, evs []types.Event) EventOutput {
	var b strings.Builder
	var bad []string
	for _, ev := range evs {
		if ev.PipelineID != pipeline || ev.Kind != EventKind {
			bad = append(bad, fmt.Sprintf("event %q of pipeline %q, kind %q", ev.Message, ev.PipelineID, ev.Kind))
		}
		b.WriteString("|")
		b.WriteString(ev.Message)
	}
	return EventOutput{Log: b.String(), Bad: strings.Join(bad, "; ")}
}
