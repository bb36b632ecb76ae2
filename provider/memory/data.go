package memory

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// table is one map of the data, for the generic get and list: how to select it
// and the record key (see raw) of each of its entries.
type table[K comparable, V any] struct {
	of  func(s *data) map[K]V
	ref func(k K) rawKey
}

// The tables of the data.
var (
	pipelines = table[string, types.PipelineConfig]{func(s *data) map[string]types.PipelineConfig { return s.pipelines }, idRef(provider.KindPipeline)}
	runs      = table[string, types.RunState]{func(s *data) map[string]types.RunState { return s.runs }, idRef(provider.KindRunState)}
	runLogs   = table[slot, types.RunLogEntry]{func(s *data) map[slot]types.RunLogEntry { return s.runLogs }, slotRef(provider.KindRunLog)}
	reruns    = table[string, types.RerunRecord]{func(s *data) map[string]types.RerunRecord { return s.reruns }, idRef(provider.KindRerun)}
	replays   = table[slot, types.ReplayRequest]{func(s *data) map[slot]types.ReplayRequest { return s.replays }, slotRef(provider.KindReplay)}
	markers   = table[slot, types.CascadeMarker]{func(s *data) map[slot]types.CascadeMarker { return s.markers }, slotRef(provider.KindCascadeMarker)}
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
}

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
	la  types.LateArrival
	raw []byte
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
		written:      make(chan struct{}),
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

// live reports whether something expiring at expires (zero: never) is visible at now.
func live(expires, now time.Time) bool { return expires.IsZero() || now.Before(expires) }

// expiry returns now+ttl, or the zero time for ttl == 0.
func expiry(now time.Time, ttl time.Duration) time.Time {
	if ttl == 0 {
		return time.Time{}
	}
	return now.Add(ttl)
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

// write runs set with the store locked.
func (p *Provider) write(ctx context.Context, set func(s *data)) error {
	if err := p.begin(ctx); err != nil {
		return err
	}
	defer p.s.mu.Unlock()
	set(p.s)
	return nil
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

// get returns a copy of the entity at k of t, or nil when absent.
func get[K comparable, V any](ctx context.Context, p *Provider, t table[K, V], k K) (*V, error) {
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	defer p.s.mu.Unlock()
	v, ok := t.of(p.s)[k]
	if !ok {
		return nil, nil
	}
	out, err := load(p.s, t.ref(k), v)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// put stores v at k of t, replacing any stored form a test wrote; s must be
// locked.
func put[K comparable, V any](s *data, t table[K, V], k K, v V) {
	t.of(s)[k] = v
	s.wrote(t.ref(k))
}

// list returns copies of the values of t that keep accepts (nil: all), ordered
// by cmpFn, at most limit; a record that does not decode is skipped and reported,
// and the next one takes its place.
func list[K comparable, V any](ctx context.Context, p *Provider, limit int, t table[K, V], keep func(V) bool, cmpFn func(a, b V) int) ([]V, error) {
	if err := provider.CheckLimit(limit); err != nil {
		return nil, err
	}
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	defer p.s.mu.Unlock()
	type entry struct {
		k K
		v V
	}
	var es []entry
	for k, v := range t.of(p.s) {
		if keep == nil || keep(v) {
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
	return out, nil
}
