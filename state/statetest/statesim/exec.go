package statesim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/cache"
	"github.com/pipestate/pipestate/types"
)

// callTimeout bounds each call of a store.
const callTimeout = 30 * time.Second

// slot is one store instance, as one process holds it, and a read cache in
// front of another instance of the same options.
type slot struct {
	s       state.Store[int64]
	c       state.Store[int64]
	d       state.Deduper // Harness.OpenDeduper's, opened on first use
	dedup   time.Duration // the claim TTL of its stores
	variant int           // 0: Harness.Open; i: Variants[i-1]
}

func (s slot) close() {
	_ = s.s.Close()
	_ = s.c.Close()
	if s.d != nil {
		_ = s.d.Close()
	}
}

// world is one run: the instances, the model, the harness.
type world struct {
	t         *testing.T
	h         Harness
	slots     []slot
	m         *model
	staleness time.Duration
	// now is m.now in Unix ns, for the caches' clock (their maintenance
	// reads it from goroutines of their own).
	now atomic.Int64
}

func newWorld(t *testing.T, h Harness) *world {
	var mono monoid.Monoid[int64] = monoid.Sum[int64]{}
	if h.Monoid != nil {
		mono = h.Monoid
	}
	w := &world{t: t, h: h, m: newModel(mono, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)), staleness: h.Staleness}
	if w.staleness <= 0 {
		w.staleness = time.Minute
	}
	w.now.Store(w.m.now.UnixNano())
	for range slots {
		w.slots = append(w.slots, w.open(0))
	}
	return w
}

// open opens an instance as variant v.
func (w *world) open(v int) slot {
	o, dedup := w.h.Open, dedupTTL(w.h.DedupTTL)
	if v > 0 {
		o, dedup = w.h.Variants[v-1].Open, dedupTTL(w.h.Variants[v-1].DedupTTL)
	}
	c, err := cache.New(o(w.t), cache.WithStaleness(w.staleness), cache.WithClock(func() time.Time { return time.Unix(0, w.now.Load()) }))
	if err != nil {
		w.t.Fatalf("statesim: cache.New: %v", err)
	}
	return slot{s: o(w.t), c: c, dedup: dedup, variant: v}
}

func (w *world) Close() {
	for _, s := range w.slots {
		s.close()
	}
}

func (w *world) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(w.t.Context(), callTimeout)
}

// fencing is the lease of o ("" unfenced) and fence.
func fencing(o op) (string, int64) {
	if o.lease < 0 {
		return "", 0
	}
	return fenceOf(o.lease)
}

// store is what o writes through: its slot's store, or a fenced view of it.
func (w *world) store(o op) (state.Store[int64], string) {
	s := w.slots[o.slot].s
	lease, f := fencing(o)
	if lease == "" {
		return s, "unfenced"
	}
	fs, err := state.Fenced(s, types.Lease{Key: lease, Token: "holder", Fence: f, ExpiresAt: w.m.now.Add(time.Hour)})
	if err != nil {
		w.t.Fatalf("state.Fenced: %v", err)
	}
	return fs, fmt.Sprintf("fence %s/%d", lease, f)
}

// advance moves the clock of the harness, the model and the caches by d.
func (w *world) advance(d time.Duration) {
	w.h.Sleep(w.t, d)
	w.m.advance(d)
	w.now.Store(w.m.now.UnixNano())
}

func keyName(k int) string { return fmt.Sprintf("%s/%d", keys[k].Entity, keys[k].Bucket) }

// Do runs o against the backend and the model, and returns its description
// and the referee's complaint.
func (w *world) Do(o op) (string, error) {
	desc, err := w.do(o)
	return fmt.Sprintf("[%s] slot %d %s", w.m.now.Format("01-02 15:04:05"), o.slot, desc), err
}

func (w *world) do(o op) (string, error) {
	switch o.kind {
	case opMerge:
		return w.merge(o)
	case opOnce:
		return w.once(o)
	case opMany:
		return w.many(o)
	case opGet, opCacheGet:
		return w.get(o)
	case opGetMany:
		return w.getMany(o)
	case opSleep:
		return w.sleep(o)
	case opSweep:
		w.advance(o.d)
		if w.h.Sweep == nil {
			return fmt.Sprintf("sweep: clock +%v (the server deletes nothing the store would not)", o.d), nil
		}
		w.h.Sweep(w.t)
		return fmt.Sprintf("sweep: clock +%v, then the server deleted what had expired", o.d), nil
	case opCorrupt:
		return w.corrupt(o)
	case opSeen:
		return w.seen(o)
	case opLost:
		return w.lost(o)
	case opRestart:
		s := &w.slots[o.slot]
		s.close()
		*s = w.open(o.n % (1 + len(w.h.Variants)))
		name := "Harness.Open"
		if s.variant > 0 {
			name = w.h.Variants[s.variant-1].Name
		}
		return fmt.Sprintf("restart as %s (claims for %v)", name, s.dedup), nil
	}
	return "", fmt.Errorf("unknown operation kind %d", o.kind)
}

