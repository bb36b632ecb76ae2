package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// The names a run writes under.
const (
	pipelineID = "sim-p"
	leaseKey   = "sim/lease"
)

func runID(i int) string { return fmt.Sprintf("sim-r%d", i) }

// callTimeout bounds each call.
const callTimeout = 30 * time.Second

// slot is one open provider instance.
type slot struct {
	p       provider.Provider
	variant int // 0: Harness.Open; i: Variants[i-1]
	ret     provider.Retention
}

// world is one run: the instances, the model, the harness.
type world struct {
	t     *testing.T
	h     Harness
	slots []slot
	m     *model
	corr  []Corruption

	// The fault of the operation running (see faulty).
	fault    faultMode
	disarmed bool
	fired    bool
	noRetry  provider.Provider // Faults.OpenNoRetry's instance, opened on first use

	ro    provider.Provider // Harness.OpenReadOnly's instance, opened on first use
	viaRO bool              // the read running goes through ro (see readOnly)

	cliRelease bool // the release running is the CLI's (see cli)
}

func newWorld(t *testing.T, h Harness) *world {
	w := &world{t: t, h: h}
	for range slots {
		w.slots = append(w.slots, slot{p: h.Open(t), ret: h.Retention})
	}
	w.m = newModel(h.Now(t), runIDs)
	if h.Corrupt != nil {
		w.corr = append(w.corr,
			Corruption{Name: harnessCorrupt, Kind: provider.KindEvent, Append: func(t *testing.T, id ...string) { h.Corrupt(t, provider.KindEvent, id...) }},
			Corruption{Name: harnessCorrupt, Kind: provider.KindMarkerWrite, Append: func(t *testing.T, _ ...string) { h.Corrupt(t, provider.KindMarkerWrite) }})
	}
	w.corr = append(w.corr, h.Corruptions...)
	return w
}

func (w *world) close() {
	for _, s := range w.slots {
		_ = s.p.Stop(context.Background())
	}
	if w.noRetry != nil {
		_ = w.noRetry.Stop(context.Background())
	}
	if w.ro != nil {
		_ = w.ro.Stop(context.Background())
	}
}

func (w *world) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(w.t.Context(), callTimeout)
}

// fenced returns the provider o writes through: its slot's, or the fenced view
// of the lease it names (through the provider of the slot that acquired it).
func (w *world) fenced(o op) (provider.Provider, *leaseM, string) {
	if o.lease < 0 || len(w.m.leases) == 0 {
		return w.writer(o.slot), nil, "unfenced"
	}
	l := &w.m.leases[o.lease%len(w.m.leases)]
	fp, err := provider.Fenced(w.writer(l.slot), l.lease)
	if err != nil {
		w.t.Fatalf("provider.Fenced: %v", err)
	}
	return fp, l, fmt.Sprintf("fence %d", l.lease.Fence)
}

// harnessCorrupt names the corruptions Harness.Corrupt makes, whose
// records' expiry the model does not know.
const harnessCorrupt = "Harness.Corrupt"

var statuses = []types.RunStatus{types.RunPending, types.RunRunning, types.RunCompleted, types.RunFailed}

// do runs o against the backend and the model, and returns its description
// and the referee's complaint; then the open pagings of the active-runs index
// learn which runs stopped matching (see pagingM.track).
func (w *world) do(o op) (string, error) {
	desc, err := w.do1(o)
	w.m.trackPagings()
	return desc, err
}

func (w *world) do1(o op) (string, error) {
	switch o.kind {
	case opLost, opTimeout:
		return w.faulty(o)
	case opActive:
		return w.listActive(o)
	case opReindex:
		return w.reindex(o)
	case opReadOnly:
		return w.readOnly(o)
	case opRunLog, opRerun, opReplay:
		return w.upsert(o)
	case opLate:
		return w.late(o)
	case opCLI:
		return w.cli(o)
	case opPut, opCAS, opCreate:
		return w.writeRun(o)
	case opGet:
		return w.getRun(o)
	case opAppend:
		return w.appendEvent(o)
	case opRead:
		return w.readEvents(o)
	case opFollow:
		return w.follow(o)
	case opMarker:
		return w.writeMarker(o)
	case opWatch:
		return w.watch(o)
	case opAcquire, opRenew, opRelease:
		return w.lease(o)
	case opSleep:
		return w.sleep(o)
	case opSweep:
		if w.h.Sweep == nil {
			return "sweep (none)", nil
		}
		// The server deletes at a random delay after expiry (DynamoDB's TTL:
		// up to 48 hours): the sweep comes after up to two days.
		d := time.Duration(o.n%49) * time.Hour
		if d > 0 {
			w.h.Sleep(w.t, d)
			w.m.now = w.h.Now(w.t)
		}
		w.h.Sweep(w.t)
		return fmt.Sprintf("sweep after %v (now %s)", d, w.m.now.Format(time.RFC3339Nano)), nil
	case opCorrupt:
		return w.corrupt(o)
	case opRestart:
		return w.restart(o)
	}
	return "", fmt.Errorf("unknown operation %d", o.kind)
}

