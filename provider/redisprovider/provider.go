package redisprovider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/metric"

	"github.com/pipestate/pipestate/internal/ids"
	"github.com/pipestate/pipestate/internal/lifecycle"
	"github.com/pipestate/pipestate/internal/nilcheck"
	"github.com/pipestate/pipestate/internal/redisx"
	"github.com/pipestate/pipestate/internal/signal"
	"github.com/pipestate/pipestate/provider"
)

// Defaults of the options.
const (
	// DefaultKeyPrefix is the key prefix used without WithKeyPrefix.
	DefaultKeyPrefix = "pipestate"
	// DefaultReadinessTTL is how long PutReadiness keeps a result without WithReadinessTTL.
	DefaultReadinessTTL = provider.DefaultReadinessTTL
	// DefaultMaxEvents is the approximate number of events kept per pipeline
	// without WithMaxEvents.
	DefaultMaxEvents = 100_000
	// DefaultMaxMarkerWrites is the approximate number of cascade marker writes
	// the marker log keeps for watchers without WithMaxMarkerWrites.
	DefaultMaxMarkerWrites = 100_000
	// DefaultMaxValueSize is the largest encoded value, in bytes, stored without
	// WithMaxValueSize.
	DefaultMaxValueSize = 1 << 20
	// MinMaxValueSize is the smallest limit WithMaxValueSize accepts: every backend
	// stores at least 256 KB of metadata.
	MinMaxValueSize = 256 << 10
)

// Compile-time checks of the interfaces Provider implements.
var (
	_ provider.Provider      = (*Provider)(nil)
	_ provider.Leaser        = (*Provider)(nil)
	_ provider.CascadeReader = (*Provider)(nil)
	_ provider.RunCreator    = (*Provider)(nil)
	_ provider.EventFollower = (*Provider)(nil)
	_ provider.MarkerWatcher = (*Provider)(nil)
)

// Provider is a provider.Provider (with provider.Leaser, provider.CascadeReader,
// provider.RunCreator, provider.EventFollower, provider.MarkerWatcher,
// provider.LockInspector and provider.LockLister) kept in Redis. It is safe for concurrent use by many goroutines; several Providers,
// in one process or many, may share one Redis under the same key prefix. Create it
// with New.
type Provider struct {
	c            goredis.UniversalClient
	k            keys
	owner        string
	readinessTTL time.Duration
	maxEvents    int64
	retention    provider.Retention
	maxMarkers   int64
	maxValue     int
	now          func() time.Time
	closeClient  bool
	// life opens every method (closed, ctx, read-only, arguments; see
	// internal/lifecycle): its read-only mode makes every write fail with
	// ErrReadOnly and reads repair nothing (see WithReadOnly).
	life *lifecycle.Flag
	// scripts runs the Lua scripts on c (see run).
	scripts redisx.Runner
	stopped chan struct{} // closed by Stop: ends followers at once
	meter   metric.MeterProvider
	log     *slog.Logger
	sig     *signal.Recorder
	started atomic.Bool
	// traitsByScript holds the IDs of pipelines whose next GetTraits runs the
	// traits_read script directly (see GetTraits): a hint, never the truth.
	traitsByScript hints
}

// maxHints bounds a hints set: past it, new IDs are not kept (their GetTraits
// tries one HSCAN first, one round trip more), so a process that
// meets many pipelines once keeps no more than this.
const maxHints = 10_000

// hints is a set of IDs, safe for concurrent use, that keeps no new ID once it
// holds maxHints (concurrent adds may pass that by at most their number).
type hints struct {
	m sync.Map // ID -> struct{}
	n atomic.Int64
}

func (h *hints) has(id string) bool { _, ok := h.m.Load(id); return ok }

func (h *hints) add(id string) {
	if h.n.Load() >= maxHints {
		return
	}
	if _, loaded := h.m.LoadOrStore(id, struct{}{}); !loaded {
		h.n.Add(1)
	}
}

func (h *hints) remove(id string) {
	if _, ok := h.m.LoadAndDelete(id); ok {
		h.n.Add(-1)
	}
}

// Option configures a Provider; see New. An option given a bad value makes New
// fail with an error wrapping provider.ErrInvalidArgument.
//
// Why providers and stores configure two ways: a provider backend has one
// constructor, so every Option applies to it and a plain func(*Provider) error
// lets a wrong option no room to hide; the stores have several constructors per
// backend (four stores and a Deduper), and their typed options
// (state/redisstate.StoreOption, BytesOption, DeduperOption) make an option that a
// constructor does not use a compile error rather than a silent no-op.
type Option func(*Provider) error

