package ddbprovider

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
	"github.com/pipestate/pipestate/internal/signal"
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
// sequence number from the pipeline's counter item (EVENTSEQ): one
// TransactWriteItems moves the counter from n to n+k, on condition that it
// still holds n (the value this instance last saw), and puts k events under
// n+1..n+k, each on condition that its number is free. A lost race returns the
// counter's current value (ReturnValuesOnConditionCheckFailure) and the
// transaction is retried with it. The counter item never expires (it carries
// no ttl), so numbering goes on after the whole log expired and DynamoDB's TTL
// deleted it: a number, once committed, is never committed again.
//
// Numbers are handed out without gaps, each to exactly one committed event, and
// number order is commit order. The counter is stamped with its call's token,
// and so is every event, so a retry after a lost reply that finds the counter
// moved or its number taken knows whether it moved or took it.
//
// Concurrent appends to one pipeline through one Provider are group-committed:
// they queue, and a background flusher writes up to 99 of them per transaction, so
// callers within a process never race each other for a number. AppendEvent
// returns when its event is committed. When ctx ends first it returns ctx's error;
// the event is then not appended if it was still queued, and may be if its
// transaction was already in flight (as with any write cut off by a deadline).
//
// One round trip when this instance made the pipeline's last append, else two
// (a Query of the counter, then the transaction); one more per race lost to
// another instance.
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
	// Size the item as stored at its largest: the widest sequence number (its SK
	// has a fixed width) and a token.
	sized := it
	sized.SK, sized.Seq, sized.Tok = eventSK(math.MaxInt64), math.MaxInt64, ids.Random()
	av, err := marshal(sized)
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
	item item // SK, Seq and Tok are set per attempt
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
		a := &appendCall{p: p, pipelineID: pipelineID, pk: pipelinePrefix + pipelineID, batch: batch, tok: ids.Random(),
			g: guard{t: batch[0].fence, on: batch[0].fenced, record: "event log of pipeline " + pipelineID}}
		err := a.counted(ctx)
		cancel()
		for _, pe := range batch {
			pe.done <- err
		}
	}
}

// appendCall is the commit of one batch of events.
type appendCall struct {
	p          *Provider
	pipelineID string
	pk         string
	batch      []*pendingEvent
	tok        string // stamped on the counter and on every event
	g          guard
}

// appendOp is the operation of every request of an appendCall.
const appendOp = "AppendEvent"

// counted commits the batch with the counter item (see AppendEvent).
func (a *appendCall) counted(ctx context.Context) error {
	p, n := a.p, int64(len(a.batch))
	// counter is what the counter holds (0: no counter item yet), base the
	// number the batch goes after: the counter, or, in a log without one (an
	// unreleased build appended to it without the counter), the newest event
	// stored, whatever TTL deleted before it. The read takes one item: the
	// counter where one exists, so its cost does not grow with the events'
	// size; a counter behind the log is met by the refused put below.
	counter, known := p.seqs.get(a.pipelineID)
	base := counter
	if !known {
		var newest int64
		var err error
		if counter, newest, err = p.readTip(ctx, a.pk, 1); err != nil {
			return err
		}
		base = max(counter, newest)
	}
	for lost, conflicts := 0, 0; ; {
		events, err := a.puts(base)
		if err != nil {
			return err
		}
		actions := append([]ddbtypes.TransactWriteItem{p.claimSeq(a.pk, skEventSeq, counter, base+n, a.tok, a.g)}, events...)
		cause := p.transact(ctx, appendOp, actions...)
		if cause == nil {
			p.seqs.put(a.pipelineID, base+n)
			return nil
		}
		i, old, refused := firstRefused(cause, len(actions))
		switch {
		case refused && i == 0:
			// Another instance appended first; the refusal carries the counter's
			// current value, so retry at once: backing off would only hand the
			// next race to the instance that just won.
			counter = 0
			if old != nil {
				o, err := unmarshal(old)
				if err != nil {
					return fmt.Errorf("dynamodb: %s: the event counter of %s: %w", appendOp, a.pk, p.badItem(provider.KindEvent, old, err).bad)
				}
				if o.Tok == a.tok { // an SDK retry of our own batch, whose response was lost
					p.seqs.put(a.pipelineID, o.Seq)
					return nil
				}
				if err := a.g.refusedItem(o); err != nil {
					p.seqs.put(a.pipelineID, o.Seq)
					return fmt.Errorf("dynamodb: %s: %w", appendOp, err)
				}
				counter = o.Seq
			}
			// A counter below what this batch went after was moved back (by
			// hand, or restored from a backup): numbers up to base may be
			// taken, or were and were deleted, so the batch still goes after
			// base.
			base = max(counter, base)
			p.seqs.put(a.pipelineID, counter)
		case refused:
			// An event holds a number the counter handed this batch: the
			// counter is behind the log (restored from a backup, or a log an
			// unreleased build appended to without it). Never write over it:
			// go past the newest event.
			if a.ours(old) { // an SDK retry of our own batch, whose response was lost
				p.seqs.put(a.pipelineID, base+n)
				return nil
			}
			_, newest, err := p.readTip(ctx, a.pk, 2)
			if err != nil {
				return err
			}
			base = max(base, newest)
		default:
			if err := a.conflict(ctx, conflicts, cause); err != nil {
				return err
			}
			conflicts++
			continue
		}
		lost++
		if err := p.lostRace(ctx, appendOp, signal.ReasonSequenceRace, lost, cause); err != nil {
			return err
		}
	}
}

