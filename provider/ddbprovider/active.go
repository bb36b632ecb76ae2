package ddbprovider

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"golang.org/x/sync/errgroup"

	"github.com/pipestate/pipestate/internal/ddbx"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// The active-runs index (see "Active runs" in the package doc): the sparse GSI
// ACTIVE, keyed by activePK (one of activeShards shards, by a hash of the RunID)
// and activeSK (the RunID), projecting the keys only. A run's truth item carries
// both attributes exactly while its status is not terminal; they are written
// and removed by the run write itself (runItems; putUpdate removes what an item
// lacks), so the index is atomic with the truth, up to the GSI's propagation.

// activeShards is the number of index partitions the runs are spread over, so
// that one partition's write rate (1,000 WCU/s on AWS) does not cap the rate of
// runs starting and finishing. It is part of the stored format: a reader reads
// exactly these shards.
const activeShards = 16

// activePrefix starts every activePK.
const activePrefix = "ACTIVE#"

// activeShard is the activePK of run runID.
func activeShard(runID string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(runID))
	return fmt.Sprintf("%s%02d", activePrefix, h.Sum32()%activeShards)
}

// setActive gives truth, the truth item of run r, its index key while r is
// unfinished, and none once it is finished.
func (it *item) setActive(r types.RunState) {
	it.ActivePK, it.ActiveSK = "", ""
	if !r.Status.Terminal() {
		it.ActivePK, it.ActiveSK = activeShard(r.RunID), r.RunID
	}
}

// checkActive reports index attributes that are not the ones their item's key
// gives (only a run's truth item RUN#{id} STATE carries them, as activeShard(id)
// and id): such an item is corrupt, as one whose seq disagrees with its key.
func (it *item) checkActive() error {
	if it.ActivePK == "" && it.ActiveSK == "" {
		return nil
	}
	if it.PK != runPrefix+it.ActiveSK || it.SK != skState || it.ActivePK != activeShard(it.ActiveSK) {
		return fmt.Errorf("dynamodb: corrupt item: attributes %s %q and %s %q are not the index key of item %s %s",
			attrActPK, it.ActivePK, attrActSK, it.ActiveSK, it.PK, it.SK)
	}
	return nil
}

// ErrNoActiveRunIndex is wrapped by ListActiveRuns's error when the table has no
// index ACTIVE yet, or DynamoDB is still building it: see EnsureActiveRunIndex.
// Run writes do not need the index and keep working.
var ErrNoActiveRunIndex = errors.New("dynamodb: the table has no usable active-runs index ACTIVE (see EnsureActiveRunIndex)")

// noIndex reports whether err is DynamoDB refusing a Query of an index that
// the table lacks or is still backfilling.
func noIndex(err error) bool {
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "ValidationException" {
		return false
	}
	msg := strings.ToLower(ae.ErrorMessage())
	return strings.Contains(msg, "specified index") || strings.Contains(msg, "backfilling")
}

// keyActive is the key condition of one shard of ACTIVE after a RunID, and
// keyActiveAll of all of it (DynamoDB refuses an empty string in a key
// condition).
var (
	keyActive    = &form{"#pk = :pk AND #sk > :after", map[string]string{"#pk": attrActPK, "#sk": attrActSK}}
	keyActiveAll = &form{"#pk = :pk", map[string]string{"#pk": attrActPK}}
)

// maxActivePage bounds the Limit of one shard's Query.
const maxActivePage = 1000

// activeShardReader reads one shard of ACTIVE in ascending RunID order.
type activeShardReader struct {
	pk    string
	ids   []string                           // RunIDs read and not yet taken
	start map[string]ddbtypes.AttributeValue // where the next Query starts; nil: after the cursor
	done  bool                               // the shard has nothing more
	page  int32                              // the last Query's Limit
	after string                             // the cursor
}

