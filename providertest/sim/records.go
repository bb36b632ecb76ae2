package sim

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// recM is one upserted record (a run log entry, a rerun, a replay): the value
// its last write stored, its expiry and its fence memory.
type recM struct {
	exists bool
	val    string
	exp    time.Time
	fences fenceMem
}

func (r *recM) live(now time.Time) bool { return r.exists && live(r.exp, now) }

// lateM is one late arrival: its RecordDelta (which names it) and expiry.
type lateM struct {
	delta int64
	exp   time.Time
}

// rec returns the model's record of kind and key, new when there is none.
func (m *model) rec(kind, key string) *recM {
	k := kind + "/" + key
	if m.recs == nil {
		m.recs = map[string]*recM{}
	}
	r, ok := m.recs[k]
	if !ok {
		r = &recM{fences: newFenceMem()}
		m.recs[k] = r
	}
	return r
}

// retention returns the retention of the instance a write of o goes through
// (through the lease l's slot when fenced).
func (w *world) retention(o op, l *leaseM) provider.Retention {
	if l != nil {
		return w.slots[l.slot].ret
	}
	return w.slots[o.slot].ret
}

// simDate is one of the two dates the run-log, replay and late-arrival
// operations write under.
func simDate(n int) string { return fmt.Sprintf("2026-11-%02d", 20+n%2) }

// upserted is a record kind written by upsert and read back by key.
type upserted struct {
	name string
	ret  func(provider.Retention) time.Duration
	key  func(o op) string
	put  func(ctx context.Context, p provider.Provider, key, val string, now time.Time) error
	get  func(ctx context.Context, p provider.Provider, key string) (val string, found bool, err error)
}

var upserts = map[opKind]upserted{
	opRunLog: {name: "RunLog", ret: func(r provider.Retention) time.Duration { return r.RunLogs }, key: func(o op) string { return simDate(o.n) },
		put: func(ctx context.Context, p provider.Provider, key, val string, now time.Time) error {
			return p.PutRunLog(ctx, types.RunLogEntry{PipelineID: pipelineID, Date: key, Status: types.RunFailed, FailureMessage: val, StartedAt: now})
		},
		get: func(ctx context.Context, p provider.Provider, key string) (string, bool, error) {
			e, err := p.GetRunLog(ctx, pipelineID, key, "")
			if e == nil || err != nil {
				return "", false, err
			}
			return e.FailureMessage, true, nil
		}},
	opRerun: {name: "Rerun", ret: func(r provider.Retention) time.Duration { return r.Reruns }, key: func(o op) string { return fmt.Sprintf("sim-x%d", o.n%2) },
		put: func(ctx context.Context, p provider.Provider, key, val string, now time.Time) error {
			return p.PutRerun(ctx, types.RerunRecord{RerunID: key, PipelineID: pipelineID, OriginalDate: simDate(0), Reason: val, Status: types.RequestPending, RequestedAt: now})
		},
		get: func(ctx context.Context, p provider.Provider, key string) (string, bool, error) {
			r, err := p.GetRerun(ctx, key)
			if r == nil || err != nil {
				return "", false, err
			}
			return r.Reason, true, nil
		}},
	opReplay: {name: "Replay", ret: func(r provider.Retention) time.Duration { return r.Replays }, key: func(o op) string { return simDate(o.n) },
		put: func(ctx context.Context, p provider.Provider, key, val string, now time.Time) error {
			return p.PutReplay(ctx, types.ReplayRequest{PipelineID: pipelineID, Date: key, Reason: val, Status: types.RequestPending})
		},
		get: func(ctx context.Context, p provider.Provider, key string) (string, bool, error) {
			r, err := p.GetReplay(ctx, pipelineID, key, "")
			if r == nil || err != nil {
				return "", false, err
			}
			return r.Reason, true, nil
		}},
}

// upsert writes (two times in three) or reads the record of kind o.kind that
// o names: a read returns the value of the last write while the record is
// live, nothing after; a fenced write follows the fence rules of the record.
func (w *world) upsert(o op) (string, error) {
	u := upserts[o.kind]
	key := u.key(o)
	r := w.m.rec(u.name, key)
	ctx, cancel := w.ctx()
	defer cancel()
	if o.m%3 == 0 {
		val, found, err := u.get(ctx, w.slots[o.slot].p, key)
		desc := fmt.Sprintf("Get%s(%s) [slot %d] → %q, %t, %v", u.name, key, o.slot, val, found, err)
		if err != nil {
			return desc, fmt.Errorf("%s: %w", "Get"+u.name, err)
		}
		isLive := r.live(w.m.now)
		switch {
		case isLive && (!found || val != r.val):
			return desc, fmt.Errorf("%s(%s): %q, %t; want %q (live until %v)", "Get"+u.name, key, val, found, r.val, r.exp.Format(time.RFC3339Nano))
		case !isLive && found:
			return desc, fmt.Errorf("%s(%s): %q; want nothing (%s)", "Get"+u.name, key, val, map[bool]string{true: "expired at " + r.exp.Format(time.RFC3339Nano), false: "never written"}[r.exists])
		}
		return desc, nil
	}
	p, l, how := w.fenced(o)
	val := w.name("v")
	wasLive := r.live(w.m.now)
	err := u.put(ctx, p, key, val, w.m.now)
	desc := fmt.Sprintf("Put%s(%s, %s) [slot %d, %s] → %v", u.name, key, val, o.slot, how, err)
	on, ferr := checkFence(r.fences, wasLive, l, w.m.newest(l), err)
	if ferr != nil || !on {
		return desc, ferr
	}
	if err != nil {
		return desc, fmt.Errorf("%s: %w", "Put"+u.name, err)
	}
	r.exists, r.val, r.exp = true, val, provider.Expiry(w.m.now, u.ret(w.retention(o, l)))
	if l != nil {
		r.fences.wrote(l.lease.Key, l.lease.Fence)
		w.m.wrote = max(w.m.wrote, l.lease.Fence)
	}
	return desc, nil
}

