package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/pipestate/pipestate/examples/internal/routing"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider/ddbstream"
	"github.com/pipestate/pipestate/types"
)

// Starter starts the work a cascade marker asks for: the target's run, exactly
// once however often it is asked (a redelivered record, a rewritten marker, a
// second router, the long-running one included). started is true for the one
// call that started it.
//
// RunStarter creates the run through provider.RunCreator. A Step Functions
// starter is the same step: StartExecution with Name set to
// routing.RunID(target, 1) on a Standard workflow, which keeps an execution
// name for 90 days: a second start with the same input returns the first
// execution (so started cannot tell the two apart), and one with another input
// fails with ExecutionAlreadyExists (started false). It needs
// states:StartExecution on the state machine's ARN and no table write.
type Starter interface {
	Start(ctx context.Context, target routing.Target) (started bool, err error)
}

// Store is what RunStarter needs of a provider.
type Store interface {
	GetPipeline(ctx context.Context, id string) (*types.PipelineConfig, error)
	provider.RunCreator
}

// RunStarter starts a target by creating its first run, PENDING, under
// routing.RunID(target, 1) with CreateRunState: the orchestrator (or the
// Lambda that evaluates) takes it on from there, as it would a run it created.
// A target whose pipeline is not registered starts nothing.
type RunStarter struct {
	Store Store
}

// Start implements Starter.
func (s RunStarter) Start(ctx context.Context, t routing.Target) (bool, error) {
	cfg, err := s.Store.GetPipeline(ctx, t.PipelineID)
	if err != nil || cfg == nil {
		return false, err // no such pipeline (any more): nothing to start
	}
	return s.Store.CreateRunState(ctx, types.RunState{RunID: routing.RunID(t, 1), PipelineID: t.PipelineID,
		Status: types.RunPending, Metadata: map[string]any{"date": t.Date, "schedule": t.ScheduleID, "attempt": 1, "startedBy": "streamrouter"}})
}

// Router is the stream-router Lambda's handler state: it decodes the records
// of the table's stream, routes each live cascade-marker write to its target
// and starts it through Starter.
type Router struct {
	Decoder *ddbstream.Decoder
	Starter Starter
	Log     *slog.Logger // nil: slog.Default()
	// Routed, if set, is called with every marker routed (started or not), in
	// the batch's order; the test compares them with WatchCascadeMarkers.
	Routed func(m types.CascadeMarker, started bool)
}

// Batch is the event a DynamoDB stream event source mapping sends: its
// records as Lambda passes them, JSON, each decoded once by
// ddbstream.Decoder.DecodeJSON (aws-lambda-go's events.DynamoDBEvent would
// decode them into its own types first).
type Batch struct {
	Records []json.RawMessage `json:"Records"`
}

// Handle is the Lambda handler of a DynamoDB stream event source mapping with
// FunctionResponseTypes [ReportBatchItemFailures]. It handles every record of
// the batch, in order, and reports the records it could not handle in
// BatchItemFailures (their SequenceNumber, which DecodeJSON returns with its
// error too): a record that does not decode (ErrCorrupt, ErrInvalidArgument)
// and one whose start failed. Lambda then retries the batch from the lowest of
// them, so the records after it are delivered again: routing is idempotent
// (Starter starts once), so they start nothing twice. A record that can never
// succeed (a corrupt image) is retried until the mapping's
// MaximumRetryAttempts and then goes to its on-failure destination, so it
// holds its shard up for that long only (see the README). A record that is
// not JSON has no sequence number to report: its empty ItemIdentifier makes
// Lambda retry the whole batch. Handle returns an error (the whole batch
// retried) only when ctx ends.
func (r *Router) Handle(ctx context.Context, batch Batch) (events.DynamoDBEventResponse, error) {
	log := r.Log
	if log == nil {
		log = slog.Default()
	}
	var resp events.DynamoDBEventResponse
	for _, rec := range batch.Records {
		if err := ctx.Err(); err != nil {
			return events.DynamoDBEventResponse{}, err
		}
		c, err := r.Decoder.DecodeJSON(rec)
		if err == nil {
			err = r.route(ctx, c)
		}
		if err != nil {
			if ctx.Err() != nil {
				return events.DynamoDBEventResponse{}, ctx.Err()
			}
			log.Warn("stream record not routed", "sequenceNumber", c.SequenceNumber, "eventID", c.EventID,
				"corrupt", errors.Is(err, provider.ErrCorrupt), "error", err)
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: c.SequenceNumber})
		}
	}
	return resp, nil
}

// route routes one decoded record: a live cascade-marker write starts its
// target; every other change (other kinds, foreign items, deletes, expired
// writes) is not routed.
func (r *Router) route(ctx context.Context, c ddbstream.Change) error {
	if c.Kind != provider.KindCascadeMarker || !c.Live() {
		return nil
	}
	m := *c.Marker.New
	started, err := r.Starter.Start(ctx, routing.TargetOf(m))
	if err != nil {
		return fmt.Errorf("start %s for %s: %w", m.PipelineID, m.Date, err)
	}
	if r.Routed != nil {
		r.Routed(m, started)
	}
	return nil
}
