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

// Selectors of the data's maps, for the generic get and list.
func pipelines(s *data) map[string]types.PipelineConfig { return s.pipelines }
func runs(s *data) map[string]types.RunState            { return s.runs }
func runLogs(s *data) map[slot]types.RunLogEntry        { return s.runLogs }
func reruns(s *data) map[string]types.RerunRecord       { return s.reruns }
func replays(s *data) map[slot]types.ReplayRequest      { return s.replays }
func markers(s *data) map[slot]types.CascadeMarker      { return s.markers }

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
	lateArrivals map[slot][]types.LateArrival
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

// markerWrite is one write of the marker log.
type markerWrite struct {
	m       types.CascadeMarker
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
		lateArrivals: map[slot][]types.LateArrival{},
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

func clonePtr[T any](v T) *T {
	out := mustClone(v)
	return &out
}

func cloneAll[T any](vs []T) []T {
	out := make([]T, len(vs))
	for i, v := range vs {
		out[i] = mustClone(v)
	}
	return out
}

func firstN[T any](vs []T, n int) []T {
	if len(vs) > n {
		return vs[:n]
	}
	return vs
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

// get returns a copy of the entity at k of the map that of selects, or nil when absent.
func get[K comparable, V any](ctx context.Context, p *Provider, of func(*data) map[K]V, k K) (*V, error) {
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	defer p.s.mu.Unlock()
	v, ok := of(p.s)[k]
	if !ok {
		return nil, nil
	}
	return clonePtr(v), nil
}

// list returns copies of the values of the map that of selects that keep accepts
// (nil: all), ordered by cmpFn, at most limit.
func list[K comparable, V any](ctx context.Context, p *Provider, limit int, of func(*data) map[K]V, keep func(V) bool, cmpFn func(a, b V) int) ([]V, error) {
	if err := provider.CheckLimit(limit); err != nil {
		return nil, err
	}
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	defer p.s.mu.Unlock()
	return cloneAll(firstN(sortedValues(of(p.s), keep, cmpFn), limit)), nil
}
