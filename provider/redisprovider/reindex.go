package redisprovider

import (
	"context"
	"errors"
	"fmt"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

var _ provider.ActiveRunReindexer = (*Provider)(nil)

// reindexAttempts bounds how often ReindexRun reads a run that keeps changing
// under it.
const reindexAttempts = 5

// ReindexRun implements provider.ActiveRunReindexer (see "Active runs" in the
// package doc). It reads the run's truth, then its mark a, its entry in the
// index and the entry's place in the index's order (2 round trips), and stops
// there when they agree. Otherwise, for a live unfinished run, it takes a
// write's three steps without writing the run: the entry is added (or stamped,
// whatever a says) before the truth step, lua/run_mark.lua sets the mark a = v
// only if the run's sequence is still the one read, then the entry is settled
// with that sequence and put back in its place (3 more). For a finished or
// expired run it removes the entry, guarded by the sequence read (1 more); for
// a missing one it reads the truth again, after the entry, and drops exactly
// the entry it read, as a reader's repair does (2 more). A run that changed between
// the read and the mark is read again (at most 5 times, then ErrContention);
// the entry its step 1 added stays, for a reader to settle or drop by the
// truth, as after any write whose last step was lost.
func (p *Provider) ReindexRun(ctx context.Context, runID string) (bool, error) {
	const op = "reindex run"
	if err := p.life.EnterWrite(ctx, op, provider.CheckID("run ID", runID)); err != nil {
		return false, err
	}
	changed := false
	for range reindexAttempts {
		c, again, err := p.reindexOnce(ctx, op, runID)
		changed = changed || c
		if err != nil || !again {
			return changed, err
		}
	}
	return changed, fmt.Errorf("redis: %s %s: %w: the run changed under %d reads", op, runID, provider.ErrContention, reindexAttempts)
}

// reindexOnce is one attempt of ReindexRun; again reports that the run changed
// after it was read.
func (p *Provider) reindexOnce(ctx context.Context, op, runID string) (changed, again bool, err error) {
	key, ix := p.k.run(runID), p.k.activeRuns()
	recs, err := p.fetchRecords(ctx, op, []string{key})
	if err != nil {
		return false, false, err
	}
	r := recs[0]
	if r.bad != nil {
		return false, false, corrupt(provider.KindRunState, runID, where(key, ""), r.bad)
	}
	var (
		mark  *goredis.SliceCmd
		entry *goredis.StringCmd
		place *goredis.FloatCmd
	)
	if _, err := p.c.Pipelined(ctx, func(pipe goredis.Pipeliner) error {
		mark = pipe.HMGet(ctx, key, "v", "a")
		entry = pipe.HGet(ctx, ix.h, runID)
		place = pipe.ZScore(ctx, ix.z, runID)
		return nil
	}); err != nil && !errors.Is(err, goredis.Nil) {
		return false, false, p.wrap(op, err)
	}
	cur := entry.Val() // "" when there is none
	want := ""
	if r.exists && r.hasJSON {
		var run types.RunState
		if err := decodeRun(r, runID, key, &run); err != nil {
			return false, false, err
		}
		want = wantActive(r)
	}
	if want == "" { // no entry wanted: remove one, as a reader's repair would
		if cur == "" {
			return false, false, nil
		}
		fix := setCall(ix, runID, "", r.seq, p.stampBound(), 0)
		if !r.exists {
			// The truth was read before the entry: a create or a re-put in
			// between settled cur for a live run, and a drop of exactly cur
			// would take it. Read the truth again, after the entry, as a
			// reader does before its drop.
			again, err := p.fetchRecords(ctx, op, []string{key})
			if err != nil {
				return false, false, err
			}
			if again[0].exists || again[0].bad != nil {
				return false, true, nil
			}
			fix = idxCall(ix, "d", runID, cur, p.stampBound())
		}
		cmds, err := p.runBatch(ctx, op, []call{fix})
		if err != nil {
			return false, false, err
		}
		n, _ := cmds[0].Int()
		return n == 1, false, nil
	}
	v := mark.Val()
	_, member, _ := strings.Cut(cur, "|")
	if settled(cur) && member == runID && place.Err() == nil && len(v) == 2 && v[1] != nil && v[0] == v[1] {
		return false, false, nil // a settled entry in its place, and the mark that a CAS trusts
	}
	stamp := p.now().UnixMilli()
	if _, err := p.runBatch(ctx, op, []call{idxCall(ix, "p", runID, runID, stamp)}); err != nil {
		return false, false, err
	}
	n, err := p.run(ctx, scriptRunMark, []string{key}, r.seq, p.now().UnixMicro()).Int64()
	if err != nil {
		return false, false, p.wrap(op, err)
	}
	if n < 0 {
		return false, true, nil // the next read finds the entry step 1 added
	}
	_, err = p.runBatch(ctx, op, []call{setCall(ix, runID, runID, r.seq, stamp, r.exp)})
	return true, false, err
}
