package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

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
	if err != nil {
		return err
	}
	data, err := p.encode(run)
	if err != nil {
		return err
	}
	if err := p.begin(ctx); err != nil {
		return err
	}
	member := ids.TimeKey(run.CreatedAt) + run.RunID
	old, ok, err := p.putIndexed(ctx, "put run state", p.k.run(run.RunID), run.RunID, member, data, run.PipelineID, true,
		[]listEntry{{p.k.runs(run.PipelineID), member}}, nil,
		"v", run.Version, "c", run.CreatedAt.Format(time.RFC3339Nano))
	if err == nil && !ok {
		return provider.Invalidf("run %s belongs to pipeline %s, not %s", run.RunID, old, run.PipelineID)
	}
	return err
}

// GetRunState implements provider.RunStore with one HMGET.
func (p *Provider) GetRunState(ctx context.Context, runID string) (*types.RunState, error) {
	if err := provider.CheckID("run ID", runID); err != nil {
		return nil, err
	}
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	v, err := p.c.HMGet(ctx, p.k.run(runID), "j", "c").Result()
	if err != nil {
		return nil, p.wrap("get run state", err)
	}
	j, ok := v[0].(string)
	if !ok {
		return nil, nil
	}
	c, _ := v[1].(string)
	r, err := decodeRun(record{json: j, created: c})
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// decodeRun decodes a run and restores its CreatedAt, which CAS never changes and so
// keeps in its own field.
func decodeRun(r record) (types.RunState, error) {
	run, err := decode[types.RunState]("run state", r.json)
	if err != nil {
		return run, err
	}
	if err := restoreCreated(&run, r); err != nil {
		return run, err
	}
	return run, nil
}

func restoreCreated(run *types.RunState, r record) error {
	c, err := time.Parse(time.RFC3339Nano, r.created)
	if err != nil {
		return fmt.Errorf("redis: run state: corrupt created time %q: %w", r.created, err)
	}
	run.CreatedAt = c
	return nil
}

// ListRuns implements provider.RunStore: one read of the pipeline's run list, then
// one pipelined read of the runs (a round trip per node on a cluster), newest
// CreatedAt first, ties by RunID descending. The list only orders; every run returned
// is read from its truth, so it reflects the latest CAS.
func (p *Provider) ListRuns(ctx context.Context, pipelineID string, limit int) ([]types.RunState, error) {
	if err := provider.CheckID("pipeline ID", pipelineID); err != nil {
		return nil, err
	}
	if err := provider.CheckLimit(limit); err != nil {
		return nil, err
	}
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	recs, err := p.listIndexed(ctx, "list runs", listSpec{
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
	}, limit)
	if err != nil {
		return nil, err
	}
	return decodeRecords("list runs", recs, restoreCreated)
}

// CompareAndSwapRunState implements provider.RunStore with one script that compares
// the stored version and writes the new state. The stored CreatedAt is kept; Version
// becomes expectedVersion+1 and UpdatedAt the provider clock's now. The run's list
// entry never changes (it orders by CreatedAt), so CAS touches one slot. A CAS that
// go-redis retried after a lost reply reports its first attempt's swap (see
// "Retries" in the package doc).
func (p *Provider) CompareAndSwapRunState(ctx context.Context, runID string, expectedVersion int, newState types.RunState) (bool, error) {
	if err := provider.CheckCAS(runID, expectedVersion, newState); err != nil {
		return false, err
	}
	newState.Version = expectedVersion + 1
	newState.UpdatedAt = p.now()
	newState.CreatedAt = time.Time{} // the stored one is restored on read
	data, err := p.encode(newState)
	if err != nil {
		return false, err
	}
	if err := p.begin(ctx); err != nil {
		return false, err
	}
	key := p.k.run(runID)
	n, err := scriptRunCAS.Run(ctx, p.c, []string{key, p.k.call(key, ids.Random())}, strconv.Itoa(expectedVersion),
		newState.PipelineID, data, strconv.Itoa(newState.Version), callMemory.Milliseconds()).Int64()
	switch {
	case err != nil:
		return false, p.wrap("compare and swap run state", err)
	case n < 0:
		return false, provider.Invalidf("run %s belongs to another pipeline than %s", runID, newState.PipelineID)
	}
	return n == 1, nil
}

// PutRerun implements provider.RerunStore in three round trips (provisional list
// entries, the record, final list entries; see "Cross-slot writes"). A zero
// RequestedAt is filled from the clock. Re-putting a RerunID under another pipeline
// moves it to that pipeline's list.
func (p *Provider) PutRerun(ctx context.Context, rerun types.RerunRecord) error {
	rerun, err := provider.PrepareRerun(rerun, p.now())
	if err != nil {
		return err
	}
	data, err := p.encode(rerun)
	if err != nil {
		return err
	}
	if err := p.begin(ctx); err != nil {
		return err
	}
	member := ids.TimeKey(rerun.RequestedAt) + rerun.RerunID
	_, _, err = p.putIndexed(ctx, "put rerun", p.k.rerun(rerun.RerunID), rerun.RerunID, member, data, rerun.PipelineID, false,
		[]listEntry{{p.k.reruns(rerun.PipelineID), member}, {p.k.globalReruns(), member}},
		func(old string) (index, bool) { return p.k.reruns(old), true })
	return err
}

// GetRerun implements provider.RerunStore with one HGET.
func (p *Provider) GetRerun(ctx context.Context, rerunID string) (*types.RerunRecord, error) {
	if err := provider.CheckID("rerun ID", rerunID); err != nil {
		return nil, err
	}
	return getJSON[types.RerunRecord](ctx, p, "get rerun", func() *goredis.StringCmd {
		return p.c.HGet(ctx, p.k.rerun(rerunID), "j")
	})
}

// ListReruns implements provider.RerunStore like ListRuns: newest RequestedAt first,
// ties by RerunID descending.
func (p *Provider) ListReruns(ctx context.Context, pipelineID string, limit int) ([]types.RerunRecord, error) {
	if err := provider.CheckID("pipeline ID", pipelineID); err != nil {
		return nil, err
	}
	return p.listReruns(ctx, p.k.reruns(pipelineID), pipelineID, limit)
}

// ListAllReruns implements provider.RerunStore from the global rerun list (one
// round trip) and a pipelined read of the records.
func (p *Provider) ListAllReruns(ctx context.Context, limit int) ([]types.RerunRecord, error) {
	return p.listReruns(ctx, p.k.globalReruns(), "", limit)
}

// listReruns lists ix; pipelineID "" means every pipeline.
func (p *Provider) listReruns(ctx context.Context, ix index, pipelineID string, limit int) ([]types.RerunRecord, error) {
	if err := provider.CheckLimit(limit); err != nil {
		return nil, err
	}
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	recs, err := p.listIndexed(ctx, "list reruns", listSpec{
		ix:    ix,
		desc:  true,
		timed: true,
		key:   p.k.rerun,
		want: func(r record) string {
			if !r.hasJSON || (pipelineID != "" && r.pipeline != pipelineID) {
				return ""
			}
			return r.member
		},
	}, limit)
	if err != nil {
		return nil, err
	}
	return decodeRecords[types.RerunRecord]("list reruns", recs, nil)
}

// replayID is the record ID of a replay in the global replay list.
func replayID(pipelineID, date, schedule string) string {
	return pipelineID + ":" + date + ":" + schedule
}

// PutReplay implements provider.ReplayStore in three round trips (provisional global
// list entry, the record, final entry). An empty ScheduleID is DefaultScheduleID and
// is stored as such; a zero CreatedAt is filled from the clock.
func (p *Provider) PutReplay(ctx context.Context, req types.ReplayRequest) error {
	req, err := provider.PrepareReplay(req, p.now())
	if err != nil {
		return err
	}
	data, err := p.encode(req)
	if err != nil {
		return err
	}
	if err := p.begin(ctx); err != nil {
		return err
	}
	id := replayID(req.PipelineID, req.Date, req.ScheduleID)
	member := ids.TimeKey(req.CreatedAt) + id
	_, _, err = p.putIndexed(ctx, "put replay", p.k.replay(req.PipelineID, req.Date, req.ScheduleID), id, member, data,
		req.PipelineID, false, []listEntry{{p.k.globalReplays(), member}}, nil)
	return err
}

// GetReplay implements provider.ReplayStore with one HGET.
func (p *Provider) GetReplay(ctx context.Context, pipelineID, date, scheduleID string) (*types.ReplayRequest, error) {
	scheduleID, err := provider.CheckSlot(pipelineID, date, scheduleID)
	if err != nil {
		return nil, err
	}
	return getJSON[types.ReplayRequest](ctx, p, "get replay", func() *goredis.StringCmd {
		return p.c.HGet(ctx, p.k.replay(pipelineID, date, scheduleID), "j")
	})
}

// ListReplays implements provider.ReplayStore from the global replay list: newest
// CreatedAt first, ties by (pipeline, date, schedule) descending.
func (p *Provider) ListReplays(ctx context.Context, limit int) ([]types.ReplayRequest, error) {
	if err := provider.CheckLimit(limit); err != nil {
		return nil, err
	}
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	recs, err := p.listIndexed(ctx, "list replays", listSpec{
		ix:    p.k.globalReplays(),
		desc:  true,
		timed: true,
		key: func(id string) string {
			parts := strings.SplitN(id, ":", 3)
			if len(parts) != 3 {
				return p.k.replay("", "", "") // a corrupt member: no record, repaired away
			}
			return p.k.replay(parts[0], parts[1], parts[2])
		},
		want: func(r record) string {
			if !r.hasJSON {
				return ""
			}
			return r.member
		},
	}, limit)
	if err != nil {
		return nil, err
	}
	return decodeRecords[types.ReplayRequest]("list replays", recs, nil)
}