// puts returns the conditional put of each event of the batch, numbered after
// base and stamped with the call's token.
func (a *appendCall) puts(base int64) ([]ddbtypes.TransactWriteItem, error) {
	out := make([]ddbtypes.TransactWriteItem, 0, len(a.batch))
	for i, pe := range a.batch {
		it := pe.item
		it.Seq = base + 1 + int64(i)
		it.SK, it.Tok = eventSK(it.Seq), a.tok
		av, err := marshal(it)
		if err != nil {
			return nil, err
		}
		out = append(out, a.p.txPut(av, expr{form: condNew}))
	}
	return out, nil
}

// ours reports whether old, the event whose number a put found taken, is this
// call's own (an SDK retry of a put whose response was lost). It reads the
// token only, so a corrupt event is no one's.
func (a *appendCall) ours(old map[string]ddbtypes.AttributeValue) bool {
	tok, err := attrString(old[attrTok])
	return err == nil && tok == a.tok
}

// conflict is conflictWait for err, an append's failure that was no refusal: it
// fails when err is no transaction conflict either.
func (a *appendCall) conflict(ctx context.Context, attempt int, err error) error {
	if !ddbx.IsTxConflict(err) {
		return fmt.Errorf("dynamodb: %s: %w", appendOp, err)
	}
	return a.p.conflictWait(ctx, appendOp, attempt, err)
}

// firstRefused returns the first action of a transaction of n actions whose
// condition err reports failed, and the item that condition saw (nil when
// there was none).
func firstRefused(err error, n int) (i int, old map[string]ddbtypes.AttributeValue, refused bool) {
	if err == nil {
		return 0, nil, false
	}
	for i := range n {
		if old, refused := ddbx.TxConditionFailed(err, i); refused {
			return i, old, true
		}
	}
	return 0, nil, false
}