// WithKeyPrefix sets the prefix of every key the provider writes (default
// DefaultKeyPrefix). It must be 1 to 64 bytes of valid UTF-8 without '{', '}' or control
// characters, so that the hash tags that follow it are the ones the provider
// chooses. Providers that must not see each other's data need prefixes that are not
// equal.
//
// The library's one rule for namespaces: a handle has a default namespace only
// where sharing it is the point. A provider is a deployment's one orchestration
// state, which every instance, the CLI (its --prefix defaults to the same) and
// the examples must meet in without configuration, so it defaults to
// DefaultKeyPrefix; a store's values are an application's own, and two stores
// that defaulted to one prefix would merge into each other's values, so every
// store (state/redisstate) and every DynamoDB handle takes its namespace, a prefix or
// a table, as an argument.
func WithKeyPrefix(prefix string) Option {
	return func(p *Provider) error {
		if err := redisx.CheckPrefix(prefix); err != nil {
			return provider.Invalidf("redis: WithKeyPrefix: %v", err)
		}
		p.k = keys{prefix: prefix}
		return nil
	}
}

// WithOwner sets the lock owner identity of this instance (default: 128 random bits
// in hex). Two instances with the same owner can release each other's locks.
func WithOwner(owner string) Option {
	return func(p *Provider) error {
		if err := provider.CheckOwner(owner); err != nil {
			return err
		}
		p.owner = owner
		return nil
	}
}

// WithReadinessTTL sets how long PutReadiness keeps a result (default
// DefaultReadinessTTL). It must be at least one millisecond and at most
// provider.MaxTTL.
func WithReadinessTTL(ttl time.Duration) Option {
	return func(p *Provider) error {
		if err := provider.CheckReadinessTTL(ttl); err != nil {
			return err
		}
		p.readinessTTL = ttl
		return nil
	}
}

// WithMaxEvents sets the approximate number of most recent events kept per
// pipeline (default DefaultMaxEvents): AppendEvent trims the stream with
// XADD MAXLEN ~ n, so Redis may keep somewhat more. 0 keeps every event; negative
// values are invalid. A reader that falls more than n events behind gets an
// error wrapping provider.ErrCursorExpired from ReadEventsSince and FollowEvents,
// never a silent gap; it goes on from "" (the oldest event retained) if it
// accepts the loss.
func WithMaxEvents(n int64) Option {
	return func(p *Provider) error {
		if n < 0 {
			return provider.Invalidf("redis: max events %d is negative", n)
		}
		p.maxEvents = n
		return nil
	}
}

// WithMaxMarkerWrites sets the approximate number of most recent cascade marker
// writes, of all pipelines together, that the marker log keeps for
// WatchCascadeMarkers (default DefaultMaxMarkerWrites): WriteCascadeMarker trims
// it with XADD MAXLEN ~ n, so Redis may keep somewhat more. 0 keeps every write;
// negative values are invalid. A watcher that falls more than n writes behind
// gets an error wrapping provider.ErrCursorExpired.
func WithMaxMarkerWrites(n int64) Option {
	return func(p *Provider) error {
		if n < 0 {
			return provider.Invalidf("redis: max marker writes %d is negative", n)
		}
		p.maxMarkers = n
		return nil
	}
}

// WithMaxValueSize sets the largest encoded (JSON) value, in bytes, that a write
// accepts (default DefaultMaxValueSize); a larger one returns an error wrapping
// provider.ErrTooLarge and writes nothing. It must be at least MinMaxValueSize and at
// most 512 MB, Redis's own limit.
func WithMaxValueSize(n int) Option {
	return func(p *Provider) error {
		if n < MinMaxValueSize || n > 512<<20 {
			return provider.Invalidf("redis: max value size %d is outside [%d, %d]", n, MinMaxValueSize, 512<<20)
		}
		p.maxValue = n
		return nil
	}
}

// WithClock sets the provider's clock (default time.Now). It fills timestamps
// (CreatedAt, UpdatedAt, event Timestamp, RequestedAt, DetectedAt, WrittenAt),
// trait and lease ExpiresAt, and judges trait expiry. Keys with a TTL (locks,
// leases, readiness) expire by the Redis server's clock. See "Clocks" in the
// package doc.
func WithClock(now func() time.Time) Option {
	return func(p *Provider) error {
		if err := provider.CheckClock(now); err != nil {
			return err
		}
		p.now = now
		return nil
	}
}