// fetch reads the next page of the shard, of at least want entries, into r.ids.
// An entry whose attributes are not its item's index key is reported as corrupt
// (provider.SkipCorrupt) and skipped.
func (r *activeShardReader) fetch(ctx context.Context, p *Provider, op string, want int) error {
	r.page = int32(min(max(int64(want), 2*int64(r.page)), maxActivePage))
	fwd, index := true, indexActive
	key := expr{keyActiveAll, map[string]ddbtypes.AttributeValue{":pk": sv(r.pk)}}
	if r.after != "" {
		key = expr{keyActive, map[string]ddbtypes.AttributeValue{":pk": sv(r.pk), ":after": sv(r.after)}}
	}
	in := &ddb.QueryInput{
		TableName:                 &p.table,
		IndexName:                 &index,
		KeyConditionExpression:    &key.text,
		ExpressionAttributeNames:  key.names,
		ExpressionAttributeValues: key.values,
		ScanIndexForward:          &fwd,
		Limit:                     &r.page,
		ExclusiveStartKey:         r.start,
	}
	out, err := p.api.Query(ctx, in, p.sdk(op))
	if err != nil {
		if noIndex(err) {
			return fmt.Errorf("dynamodb: %s: %w: table %s: %w", op, ErrNoActiveRunIndex, p.table, err)
		}
		return fmt.Errorf("dynamodb: %s: %w", op, err)
	}
	for _, av := range out.Items {
		it, err := unmarshal(av)
		if err == nil && it.ActivePK != r.pk {
			err = fmt.Errorf("dynamodb: corrupt item: in index shard %s with %s %q", r.pk, attrActPK, it.ActivePK)
		}
		if err != nil {
			if provider.SkipCorrupt(ctx, p.sig, p.badItem(provider.KindRunState, av, err).bad) {
				continue
			}
			return err
		}
		r.ids = append(r.ids, it.ActiveSK)
	}
	r.start = out.LastEvaluatedKey
	r.done = len(out.LastEvaluatedKey) == 0
	return nil
}

// activeMerge merges the shards of ACTIVE into one ascending RunID order.
type activeMerge struct {
	shards []*activeShardReader
}

func newActiveMerge(after string) *activeMerge {
	m := &activeMerge{}
	for i := range activeShards {
		m.shards = append(m.shards, &activeShardReader{pk: fmt.Sprintf("%s%02d", activePrefix, i), after: after})
	}
	return m
}

// next returns up to want RunIDs, the next in ascending order across the shards,
// reading (concurrently) the shards whose read entries ran out; none when every
// shard is exhausted. A shard is read again only once all its entries read were
// taken, so each entry is read once.
func (m *activeMerge) next(ctx context.Context, p *Provider, op string, want int) ([]string, error) {
	for {
		g, gctx := errgroup.WithContext(ctx)
		for _, r := range m.shards {
			if len(r.ids) == 0 && !r.done {
				g.Go(func() error { return r.fetch(gctx, p, op, max(want*2/activeShards, 16)) })
			}
		}
		if err := g.Wait(); err != nil {
			return nil, ctxErr(ctx, err)
		}
		var out []string
		for len(out) < want {
			var head *activeShardReader
			blocked := false
			for _, r := range m.shards {
				if len(r.ids) == 0 {
					blocked = blocked || !r.done // its next entry is not known yet
					continue
				}
				if head == nil || r.ids[0] < head.ids[0] {
					head = r
				}
			}
			if blocked || head == nil {
				break
			}
			out = append(out, head.ids[0])
			head.ids = head.ids[1:]
		}
		if len(out) > 0 || m.exhausted() {
			return out, nil
		}
	}
}

// exhausted reports whether every shard has been read to its end and taken.
func (m *activeMerge) exhausted() bool {
	return !slices.ContainsFunc(m.shards, func(r *activeShardReader) bool { return len(r.ids) > 0 || !r.done })
}

// activeReads bounds the truth reads of ListActiveRuns in flight.
const activeReads = 16