// judge checks the outcome err of a merge into k fenced by (lease, f) (lease
// "" unfenced) and applies it to the model when it was accepted; what says
// which call it was.
func (w *world) judge(what string, k int, delta int64, ttl time.Duration, lease string, f int64, err error) error {
	must, may := false, false
	if lease != "" {
		must, may = w.m.fenceVerdict(k, lease, f)
	}
	switch {
	case err == nil && must:
		return fmt.Errorf("%s: accepted, but the live value of %s remembers fence %s/%d (package fence: a fence below the one its record remembers is refused)",
			what, keyName(k), lease, w.m.keys[k].sure[lease])
	case err == nil:
		w.m.merge(k, delta, ttl, lease, f)
		return nil
	case errors.Is(err, state.ErrFenced) && !may:
		return fmt.Errorf("%s: refused with %v, but no newer fence of %s ever merged (highest: %d)", what, err, lease, w.m.maxFence[lease])
	case errors.Is(err, state.ErrFenced):
		return nil
	}
	return fmt.Errorf("%s: %v", what, err)
}

func (w *world) merge(o op) (string, error) {
	s, how := w.store(o)
	lease, f := fencing(o)
	ttl := ttls[o.ttl]
	ctx, cancel := w.ctx()
	defer cancel()
	err := s.MergeUpdate(ctx, keys[o.key], o.delta, ttl)
	desc := fmt.Sprintf("MergeUpdate(%s, %+d, ttl %v) %s: %v", keyName(o.key), o.delta, ttl, how, errOr(err, "ok"))
	if w.m.keys[o.key].corrupt {
		if err == nil {
			return desc, fmt.Errorf("MergeUpdate into the corrupt value of %s succeeded (package state, \"Corrupt values\": it fails and changes nothing)", keyName(o.key))
		}
		return desc, nil
	}
	return desc, w.judge("MergeUpdate", o.key, o.delta, ttl, lease, f, err)
}

func (w *world) once(o op) (string, error) {
	s, how := w.store(o)
	os, ok := s.(state.OnceStore[int64])
	if !ok {
		return "MergeUpdateOnce: not a state.OnceStore", nil
	}
	lease, f := fencing(o)
	ttl, event, sl := ttls[o.ttl], events[o.n%len(events)], w.slots[o.slot]
	ctx, cancel := w.ctx()
	defer cancel()
	applied, err := os.MergeUpdateOnce(ctx, event, keys[o.key], o.delta, ttl)
	desc := fmt.Sprintf("MergeUpdateOnce(%s, %s, %+d, ttl %v) %s: applied=%v %v", event, keyName(o.key), o.delta, ttl, how, applied, errOr(err, "ok"))
	claimed := w.m.claimed(event, o.key)
	switch {
	case w.m.keys[o.key].corrupt:
		if err == nil && (applied || !claimed) {
			return desc, fmt.Errorf("MergeUpdateOnce into the corrupt value of %s: applied=%v, no error (package state, \"Corrupt values\": it fails and changes nothing)", keyName(o.key), applied)
		}
		return desc, nil
	case claimed:
		if err != nil || applied {
			x := w.m.claims[claimID{event, o.key}]
			return desc, fmt.Errorf("MergeUpdateOnce of %s on %s, claimed until %v: applied=%v err=%v, want a duplicate (not applied, no error; the claim is checked first, whatever the fence)", event, keyName(o.key), x, applied, err)
		}
		return desc, nil
	case err == nil && !applied:
		return desc, fmt.Errorf("MergeUpdateOnce of %s on %s was not applied, but the event has no live claim there (claims live for the dedup TTL from the first delivery)", event, keyName(o.key))
	}
	if err := w.judge("MergeUpdateOnce", o.key, o.delta, ttl, lease, f, err); err != nil {
		return desc, err
	}
	if err == nil {
		w.m.claim(event, o.key, sl.dedup)
	}
	return desc, nil
}