// checkFence applies the fence rule of the record mem guards, which is live
// or not, to a write through l (nil: unfenced) that returned err, and tells
// whether the write went on past the fence check.
//
// A backend may remember fences for a larger group of records (fence's doc:
// "a fence below a newer one of the same key is stale everywhere"), so a
// refusal is also allowed when a higher fence of the key wrote anything
// (newest).
func checkFence(mem fenceMem, recordLive bool, l *leaseM, newest int64, err error) (bool, error) {
	if !recordLive {
		mem.forget()
	}
	if l == nil {
		if errors.Is(err, provider.ErrFenced) {
			return false, fmt.Errorf("an unfenced write returned %v", err)
		}
		return true, nil
	}
	v := mem.check(l.lease.Key, l.lease.Fence)
	refused := errors.Is(err, provider.ErrFenced)
	switch {
	case v == mustRefuse && !refused:
		return false, fmt.Errorf("fence %d accepted (err %v) on a live record that fence %d of the same key wrote: want ErrFenced",
			l.lease.Fence, err, mem.sure[l.lease.Key])
	case v == mustPass && refused && l.lease.Fence >= newest:
		return false, fmt.Errorf("fence %d refused (%v), but no higher fence than %d wrote the record", l.lease.Fence, err, mem.maybe[l.lease.Key])
	}
	return !refused, nil
}

