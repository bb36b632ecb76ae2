package memprovider

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/pipestate/pipestate/fence"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// table is one map of the data, for the generic get and list: how to select it
// and the record key (see raw) of each of its entries.
type table[K comparable, V any] struct {
	of  func(s *data) map[K]V
	ref func(k K) rawKey
	// keep is the field of a provider.Retention that applies to the table's
	// records (nil: kept forever).
	keep func(r provider.Retention) time.Duration
}

// The tables of the data.
var (
	pipelines = table[string, types.PipelineConfig]{func(s *data) map[string]types.PipelineConfig { return s.pipelines }, idRef(provider.KindPipeline), nil}
	runs      = table[string, types.RunState]{func(s *data) map[string]types.RunState { return s.runs }, idRef(provider.KindRunState),
		func(r provider.Retention) time.Duration { return r.Runs }}
	runLogs = table[slot, types.RunLogEntry]{func(s *data) map[slot]types.RunLogEntry { return s.runLogs }, slotRef(provider.KindRunLog),
		func(r provider.Retention) time.Duration { return r.RunLogs }}
	reruns = table[string, types.RerunRecord]{func(s *data) map[string]types.RerunRecord { return s.reruns }, idRef(provider.KindRerun),
		func(r provider.Retention) time.Duration { return r.Reruns }}
	replays = table[slot, types.ReplayRequest]{func(s *data) map[slot]types.ReplayRequest { return s.replays }, slotRef(provider.KindReplay),
		func(r provider.Retention) time.Duration { return r.Replays }}
	markers = table[slot, types.CascadeMarker]{func(s *data) map[slot]types.CascadeMarker { return s.markers }, slotRef(provider.KindCascadeMarker),
		func(r provider.Retention) time.Duration { return r.CascadeMarkers }}
)

func idRef(kind provider.RecordKind) func(string) rawKey {
	return func(id string) rawKey { return rawKey{kind: kind, a: id} }
}

func slotRef(kind provider.RecordKind) func(slot) rawKey {
	return func(k slot) rawKey { return rawKey{kind: kind, a: k.pipeline, b: k.date, c: k.schedule} }
}

// rawKey names one record of the data whose stored form was replaced (see
// data.raw): its kind and the parts of its identity.
type rawKey struct {
	kind    provider.RecordKind
	a, b, c string
}

// name is the record's ID and key for a provider.CorruptError.
func (k rawKey) name() (id, key string) {
	id = k.a
	for _, part := range []string{k.b, k.c} {
		if part != "" {
			id += ":" + part
		}
	}
	return id, "memory " + string(k.kind) + " " + id
}

// data is what the Providers of one New and its handles share.
type data struct {
	mu           sync.Mutex
	pipelines    map[string]types.PipelineConfig
	traits       map[string]map[string]types.TraitEvaluation // pipeline -> trait type
	runs         map[string]types.RunState                   // run ID
	events       map[string]*eventLog                        // pipeline
	runLogs      map[slot]types.RunLogEntry
	reruns       map[string]types.RerunRecord // rerun ID
	replays      map[slot]types.ReplayRequest
	lateArrivals map[slot][]lateArrival
	markers      map[slot]types.CascadeMarker
	readiness    map[string]readiness
	locks        map[string]lock
	fences       map[string]int64 // survive expiry and release, forever
	// fenced is what each record remembers of the fenced writes that wrote it
	// (package fence): a run, run log, rerun, replay or marker until retention
	// drops it; a pipeline's event log and a late-arrival list for as long as
	// the data lives.
	fenced map[rawKey]fence.Set
	// markerLog is the marker writes retention has not dropped yet: write i
	// (from 1; its cursor is i) is markerLog[i-1-markerDropped].
	markerLog     []markerWrite
	markerDropped int64 // the writes dropped from the front of markerLog
	// written is closed (and replaced) by every event append and marker write, to
	// wake followers and watchers.
	written chan struct{}
	// raw holds the stored form of records that a test replaced with bytes of its
	// own (internal/corrupthook, for providertest's Harness.Corrupt): a read
	// decodes them instead of copying the record's value, which still orders and
	// filters the record, as an index does in a networked backend. A write of the
	// record drops its entry. Records of logs (events, late arrivals, marker
	// writes) carry their raw form themselves.
	raw map[rawKey][]byte
	// expires is the expiry of each record of a table whose retention is not
	// forever (absent: kept forever); expiring is the queue, in write order, of
	// what writes will drop once expired (see retain and prune), from head on.
	expires  map[rawKey]time.Time
	expiring []expiring
	head     int
}

