package redisprovider

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/pipestate/pipestate/internal/ids"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// PutRunState implements provider.RunStore in three round trips: the pipeline's run
// list gets a provisional entry, one script writes the run (refusing, with
// ErrInvalidArgument, a RunID stored under another pipeline), then the list entry is
// set. See "Cross-slot writes" in the package doc.
func (p *Provider) PutRunState(ctx context.Context, run types.RunState) error {
	run, err := provider.PrepareRunState(run, p.now())
	if err = p.life.EnterWrite(ctx, "put run state", err); err != nil {
		return err
	}
	old, ok, err := p.putRun(ctx, "put run state", run, putStrict)
	if err == nil && !ok {
		return provider.Invalidf("run %s belongs to pipeline %s, not %s", run.RunID, old, run.PipelineID)
	}
	return err
}

// CreateRunState implements provider.RunCreator with PutRunState's three steps,
// whose script stores the run only if its RunID does not exist: 3 round trips
// when it creates the run, 2 when the run exists. Of concurrent creates of one
// RunID the script runs one first, and only that one stores the run; the others
// change nothing and leave the pipeline's list to the stored run. A create that
// go-redis retried after a lost reply finds its call's marker and reports its
// first attempt's creation (see "Retries" in the package doc).
func (p *Provider) CreateRunState(ctx context.Context, run types.RunState) (bool, error) {
	run, err := provider.PrepareCreateRun(run, p.now())
	if err = p.life.EnterWrite(ctx, "create run state", err); err != nil {
		return false, err
	}
	_, ok, err := p.putRun(ctx, "create run state", run, putCreate)
	return ok, err
}

// putRun writes a prepared run and its entry in its pipeline's run list with
// putIndexed, after its caller opened the method; it returns the previous
// pipeline and whether mode accepted the write. A run too large to store is its
// last argument check.
func (p *Provider) putRun(ctx context.Context, op string, run types.RunState, mode putMode) (string, bool, error) {
	data, err := p.encode(run)
	if err != nil {
		return "", false, err
	}
	rec := indexedRecord{
		key: p.k.run(run.RunID), id: run.RunID, member: ids.TimeKey(run.CreatedAt) + run.RunID, data: data,
		pipeline: run.PipelineID,
		lists:    []index{p.k.runs(run.PipelineID)},
		mode:     mode,
		fields:   map[string]string{"v": strconv.Itoa(run.Version), "c": run.CreatedAt.Format(time.RFC3339Nano)},
		life:     lifetimeOf(p.now(), p.retention.Runs),
		truth:    p.k.run,
		fences:   p.k.fences(p.k.run(run.RunID)),
		kind:     provider.KindRunState,
	}
	if active := p.k.activeRuns(); run.Status.Terminal() {
		rec.drop = []index{active}
	} else {
		rec.lists = append(rec.lists, active)
		rec.members = map[index]string{active: run.RunID}
	}
	return p.putIndexed(ctx, op, rec)
}