func (w *world) many(o op) (string, error) {
	s, how := w.store(o)
	bs, ok := s.(state.BatchStore[int64])
	if !ok {
		return "MergeMany: not a state.BatchStore", nil
	}
	lease, f := fencing(o)
	var ups []state.Update[int64]
	var idx []int
	for i := range 1 + o.n%3 {
		k := (o.n >> (2 + 2*i)) % len(keys)
		if w.m.keys[k].corrupt {
			continue // a corrupt value may fail the batch before its first write
		}
		idx = append(idx, k)
		ups = append(ups, state.Update[int64]{Key: keys[k], Delta: o.delta + int64(i), TTL: ttls[(o.ttl+i)%len(ttls)]})
	}
	if len(ups) == 0 {
		return "MergeMany: every key of the batch is corrupt", nil
	}
	ctx, cancel := w.ctx()
	defer cancel()
	err := bs.MergeMany(ctx, ups)
	parts := make([]string, len(ups))
	for i, u := range ups {
		parts[i] = fmt.Sprintf("%s %+d ttl %v", keyName(idx[i]), u.Delta, u.TTL)
	}
	desc := fmt.Sprintf("MergeMany([%s]) %s: %v", strings.Join(parts, "; "), how, errOr(err, "ok"))
	var me *state.MergeError
	if err != nil && (!errors.As(err, &me) || len(me.Errs) != len(ups)) {
		return desc, fmt.Errorf("MergeMany: %v, want nil or a *state.MergeError with one entry per update", err)
	}
	for i, u := range ups {
		var e error
		if me != nil {
			e = me.Errs[i]
		}
		if err := w.judge(fmt.Sprintf("MergeMany update %d", i), idx[i], u.Delta, u.TTL, lease, f, e); err != nil {
			return desc, err
		}
	}
	return desc, nil
}

func (w *world) get(o op) (string, error) {
	s, via := w.slots[o.slot].s, "Get"
	allowed := w.m.within(o.key, w.h.ReadStaleness)
	if o.kind == opCacheGet {
		s, via = w.slots[o.slot].c, "cached Get"
		allowed = w.m.within(o.key, w.staleness+w.h.ReadStaleness)
	}
	ctx, cancel := w.ctx()
	defer cancel()
	v, found, err := s.Get(ctx, keys[o.key])
	got := snap{found: found, v: v}
	desc := fmt.Sprintf("%s(%s): %v", via, keyName(o.key), got)
	if err != nil {
		desc = fmt.Sprintf("%s(%s): %v", via, keyName(o.key), err)
		got = snap{found: true, corrupt: true}
		if !errors.Is(err, state.ErrCorrupt) {
			return desc, fmt.Errorf("%s of %s: %v, want a value or, for a corrupt one, an error wrapping state.ErrCorrupt", via, keyName(o.key), err)
		}
	}
	return desc, allow(via, o.key, got, allowed)
}

// allow checks that got is one of allowed.
func allow(via string, k int, got snap, allowed []snap) error {
	for _, a := range allowed {
		if a.corrupt == got.corrupt && a.found == got.found && (!a.found || a.corrupt || a.v == got.v) {
			return nil
		}
	}
	return fmt.Errorf("%s of %s returned %v, want %v", via, keyName(k), got, allowed)
}

func (w *world) getMany(o op) (string, error) {
	var ks []state.Key
	var idx []int
	var allowed [][]snap
	corrupt, mayCorrupt := false, false
	for i := range 1 + o.n%4 {
		k := (o.n >> (2 + 2*i)) % len(keys)
		idx = append(idx, k)
		ks = append(ks, keys[k])
		allowed = append(allowed, w.m.within(k, w.h.ReadStaleness))
		corrupt = corrupt || w.m.keys[k].corrupt
		mayCorrupt = mayCorrupt || slices.ContainsFunc(allowed[i], func(s snap) bool { return s.corrupt })
	}
	ctx, cancel := w.ctx()
	defer cancel()
	vs, found, err := w.slots[o.slot].s.GetMany(ctx, ks)
	names := make([]string, len(idx))
	for i, k := range idx {
		names[i] = keyName(k)
	}
	desc := fmt.Sprintf("GetMany(%s): ", strings.Join(names, ", "))
	if err != nil {
		desc += err.Error()
		if !mayCorrupt || !errors.Is(err, state.ErrCorrupt) {
			return desc, fmt.Errorf("GetMany: %v (want an error wrapping state.ErrCorrupt exactly when a key is corrupt)", err)
		}
		return desc, nil
	}
	if len(vs) != len(ks) || len(found) != len(ks) {
		return desc, fmt.Errorf("GetMany of %d keys returned %d values and %d found flags", len(ks), len(vs), len(found))
	}
	got := make([]string, len(ks))
	for i := range ks {
		got[i] = snap{found: found[i], v: vs[i]}.String()
	}
	desc += strings.Join(got, ", ")
	if corrupt && w.h.ReadStaleness == 0 {
		return desc, errors.New("GetMany of a corrupt key returned no error (package state: it fails whole, with state.ErrCorrupt)")
	}
	for i, k := range idx {
		if err := allow("GetMany", k, snap{found: found[i], v: vs[i]}, allowed[i]); err != nil {
			return desc, fmt.Errorf("%v (slot %d of the request)", err, i)
		}
	}
	return desc, nil
}

