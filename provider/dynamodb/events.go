package dynamodb

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/internal/ddbx"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// eventSK is the sort key of event seq: fixed width, so string order is seq order.
func eventSK(seq int64) string { return fmt.Sprintf("%s%020d", skEvent, seq) }

// AppendEvent implements provider.EventStore. The event gets the pipeline's next
// sequence number: one TransactWriteItems updates the pipeline's counter item on
// condition that it still holds the number this instance last saw, and puts the
// event under the new number. A lost race returns the counter's current value
// (ReturnValuesOnConditionCheckFailure), and the append is retried with the next
// number. So numbers are handed out without gaps, each to exactly one committed
// event, and number order is commit order. One round trip when this instance knows
// the counter (it made the pipeline's previous append), one more per lost race.
func (p *Provider) AppendEvent(ctx context.Context, ev types.Event) error {
	if err := provider.Validate(ev); err != nil {
		return err
	}
	if err := p.begin(ctx); err != nil {
		return err
	}
	now := p.now()
	if ev.Timestamp.IsZero() {
		ev.Timestamp = now
	}
	data, err := encode(ev)
	if err != nil {
		return err
	}
	evItem := item{PK: pipelinePrefix + ev.PipelineID, Data: data}
	if p.eventRetention > 0 {
		evItem.setExpiry(now.Add(p.eventRetention))
	}
	// Check the size once; the sequence number does not change it materially.
	evItem.SK, evItem.Seq = eventSK(math.MaxInt64), math.MaxInt64
	if _, err := marshal(evItem); err != nil {
		return err
	}
	const op = "append event"
	tok := randomID()
	last := p.lastSeq(ev.PipelineID)
	for attempt := 0; ; attempt++ {
		evItem.SK, evItem.Seq = eventSK(last+1), last+1
		av, err := marshal(evItem)
		if err != nil {
			return err
		}
		putEvent, _ := p.txPut(av, nil)
		claim, err := p.claimSeq(ev.PipelineID, last, tok)
		if err != nil {
			return err
		}
		err = p.transact(ctx, claim, putEvent)
		if err == nil {
			p.sawSeq(ev.PipelineID, last+1)
			return nil
		}
		if av, failed := ddbx.TxConditionFailed(err, 0); failed {
			last = 0
			if av != nil {
				o, err := unmarshal(av)
				if err != nil {
					return err
				}
				if o.Tok == tok { // an SDK retry of our own append, whose response was lost
					p.sawSeq(ev.PipelineID, o.Seq)
					return nil
				}
				last = o.Seq
			}
			p.sawSeq(ev.PipelineID, last)
			if attempt < 2 { // fresh news: retry at once, then back off
				continue
			}
		} else if !ddbx.IsTxConflict(err) {
			return fmt.Errorf("dynamodb: %s: %w", op, err)
		}
		if err := p.conflictWait(ctx, op, attempt, err); err != nil {
			return err
		}
	}
}

// claimSeq is the transaction action that moves the pipeline's event counter from
// last to last+1 and stamps it with the call's token, failing (with the counter's
// item) when it holds another value.
func (p *Provider) claimSeq(pipelineID string, last int64, tok string) (ddbtypes.TransactWriteItem, error) {
	cond := expression.Name(attrSeq).Equal(expression.Value(last))
	if last == 0 {
		cond = expression.AttributeNotExists(expression.Name(attrSeq))
	}
	expr, err := expression.NewBuilder().
		WithCondition(cond).
		WithUpdate(expression.Set(expression.Name(attrSeq), expression.Value(last+1)).
			Set(expression.Name(attrTok), expression.Value(tok))).
		Build()
	if err != nil {
		return ddbtypes.TransactWriteItem{}, fmt.Errorf("dynamodb: build event claim: %w", err)
	}
	return ddbtypes.TransactWriteItem{Update: &ddbtypes.Update{
		TableName:                           &p.table,
		Key:                                 key(pipelinePrefix+pipelineID, skEventSeq),
		ConditionExpression:                 expr.Condition(),
		UpdateExpression:                    expr.Update(),
		ExpressionAttributeNames:            expr.Names(),
		ExpressionAttributeValues:           expr.Values(),
		ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
	}}, nil
}

// maxSeqHints bounds the per-pipeline counter hints an instance keeps.
const maxSeqHints = 10000

func (p *Provider) lastSeq(pipelineID string) int64 {
	p.seqMu.Lock()
	defer p.seqMu.Unlock()
	return p.seqs[pipelineID]
}

func (p *Provider) sawSeq(pipelineID string, seq int64) {
	p.seqMu.Lock()
	defer p.seqMu.Unlock()
	if len(p.seqs) >= maxSeqHints {
		clear(p.seqs) // hints only: losing them costs one round trip per pipeline
	}
	p.seqs[pipelineID] = seq
}

// ListEvents implements provider.EventStore with one strongly consistent Query,
// newest first, reversed to oldest first.
func (p *Provider) ListEvents(ctx context.Context, pipelineID string, limit int) ([]types.Event, error) {
	if err := provider.CheckID("pipeline ID", pipelineID); err != nil {
		return nil, err
	}
	if err := provider.CheckLimit(limit); err != nil {
		return nil, err
	}
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	out, err := nonNil(queryData[types.Event](ctx, p, "list events",
		queryIn{key: partition(pipelinePrefix+pipelineID, skEvent), desc: true, limit: limit}))
	slices.Reverse(out)
	return out, err
}

// ReadEventsSince implements provider.EventStore with one strongly consistent Query
// of the sequence numbers after the cursor. Cursors are decimal sequence numbers;
// anything else is ErrInvalidArgument.
func (p *Provider) ReadEventsSince(ctx context.Context, pipelineID, sinceID string, count int64) ([]types.EventRecord, error) {
	if err := provider.CheckID("pipeline ID", pipelineID); err != nil {
		return nil, err
	}
	if err := provider.CheckCount(count); err != nil {
		return nil, err
	}
	var since int64
	if sinceID != "" {
		n, err := strconv.ParseInt(sinceID, 10, 64)
		if err != nil || n < 0 || strconv.FormatInt(n, 10) != sinceID {
			return nil, provider.Invalidf("malformed event cursor %q", sinceID)
		}
		since = n
	}
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	out := []types.EventRecord{}
	if since == math.MaxInt64 {
		return out, nil
	}
	kc := expression.Key(attrPK).Equal(expression.Value(pipelinePrefix + pipelineID)).
		And(expression.Key(attrSK).Between(expression.Value(eventSK(since+1)), expression.Value(eventSK(math.MaxInt64))))
	items, err := p.query(ctx, "read events", queryIn{key: kc, limit: int(min(count, math.MaxInt32))})
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		ev, err := decodeData[types.Event](it)
		if err != nil {
			return nil, err
		}
		out = append(out, types.EventRecord{StreamID: strconv.FormatInt(it.Seq, 10), Event: ev})
	}
	return out, nil
}