// readTip reads what the numbering of the event log in partition pk rests on,
// in one strongly consistent Query of up to limit (1 or 2) items down from the
// counter item: the counter's value (0 without one) and the number of the
// newest event stored, expired or not (0 when the items read hold none; its
// sort key's, whatever its attributes hold). Limit 1 reads the counter alone
// where one exists, and the newest event only where none does; limit 2 reads
// both, paying for the newest event's size.
func (p *Provider) readTip(ctx context.Context, pk string, limit int32) (counter, newest int64, err error) {
	key := expr{keyRange, map[string]ddbtypes.AttributeValue{":pk": sv(pk), ":lo": sv(eventSK(0)), ":hi": sv(skEventSeq)}}
	fwd, consistent := false, true
	out, err := p.api.Query(ctx, &ddb.QueryInput{
		TableName:                 &p.table,
		KeyConditionExpression:    &key.text,
		ExpressionAttributeNames:  key.names,
		ExpressionAttributeValues: key.values,
		ScanIndexForward:          &fwd,
		ConsistentRead:            &consistent,
		Limit:                     &limit,
	}, p.sdk(appendOp))
	if err != nil {
		return 0, 0, fmt.Errorf("dynamodb: %s: %w", appendOp, err)
	}
	for _, av := range out.Items {
		sk, _ := attrString(av[attrSK])
		if n, ok := keySeq(sk); ok {
			return counter, n, nil
		}
		// Every claim sets the counter's seq: one without it (a hand edit) is
		// 0, as claimFirst takes it.
		if v, ok := av[attrSeq]; ok && sk == skEventSeq {
			if counter, err = attrInt(v); err != nil {
				it := p.badItem(provider.KindEvent, av, err)
				return 0, 0, fmt.Errorf("dynamodb: %s: the event counter of %s: %w", appendOp, pk, it.bad)
			}
		}
	}
	return counter, 0, nil
}