func (w *world) sleep(o op) (string, error) {
	d, shape := o.d, "a jump"
	if in := w.m.instants(); len(in) > 0 && (o.m%4 == 1 || o.m%4 == 2) {
		slices.SortFunc(in, func(a, b time.Time) int { return a.Compare(b) })
		d, shape = in[o.n%len(in)].Sub(w.m.now), "to an expiry instant"
		if o.m%4 == 2 && d > time.Second {
			d, shape = d-time.Second, "to a second before an expiry instant"
		}
	} else if o.m%4 == 3 {
		d, shape = time.Duration(1+o.n%5)*time.Second, "a few seconds"
	}
	if (shape == "a jump" || shape == "a few seconds") && slices.ContainsFunc(w.m.instants(), w.m.now.Add(d).Equal) {
		shape += ", onto an expiry instant"
	}
	w.advance(d)
	return fmt.Sprintf("sleep %v (%s)", d, shape), nil
}

// seen claims or releases one of seenIDs through o's slot's Deduper: one in
// four a Release, which must succeed and drop the claim; else a MarkSeen,
// first exactly when the ID has no live claim, which then lives for DedupTTL
// (a duplicate does not extend it).
func (w *world) seen(o op) (string, error) {
	sl := &w.slots[o.slot]
	if sl.d == nil {
		sl.d = w.h.OpenDeduper(w.t)
	}
	id := seenIDs[o.n%len(seenIDs)]
	ctx, cancel := w.ctx()
	defer cancel()
	if o.m%4 == 0 {
		err := sl.d.Release(ctx, id)
		desc := fmt.Sprintf("Release(%s): %v", id, errOr(err, "ok"))
		if err != nil {
			return desc, fmt.Errorf("release of %s: %w", id, err)
		}
		delete(w.m.seen, id)
		return desc, nil
	}
	first, err := sl.d.MarkSeen(ctx, id)
	desc := fmt.Sprintf("MarkSeen(%s): first=%v %v", id, first, errOr(err, "ok"))
	if err != nil {
		return desc, fmt.Errorf("MarkSeen of %s: %w", id, err)
	}
	x, claimed := w.m.seen[id]
	claimed = claimed && (x.IsZero() || w.m.now.Before(x))
	if first == claimed {
		return desc, fmt.Errorf("MarkSeen of %s: first=%v, but its claim is %s", id, first, map[bool]string{true: "live until " + x.Format(time.RFC3339), false: "gone"}[claimed])
	}
	if first {
		w.m.seen[id] = time.Time{}
		if ttl := dedupTTL(w.h.DedupTTL); ttl > 0 {
			w.m.seen[id] = w.m.now.Add(ttl)
		}
	}
	return desc, nil
}

func (w *world) corrupt(o op) (string, error) {
	if w.h.Corrupt == nil {
		return "corrupt: no Harness.Corrupt", nil
	}
	if w.m.keys[o.key].corrupt {
		return fmt.Sprintf("corrupt %s: already corrupt", keyName(o.key)), nil
	}
	// The value must exist without expiry: an unfenced merge of 0 with ttl 0.
	ctx, cancel := w.ctx()
	defer cancel()
	err := w.slots[0].s.MergeUpdate(ctx, keys[o.key], 0, 0)
	if err := w.judge("MergeUpdate before corrupting", o.key, 0, 0, "", 0, err); err != nil {
		return "corrupt", err
	}
	w.h.Corrupt(w.t, keys[o.key])
	w.m.corrupt(o.key)
	return fmt.Sprintf("MergeUpdate(%s, +0, ttl 0) then corrupt its value", keyName(o.key)), nil
}

func errOr(err error, ok string) string {
	if err == nil {
		return ok
	}
	return err.Error()
}
