package ddbprovider

import (
	"context"
	"fmt"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/internal/ddbx"
	"github.com/pipestate/pipestate/internal/ids"
	"github.com/pipestate/pipestate/internal/signal"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// runItems returns a run's truth item (with its key in the index ACTIVE while
// the run is unfinished) and list copy, both expiring at exp (zero: never).
func runItems(r types.RunState, exp time.Time) (truth, list item, err error) {
	data, err := encode(r)
	if err != nil {
		return truth, list, err
	}
	v := r.Version
	list = item{PK: pipelinePrefix + r.PipelineID, SK: skRun + ids.TimeKey(r.CreatedAt) + "#" + r.RunID, Data: data}
	truth = item{PK: runPrefix + r.RunID, SK: skState, Data: data, Version: &v, ListPK: list.PK, ListSK: list.SK}
	truth.setActive(r)
	truth.setExpiry(exp)
	list.setExpiry(exp)
	return truth, list, nil
}

// PutRunState implements provider.RunStore: the truth item and the pipeline's list
// copy change in one TransactWriteItems. A re-put that changes CreatedAt moves the
// list copy (a second transaction deletes the old copy and writes the new one);
// re-putting a run under another pipeline is ErrInvalidArgument.
func (p *Provider) PutRunState(ctx context.Context, run types.RunState) error {
	now := p.now()
	run, err := provider.PrepareRunState(run, now)
	if err := p.life.EnterWrite(ctx, "PutRunState", err); err != nil {
		return err
	}
	truth, list, err := runItems(run, provider.Expiry(now, p.retention.Runs))
	if err != nil {
		return err
	}
	return p.putPair(ctx, "PutRunState", truth, list, func(old item) error {
		if old.ListPK != list.PK && old.live(now) { // an expired run is missing: it may move
			return provider.Invalidf("run %s belongs to another pipeline than %s", run.RunID, run.PipelineID)
		}
		return nil
	}, nil, guardOf(ctx, "run "+run.RunID))
}

// putPair writes a truth item and its list copy (truth.ListPK/ListSK name the copy)
// in one TransactWriteItems whose condition says the truth item is new or points at
// the same copy. When it points elsewhere, check (if set) may refuse the move;
// otherwise the write is repeated with the old copy's deletion in the same
// transaction, conditioned on the truth item still pointing at it. So the truth and
// its one list copy always change together. A non-nil entry is a marker-log entry
// written in the same transaction (see logEntry). The truth item is written with
// an update (putUpdate), which keeps its fence attributes and checks g's fence;
// a refusal of g's fence (checked after check) is returned.
//
// When this instance made the truth item's last write (p.lists) and the copy
// moves within its partition (a marker's rewrite, a run's new CreatedAt), the
// first attempt already moves it from there, on condition that the truth item
// is new or still points there: a refused attempt is then paid only when
// another instance moved the copy since. (check passes on a copy in list's
// partition, so skipping it on the hinted attempt skips nothing.)
func (p *Provider) putPair(ctx context.Context, op string, truth, list item, check func(old item) error, entry *logEntry, g guard) error {
	tav, err := marshal(truth)
	if err != nil {
		return err
	}
	lav, err := marshal(list)
	if err != nil {
		return err
	}
	putList := p.txPut(lav, expr{})
	at := listKey{list.PK, list.SK}
	var old *item // the copy the truth item points at, once known
	// Where this instance last put the copy.
	from, hinted := p.lists.get(hintKey(truth))
	hinted = hinted && from.pk == at.pk && from != at
	for lost, conflicts := 0, 0; ; {
		cond := pointsAt(condNewOrList, list.PK, list.SK)
		switch {
		case old != nil:
			cond, from = pointsAt(condList, old.ListPK, old.ListSK), listKey{old.ListPK, old.ListSK}
		case hinted:
			cond = pointsAt(condNewOrList, from.pk, from.sk)
		default:
			from = at
		}
		items := []ddbtypes.TransactWriteItem{p.txUpdate(tav, cond, g), putList}
		if from != at {
			items = append(items, p.txDelete(from.pk, from.sk))
		}
		claimAt := len(items)
		if entry != nil {
			actions, err := p.logActions(entry)
			if err != nil {
				return err
			}
			items = append(items, actions...)
		}
		err = p.transact(ctx, op, items...)
		if err == nil {
			if entry != nil {
				p.markerSeq.Store(entry.last + 1)
			}
			p.putList(truth)
			return nil
		}
		seqLost := false
		if entry != nil {
			if av, failed := ddbx.TxConditionFailed(err, claimAt); failed {
				// Another write took the number; the failure carries the counter.
				c, err := unmarshal(av)
				if err != nil {
					return err
				}
				p.markerSeq.Store(c.Seq)
				if c.Tok == entry.tok { // an SDK retry of this very write, whose response was lost
					return nil
				}
				entry.last, seqLost = c.Seq, true
			}
		}
		av, truthLost := ddbx.TxConditionFailed(err, 0)
		if seqLost || truthLost {
			if lost++; seqLost {
				if err := p.lostRace(ctx, op, signal.ReasonSequenceRace, lost, err); err != nil {
					return err
				}
			} else if lost >= maxLostRaces {
				return fmt.Errorf("dynamodb: %s: %w: %w", op, provider.ErrContention, err)
			}
			if !truthLost {
				continue
			}
			// The truth item is not what this attempt assumed; the failure carries it.
			hinted = false
			if av == nil { // deleted meanwhile: write it as new
				old = nil
				continue
			}
			o, err := unmarshal(av)
			if err != nil {
				return err
			}
			if check != nil {
				if err := check(o); err != nil {
					return err
				}
			}
			if err := g.refusedItem(o); err != nil {
				return fmt.Errorf("dynamodb: %s: %w", op, err)
			}
			old = &o
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

// listKey is the key of a truth item's list copy.
type listKey struct{ pk, sk string }

// putList remembers where this instance put truth's list copy (see putPair).
func (p *Provider) putList(truth item) {
	p.lists.put(hintKey(truth), listKey{truth.ListPK, truth.ListSK})
}

// hintKey is the key of truth's hint in p.lists.
func hintKey(truth item) string { return truth.PK + "\x00" + truth.SK }

// pointsAt is f (a condition that includes the one that a truth item's list copy
// is (pk, sk): condList, condNewOrList or condVersionList) with pk and sk.
func pointsAt(f *form, pk, sk string) expr {
	values := make(map[string]ddbtypes.AttributeValue, 3)
	values[":lpk"], values[":lsk"] = sv(pk), sv(sk)
	return expr{f, values}
}

// GetRunState implements provider.RunStore with one GetItem.
func (p *Provider) GetRunState(ctx context.Context, runID string) (*types.RunState, error) {
	if err := p.life.Enter(ctx, provider.CheckID("run ID", runID)); err != nil {
		return nil, err
	}
	return getData[types.RunState](ctx, p, "GetRunState", provider.KindRunState, runPrefix+runID, skState)
}

// ListRuns implements provider.RunStore with one strongly consistent Query of the
// list copies, newest CreatedAt first (ties by RunID, descending).
func (p *Provider) ListRuns(ctx context.Context, pipelineID string, limit int) ([]types.RunState, error) {
	if err := p.life.Enter(ctx, provider.CheckID("pipeline ID", pipelineID), provider.CheckLimit(limit)); err != nil {
		return nil, err
	}
	return nonNil(queryData[types.RunState](ctx, p, "ListRuns",
		queryIn{kind: provider.KindRunState, key: partition(pipelinePrefix+pipelineID, skRun), desc: true, limit: limit, id: timedID(skRun)}))
}

// CompareAndSwapRunState implements provider.RunStore with one TransactWriteItems:
// the truth item is replaced on condition that its version is expectedVersion and
// it belongs to newState's pipeline with the same list copy, and the list copy is
// replaced with it. A failed condition returns the stored item
// (ReturnValuesOnConditionCheckFailure), which tells a missing run or a version
// mismatch ((false, nil)) from another pipeline (ErrInvalidArgument) from a
// newState.CreatedAt that is not the stored one: then the swap is retried with
// the stored CreatedAt, which CAS never changes (again each time a concurrent
// put moves it, up to maxLostRaces, then provider.ErrContention). A zero
// newState.CreatedAt costs a GetItem first.
func (p *Provider) CompareAndSwapRunState(ctx context.Context, runID string, expectedVersion int, newState types.RunState) (bool, error) {
	const op = "CompareAndSwapRunState"
	if err := p.life.EnterWrite(ctx, op, provider.CheckCAS(runID, expectedVersion, newState)); err != nil {
		return false, err
	}
	// stale reports how an old truth item fails the swap: (false, nil) to give up
	// with (false, nil), an error, or (true, nil) when only CreatedAt differs.
	now := p.now()
	g := guardOf(ctx, "run "+runID)
	stale := func(o item) (retry bool, err error) {
		if !o.live(now) { // an expired run is missing
			return false, nil
		}
		if o.ListPK != pipelinePrefix+newState.PipelineID {
			return false, provider.Invalidf("run %s belongs to another pipeline than %s", runID, newState.PipelineID)
		}
		if err := g.refusedItem(o); err != nil { // the fence before the version
			return false, fmt.Errorf("dynamodb: %s: %w", op, err)
		}
		if o.Version == nil || *o.Version != expectedVersion {
			return false, nil
		}
		var old types.RunState
		if err := decodeData(tableName(p.table), provider.KindRunState, o, &old); err != nil {
			return false, err
		}
		newState.CreatedAt = old.CreatedAt
		return true, nil
	}
	newState.Version = expectedVersion + 1
	newState.UpdatedAt = now
	tok := ids.Random()
	// swap encodes newState into the swap's transaction. It runs before any I/O, so
	// a newState that cannot be stored is refused before anything is read. (With a
	// zero CreatedAt the stored one is not known yet and the zero time stands in: a
	// newState within a few bytes of the size limit may still be refused, with
	// ErrTooLarge, after the read.)
	swap := func() ([]ddbtypes.TransactWriteItem, error) {
		truth, list, err := runItems(newState, provider.Expiry(now, p.retention.Runs))
		if err != nil {
			return nil, err
		}
		truth.Tok = tok
		tav, err := marshal(truth)
		if err != nil {
			return nil, err
		}
		lav, err := marshal(list)
		if err != nil {
			return nil, err
		}
		cond := pointsAt(condVersionList, list.PK, list.SK)
		cond.values[":v"] = nv(int64(expectedVersion))
		cond.values[":now"] = nv(unixNano(now))
		return []ddbtypes.TransactWriteItem{p.txUpdate(tav, cond, g), p.txPut(lav, expr{})}, nil
	}
	items, err := swap()
	if err != nil {
		return false, err
	}
	if newState.CreatedAt.IsZero() {
		o, ok, err := p.get(ctx, op, runPrefix+runID, skState)
		if err != nil || !ok {
			return false, err
		}
		if retry, err := stale(o); !retry {
			return false, err
		}
		if items, err = swap(); err != nil {
			return false, err
		}
	}
	for conflicts, lost := 0, 0; ; {
		cause := p.transact(ctx, op, items...)
		if cause == nil {
			return true, nil
		}
		if av, failed := ddbx.TxConditionFailed(cause, 0); failed {
			if av == nil {
				return false, nil
			}
			o, err := unmarshal(av)
			if err != nil {
				return false, err
			}
			if o.Tok == tok { // an SDK retry of our own swap, whose response was lost
				return true, nil
			}
			retry, serr := stale(o)
			if !retry { // lost, wrong pipeline, fenced
				return false, serr
			}
			// Only the list copy differs: a put with another CreatedAt moved it
			// since newState's (or the read's). That writer made progress, so
			// retry at once with where the copy is now.
			lost++
			if err := p.lostRace(ctx, op, signal.ReasonCASConflict, lost, cause); err != nil {
				return false, err
			}
			if items, err = swap(); err != nil {
				return false, err
			}
			continue
		}
		if !ddbx.IsTxConflict(cause) {
			return false, fmt.Errorf("dynamodb: %s: %w", op, cause)
		}
		if err := p.conflictWait(ctx, op, conflicts, cause); err != nil {
			return false, err
		}
		conflicts++
	}
}

// CreateRunState implements provider.RunCreator with one TransactWriteItems: the
// truth item, on condition that no item has its key, and the list copy. The truth
// item carries the call's token, and the transaction the SDK's idempotency token,
// so a call whose reply was lost and which the SDK retried reports its own
// creation: DynamoDB answers the retried token with the first attempt's success
// (for 10 minutes), and a refusal that shows the call's own token is one too.
// A transaction cancelled by a concurrent one is run again after a backoff.
func (p *Provider) CreateRunState(ctx context.Context, run types.RunState) (bool, error) {
	const op = "CreateRunState"
	now := p.now()
	run, err := provider.PrepareCreateRun(run, now)
	if err := p.life.EnterWrite(ctx, op, err); err != nil {
		return false, err
	}
	truth, list, err := runItems(run, provider.Expiry(now, p.retention.Runs))
	if err != nil {
		return false, err
	}
	truth.Tok = ids.Random()
	tav, err := marshal(truth)
	if err != nil {
		return false, err
	}
	lav, err := marshal(list)
	if err != nil {
		return false, err
	}
	// An expired run is missing: the create writes over it (its old list copy,
	// if it sorts elsewhere, is expired too, and DynamoDB's TTL deletes it).
	g := guardOf(ctx, "run "+run.RunID)
	putTruth := p.txUpdate(tav, expr{condNewOrExpired, map[string]ddbtypes.AttributeValue{":now": nv(unixNano(now))}}, g)
	putList := p.txPut(lav, expr{})
	for conflicts := 0; ; conflicts++ {
		err := p.transact(ctx, op, putTruth, putList)
		if err == nil {
			p.putList(truth)
			return true, nil
		}
		if av, failed := ddbx.TxConditionFailed(err, 0); failed { // av is the run that exists
			o, err := unmarshal(av)
			if err != nil {
				return false, err
			}
			if o.Tok == truth.Tok { // an SDK retry of our own create, whose response was lost
				p.putList(truth)
				return true, nil
			}
			if err := g.refusedItem(o); err != nil { // the fence before the run's existence
				return false, fmt.Errorf("dynamodb: %s: %w", op, err)
			}
			return false, nil
		}
		if !ddbx.IsTxConflict(err) {
			return false, fmt.Errorf("dynamodb: %s: %w", op, err)
		}
		if err := p.conflictWait(ctx, op, conflicts, err); err != nil {
			return false, err
		}
	}
}