// claimSeq is the transaction action that moves the sequence counter (pk, sk) from
// expect to next and stamps it with the writing call's token, failing (with the
// counter's item) when it holds another value, or, for a fenced write (g), when
// the counter remembers a newer fence of g's key; it remembers g's fence.
func (p *Provider) claimSeq(pk, sk string, expect, next int64, tok string, g guard) ddbtypes.TransactWriteItem {
	values := make(map[string]ddbtypes.AttributeValue, 4)
	values[":n"], values[":tok"] = nv(next), sv(tok)
	cond := claimNext
	if expect == 0 {
		cond = claimFirst
	} else {
		values[":last"] = nv(expect)
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
	out, _, err = p.readEvents(ctx, op, pipelineID, sinceID == "", since, count)
	return out, err
}

// seqLog is a numbered log stored in one partition: its entries under
// prefix+N(seq) and, sorting after every entry, its counter item (the last
// number handed out): a pipeline's events, or the marker log.
type seqLog struct {
	pk, prefix, counter string
	kind                provider.RecordKind
	what                string // what its entries are, for messages
}

// eventLog is the event log of pipelineID.
func eventLog(pipelineID string) seqLog {
	return seqLog{pk: pipelinePrefix + pipelineID, prefix: skEvent, counter: skEventSeq, kind: provider.KindEvent, what: "event"}
}

// markerLog is the marker log.
var markerLog = seqLog{pk: markerLogPK, prefix: skLogEntry, counter: skLogSeq, kind: provider.KindMarkerWrite, what: "marker write"}

// readEvents is ReadEventsSince after its checks (see readLog).
func (p *Provider) readEvents(ctx context.Context, op, pipelineID string, fromOldest bool, since, count int64) ([]types.EventRecord, int64, error) {
	return readLog(ctx, p, op, eventLog(pipelineID), fromOldest, since, count, func(it item) (types.EventRecord, error) {
		return eventRecord(tableName(p.table), it)
	})
}

// eventRecord is the record of it, an event item: its number as the cursor
// and its decoded data (decodeData's error when that does not decode).
func eventRecord(t tableName, it item) (types.EventRecord, error) {
	r := types.EventRecord{StreamID: provider.FormatSeqCursor(it.Seq)}
	return r, decodeData(t, provider.KindEvent, it, &r.Event)
}

// readLog reads at most count entries of l after since (< math.MaxInt64;
// fromOldest: from the oldest entry retained), decoded by rec, and returns the
// sequence number of the last entry it read (since when none). An entry that
// does not decode is skipped and reported, and the read goes on after it for
// as many more; so the number moves past it, for a follower.
func readLog[R any](ctx context.Context, p *Provider, op string, l seqLog, fromOldest bool, since, count int64, rec func(it item) (R, error)) ([]R, int64, error) {
	out := []R{}
	last, oldest := since, fromOldest
	for {
		want, before := count-int64(len(out)), len(out)
		var items []item
		var err error
		if fromOldest {
			items, err = p.queryItems(ctx, op, queryIn{kind: l.kind, key: afterSeq(l.pk, l.prefix, 0), limit: int(min(want, math.MaxInt32))})
			for i := 1; i < len(items); i++ {
				if items[i].Seq != items[i-1].Seq+1 { // query skipped an expired entry: stop before it
					items = items[:i]
					break
				}
			}
		} else {
			items, err = p.readAfter(ctx, op, l, last, want)
		}
		if err != nil {
			if (len(out) > 0 || oldest) && errors.Is(err, provider.ErrCursorExpired) {
				// The read from the last entry returned fails; "" is never
				// expired (past entries skipped as corrupt it returns none).
				return out, last, nil
			}
			return nil, since, err
		}
		for _, it := range items {
			last = it.Seq
			r, err := rec(it)
			if err != nil {
				if provider.SkipCorrupt(ctx, p.sig, err) {
					continue
				}
				return nil, since, err
			}
			out = append(out, r)
		}
		// A short page ends the read, unless all it had was corrupt: a
		// corrupt entry is held, not dropped, so the read goes on after it
		// to learn whether what follows was dropped (ErrCursorExpired).
		short := int64(len(items)) < want
		if int64(len(out)) == count || short && (len(items) == 0 || len(out) > before) {
			return out, last, nil
		}
		fromOldest = false
	}
}

// throughCounter is the key condition of the entries of l numbered after
// since and, after them, l's counter item.
func throughCounter(l seqLog, since int64) expr {
	return expr{keyRange, map[string]ddbtypes.AttributeValue{
		":pk": sv(l.pk), ":lo": sv(seqSK(l.prefix, since+1)), ":hi": sv(l.counter)}}
}

// readAfter returns up to count live entries of l numbered since+1, since+2,
// ..., in one strongly consistent Query (one more per 1 MB of entries). It
// stops at the first number missing or expired, and fails with
// provider.ErrCursorExpired when that is since+1 itself. The Query's range runs
// on to l's counter, so a read that meets no entry after the cursor learns in
// the same request whether entries after it were written (the counter is
// above since) and dropped since: a cursor into a log that expired entirely
// is expired too, at once, while the cursor of the newest entry, or one beyond
// the counter, reads nothing. Unlike query it never pages past expired
// entries. An entry whose attributes do not unmarshal keeps its number (its
// sort key's) and is returned for the caller to skip and report.
func (p *Provider) readAfter(ctx context.Context, op string, l seqLog, since, count int64) ([]item, error) {
	key := throughCounter(l, since)
	consistent := true
	in := &ddb.QueryInput{
		TableName:                 &p.table,
		KeyConditionExpression:    &key.text,
		ExpressionAttributeNames:  key.names,
		ExpressionAttributeValues: key.values,
		ConsistentRead:            &consistent,
	}
	var out []item
	// limit asks for the entries still wanted and the counter after them.
	limit := func() int32 { return int32(min(count-int64(len(out)), math.MaxInt32-1) + 1) }
	first := limit()
	in.Limit = &first
	now := p.now()
	missing, counter := int64(0), int64(-1)
	err := ddbx.Query(ctx, p.api, in, limit, func(av map[string]ddbtypes.AttributeValue) (bool, error) {
		it, err := unmarshal(av)
		if err != nil { // keeps its number: the caller skips and reports it
			it = p.badItem(l.kind, av, err)
		}
		next := since + 1 + int64(len(out))
		switch {
		case it.SK == l.counter:
			counter = it.Seq
			return false, nil
		case !it.numbered(l.prefix):
			return true, nil // a sort key no entry has (written by hand): not the log's
		case it.Seq != next || (it.bad == nil && !it.live(now)):
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
		return nil, fmt.Errorf("dynamodb: %s: %w: %s %d after cursor %d is no longer retained",
			op, provider.ErrCursorExpired, l.what, since+1, since)
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
				recs, last, err := p.readEvents(ctx, op, pipelineID, fromOldest, since, followPage)
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
