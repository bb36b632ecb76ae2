package memory

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pipestate/pipestate/internal/ids"
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
}

// slot is a (pipeline, date, schedule) key.
type slot struct{ pipeline, date, schedule string }

type eventLog struct {
	seq     int64 // last sequence number handed out
	records []record
}

type record struct {
	seq     int64
	ev      types.Event
	expires time.Time // zero: kept forever
}

type readiness struct {
	result  types.ReadinessResult
	expires time.Time
}

// lock is a held lock or lease; holder is "lock:"+owner or "lease:"+token.
type lock struct {
	holder  string
	expires time.Time // zero: never
}

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
	}
}

// DefaultReadinessTTL is how long PutReadiness keeps a result unless WithReadinessTTL says otherwise.
const DefaultReadinessTTL = 5 * time.Minute

// Option configures a Provider; see New. An option given a bad value makes New or
// NewHandle fail with an error wrapping provider.ErrInvalidArgument.
type Option func(*Provider) error

// WithClock sets the clock that fills timestamps and judges TTLs (default time.Now).
func WithClock(now func() time.Time) Option {
	return func(p *Provider) error {
		if now == nil {
			return provider.Invalidf("memory: WithClock: nil clock")
		}
		p.now = now
		return nil
	}
}

// WithOwner sets the lock owner identity (default: 16 random bytes in hex).
func WithOwner(owner string) Option {
	return func(p *Provider) error {
		if owner == "" {
			return provider.Invalidf("memory: WithOwner: empty owner")
		}
		p.owner = owner
		return nil
	}
}

// WithReadinessTTL sets how long readiness results are kept (default
// DefaultReadinessTTL); it must be positive and at most provider.MaxTTL.
func WithReadinessTTL(ttl time.Duration) Option {
	return func(p *Provider) error {
		if ttl <= 0 || ttl > provider.MaxTTL {
			return provider.Invalidf("memory: WithReadinessTTL: ttl %v is outside (0, %v]", ttl, provider.MaxTTL)
		}
		p.readinessTTL = ttl
		return nil
	}
}

// WithEventRetention keeps each event for d after it is appended, by the clock of
// the provider that appends it: from then on (now >= append time + d) it is
// invisible to ListEvents and ReadEventsSince, and a cursor of a dropped event reads
// from the oldest retained one. The default, 0, keeps events forever; d must be at
// most provider.MaxTTL.
func WithEventRetention(d time.Duration) Option {
	return func(p *Provider) error {
		if err := provider.CheckTTL(d); err != nil {
			return fmt.Errorf("memory: WithEventRetention: %w", err)
		}
		p.eventRetention = d
		return nil
	}
}

// Provider is one client of its data. It implements provider.Provider,
// provider.Leaser and provider.CascadeReader and is safe for concurrent use.
type Provider struct {
	s              *data
	now            func() time.Time
	owner          string
	readinessTTL   time.Duration
	eventRetention time.Duration
	closed         atomic.Bool
}

var (
	_ provider.Provider      = (*Provider)(nil)
	_ provider.Leaser        = (*Provider)(nil)
	_ provider.CascadeReader = (*Provider)(nil)
)

// New returns a Provider on new, empty data. It fails only on an invalid or nil
// option (an error wrapping provider.ErrInvalidArgument).
func New(opts ...Option) (*Provider, error) {
	return open(newData(), opts)
}

// NewHandle returns another Provider on p's data, like a second client of one
// server: it sees everything p writes, and p everything it writes. Its options are
// its own (a fresh owner identity, the default clock and TTLs unless opts say
// otherwise); p is unchanged.
func (p *Provider) NewHandle(opts ...Option) (*Provider, error) {
	return open(p.s, opts)
}

func open(s *data, opts []Option) (*Provider, error) {
	p := &Provider{s: s, now: time.Now, owner: ids.Random(), readinessTTL: DefaultReadinessTTL}
	for _, o := range opts {
		if o == nil {
			return nil, provider.Invalidf("memory: nil option")
		}
		if err := o(p); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Owner returns the lock owner identity of p.
func (p *Provider) Owner() string { return p.owner }

// begin checks the context and the lifecycle, then takes the store lock; the caller
// must call p.s.mu.Unlock.
func (p *Provider) begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if p.closed.Load() {
		return provider.ErrClosed
	}
	p.s.mu.Lock()
	return nil
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

// Start implements provider.Provider. It does nothing but report ErrClosed after Stop.
func (p *Provider) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if p.closed.Load() {
		return provider.ErrClosed
	}
	return nil
}

// Stop implements provider.Provider. The data stays usable by p's other handles.
func (p *Provider) Stop(ctx context.Context) error {
	p.closed.Store(true)
	return nil
}

// Ping implements provider.Provider.
func (p *Provider) Ping(ctx context.Context) error { return p.Start(ctx) }

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