// GetRunState implements provider.RunStore with one HMGET.
func (p *Provider) GetRunState(ctx context.Context, runID string) (*types.RunState, error) {
	if err := p.life.Enter(ctx, provider.CheckID("run ID", runID)); err != nil {
		return nil, err
	}
	v, err := p.c.HMGet(ctx, p.k.run(runID), "j", "c", "x").Result()
	if err != nil {
		return nil, p.wrap("get run state", err)
	}
	j, ok := v[0].(string)
	if !ok || !aliveField(v[2], p.now()) {
		return nil, nil
	}
	c, _ := v[1].(string)
	var r types.RunState
	if err := decodeRun(record{json: j, created: c}, runID, p.k.run(runID), &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// decodeRun decodes the run runID kept at key into *run and restores its
// CreatedAt, which CAS never changes and so keeps in its own field; a JSON or a
// created time that does not decode is a *provider.CorruptError. It is
// listIndexed's decode of runs too.
func decodeRun(r record, runID, key string, run *types.RunState) error {
	name := func() (string, string) { return runID, where(key, "") }
	if err := decode(provider.KindRunState, r.json, run, name); err != nil {
		return err
	}
	c, err := time.Parse(time.RFC3339Nano, r.created)
	if err != nil {
		return corrupt(provider.KindRunState, runID, where(key, ""), fmt.Errorf("created time field c %q: %w", r.created, err))
	}
	run.CreatedAt = c
	return nil
}

// ListRuns implements provider.RunStore: one read of the pipeline's run list, then
// one pipelined read of the runs (a round trip per node on a cluster), newest
// CreatedAt first, ties by RunID descending. The list only orders; every run returned
// is read from its truth, so it reflects the latest CAS.
func (p *Provider) ListRuns(ctx context.Context, pipelineID string, limit int) ([]types.RunState, error) {
	if err := p.life.Enter(ctx, provider.CheckID("pipeline ID", pipelineID), provider.CheckLimit(limit)); err != nil {
		return nil, err
	}
	return listIndexed(ctx, p, "list runs", listSpec{
		kind:  provider.KindRunState,
		ix:    p.k.runs(pipelineID),
		desc:  true,
		timed: true,
		key:   p.k.run,
		want: func(r record) string {
			if r.pipeline != pipelineID || !r.hasJSON {
				return ""
			}
			return r.member
		},
	}, limit, decodeRun)
}

// CompareAndSwapRunState implements provider.RunStore with one script that compares
// the stored version and writes the new state. The stored CreatedAt is kept; Version
// becomes expectedVersion+1 and UpdatedAt the provider clock's now. The run's list
// entry never changes (it orders by CreatedAt), so CAS touches one slot. A CAS that
// go-redis retried after a lost reply reports its first attempt's swap (see
// "Retries" in the package doc).
func (p *Provider) CompareAndSwapRunState(ctx context.Context, runID string, expectedVersion int, newState types.RunState) (bool, error) {
	const op = "compare and swap run state"
	if err := p.life.EnterWrite(ctx, op, provider.CheckCAS(runID, expectedVersion, newState)); err != nil {
		return false, err
	}
	newState.Version = expectedVersion + 1
	newState.UpdatedAt = p.now()
	newState.CreatedAt = time.Time{} // the stored one is restored on read
	data, err := p.encode(newState)
	if err != nil {
		return false, err
	}
	key, active, stamp := p.k.run(runID), p.k.activeRuns(), newState.UpdatedAt.UnixMilli()
	if !newState.Status.Terminal() { // step 1 of a write that wants an entry (index.go)
		if _, err := p.runBatch(ctx, op, []call{idxCall(active, "p", runID, runID, stamp)}); err != nil {
			return false, err
		}
	}
	life := lifetimeOf(newState.UpdatedAt, p.retention.Runs)
	keys, args, t, fenced := fenceArgs(ctx, p.k.fences(key), []string{key, p.k.newCall(key)}, []any{int64(expectedVersion),
		newState.PipelineID, data, int64(newState.Version), callMemoryMS, life.now, life.exp, life.ttl})
	c := p.run(ctx, scriptRunCAS, keys, args...)
	n, err := c.Int64()
	if fenced && c.Err() == nil {
		n, err = fenceReply(op, c.Val(), t, provider.KindRunState, runID)
		if err != nil {
			return false, err
		}
	}
	switch {
	case err != nil:
		return false, p.wrap(op, err)
	case n < 0:
		return false, provider.Invalidf("run %s belongs to another pipeline than %s", runID, newState.PipelineID)
	case n == 0:
		return false, nil
	}
	// n is the run's new sequence: its active-runs entry follows the swap (a
	// failure here leaves what readers repair: a provisional entry of an
	// unfinished run, or a finished run's entry, which no reader shows).
	set := setCall(active, runID, runID, n, stamp, life.exp)
	if newState.Status.Terminal() {
		set = setCall(active, runID, "", n, p.stampBound(), 0)
	}
	_, _ = p.runBatch(ctx, op, []call{set})
	return true, nil
}

// ListActiveRuns implements provider.ActiveRunLister with the active-runs index,
// a list like ListRuns's (see "Cross-slot writes" in the package doc): one read
// of a page of the index, then one pipelined read of the runs' truth (a round
// trip per node on a cluster), for each page of up to 256 unfinished runs; the
// filter is applied to the truth. A run is shown only when its truth says it is
// unfinished and live, whatever its entry says.
func (p *Provider) ListActiveRuns(ctx context.Context, filter provider.ActiveRunFilter, cursor string, limit int) ([]types.RunState, string, error) {
	if err := p.life.Enter(ctx, provider.CheckActiveRuns(filter, cursor, limit)); err != nil {
		return nil, "", err
	}
	out, err := listIndexed(ctx, p, "list active runs", listSpec{
		kind:  provider.KindRunState,
		ix:    p.k.activeRuns(),
		key:   p.k.run,
		after: cursor,
		want:  wantActive,
	}, limit, func(r record, id, key string, v *types.RunState) error {
		if err := decodeRun(r, id, key, v); err != nil {
			return err
		}
		if !filter.Match(*v) {
			return errFiltered
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	page, next := provider.ActivePage(out, limit)
	return page, next, nil
}

// wantActive is the member a run's truth wants in the active-runs index: its
// RunID while its status is not terminal. A JSON that does not decode keeps its
// entry, so that the listing reports it as corrupt.
func wantActive(r record) string {
	if !r.hasJSON || len(r.member) <= ids.TimeKeyLen {
		return ""
	}
	id := r.member[ids.TimeKeyLen:]
	var s struct {
		Status types.RunStatus `json:"status"`
	}
	if json.Unmarshal([]byte(r.json), &s) == nil && s.Status.Terminal() {
		return ""
	}
	return id
}
