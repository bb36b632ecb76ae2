package ddbprovider

import (
	"context"
	"strconv"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/internal/ddbx"
	"github.com/pipestate/pipestate/types"
)

// Seed writes n records of kind (SeedRuns, SeedEvents, SeedExpiredTraits,
// SeedReruns) of pipeline pipelineID straight into p's table with BatchWriteItem,
// as the provider's own writes lay them out, for the growth benchmarks: writing
// that many through the provider's transactions takes far longer on DynamoDB
// Local. Times go back from now, one second per record.
func Seed(ctx context.Context, p *Provider, api ddbx.BatchWriteAPI, kind, pipelineID string, n int, now time.Time) error {
	var reqs []ddbtypes.WriteRequest
	add := func(its ...item) error {
		for _, it := range its {
			av, err := marshal(it)
			if err != nil {
				return err
			}
			reqs = append(reqs, ddbtypes.WriteRequest{PutRequest: &ddbtypes.PutRequest{Item: av}})
		}
		return nil
	}
	for i := range n {
		at := now.Add(-time.Duration(n-i) * time.Second)
		var err error
		switch kind {
		case SeedRuns:
			var truth, list item
			if truth, list, err = runItems(types.RunState{RunID: pipelineID + "-r" + strconv.Itoa(i), PipelineID: pipelineID,
				Status: types.RunCompleted, CreatedAt: at, UpdatedAt: at}, time.Time{}); err == nil {
				err = add(truth, list)
			}
		case SeedEvents:
			var data *body
			if data, err = encode(types.Event{Kind: "K", PipelineID: pipelineID, Message: "seeded", Timestamp: at}); err == nil {
				seq := int64(i + 1)
				err = add(item{PK: pipelinePrefix + pipelineID, SK: eventSK(seq), Seq: seq, Data: data})
			}
		case SeedExpiredTraits:
			var data *body
			exp := now.Add(-time.Minute)
			if data, err = encode(types.TraitEvaluation{TraitType: "old" + strconv.Itoa(i), Status: types.TraitPass,
				EvaluatedAt: at, ExpiresAt: &exp}); err == nil {
				it := item{PK: pipelinePrefix + pipelineID, SK: skTrait + "old" + strconv.Itoa(i), Data: data}
				it.setExpiry(exp)
				err = add(it)
			}
		case SeedReruns:
			var truth, list item
			if truth, list, err = rerunItems(types.RerunRecord{RerunID: pipelineID + "-x" + strconv.Itoa(i), PipelineID: pipelineID,
				OriginalDate: "2026-01-01", Status: types.RequestPending, RequestedAt: at}); err == nil {
				err = add(truth, list)
			}
		}
		if err != nil {
			return err
		}
	}
	if kind == SeedEvents && n > 0 {
		if err := add(item{PK: pipelinePrefix + pipelineID, SK: skEventSeq, Seq: int64(n)}); err != nil {
			return err
		}
	}
	return ddbx.BatchWrite(ctx, api, p.table, reqs, ddbx.BatchOptions{MaxConcurrency: 8})
}

// The kinds of Seed.
const (
	SeedRuns          = "runs"
	SeedEvents        = "events"
	SeedExpiredTraits = "expired traits"
	SeedReruns        = "reruns"
)