func (w *world) writeRun(o op) (string, error) {
	p, l, how := w.fenced(o)
	r := w.m.runs[o.run]
	id := runID(o.run)
	st := statuses[o.m%len(statuses)]
	ret := w.slots[o.slot].ret.Runs
	if l != nil {
		ret = w.slots[l.slot].ret.Runs
	}
	if w.fault == timeoutAfterApply {
		ret = w.h.Retention.Runs // Faults.OpenNoRetry's instance: Open's options
	}
	wasLive := r.live(w.m.now)
	ctx, cancel := w.ctx()
	defer cancel()
	var desc string
	var err error
	var wrote bool
	switch o.kind {
	case opPut:
		v := o.n % 5
		if w.fault == timeoutAfterApply && wasLive {
			v = r.version + 1 + o.n%3 // so that a read tells whether it was applied
		}
		desc = fmt.Sprintf("PutRunState(%s v%d %s) [slot %d, %s]", id, v, st, o.slot, how)
		err = p.PutRunState(ctx, types.RunState{RunID: id, PipelineID: pipelineID, Status: st, Version: v})
		if err == nil {
			desc += " → <nil>"
		}
		if w.timedOut(err) {
			return w.settleRun(desc, err, o.run, l, ret, wasLive, types.RunState{Version: v, Status: st}, true)
		}
		if on, ferr := checkFence(r.fences, wasLive, l, w.m.newest(l), err); ferr != nil || !on {
			return desc + fmt.Sprintf(" → %v", err), ferr
		}
		if err != nil {
			return desc + fmt.Sprintf(" → %v", err), fmt.Errorf("PutRunState: %w", err)
		}
		r.exists, r.version, r.status, wrote = true, v, st, true
	case opCAS:
		expected := max(0, r.version+[]int{0, 0, 0, -1, 1}[o.n%5])
		desc = fmt.Sprintf("CompareAndSwapRunState(%s from v%d to %s) [slot %d, %s]", id, expected, st, o.slot, how)
		var swapped bool
		swapped, err = p.CompareAndSwapRunState(ctx, id, expected, types.RunState{RunID: id, PipelineID: pipelineID, Status: st})
		desc += fmt.Sprintf(" → %t, %v", swapped, err)
		if w.timedOut(err) {
			return w.settleRun(desc, err, o.run, l, ret, wasLive, types.RunState{Version: expected + 1, Status: st}, wasLive && r.version == expected)
		}
		on, ferr := checkFence(r.fences, wasLive, l, w.m.newest(l), err)
		if ferr != nil || !on {
			return desc, ferr
		}
		if err != nil {
			return desc, fmt.Errorf("CompareAndSwapRunState: %w", err)
		}
		want := wasLive && r.version == expected
		if swapped != want {
			return desc, fmt.Errorf("CAS swapped %t, want %t (the run is %s)", swapped, want, w.describeRun(o.run, wasLive))
		}
		if !swapped {
			if l != nil {
				r.fences.passed(l.lease.Key, l.lease.Fence)
			}
			return desc, nil
		}
		r.version, r.status, wrote = expected+1, st, true
	case opCreate:
		rc, ok := p.(provider.RunCreator)
		if ok && w.fault == timeoutAfterApply {
			_, ok = w.noRetry.(provider.RunCreator)
		}
		if !ok {
			return "CreateRunState (not implemented)", nil
		}
		v := 0 // a created run starts at version 0
		desc = fmt.Sprintf("CreateRunState(%s v%d %s) [slot %d, %s]", id, v, st, o.slot, how)
		var created bool
		created, err = rc.CreateRunState(ctx, types.RunState{RunID: id, PipelineID: pipelineID, Status: st, Version: v})
		desc += fmt.Sprintf(" → %t, %v", created, err)
		if w.timedOut(err) {
			return w.settleRun(desc, err, o.run, l, ret, wasLive, types.RunState{Version: v, Status: st}, !wasLive)
		}
		on, ferr := checkFence(r.fences, wasLive, l, w.m.newest(l), err)
		if ferr != nil || !on {
			return desc, ferr
		}
		if err != nil {
			return desc, fmt.Errorf("CreateRunState: %w", err)
		}
		if created == wasLive {
			return desc, fmt.Errorf("CreateRunState created %t, want %t (the run is %s)", created, !wasLive, w.describeRun(o.run, wasLive))
		}
		if !created {
			if l != nil {
				r.fences.passed(l.lease.Key, l.lease.Fence)
			}
			return desc, nil
		}
		r.exists, r.version, r.status, wrote = true, v, st, true
	}
	if wrote {
		r.exp, r.updated, r.surelyUnindexed = provider.Expiry(w.m.now, ret), w.m.now, false
		if l != nil {
			r.fences.wrote(l.lease.Key, l.lease.Fence)
			w.m.wrote = max(w.m.wrote, l.lease.Fence)
		}
	}
	return desc, nil
}

func (w *world) describeRun(i int, isLive bool) string {
	r := w.m.runs[i]
	switch {
	case !r.exists:
		return "missing"
	case !isLive:
		return fmt.Sprintf("expired at %v", r.exp.Format(time.RFC3339Nano))
	}
	return fmt.Sprintf("v%d %s until %v", r.version, r.status, r.exp.Format(time.RFC3339Nano))
}

func (w *world) getRun(o op) (string, error) {
	id := runID(o.run)
	ctx, cancel := w.ctx()
	defer cancel()
	got, err := w.reader(o.slot).GetRunState(ctx, id)
	desc := fmt.Sprintf("GetRunState(%s) [slot %d]", id, o.slot)
	if err != nil {
		return desc + fmt.Sprintf(" → %v", err), fmt.Errorf("GetRunState: %w", err)
	}
	r := w.m.runs[o.run]
	isLive := r.live(w.m.now)
	if got == nil {
		desc += " → missing"
		if isLive {
			return desc, fmt.Errorf("GetRunState: missing, want %s", w.describeRun(o.run, isLive))
		}
		return desc, nil
	}
	desc += fmt.Sprintf(" → v%d %s", got.Version, got.Status)
	if !isLive || got.Version != r.version || got.Status != r.status {
		return desc, fmt.Errorf("GetRunState: v%d %s, want %s", got.Version, got.Status, w.describeRun(o.run, isLive))
	}
	return desc, nil
}

func (w *world) name(prefix string) string {
	w.m.serial++
	return fmt.Sprintf("%s%d", prefix, w.m.serial)
}