// late puts a late arrival (two times in three) or lists the late arrivals of
// the date o names: the list is the live ones, oldest DetectedAt first; the
// list's fence memory lives while its newest late arrival does.
func (w *world) late(o op) (string, error) {
	date := simDate(o.n)
	if w.m.lates == nil {
		w.m.lates, w.m.lateMem = map[string][]lateM{}, map[string]fenceMem{}
	}
	mem, ok := w.m.lateMem[date]
	if !ok {
		mem = newFenceMem()
		w.m.lateMem[date] = mem
	}
	ctx, cancel := w.ctx()
	defer cancel()
	list := w.m.lates[date]
	if o.m%3 == 0 {
		got, err := w.slots[o.slot].p.ListLateArrivals(ctx, pipelineID, date, "")
		var deltas []int64
		for _, la := range got {
			deltas = append(deltas, la.RecordDelta)
		}
		desc := fmt.Sprintf("ListLateArrivals(%s) [slot %d] → %v, %v", date, o.slot, deltas, err)
		if err != nil {
			return desc, fmt.Errorf("ListLateArrivals: %w", err)
		}
		want := map[int64]bool{}
		for _, la := range list {
			if live(la.exp, w.m.now) {
				want[la.delta] = true
			}
		}
		gotSet := map[int64]bool{}
		for i, la := range got {
			gotSet[la.RecordDelta] = true
			if i > 0 && la.DetectedAt.Before(got[i-1].DetectedAt) {
				return desc, fmt.Errorf("ListLateArrivals: not oldest DetectedAt first: %v before %v", got[i-1].DetectedAt, la.DetectedAt)
			}
		}
		if len(got) != len(gotSet) || !maps.Equal(gotSet, want) {
			return desc, fmt.Errorf("ListLateArrivals(%s): %v, want the live ones %v", date, deltas, slices.Sorted(maps.Keys(want)))
		}
		return desc, nil
	}
	p, l, how := w.fenced(o)
	w.m.serial++
	delta := int64(w.m.serial)
	wasLive := len(list) > 0 && live(list[len(list)-1].exp, w.m.now)
	err := p.PutLateArrival(ctx, types.LateArrival{PipelineID: pipelineID, Date: date, RecordDelta: delta})
	desc := fmt.Sprintf("PutLateArrival(%s, %d) [slot %d, %s] → %v", date, delta, o.slot, how, err)
	on, ferr := checkFence(mem, wasLive, l, w.m.newest(l), err)
	if ferr != nil || !on {
		return desc, ferr
	}
	if err != nil {
		return desc, fmt.Errorf("PutLateArrival: %w", err)
	}
	w.m.lates[date] = append(list, lateM{delta: delta, exp: provider.Expiry(w.m.now, w.retention(o, l).LateArrivals)})
	if l != nil {
		mem.wrote(l.lease.Key, l.lease.Fence)
		w.m.wrote = max(w.m.wrote, l.lease.Fence)
	}
	return desc, nil
}

// cli makes one of the CLI's writes, from the instance of o's slot: "run
// fail" (an unfenced CompareAndSwapRunState to FAILED, beside whatever fenced
// writers the run has, then its audit event) or "lock release --token" (the
// lease's ReleaseLease by token from another instance, its fence from
// GetLockInfo, as the CLI builds it; then its audit event).
func (w *world) cli(o op) (string, error) {
	var desc string
	var err error
	if o.m%2 == 0 {
		sub := o
		sub.kind, sub.lease, sub.m = opCAS, -1, 3 // statuses[3]: FAILED
		desc, err = w.writeRun(sub)
		desc = "run fail: " + desc
	} else {
		w.cliRelease = true
		sub := o
		sub.kind = opRelease
		desc, err = w.lease(sub)
		w.cliRelease = false
		desc = "lock release: " + desc
	}
	if err != nil {
		return desc, err
	}
	audit := o
	audit.kind, audit.lease = opAppend, -1
	d, err := w.appendEvent(audit)
	return desc + "; audit " + d, err
}

// cliLease is the lease "lock release --token" releases: l's key and token,
// and the fence GetLockInfo shows while l holds the key (else 0).
func (w *world) cliLease(ctx context.Context, p provider.Provider, l types.Lease) (types.Lease, error) {
	out := types.Lease{Key: l.Key, Token: l.Token}
	if li, ok := p.(provider.LockInspector); ok {
		info, err := li.GetLockInfo(ctx, l.Key)
		if err != nil {
			return out, fmt.Errorf("GetLockInfo: %w", err)
		}
		if info != nil && info.Token == l.Token {
			out.Fence = info.Fence
		}
	}
	return out, nil
}