// expiring is one entry of the queue of what expires: drop removes, at now, what
// a write made that expires at exp, unless a later write restarted its
// retention.
type expiring struct {
	exp  time.Time
	drop func(d *data, now time.Time)
}

// pruneBatch bounds the expired entries of the queue one write drops: the store
// shrinks as fast as it grows, and no write pays for a long backlog at once.
const pruneBatch = 100

// retain queues drop to run once exp has passed (nothing for the zero exp:
// kept forever); d must be locked.
func (d *data) retain(exp time.Time, drop func(d *data, now time.Time)) {
	if !exp.IsZero() {
		d.expiring = append(d.expiring, expiring{exp, drop})
	}
}

// prune drops up to pruneBatch expired entries from the front of the queue
// (an entry behind one that expires later waits for it: handles with
// different retentions only delay pruning); d must be locked. Only writes call
// it: reads filter instead (provider.Live).
func (d *data) prune(now time.Time) {
	for n := 0; n < pruneBatch && d.head < len(d.expiring) && !provider.Live(d.expiring[d.head].exp, now); n++ {
		e := d.expiring[d.head]
		d.expiring[d.head] = expiring{}
		d.head++
		e.drop(d, now)
	}
	if d.head > len(d.expiring)/2 && d.head > pruneBatch {
		d.expiring = slices.Delete(d.expiring, 0, d.head)
		d.head = 0
	}
}

// alive reports whether the record at ref is visible at now by its retention;
// d must be locked.
func (d *data) alive(ref rawKey, now time.Time) bool { return provider.Live(d.expires[ref], now) }

// wrote drops the replaced stored form of the record at k, which a write just
// replaced; d must be locked.
func (d *data) wrote(k rawKey) {
	if len(d.raw) > 0 {
		delete(d.raw, k)
	}
}

// lateArrival is one late arrival as stored; raw, when not nil, is its stored
// form, written by a test.
type lateArrival struct {
	la      types.LateArrival
	raw     []byte
	expires time.Time // zero: kept forever
}

// writes returns the channel the next write closes.
func (d *data) writes() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.written
}

// wake tells followers and watchers that something was written; d must be locked.
func (d *data) wake() {
	close(d.written)
	d.written = make(chan struct{})
}

// markerWrite is one write of the marker log; raw, when not nil, is its stored
// form, written by a test.
type markerWrite struct {
	m       types.CascadeMarker
	raw     []byte
	expires time.Time // zero: kept forever
}

// slot is a (pipeline, date, schedule) key.
type slot struct{ pipeline, date, schedule string }

// newData returns empty data.
func newData() *data {
	return &data{
		pipelines:    map[string]types.PipelineConfig{},
		traits:       map[string]map[string]types.TraitEvaluation{},
		runs:         map[string]types.RunState{},
		events:       map[string]*eventLog{},
		runLogs:      map[slot]types.RunLogEntry{},
		reruns:       map[string]types.RerunRecord{},
		replays:      map[slot]types.ReplayRequest{},
		lateArrivals: map[slot][]lateArrival{},
		markers:      map[slot]types.CascadeMarker{},
		readiness:    map[string]readiness{},
		locks:        map[string]lock{},
		fences:       map[string]int64{},
		fenced:       map[rawKey]fence.Set{},
		written:      make(chan struct{}),
		expires:      map[rawKey]time.Time{},
	}
}