// WithMeterProvider sets the meter provider of the backend's signals (default: the
// global one, otel.GetMeterProvider()): scripts sent again after NOSCRIPT, list
// index entries repaired by readers and listings re-read after a repair (see
// "Signals" in the package doc). nil is invalid.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(p *Provider) error {
		if nilcheck.IsNil(mp) {
			return provider.Invalidf("redis: WithMeterProvider: nil meter provider")
		}
		p.meter = mp
		return nil
	}
}

// WithLogger sets the logger of the backend's signals (default: none): a Debug
// record per script reload and per retry, an Info record per repair. nil is
// invalid.
func WithLogger(log *slog.Logger) Option {
	return func(p *Provider) error {
		if log == nil {
			return provider.Invalidf("redis: WithLogger: nil logger")
		}
		p.log = log
		return nil
	}
}

// WithCloseClient makes Stop close the client handed to New. By default Stop leaves
// the client open: it belongs to the caller.
func WithCloseClient() Option {
	return func(p *Provider) error {
		p.closeClient = true
		return nil
	}
}

// WithReadOnly opens the provider read-only, for credentials that allow reads
// only (see "Reads and credentials" in the package doc): every write method
// returns an error wrapping provider.ErrReadOnly, whatever its arguments: after
// the Stop and context checks, before the argument checks and before anything is
// sent (see "Errors" in the package doc); Start loads no scripts (SCRIPT LOAD is
// not a read: a read script's first run on a node costs one more round trip,
// NOSCRIPT then EVAL_RO); and list reads repair no index entry: they show what a
// repair would have shown, as they read it. The reads send only commands of the
// ACL category @read, EVALSHA_RO and EVAL_RO of scripts that never write, MULTI
// and EXEC around reads (GetLockInfo) and PING.
func WithReadOnly() Option {
	return func(p *Provider) error {
		p.life.SetReadOnly()
		return nil
	}
}

// New returns a Provider that keeps its state in Redis through client, which may be
// a *goredis.Client, a *goredis.ClusterClient or any other UniversalClient; a nil
// client, also a nil pointer in the interface, is ErrInvalidArgument. The
// Provider is usable at once; Start only preloads its Lua scripts. It never closes
// client unless WithCloseClient is given. Invalid options return an error wrapping
// provider.ErrInvalidArgument.
func New(client goredis.UniversalClient, opts ...Option) (*Provider, error) {
	if nilcheck.IsNil(client) {
		return nil, provider.Invalidf("redis: client is nil")
	}
	p := &Provider{
		c:            client,
		k:            keys{prefix: DefaultKeyPrefix},
		owner:        ids.Random(),
		readinessTTL: DefaultReadinessTTL,
		maxEvents:    DefaultMaxEvents,
		retention:    provider.DefaultRetention(),
		maxMarkers:   DefaultMaxMarkerWrites,
		maxValue:     DefaultMaxValueSize,
		now:          time.Now,
		stopped:      make(chan struct{}),
		life:         lifecycle.New("redis"),
	}
	for _, o := range opts {
		if o == nil {
			return nil, provider.Invalidf("redis: nil option")
		}
		if err := o(p); err != nil {
			return nil, err
		}
	}
	p.sig = signal.New(p.meter, p.log, "redis")
	p.scripts.Client, p.scripts.Reloaded = p.c, p.sig.ScriptLoad
	return p, nil
}

// Owner returns the lock owner identity of p.
func (p *Provider) Owner() string { return p.owner }

// KeyPrefix returns the key prefix of p.
func (p *Provider) KeyPrefix() string { return p.k.prefix }

// ReadOnly reports whether p was opened with WithReadOnly.
func (p *Provider) ReadOnly() bool { return p.life.ReadOnly() }

// Start implements provider.Provider: it loads the provider's Lua scripts into the
// server (into every master of a cluster) so that later calls run them with EVALSHA
// in one round trip. It is idempotent; after Stop it returns an error wrapping
// provider.ErrClosed. Skipping Start is allowed: a script missing from the server
// costs one extra round trip the first time it runs on each node. A read-only
// provider's Start sends nothing (see WithReadOnly).
func (p *Provider) Start(ctx context.Context) error {
	if err := p.life.Enter(ctx); err != nil {
		return err
	}
	if p.started.Load() || p.life.ReadOnly() {
		return nil
	}
	load := func(ctx context.Context, c goredis.Cmdable) error {
		_, err := c.Pipelined(ctx, func(pipe goredis.Pipeliner) error {
			for _, src := range scriptSources {
				pipe.ScriptLoad(ctx, src)
			}
			return nil
		})
		return err
	}
	var err error
	if cc, ok := p.c.(*goredis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error { return load(ctx, c) })
	} else {
		err = load(ctx, p.c)
	}
	if err != nil {
		return p.wrap("start", err)
	}
	p.started.Store(true)
	return nil
}

