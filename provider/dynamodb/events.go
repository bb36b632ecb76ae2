package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"slices"
	"strconv"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/fence"
	"github.com/pipestate/pipestate/internal/ddbx"
	"github.com/pipestate/pipestate/internal/ids"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// seqSK is the sort key of sequence number seq (>= 0) under prefix: 20 decimal
// digits, zero-padded, so string order is seq order.
func seqSK(prefix string, seq int64) string {
	var b [64]byte
	digits := strconv.AppendInt(b[:0], seq, 10)
	out := make([]byte, 0, len(prefix)+20)
	out = append(out, prefix...)
	for range 20 - len(digits) {
		out = append(out, '0')
	}
	return string(append(out, digits...))
}

// eventSK is the sort key of event seq.
func eventSK(seq int64) string { return seqSK(skEvent, seq) }

// afterSeq is the key condition of the items of partition pk numbered after since
// under prefix (since < math.MaxInt64).
func afterSeq(pk, prefix string, since int64) expr {
	return expr{keyRange, map[string]ddbtypes.AttributeValue{
		":pk": sv(pk), ":lo": sv(seqSK(prefix, since+1)), ":hi": sv(seqSK(prefix, math.MaxInt64))}}
}

// AppendEvent implements provider.EventStore. The event gets the pipeline's next
// sequence number: one TransactWriteItems moves the pipeline's counter item from n
// to n+k, on condition that it still holds n (the value this instance last saw),
// and puts k events under n+1..n+k. A lost race returns the counter's current value
// (ReturnValuesOnConditionCheckFailure) and the transaction is retried with it. So
// numbers are handed out without gaps, each to exactly one committed event, and
// number order is commit order.
//
// Concurrent appends to one pipeline through one Provider are group-committed:
// they queue, and a background flusher writes up to 99 of them per transaction, so
// callers within a process never race each other for the counter. AppendEvent
// returns when its event is committed. When ctx ends first it returns ctx's error;
// the event is then not appended if it was still queued, and may be if its
// transaction was already in flight (as with any write cut off by a deadline).
//
// One round trip when this instance knows the counter (it made the pipeline's
// previous append), else two; one more per race lost to another instance.
func (p *Provider) AppendEvent(ctx context.Context, ev types.Event) error {
	now := p.now()
	ev, err := provider.PrepareEvent(ev, now)
	if err := p.life.EnterWrite(ctx, "AppendEvent", err); err != nil {
		return err
	}
	data, err := encode(ev)
	if err != nil {
		return err
	}
	it := item{PK: pipelinePrefix + ev.PipelineID, Data: data}
	if p.retention.Events > 0 {
		it.setExpiry(now.Add(p.retention.Events))
	}
	// Size the item with the widest sequence number; its SK has a fixed width.
	it.SK, it.Seq = eventSK(math.MaxInt64), math.MaxInt64
	av, err := marshal(it)
	if err != nil {
		return err
	}
	pe := &pendingEvent{ctx: ctx, item: it, size: ddbx.ItemSize(av), done: make(chan error, 1)}
	pe.fence, pe.fenced = fence.FromContext(ctx)

	p.qmu.Lock()
	q := p.queues[ev.PipelineID]
	if q == nil {
		q = &appendQueue{}
		p.queues[ev.PipelineID] = q
	}
	q.pending = append(q.pending, pe)
	if !q.running {
		q.running = true
		go p.flush(ev.PipelineID, q)
	}
	p.qmu.Unlock()

	select {
	case err := <-pe.done:
		return err
	case <-ctx.Done():
		p.qmu.Lock()
		if i := slices.Index(q.pending, pe); i >= 0 { // still queued: withdraw it
			q.pending = slices.Delete(q.pending, i, i+1)
		}
		p.qmu.Unlock()
		return ctx.Err()
	}
}

// pendingEvent is an event waiting in its pipeline's append queue.
type pendingEvent struct {
	ctx  context.Context
	item item // SK and Seq are set per attempt
	size int
	done chan error // buffered: the flusher never blocks
	// fence and fenced are the token of a fenced append: a batch holds events of
	// one token (or unfenced ones) only, as the counter checks one fence.
	fence  fence.Token
	fenced bool
}

// sameFence reports whether a and b may share a batch.
func sameFence(a, b *pendingEvent) bool { return a.fenced == b.fenced && a.fence == b.fence }

// appendQueue holds a pipeline's pending events; running says a flusher owns it.
type appendQueue struct {
	pending []*pendingEvent
	running bool
}