func (w *world) appendEvent(o op) (string, error) {
	p, l, how := w.fenced(o)
	ret := w.slots[o.slot].ret.Events
	if l != nil {
		ret = w.slots[l.slot].ret.Events
	}
	msg := w.name("e")
	ctx, cancel := w.ctx()
	defer cancel()
	err := p.AppendEvent(ctx, types.Event{Kind: "SIM", PipelineID: pipelineID, Message: msg})
	desc := fmt.Sprintf("AppendEvent(%s) [slot %d %s, %s] → %v", msg, o.slot, w.variantName(o.slot), how, err)
	on, ferr := checkFence(w.m.evMem, logLive(w.m.events, w.m.now), l, w.m.newest(l), err)
	if ferr != nil || !on {
		return desc, ferr
	}
	if err != nil {
		return desc, fmt.Errorf("AppendEvent: %w", err)
	}
	w.m.events = append(w.m.events, entry{name: msg, exp: provider.Expiry(w.m.now, ret)})
	if l != nil {
		w.m.evMem.wrote(l.lease.Key, l.lease.Fence)
		w.m.wrote = max(w.m.wrote, l.lease.Fence)
	}
	return desc, nil
}

func (w *world) variantName(i int) string {
	if v := w.slots[i].variant; v > 0 {
		return w.h.Variants[v-1].Name
	}
	return "base"
}

// pickCursor returns the saved cursor n names, or "" (index -1).
func pickCursor(saved []savedCursor, n int) savedCursor {
	k := n % (len(saved) + 1)
	if k == len(saved) {
		return savedCursor{cursor: "", idx: -1}
	}
	return saved[len(saved)-1-k] // the newest first: followers resume from recent cursors
}

func (w *world) readEvents(o op) (string, error) {
	c := pickCursor(w.m.evCurs, o.n)
	count := []int64{1, 2, 5, 100}[o.m%4]
	reports := 0
	ctx, cancel := w.ctx()
	defer cancel()
	ctx = provider.OnCorrupt(ctx, func(*provider.CorruptError) { reports++ })
	got, err := w.reader(o.slot).ReadEventsSince(ctx, pipelineID, c.cursor, count)
	names := make([]string, len(got))
	for i, r := range got {
		names[i] = r.Event.Message
	}
	desc := fmt.Sprintf("ReadEventsSince(after %s, %d) [slot %d] → %v, %v", w.cursorName(w.m.events, c), count, o.slot, names, err)
	outs := readFrom(w.m.events, c.idx, w.m.now)
	var wants []string
	unreported := false
	for _, out := range outs {
		// "" is never expired: a read from it that meets a dropped entry
		// before any good one (after a retained corrupt one) returns nothing.
		want, wantErr := out.names, out.gap && len(out.names) == 0 && c.idx >= 0
		if int64(len(want)) > count {
			want = want[:count]
		}
		wants = append(wants, describeOutcome(want, wantErr))
		if wantErr != errors.Is(err, provider.ErrCursorExpired) || !slices.Equal(names, want) {
			continue
		}
		if err != nil && !wantErr {
			continue
		}
		// A corrupt record among those the read passed must be reported.
		if slices.Contains(out.corruptBefore[:len(want)], true) && reports == 0 {
			unreported = true
			continue
		}
		for i, r := range got {
			w.m.evCurs = append(w.m.evCurs, savedCursor{cursor: r.StreamID, idx: out.idx[i]})
		}
		return desc, nil
	}
	if unreported {
		return desc, errors.New("ReadEventsSince skipped a corrupt event without reporting it to OnCorrupt")
	}
	if err != nil && !errors.Is(err, provider.ErrCursorExpired) {
		return desc, fmt.Errorf("ReadEventsSince: %w", err)
	}
	return desc, fmt.Errorf("ReadEventsSince: got %s, want %s (log: %s)", describeOutcome(names, err != nil), strings.Join(wants, " or "), w.describeLog(w.m.events))
}

func describeOutcome(names []string, expired bool) string {
	if expired {
		return "ErrCursorExpired"
	}
	return fmt.Sprint(names)
}

func (w *world) cursorName(log []entry, c savedCursor) string {
	if c.idx < 0 {
		return `""`
	}
	return log[c.idx].name
}