// clone deep-copies v through JSON, as a networked backend would store it.
func clone[T any](v T) (T, error) {
	var out T
	b, err := json.Marshal(v)
	if err != nil {
		return out, provider.Invalid(err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return out, provider.Invalid(err)
	}
	return out, nil
}

// mustClone copies a value that came out of the store, which always encodes.
func mustClone[T any](v T) T {
	out, err := clone(v)
	if err != nil {
		panic("memory: stored value does not round-trip: " + err.Error())
	}
	return out
}

// newestFirst orders by time descending, then by ID descending.
func newestFirst(at1, at2 time.Time, id1, id2 string) int {
	if c := at2.Compare(at1); c != 0 {
		return c
	}
	return cmp.Compare(id2, id1)
}

// sortedValues returns the map's values ordered by cmpFn.
func sortedValues[K comparable, V any](m map[K]V, keep func(V) bool, cmpFn func(a, b V) int) []V {
	var out []V
	for _, v := range m {
		if keep == nil || keep(v) {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, cmpFn)
	return out
}

// stored takes the result of a provider.Prepare* call (or a value and its check)
// and returns a deep copy of the value to store.
func stored[T any](v T, err error) (T, error) {
	if err != nil {
		return v, err
	}
	return clone(v)
}

// fenced runs set if the fencing rule (package fence) lets ctx's write write
// the record at ref, and then remembers its fence; the store must be locked.
func (p *Provider) fenced(ctx context.Context, ref rawKey, set func(s *data)) error {
	remember, err := p.s.admit(ctx, ref)
	if err != nil {
		return err
	}
	set(p.s)
	remember()
	return nil
}

// admit applies the fencing rule to ctx's write of the record at ref: an error
// wrapping fence.ErrFenced when a newer fence of the write's lease key wrote the
// record, otherwise the function the write calls once it has written (nothing
// to do for an unfenced write); d must be locked.
func (d *data) admit(ctx context.Context, ref rawKey) (remember func(), err error) {
	t, ok := fence.FromContext(ctx)
	if !ok {
		return func() {}, nil
	}
	id, _ := ref.name()
	if err := d.fenced[ref].Check(t, fmt.Sprintf("%s %s", ref.kind, id)); err != nil {
		return nil, err
	}
	return func() {
		if d.fenced[ref] == nil {
			d.fenced[ref] = fence.Set{}
		}
		d.fenced[ref].Remember(t)
	}, nil
}

// load returns the record at k, whose value is v, as a read returns it: a deep
// copy of v, or what its replaced stored form decodes to (a
// *provider.CorruptError when it does not); d must be locked.
func load[V any](d *data, k rawKey, v V) (V, error) {
	if raw, ok := d.raw[k]; ok {
		var out V
		err := provider.Decode(k.kind, raw, &out, k.name)
		return out, err
	}
	return mustClone(v), nil
}

// loadOrSkip is load for a listing: it returns false for a record that does not
// decode, after reporting it (provider.DecodeOrSkip); d must be locked.
func loadOrSkip[V any](ctx context.Context, p *Provider, k rawKey, v V) (V, bool) {
	if raw, ok := p.s.raw[k]; ok {
		var out V
		return out, provider.DecodeOrSkip(ctx, p.sig, k.kind, raw, &out, k.name)
	}
	return mustClone(v), true
}

// get returns a copy of the entity at k of t, or nil when absent; the store must
// be locked.
func get[K comparable, V any](p *Provider, t table[K, V], k K) (*V, error) {
	v, ok := t.of(p.s)[k]
	if !ok || !p.s.alive(t.ref(k), p.now()) {
		return nil, nil
	}
	out, err := load(p.s, t.ref(k), v)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// found returns the record at k of t when it is there and live at now; the
// store must be locked.
func found[K comparable, V any](p *Provider, t table[K, V], k K, now time.Time) (V, bool) {
	v, ok := t.of(p.s)[k]
	if !ok || !p.s.alive(t.ref(k), now) {
		var zero V
		return zero, false
	}
	return v, true
}

// put stores v at k of t, written by p at now: it replaces any stored form a
// test wrote, restarts the record's retention (p's, for t's kind) and drops a
// few expired records (prune); the store must be locked.
func put[K comparable, V any](p *Provider, now time.Time, t table[K, V], k K, v V) {
	s, ref := p.s, t.ref(k)
	t.of(s)[k] = v
	s.wrote(ref)
	var exp time.Time
	if t.keep != nil {
		exp = provider.Expiry(now, t.keep(p.retention))
	}
	if exp.IsZero() {
		delete(s.expires, ref)
	} else {
		s.expires[ref] = exp
		s.retain(exp, func(d *data, _ time.Time) {
			if cur, ok := d.expires[ref]; ok && cur.Equal(exp) { // not written since
				delete(t.of(d), k)
				delete(d.expires, ref)
				delete(d.fenced, ref)
				d.wrote(ref)
			}
		})
	}
	s.prune(now)
}

// list returns copies of the values of t that keep accepts (nil: all), ordered
// by cmpFn, at most limit; a record that does not decode is skipped and reported,
// and the next one takes its place; the store must be locked.
func list[K comparable, V any](ctx context.Context, p *Provider, limit int, t table[K, V], keep func(V) bool, cmpFn func(a, b V) int) []V {
	type entry struct {
		k K
		v V
	}
	var es []entry
	now := p.now()
	for k, v := range t.of(p.s) {
		if (keep == nil || keep(v)) && p.s.alive(t.ref(k), now) {
			es = append(es, entry{k, v})
		}
	}
	slices.SortFunc(es, func(a, b entry) int { return cmpFn(a.v, b.v) })
	out := make([]V, 0, min(limit, len(es)))
	for _, e := range es {
		if len(out) == limit {
			break
		}
		if v, ok := loadOrSkip(ctx, p, t.ref(e.k), e.v); ok {
			out = append(out, v)
		}
	}
	return out
}