// Transaction limits of a batch of events: 100 actions (one is the counter) and
// 4 MB in all (with room for the counter and request overhead).
const (
	maxBatchEvents = 99
	maxBatchBytes  = 4*1024*1024 - 64*1024
	// batchTimeout bounds one batch's transaction, which runs detached from the
	// callers' contexts so that one caller's cancellation cannot fail the others.
	batchTimeout = 2 * time.Minute
)

// flush writes the pipeline's queued events batch by batch until the queue is
// empty, then retires.
func (p *Provider) flush(pipelineID string, q *appendQueue) {
	for {
		p.qmu.Lock()
		n, bytes := 0, 0
		for n < len(q.pending) && n < maxBatchEvents && (n == 0 || bytes+q.pending[n].size <= maxBatchBytes && sameFence(q.pending[0], q.pending[n])) {
			bytes += q.pending[n].size
			n++
		}
		if n == 0 {
			q.running = false
			delete(p.queues, pipelineID)
			p.qmu.Unlock()
			return
		}
		batch := slices.Clone(q.pending[:n])
		q.pending = slices.Delete(q.pending, 0, n)
		p.qmu.Unlock()

		ctx, cancel := context.WithTimeout(context.WithoutCancel(batch[0].ctx), batchTimeout)
		p.sig.Batch(ctx, "AppendEvent", len(batch))
		err := p.appendBatch(ctx, pipelineID, batch)
		cancel()
		for _, pe := range batch {
			pe.done <- err
		}
	}
}

// appendBatch commits batch under the pipeline's next sequence numbers.
func (p *Provider) appendBatch(ctx context.Context, pipelineID string, batch []*pendingEvent) error {
	const op = "AppendEvent"
	tok := ids.Random()
	last := p.lastSeq(pipelineID)
	n := int64(len(batch))
	g := guard{t: batch[0].fence, on: batch[0].fenced, record: "event log of pipeline " + pipelineID}
	for lost, conflicts := 0, 0; ; {
		items := append(make([]ddbtypes.TransactWriteItem, 0, len(batch)+1), p.claimSeq(pipelinePrefix+pipelineID, skEventSeq, last, n, tok, g))
		for i, pe := range batch {
			it := pe.item
			it.Seq = last + 1 + int64(i)
			it.SK = eventSK(it.Seq)
			av, err := marshal(it)
			if err != nil {
				return err
			}
			items = append(items, p.txPut(av, expr{}))
		}
		err := p.transact(ctx, op, items...)
		if err == nil {
			p.sawSeq(pipelineID, last+n)
			return nil
		}
		if av, failed := ddbx.TxConditionFailed(err, 0); failed {
			// Another instance appended first; the failure carries the counter's
			// current value, so retry at once: backing off would only hand the next
			// race to the instance that just won.
			last = 0
			if av != nil {
				o, err := unmarshal(av)
				if err != nil {
					return err
				}
				if o.Tok == tok { // an SDK retry of our own batch, whose response was lost
					p.sawSeq(pipelineID, o.Seq)
					return nil
				}
				if err := g.refusedItem(o); err != nil {
					p.sawSeq(pipelineID, o.Seq)
					return fmt.Errorf("dynamodb: %s: %w", op, err)
				}
				last = o.Seq
			}
			p.sawSeq(pipelineID, last)
			lost++
			if err := p.lostRace(ctx, op, lost, err); err != nil {
				return err
			}
			continue
		}
		if !ddbx.IsTxConflict(err) {
			return fmt.Errorf("dynamodb: %s: %w", op, err)
		}
		if err := p.conflictWait(ctx, op, conflicts, err); err != nil {
			return err
		}
		conflicts++
	}
}

// claimSeq is the transaction action that moves the sequence counter (pk, sk) from
// last to last+n and stamps it with the writing call's token, failing (with the
// counter's item) when it holds another value, or, for a fenced write (g), when
// the counter remembers a newer fence of g's key; it remembers g's fence.
func (p *Provider) claimSeq(pk, sk string, last, n int64, tok string, g guard) ddbtypes.TransactWriteItem {
	values := make(map[string]ddbtypes.AttributeValue, 4)
	values[":n"], values[":tok"] = nv(last+n), sv(tok)
	cond := claimNext
	if last == 0 {
		cond = claimFirst
	} else {
		values[":last"] = nv(last)
	}
	text, names, update := &cond.text, cond.names, &claimUpdate
	if g.on {
		c, u := g.and(cond.text), claimUpdate+", "+fenceSet
		text, update = &c, &u
		names = map[string]string{}
		for k, v := range cond.names {
			names[k] = v
		}
		names, values = g.addTo(names, values)
	}
	return ddbtypes.TransactWriteItem{Update: &ddbtypes.Update{
		TableName:                           &p.table,
		Key:                                 key(pk, sk),
		ConditionExpression:                 text,
		UpdateExpression:                    update,
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
	}}
}