func (w *world) describeLog(log []entry) string {
	var b strings.Builder
	for _, e := range log {
		state := "live"
		if !live(e.exp, w.m.now) {
			state = "dropped"
		}
		if e.corrupt {
			state += ",corrupt"
		}
		fmt.Fprintf(&b, "%s(%s) ", e.name, state)
	}
	return strings.TrimSpace(b.String())
}

// stream is what a follower or a watcher yielded: names, cursors, the error
// it ended with (nil when it was still waiting at the deadline), and how long
// it was last given.
type stream struct {
	names   []string
	cursors []string
	err     error
	waited  time.Duration
}

// collect reads seq until what it yielded (the names old does not hold, in
// order) completes an outcome of outs that nothing may follow, matches none,
// an error, or the wait pending gives it passes.
func collect[R any](ctx context.Context, cancel context.CancelFunc, waits waits, seq func(func(R, error) bool), outs []outcome, old map[string]bool, name func(R) (string, string)) stream {
	var s stream
	var fresh []string
	seen := map[string]bool{}
	s.waited = waits.pending(outs, fresh)
	timer := time.AfterFunc(s.waited, cancel)
	defer timer.Stop()
	seq(func(r R, err error) bool {
		if err != nil {
			if ctx.Err() == nil {
				s.err = err
			}
			return false
		}
		n, c := name(r)
		s.names = append(s.names, n)
		s.cursors = append(s.cursors, c)
		if old[n] || seen[n] {
			return true
		}
		seen[n] = true
		fresh = append(fresh, n)
		if !timer.Stop() {
			return false // the wait passed: ctx is cancelled
		}
		if s.waited = waits.pending(outs, fresh); s.waited == 0 {
			return false
		}
		timer.Reset(s.waited)
		return true
	})
	return s
}

// waits are how long a stream is given for what must come and for what may.
type waits struct{ required, quiet time.Duration }

// pending is how long a stream that yielded fresh (in order) is given for
// what may follow, by the outcomes outs the model allows: the required wait
// while every outcome fresh begins needs more (an entry or ErrCursorExpired),
// which a healthy backend costs nothing; the quiet wait while one is complete
// and another goes on; 0 when one is complete and none goes on, or when fresh
// begins none (the referee then refuses it).
func (w waits) pending(outs []outcome, fresh []string) time.Duration {
	complete, more := false, false
	for _, o := range outs {
		if len(o.names) < len(fresh) || !slices.Equal(o.names[:len(fresh)], fresh) {
			continue
		}
		if len(o.names) > len(fresh) || o.gap {
			more = true
		} else {
			complete = true
		}
	}
	switch {
	case more && !complete:
		return w.required
	case more:
		return w.quiet
	}
	return 0
}

// judgeStream checks what a follower or watcher from cursor c of log yielded
// against the model: at-least-once delivery allows it to yield writes at or
// before the cursor again and to repeat one; what is new must be the live
// entries after the cursor, in order, and ErrCursorExpired when one was
// dropped.
func judgeStream(log []entry, c savedCursor, now time.Time, got stream, what string) ([]savedCursor, error) {
	pos := map[string]int{}
	for i, e := range log {
		pos[e.name] = i
	}
	var fresh []string
	var saved []savedCursor
	seen := map[string]bool{}
	for i, n := range got.names {
		j, ok := pos[n]
		if !ok {
			return nil, fmt.Errorf("%s yielded %q, which nobody wrote", what, n)
		}
		if j <= c.idx || seen[n] || log[j].phantom {
			continue
		}
		seen[n] = true
		fresh = append(fresh, n)
		saved = append(saved, savedCursor{cursor: got.cursors[i], idx: j})
	}
	expired := errors.Is(got.err, provider.ErrCursorExpired)
	if got.err != nil && !expired {
		return nil, fmt.Errorf("%s: %w", what, got.err)
	}
	var wants []string
	for _, out := range readFrom(log, c.idx, now) {
		wants = append(wants, describeOutcome(out.names, false)+map[bool]string{true: " then ErrCursorExpired"}[out.gap])
		if out.gap == expired && slices.Equal(fresh, out.names) {
			return saved, nil
		}
	}
	gotDesc := describeOutcome(fresh, false)
	if expired {
		gotDesc += " then ErrCursorExpired"
	} else {
		gotDesc += fmt.Sprintf(" and no error within %v", got.waited)
	}
	return nil, fmt.Errorf("%s yielded %s, want %s", what, gotDesc, strings.Join(wants, " or "))
}