// Stop implements provider.Provider: it marks p closed, after which every call
// returns an error wrapping provider.ErrClosed, and ends every follower and
// watcher of p with that error at once. It closes the client only under
// WithCloseClient. Stop is idempotent.
func (p *Provider) Stop(ctx context.Context) error {
	if p.life.Close() {
		return nil
	}
	close(p.stopped)
	if !p.closeClient {
		return nil
	}
	if err := p.c.Close(); err != nil {
		return fmt.Errorf("redis: stop: %w", err)
	}
	return nil
}

// Ping implements provider.Provider with one PING.
func (p *Provider) Ping(ctx context.Context) error {
	if err := p.life.Enter(ctx); err != nil {
		return err
	}
	return p.wrap("ping", p.c.Ping(ctx).Err())
}

// wrap turns a client error into the provider's error: nil stays nil, the context's
// error is kept visible to errors.Is, and every error names the operation.
func (p *Provider) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, goredis.ErrClosed) && p.life.Closed() {
		return fmt.Errorf("redis: %s: %w: %w", op, provider.ErrClosed, err)
	}
	return fmt.Errorf("redis: %s: %w", op, err)
}

// encode marshals v and enforces the size limit. The bytes go to the server as
// they are (a script argument or a field value), never copied into a string.
func (p *Provider) encode(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, provider.Invalid(err)
	}
	if len(b) > p.maxValue {
		return nil, fmt.Errorf("%w: encoded value is %d bytes, the limit is %d", provider.ErrTooLarge, len(b), p.maxValue)
	}
	return b, nil
}

// Corrupt records: every stored value is decoded by decode (a Get*) or
// decodeOrSkip (a List* or an iterator), which apply provider.Decode and
// provider.DecodeOrSkip: a Get* of a record that does not decode returns a
// *provider.CorruptError naming it (kind, ID and key); a listing skips it and
// reports it through p.sig and the caller's provider.OnCorrupt handler.

// decode unmarshals the stored value s of a record of kind into *v; name gives
// the record's ID and key for the *provider.CorruptError of a value that does not
// decode (see where).
func decode[T any](kind provider.RecordKind, s string, v *T, name func() (id, key string)) error {
	return provider.Decode(kind, []byte(s), v, name)
}

// decodeOrSkip is decode for a listing: false (after reporting) skips the record.
func decodeOrSkip[T any](ctx context.Context, p *Provider, kind provider.RecordKind, s string, v *T, name func() (id, key string)) bool {
	return provider.DecodeOrSkip(ctx, p.sig, kind, []byte(s), v, name)
}

// where is the CorruptError.Key of a record kept at key (and, when not "", in
// the hash field or at the stream entry or list index named by at, e.g. "field
// \"2026-01-02\\x00daily\"", "entry 1-0").
func where(key, at string) string {
	if at == "" {
		return "redis key " + key
	}
	return "redis key " + key + " " + at
}

// fieldAt is where's at of a hash field (quoted: fields may hold sep).
func fieldAt(field string) string { return "field " + strconv.Quote(field) }

// corrupt is the *provider.CorruptError of the record of kind named id kept at
// key (see where) whose stored form is wrong for cause.
func corrupt(kind provider.RecordKind, id, key string, cause error) error {
	return &provider.CorruptError{Kind: kind, ID: id, Key: key, Err: cause}
}

// callMemory is how long a write keeps its call's marker key, so that a call that
// go-redis retried after a lost reply applies once and reports its first
// attempt's outcome (see "Retries" in the package doc).
const callMemory = 2 * time.Minute

// callMemoryMS is callMemory in milliseconds, a constant so that passing it as a
// script argument allocates nothing.
const callMemoryMS = int64(callMemory / time.Millisecond)

// getJSON runs cmd and decodes the one stored JSON value it returns, a record of
// kind named by name (see decode); goredis.Nil is (nil, nil). Its caller has
// opened the method (p.life.Enter).
func getJSON[T any](p *Provider, op string, kind provider.RecordKind, name func() (id, key string), cmd func() *goredis.StringCmd) (*T, error) {
	s, err := cmd().Result()
	if errors.Is(err, goredis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, p.wrap(op, err)
	}
	var v T
	if err := decode(kind, s, &v, name); err != nil {
		return nil, err
	}
	return &v, nil
}