// The expressions of claimSeq: its conditions (the first number, or the next) and
// its update, whose names the conditions' maps hold.
var (
	namesClaim  = map[string]string{"#seq": attrSeq, "#tok": attrTok}
	claimFirst  = &form{"attribute_not_exists(#seq)", namesClaim}
	claimNext   = &form{"#seq = :last", namesClaim}
	claimUpdate = "SET #seq = :n, #tok = :tok"
)

func (p *Provider) lastSeq(pipelineID string) int64 {
	seq, _ := p.seqs.get(pipelineID)
	return seq
}

func (p *Provider) sawSeq(pipelineID string, seq int64) { p.seqs.put(pipelineID, seq) }

// ListEvents implements provider.EventStore with one strongly consistent Query,
// newest first, reversed to oldest first.
func (p *Provider) ListEvents(ctx context.Context, pipelineID string, limit int) ([]types.Event, error) {
	if err := p.life.Enter(ctx, provider.CheckID("pipeline ID", pipelineID), provider.CheckLimit(limit)); err != nil {
		return nil, err
	}
	out, err := nonNil(queryData[types.Event](ctx, p, "ListEvents",
		queryIn{kind: provider.KindEvent, key: partition(pipelinePrefix+pipelineID, skEvent), desc: true, limit: limit}))
	slices.Reverse(out)
	return out, err
}

// ReadEventsSince implements provider.EventStore with one strongly consistent Query
// of the sequence numbers after the cursor. Cursors are decimal sequence numbers;
// anything else is ErrInvalidArgument. Numbers have no gaps, so the cursor n is
// expired — an error wrapping provider.ErrCursorExpired — exactly when event n+1
// was appended and is no longer retained (expired, or deleted by DynamoDB's TTL);
// see readAfter. "" reads from the oldest event retained, paging past expired
// ones. A read stops before the first event missing after those it returns
// (events of writers with different retentions expire out of order), and the
// read from there fails.
func (p *Provider) ReadEventsSince(ctx context.Context, pipelineID, sinceID string, count int64) ([]types.EventRecord, error) {
	const op = "ReadEventsSince"
	since, err := provider.ParseSeqCursor(sinceID)
	if err := p.life.Enter(ctx, provider.CheckID("pipeline ID", pipelineID), provider.CheckCount(count), err); err != nil {
		return nil, err
	}
	out := []types.EventRecord{}
	if since == math.MaxInt64 {
		return out, nil
	}
	out, _, err = p.readEvents(ctx, op, pipelinePrefix+pipelineID, sinceID == "", since, count)
	return out, err
}

// readEvents is ReadEventsSince after its checks: at most count events of
// partition pk after since (< math.MaxInt64; fromOldest: from the oldest event
// retained), and the sequence number of the last item it read (since when
// none). An item that does not decode is skipped and reported, and the read goes
// on after it for as many more; so the number moves past it, for a follower.
func (p *Provider) readEvents(ctx context.Context, op, pk string, fromOldest bool, since, count int64) ([]types.EventRecord, int64, error) {
	out := []types.EventRecord{}
	last := since
	for {
		want := count - int64(len(out))
		var items []item
		var err error
		if fromOldest {
			items, err = p.queryItems(ctx, op, queryIn{kind: provider.KindEvent, key: afterSeq(pk, skEvent, 0), limit: int(min(want, math.MaxInt32))})
			for i := 1; i < len(items); i++ {
				if items[i].Seq != items[i-1].Seq+1 { // query skipped an expired event: stop before it
					items = items[:i]
					break
				}
			}
		} else {
			items, err = p.readAfter(ctx, op, pk, last, want)
		}
		if err != nil {
			if len(out) > 0 && errors.Is(err, provider.ErrCursorExpired) {
				return out, last, nil // the read from the last event returned fails
			}
			return nil, since, err
		}
		for _, it := range items {
			last = it.Seq
			r := types.EventRecord{StreamID: provider.FormatSeqCursor(it.Seq)}
			if err := decodeData(p, provider.KindEvent, it, &r.Event); err != nil {
				if provider.SkipCorrupt(ctx, p.sig, err) {
					continue
				}
				return nil, since, err
			}
			out = append(out, r)
		}
		if int64(len(out)) == count || int64(len(items)) < want {
			return out, last, nil
		}
		fromOldest = false
	}
}