func (w *world) follow(o op) (string, error) {
	f, ok := w.reader(o.slot).(provider.EventFollower)
	if !ok {
		return "FollowEvents (not implemented)", nil
	}
	c := pickCursor(w.m.evCurs, o.n)
	outs := readFrom(w.m.events, c.idx, w.m.now)
	if w.waits().pending(outs, nil) == 0 {
		return fmt.Sprintf("FollowEvents(after %s) (nothing to yield)", w.cursorName(w.m.events, c)), nil
	}
	ctx, cancel := context.WithCancel(w.t.Context())
	defer cancel()
	got := collect(ctx, cancel, w.waits(), f.FollowEvents(ctx, pipelineID, c.cursor), outs, upTo(w.m.events, c.idx),
		func(r types.EventRecord) (string, string) { return r.Event.Message, r.StreamID })
	desc := fmt.Sprintf("FollowEvents(after %s) [slot %d] → %v, %v", w.cursorName(w.m.events, c), o.slot, got.names, got.err)
	saved, err := judgeStream(w.m.events, c, w.m.now, got, "FollowEvents")
	if err != nil {
		return desc, fmt.Errorf("%w (log: %s)", err, w.describeLog(w.m.events))
	}
	w.m.evCurs = append(w.m.evCurs, saved...)
	return desc, nil
}

// waits are the Harness's WatchWait and WatchQuiet, defaults filled in.
func (w *world) waits() waits {
	ws := waits{required: w.h.WatchWait, quiet: w.h.WatchQuiet}
	if ws.required <= 0 {
		ws.required = time.Second
	}
	if ws.quiet <= 0 {
		ws.quiet = ws.required / 10
	}
	return ws
}

// upTo returns the names of log's entries up to index i, and of its
// phantoms: what a stream from i may yield without it counting.
func upTo(log []entry, i int) map[string]bool {
	old := map[string]bool{}
	for j, e := range log {
		if j <= i || e.phantom {
			old[e.name] = true
		}
	}
	return old
}

func (w *world) writeMarker(o op) (string, error) {
	p, l, how := w.fenced(o)
	ret, logRet := w.slots[o.slot].ret.CascadeMarkers, w.slots[o.slot].ret.MarkerLog
	if l != nil {
		ret, logRet = w.slots[l.slot].ret.CascadeMarkers, w.slots[l.slot].ret.MarkerLog
	}
	date := fmt.Sprintf("2026-11-%02d", 20+o.n%2)
	src := w.name("m")
	mem, ok := w.m.mkMem[date]
	if !ok {
		mem = newFenceMem()
		w.m.mkMem[date] = mem
	}
	exp, ok := w.m.mkExp[date]
	wasLive := ok && live(exp, w.m.now)
	ctx, cancel := w.ctx()
	defer cancel()
	err := p.WriteCascadeMarker(ctx, pipelineID, "", date, src)
	desc := fmt.Sprintf("WriteCascadeMarker(%s, %s) [slot %d, %s] → %v", date, src, o.slot, how, err)
	on, ferr := checkFence(mem, wasLive, l, w.m.newest(l), err)
	if ferr == nil && !on && w.h.PhantomMarkers {
		w.m.markers = append(w.m.markers, entry{name: src, phantom: true})
	}
	if ferr != nil || !on {
		return desc, ferr
	}
	if err != nil {
		return desc, fmt.Errorf("WriteCascadeMarker: %w", err)
	}
	w.m.mkExp[date] = provider.Expiry(w.m.now, ret)
	w.m.markers = append(w.m.markers, entry{name: src, exp: provider.Expiry(w.m.now, logRet)})
	if l != nil {
		mem.wrote(l.lease.Key, l.lease.Fence)
		w.m.wrote = max(w.m.wrote, l.lease.Fence)
	}
	return desc, nil
}