// activeTruths reads the truth of the runs ids (strongly consistent GetItems,
// activeReads at a time) and returns, in the order of ids, those that are live
// and match filter; a corrupt one is reported (provider.SkipCorrupt) and
// skipped, a missing one (deleted) skipped.
func (p *Provider) activeTruths(ctx context.Context, op string, ids []string, filter provider.ActiveRunFilter) ([]types.RunState, error) {
	got := make([]*types.RunState, len(ids))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(activeReads)
	for i, id := range ids {
		g.Go(func() error {
			r, err := getData[types.RunState](gctx, p, op, provider.KindRunState, runPrefix+id, skState)
			if err != nil && provider.SkipCorrupt(gctx, p.sig, err) {
				return nil
			}
			got[i] = r
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, ctxErr(ctx, err)
	}
	var out []types.RunState
	for _, r := range got {
		if r != nil && filter.Match(*r) {
			out = append(out, *r)
		}
	}
	return out, nil
}

// ListActiveRuns implements provider.ActiveRunLister with the sparse index
// ACTIVE (see "Active runs" in the package doc): one Query of each of its 16
// shards after the cursor (concurrently; again for a shard whose page was
// used up), merged in RunID order, then one strongly consistent GetItem of each
// run's truth (16 in flight), which alone decides what is shown: a run is
// listed only when its truth is live, unfinished and matches filter. A table
// without the index (or while DynamoDB builds it) fails with an error wrapping
// ErrNoActiveRunIndex.
func (p *Provider) ListActiveRuns(ctx context.Context, filter provider.ActiveRunFilter, cursor string, limit int) ([]types.RunState, string, error) {
	const op = "ListActiveRuns"
	if err := p.life.Enter(ctx, provider.CheckActiveRuns(filter, cursor, limit)); err != nil {
		return nil, "", err
	}
	m := newActiveMerge(cursor)
	var out []types.RunState
	for len(out) < limit {
		ids, err := m.next(ctx, p, op, limit-len(out))
		if err != nil {
			return nil, "", err
		}
		if len(ids) == 0 {
			break
		}
		runs, err := p.activeTruths(ctx, op, ids, filter)
		if err != nil {
			return nil, "", err
		}
		out = append(out, runs...)
	}
	page, next := provider.ActivePage(out, limit)
	return page, next, nil
}

var _ provider.ActiveRunReindexer = (*Provider)(nil)

// reindexAttempts bounds how often ReindexRun reads a run that keeps changing
// under it.
const reindexAttempts = 5

// Update expressions and the condition of ReindexRun: the index key set or
// removed only while the run's version and body are the ones read.
var (
	activeSet     = &form{"SET #apk = :apk, #ask = :ask", map[string]string{"#apk": attrActPK, "#ask": attrActSK}}
	activeRemove  = &form{"REMOVE #apk, #ask", map[string]string{"#apk": attrActPK, "#ask": attrActSK}}
	condUnchanged = map[string]string{"#ver": attrVer, "#data": attrData}
)

// ReindexRun implements provider.ActiveRunReindexer: a strongly consistent
// GetItem of the run's truth item and, when its index key is not what its
// status wants (an unfinished run without it: removed by hand, or written by a
// version before the index; a finished one with it), one conditional
// UpdateItem that sets or removes activePK and activeSK on condition that the
// item's version and body are still the ones read, so it writes nothing else of
// the run (no version, UpdatedAt or expiry) and never indexes a run that
// changed meanwhile (then it reads it again, at most 5 times, then
// ErrContention). The update is idempotent: the SDK's retry after a lost reply
// finds its own result. A missing or expired run changes nothing (DynamoDB's
// TTL deletes an expired item with its index key; listings skip it until then).
func (p *Provider) ReindexRun(ctx context.Context, runID string) (bool, error) {
	const op = "ReindexRun"
	if err := p.life.EnterWrite(ctx, op, provider.CheckID("run ID", runID)); err != nil {
		return false, err
	}
	pk := runPrefix + runID
	for range reindexAttempts {
		it, ok, err := p.getRecord(ctx, op, provider.KindRunState, pk, skState)
		if err != nil || !ok || !it.live(p.now()) {
			return false, err
		}
		var run types.RunState
		if err := decodeData(tableName(p.table), provider.KindRunState, it, &run); err != nil {
			return false, err
		}
		want := it
		want.setActive(run)
		if want.ActivePK == it.ActivePK && want.ActiveSK == it.ActiveSK {
			return false, nil
		}
		if it.Version == nil || it.Data == nil {
			return false, p.badItem(provider.KindRunState, it.attrs(), errors.New("a run's truth item without version or data")).bad
		}
		names := map[string]string{}
		values := map[string]ddbtypes.AttributeValue{":ver": nv(int64(*it.Version)), ":data": it.Data.attr()}
		update := activeRemove
		if want.ActivePK != "" {
			update = activeSet
			values[":apk"], values[":ask"] = sv(want.ActivePK), sv(want.ActiveSK)
		}
		for k, v := range update.names {
			names[k] = v
		}
		for k, v := range condUnchanged {
			names[k] = v
		}
		cond := "#ver = :ver AND #data = :data"
		_, err = p.api.UpdateItem(ctx, &ddb.UpdateItemInput{
			TableName: &p.table, Key: key(pk, skState),
			UpdateExpression: &update.text, ConditionExpression: &cond,
			ExpressionAttributeNames: names, ExpressionAttributeValues: values,
		}, p.sdk(op))
		switch {
		case err == nil:
			return true, nil
		case !ddbx.IsConditionFailed(err):
			return false, fmt.Errorf("dynamodb: %s: %w", op, err)
		}
	}
	return false, fmt.Errorf("dynamodb: %s %s: %w: the run changed under %d reads", op, runID, provider.ErrContention, reindexAttempts)
}