// eventsThroughCounter is the key condition of the events of partition pk
// numbered after since and, after them, the partition's event counter
// (EVENTSEQ sorts after every EVENT#N(seq)).
func eventsThroughCounter(pk string, since int64) expr {
	return expr{keyRange, map[string]ddbtypes.AttributeValue{
		":pk": sv(pk), ":lo": sv(eventSK(since + 1)), ":hi": sv(skEventSeq)}}
}

// readAfter returns up to count live events of partition pk numbered since+1,
// since+2, ..., in one strongly consistent Query (one more per 1 MB of events).
// It stops at the first number missing or expired, and fails with
// provider.ErrCursorExpired when that is since+1 itself. The Query's range runs
// on to the pipeline's event counter, so a read that meets no event after the
// cursor learns in the same request whether events after it were appended (the
// counter is above since) and dropped since: a cursor into a log that expired
// entirely is expired too, while the cursor of the newest event, or one beyond
// the counter, reads nothing. Unlike query it never pages past expired events.
func (p *Provider) readAfter(ctx context.Context, op, pk string, since, count int64) ([]item, error) {
	key := eventsThroughCounter(pk, since)
	consistent := true
	in := &ddb.QueryInput{
		TableName:                 &p.table,
		KeyConditionExpression:    &key.text,
		ExpressionAttributeNames:  key.names,
		ExpressionAttributeValues: key.values,
		ConsistentRead:            &consistent,
	}
	var out []item
	// limit asks for the events still wanted and the counter after them.
	limit := func() int32 { return int32(min(count-int64(len(out)), math.MaxInt32-1) + 1) }
	first := limit()
	in.Limit = &first
	now := p.now()
	missing, counter := int64(0), int64(-1)
	err := ddbx.Query(ctx, p.api, in, limit, func(av map[string]ddbtypes.AttributeValue) (bool, error) {
		it, err := unmarshal(av)
		if err != nil { // keeps its number: the caller skips and reports it
			it = p.badItem(provider.KindEvent, av, err)
		}
		next := since + 1 + int64(len(out))
		switch {
		case it.SK == skEventSeq:
			counter = it.Seq
			return false, nil
		case it.Seq != next || !it.live(now):
			missing = next
			return false, nil
		}
		out = append(out, it)
		return int64(len(out)) < count, nil
	}, p.sdk(op))
	if err != nil {
		return nil, fmt.Errorf("dynamodb: %s: %w", op, err)
	}
	if len(out) == 0 && (missing > 0 || counter > since) {
		return nil, fmt.Errorf("dynamodb: %s: %w: event %d after cursor %d is no longer retained (WithEventRetention)",
			op, provider.ErrCursorExpired, since+1, since)
	}
	return out, nil
}

// FollowEvents implements provider.EventFollower by polling: it reads what
// ReadEventsSince reads (one strongly consistent Query per page of followPage,
// ending with ReadEventsSince's ErrCursorExpired when its cursor expires),
// again at once while reads return events, and once caught up waits
// WithPollInterval's first bound, doubling with each empty read up to its second
// (defaults 20 ms to 1 s). So an event appended after an idle spell is delivered
// within about the longer bound, one appended while events flow within the
// shorter, and an idle follower costs one Query (1 read capacity unit) per longer
// bound.
func (p *Provider) FollowEvents(ctx context.Context, pipelineID, cursor string) iter.Seq2[types.EventRecord, error] {
	start, err := provider.ParseSeqCursor(cursor)
	if err := p.life.Enter(ctx, provider.CheckID("pipeline ID", pipelineID), err); err != nil {
		return provider.Fail[types.EventRecord](err)
	}
	const op = "ReadEventsSince" // what each read of the follow is
	return provider.Follow(ctx, func() provider.Poller[types.EventRecord] {
		since, fromOldest := start, cursor == ""
		return provider.Poller[types.EventRecord]{
			Read: func(ctx context.Context) ([]types.EventRecord, error) {
				if err := p.life.Enter(ctx); err != nil {
					return nil, err
				}
				if since == math.MaxInt64 {
					return nil, nil
				}
				recs, last, err := p.readEvents(ctx, op, pipelinePrefix+pipelineID, fromOldest, since, followPage)
				if err != nil {
					return nil, ctxErr(ctx, err)
				}
				if last > since {
					since, fromOldest = last, false // past the items skipped as corrupt too
				}
				return recs, nil
			},
			Wait: provider.PollWait(p.pollMin, p.pollMax),
		}
	})
}

// followPage is how many records a follower or watcher reads at a time.
const followPage = 256

// ctxErr is ctx's error once ctx has ended (a request cut off by it fails with an
// SDK error that wraps it), else err.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