func (w *world) watch(o op) (string, error) {
	mw, ok := w.reader(o.slot).(provider.MarkerWatcher)
	if !ok {
		return "WatchCascadeMarkers (not implemented)", nil
	}
	c := pickCursor(w.m.mkCurs, o.n)
	outs := readFrom(w.m.markers, c.idx, w.m.now)
	if w.waits().pending(outs, nil) == 0 {
		return fmt.Sprintf("WatchCascadeMarkers(after %s) (nothing to yield)", w.cursorName(w.m.markers, c)), nil
	}
	ctx, cancel := context.WithCancel(w.t.Context())
	defer cancel()
	got := collect(ctx, cancel, w.waits(), mw.WatchCascadeMarkers(ctx, c.cursor), outs, upTo(w.m.markers, c.idx),
		func(r types.CascadeMarkerRecord) (string, string) { return r.Marker.Source, r.Cursor })
	desc := fmt.Sprintf("WatchCascadeMarkers(after %s) [slot %d] → %v, %v", w.cursorName(w.m.markers, c), o.slot, got.names, got.err)
	saved, err := judgeStream(w.m.markers, c, w.m.now, got, "WatchCascadeMarkers")
	if err != nil {
		return desc, fmt.Errorf("%w (marker log: %s)", err, w.describeLog(w.m.markers))
	}
	w.m.mkCurs = append(w.m.mkCurs, saved...)
	return desc, nil
}

func (w *world) lease(o op) (string, error) {
	ctx, cancel := w.ctx()
	defer cancel()
	m := w.m
	switch o.kind {
	case opAcquire:
		ls, ok := w.slots[o.slot].p.(provider.Leaser)
		if !ok {
			return "AcquireLease (not implemented)", nil
		}
		got, err := ls.AcquireLease(ctx, leaseKey, o.d)
		desc := fmt.Sprintf("AcquireLease(%v) [slot %d]", o.d, o.slot)
		held := m.cur >= 0 && m.leaseLive(m.cur)
		if m.cur >= 0 && !m.leaseSure(m.cur, w.h.LeaseEarly) {
			held = errors.Is(err, provider.ErrLockHeld) // within LeaseEarly of its expiry: either
		}
		if held {
			desc += fmt.Sprintf(" → %v", err)
			if !errors.Is(err, provider.ErrLockHeld) {
				return desc, fmt.Errorf("AcquireLease of a key held by fence %d until %v: %v, want ErrLockHeld", m.leases[m.cur].lease.Fence, m.leases[m.cur].exp, err)
			}
			return desc, nil
		}
		if err != nil {
			return desc + fmt.Sprintf(" → %v", err), fmt.Errorf("AcquireLease of a free key: %w", err)
		}
		desc += fmt.Sprintf(" → fence %d", got.Fence)
		if got.Fence <= m.fence {
			return desc, fmt.Errorf("AcquireLease: fence %d, want above %d (fences strictly increase)", got.Fence, m.fence)
		}
		exp := m.now.Add(o.d)
		if d := got.ExpiresAt.Sub(exp); d > time.Second || d < -time.Second {
			return desc, fmt.Errorf("AcquireLease: ExpiresAt %v, want %v", got.ExpiresAt, exp)
		}
		m.fence = got.Fence
		m.leases = append(m.leases, leaseM{lease: *got, slot: o.slot, exp: exp})
		m.cur = len(m.leases) - 1
		return desc, nil
	default:
		if len(m.leases) == 0 {
			return o.kind.String() + " (no lease yet)", nil
		}
		i := o.lease
		if i < 0 {
			i = o.n
		}
		i %= len(m.leases)
		l := &m.leases[i]
		ls := w.slots[l.slot].p.(provider.Leaser)
		held := m.leaseLive(i)
		if !m.leaseSure(i, w.h.LeaseEarly) {
			defer func() { // within LeaseEarly of its expiry: either answer, followed
				if !held {
					l.exp = m.now
				}
			}()
		}
		if o.kind == opRenew {
			got, err := ls.RenewLease(ctx, l.lease, o.d)
			desc := fmt.Sprintf("RenewLease(fence %d, %v) [slot %d] → %v", l.lease.Fence, o.d, l.slot, err)
			if !m.leaseSure(i, w.h.LeaseEarly) {
				held = err == nil
			}
			if !held {
				if !errors.Is(err, provider.ErrLockNotHeld) {
					return desc, fmt.Errorf("RenewLease of a lease that is not current and live: %v, want ErrLockNotHeld", err)
				}
				return desc, nil
			}
			if err != nil {
				return desc, fmt.Errorf("RenewLease of the current lease: %w", err)
			}
			if got.Token != l.lease.Token || got.Fence != l.lease.Fence || got.Key != l.lease.Key {
				return desc, fmt.Errorf("RenewLease returned %+v, want the same key, token and fence as %+v", *got, l.lease)
			}
			l.exp = m.now.Add(o.d)
			return desc, nil
		}
		rel, via := l.lease, l.slot
		if w.cliRelease {
			via = o.slot
			var err error
			if rel, err = w.cliLease(ctx, w.slots[via].p, l.lease); err != nil {
				return "lock release", err
			}
			ls, _ = w.slots[via].p.(provider.Leaser)
		}
		err := ls.ReleaseLease(ctx, rel)
		desc := fmt.Sprintf("ReleaseLease(fence %d) [slot %d] → %v", rel.Fence, via, err)
		if !m.leaseSure(i, w.h.LeaseEarly) {
			held = err == nil
		}
		if !held {
			if !errors.Is(err, provider.ErrLockNotHeld) {
				return desc, fmt.Errorf("ReleaseLease of a lease that is not current and live: %v, want ErrLockNotHeld", err)
			}
			return desc, nil
		}
		if err != nil {
			return desc, fmt.Errorf("ReleaseLease of the current lease: %w", err)
		}
		m.cur = -1
		return desc, nil
	}
}

func (w *world) sleep(o op) (string, error) {
	d := o.d
	shape := "by"
	switch o.m % 4 {
	case 1, 2:
		if in := w.m.instants(); len(in) > 0 {
			slices.SortFunc(in, func(a, b time.Time) int { return a.Compare(b) })
			d = in[o.n%len(in)].Sub(w.m.now)
			shape = "to an expiry instant, by"
			if o.m%4 == 2 {
				d -= time.Microsecond
				shape = "to 1µs before an expiry instant, by"
			}
		}
	case 3:
		d = time.Duration(1+o.n%30) * time.Second
	}
	if shape == "by" && slices.ContainsFunc(w.m.instants(), w.m.now.Add(d).Equal) {
		shape = "onto an expiry instant, by"
	}
	if d <= 0 {
		return "sleep 0", nil
	}
	w.h.Sleep(w.t, d)
	w.m.now = w.h.Now(w.t)
	return fmt.Sprintf("sleep %s %v (now %s)", shape, d, w.m.now.Format(time.RFC3339Nano)), nil
}

func (w *world) corrupt(o op) (string, error) {
	if len(w.corr) == 0 {
		return "corrupt (none)", nil
	}
	c := w.corr[o.m%len(w.corr)]
	name := w.name("x")
	unknown := c.Name == harnessCorrupt && !w.h.CorruptExpires
	ret := w.h.Retention
	switch c.Kind {
	case provider.KindEvent:
		c.Append(w.t, pipelineID)
		w.m.events = append(w.m.events, entry{name: name, exp: provider.Expiry(w.m.now, ret.Events), corrupt: true, unknownExp: unknown})
	case provider.KindMarkerWrite:
		if len(w.m.markers) == 0 {
			return "corrupt marker write (no marker log yet)", nil
		}
		c.Append(w.t, pipelineID)
		w.m.markers = append(w.m.markers, entry{name: name, exp: provider.Expiry(w.m.now, ret.MarkerLog), corrupt: true, unknownExp: unknown})
	default:
		return fmt.Sprintf("corrupt %s (kind not simulated)", c.Kind), nil
	}
	return fmt.Sprintf("corrupt: append an undecodable %s (%s)", c.Kind, c.Name), nil
}

func (w *world) restart(o op) (string, error) {
	s := &w.slots[o.slot]
	ctx, cancel := w.ctx()
	defer cancel()
	if err := s.p.Stop(ctx); err != nil {
		return "Stop", fmt.Errorf("stop: %w", err)
	}
	if _, err := s.p.GetRunState(ctx, runID(0)); !errors.Is(err, provider.ErrClosed) {
		return "Stop; GetRunState", fmt.Errorf("GetRunState after Stop: %v, want ErrClosed", err)
	}
	v := o.n % (len(w.h.Variants) + 1)
	s.variant, s.ret = v, w.h.Retention
	if v == 0 {
		s.p = w.h.Open(w.t)
	} else {
		s.p = w.h.Variants[v-1].Open(w.t)
		if r := w.h.Variants[v-1].Retention; r != nil {
			s.ret = *r
		}
	}
	return fmt.Sprintf("restart slot %d as %s", o.slot, w.variantName(o.slot)), nil
}
