package tiered

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/pipestate/pipestate/internal/lifecycle"
	"github.com/pipestate/pipestate/internal/modversion"
	"github.com/pipestate/pipestate/internal/nilcheck"
	"github.com/pipestate/pipestate/internal/redisx"
	"github.com/pipestate/pipestate/internal/signal"
	"github.com/pipestate/pipestate/state"
)

//go:generate go run github.com/pipestate/pipestate/internal/capwrap -pkg tiered -out restrict_store.go -func restrictStore -base state.Store[V] -opt onceMethods[V],batchMethods[V] -import github.com/pipestate/pipestate/state -tparams "V any" -targs V

// DefaultTTL is how long a value written through or filled stays in Redis
// unless WithTTL says otherwise: the staleness bound of reads.
const DefaultTTL = 5 * time.Minute

// Option configures New.
type Option func(*config) error

type config struct {
	ttl time.Duration
	now func() time.Time
	mp  metric.MeterProvider
}

// WithTTL sets how long an entry stays in Redis after it was written through or
// filled (default DefaultTTL): the longest a reader can see a value older than
// the source's, when a write-through was lost. d must be positive.
func WithTTL(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return state.Invalidf("tiered: ttl %v is not positive", d)
		}
		c.ttl = d
		return nil
	}
}

// WithClock makes the store judge entry ages and value expiry by now (default
// time.Now); give it the source store's clock. now must not be nil.
func WithClock(now func() time.Time) Option {
	return func(c *config) error {
		if now == nil {
			return state.Invalidf("tiered: nil clock")
		}
		c.now = now
		return nil
	}
}

// WithMeterProvider sets where the store's counters go (default:
// otel.GetMeterProvider()): pipestate.tiered.hits and pipestate.tiered.misses
// (keys), and pipestate.tiered.failures (Redis calls that failed, by
// pipestate.tiered.step: read, a read served by the source instead; write, a
// write-through or fill lost). mp must not be nil.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) error {
		if nilcheck.IsNil(mp) {
			return state.Invalidf("tiered: nil meter provider")
		}
		c.mp = mp
		return nil
	}
}

// onceMethods is what state.OnceStore adds to state.Store.
type onceMethods[V any] interface {
	MergeUpdateOnce(ctx context.Context, eventID string, k state.Key, delta V, ttl time.Duration) (applied bool, err error)
}

// batchMethods is what state.BatchStore adds to state.Store.
type batchMethods[V any] interface {
	MergeMany(ctx context.Context, updates []state.Update[V]) error
}

// New returns a store whose source of truth is source and whose shared read
// cache is Redis (client, a standalone or cluster client), under keys starting
// with prefix; see the package doc for what it guarantees. Two tiered stores
// over different sources must not share a prefix. The result implements
// state.OnceStore and state.BatchStore exactly when source does. A nil source
// or client (also typed nils), an empty prefix or a bad option is an error
// wrapping ErrInvalidArgument. Close closes source, not client.
func New[V int64 | float64 | []byte](source state.RevisionStore[V], client goredis.UniversalClient, prefix string, opts ...Option) (state.Store[V], error) {
	if nilcheck.IsNil(source) {
		return nil, state.Invalidf("tiered: nil source store")
	}
	if nilcheck.IsNil(client) {
		return nil, state.Invalidf("tiered: nil Redis client")
	}
	if err := redisx.CheckPrefix(prefix); err != nil {
		return nil, fmt.Errorf("%w: tiered: %w", state.ErrInvalidArgument, err)
	}
	cfg := config{ttl: DefaultTTL, now: time.Now}
	for _, o := range opts {
		if o == nil {
			return nil, state.Invalidf("tiered: nil option")
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.mp == nil {
		cfg.mp = otel.GetMeterProvider()
	}
	sig, err := newSignals(cfg.mp)
	if err != nil {
		return nil, fmt.Errorf("%w: tiered: metrics: %w", state.ErrInvalidArgument, err)
	}
	t := &store[V]{source: source, c: client, prefix: prefix, ttl: cfg.ttl, now: cfg.now, sig: sig,
		flag: lifecycle.New("state/tiered"), codec: codecOf[V]()}
	return restrictStore(source, t), nil
}

type store[V any] struct {
	source state.RevisionStore[V]
	c      goredis.UniversalClient
	prefix string
	ttl    time.Duration
	now    func() time.Time
	sig    *signals
	flag   *lifecycle.Flag
	codec  codec[V]
}

// key is the Redis key of k. The bucket comes first and ends at the first ':'
// after the prefix, so no two keys collide whatever the entity holds.
func (s *store[V]) key(k state.Key) string {
	return s.prefix + ":" + strconv.FormatInt(k.Bucket, 10) + ":" + k.Entity
}

// Fields of an entry (a Redis hash), all written at once by put.lua.
const (
	fieldRev     = "r" // the source's revision
	fieldValue   = "v" // the value, encoded (the monoid's identity when not found)
	fieldFound   = "o" // "1" when the source had the key, else "0"
	fieldExpires = "x" // the value's expiry, Unix ms; "0" = none
	fieldFilled  = "f" // when the entry was known current, Unix ms of the writer's clock
)

// Get implements state.Store: a fresh entry from Redis, else the source's value
// (which fills Redis).
func (s *store[V]) Get(ctx context.Context, k state.Key) (V, bool, error) {
	if err := s.flag.Enter(ctx, state.CheckKey(k)); err != nil {
		var zero V
		return zero, false, err
	}
	vs, found, err := s.getMany(ctx, []state.Key{k})
	if err != nil {
		var zero V
		return zero, false, err
	}
	return vs[0], found[0], nil
}

// GetMany implements state.Store: one pipeline of HMGETs, then one GetRevisions
// of the source for the keys Redis had no fresh entry of.
func (s *store[V]) GetMany(ctx context.Context, ks []state.Key) ([]V, []bool, error) {
	if err := s.flag.Enter(ctx, state.CheckKeys(ks)); err != nil {
		return nil, nil, err
	}
	return s.getMany(ctx, ks)
}

func (s *store[V]) getMany(ctx context.Context, ks []state.Key) ([]V, []bool, error) {
	vals, found := make([]V, len(ks)), make([]bool, len(ks))
	if len(ks) == 0 {
		return vals, found, nil
	}
	start := s.now()
	cmds := make([]*goredis.SliceCmd, len(ks))
	_, err := s.c.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, k := range ks {
			cmds[i] = p.HMGet(ctx, s.key(k), fieldRev, fieldValue, fieldFound, fieldExpires, fieldFilled)
		}
		return nil
	})
	if err != nil && ctx.Err() != nil {
		return nil, nil, ctx.Err()
	}
	if err != nil {
		s.sig.failed(ctx, stepRead)
	}
	var miss []int
	for i, cmd := range cmds {
		// Each key on its own: on a cluster one node may fail while others answer.
		if cmd.Err() == nil {
			if e, ok := s.fresh(cmd.Val(), start); ok {
				vals[i], found[i] = e.v, e.found
				continue
			}
		}
		miss = append(miss, i)
	}
	s.sig.hits.Add(ctx, int64(len(ks)-len(miss)))
	if len(miss) == 0 {
		return vals, found, nil
	}
	s.sig.misses.Add(ctx, int64(len(miss)))
	mks := make([]state.Key, len(miss))
	for j, i := range miss {
		mks[j] = ks[i]
	}
	revs, err := s.source.GetRevisions(ctx, mks)
	if err != nil {
		return nil, nil, err
	}
	for j, i := range miss {
		vals[i], found[i] = revs[j].Value, revs[j].Found
	}
	s.put(ctx, mks, revs, start)
	return vals, found, nil
}

// entry is a decoded Redis entry.
type entry[V any] struct {
	v     V
	found bool
}

// fresh decodes an HMGET reply of an entry and reports whether it may be
// served at now: written through or filled less than the ttl ago, and its value
// not expired. A missing or malformed entry is not fresh.
func (s *store[V]) fresh(fields []any, now time.Time) (entry[V], bool) {
	var e entry[V]
	str := make([]string, len(fields))
	for i, f := range fields {
		v, ok := f.(string)
		if !ok {
			return e, false
		}
		str[i] = v
	}
	filled, err1 := strconv.ParseInt(str[4], 10, 64)
	expires, err2 := strconv.ParseInt(str[3], 10, 64)
	if err1 != nil || err2 != nil || now.Sub(time.UnixMilli(filled)) >= s.ttl {
		return e, false
	}
	e.found = str[2] == "1"
	if e.found && expires != 0 && !now.Before(time.UnixMilli(expires)) {
		return e, false // expired since: the source decides what follows
	}
	v, err := s.codec.decode(str[1])
	if err != nil {
		return e, false
	}
	e.v = v
	return e, true
}

// putScript is put.lua.
//
//go:embed put.lua
var putSource string

var putScript = goredis.NewScript(putSource)

// put writes revs (of ks, read at or after at) to Redis where they are newer
// than what Redis holds, in one pipeline of put.lua (loading the script first
// when Redis answers NOSCRIPT). Failures are counted, not returned: what Redis
// missed, it serves for at most the ttl.
func (s *store[V]) put(ctx context.Context, ks []state.Key, revs []state.Revision[V], at time.Time) {
	send := func() error {
		_, err := s.c.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for i, k := range ks {
				r := revs[i]
				life, expires, found := s.ttl, int64(0), "0"
				if r.Found {
					found = "1"
					if !r.Expires.IsZero() {
						expires = r.Expires.UnixMilli()
						life = min(life, r.Expires.Sub(at))
					}
				}
				putScript.EvalSha(ctx, p, []string{s.key(k)}, r.Rev, s.codec.encode(r.Value), found, expires,
					at.UnixMilli(), max(life.Milliseconds(), 1))
			}
			return nil
		})
		return err
	}
	err := send()
	if err != nil && goredis.HasErrorPrefix(err, "NOSCRIPT") {
		if err = putScript.Load(ctx, s.c).Err(); err == nil {
			err = send()
		}
	}
	if err != nil {
		s.sig.failed(ctx, stepWrite)
	}
}

// refresh writes through the keys a write attempt touched, whatever its
// outcome (an error may hide an applied write), unless nothing was sent.
func (s *store[V]) refresh(ctx context.Context, err error, ks ...state.Key) {
	if errors.Is(err, state.ErrInvalidArgument) || errors.Is(err, state.ErrClosed) {
		return
	}
	at := s.now()
	revs, rerr := s.source.GetRevisions(ctx, ks)
	if rerr != nil {
		s.sig.failed(ctx, stepWrite)
		return
	}
	s.put(ctx, ks, revs, at)
}

// MergeUpdate implements state.Store: the source's merge, then the value it
// left written through to Redis.
func (s *store[V]) MergeUpdate(ctx context.Context, k state.Key, delta V, ttl time.Duration) error {
	if err := s.flag.Enter(ctx); err != nil {
		return err
	}
	err := s.source.MergeUpdate(ctx, k, delta, ttl)
	s.refresh(ctx, err, k)
	return err
}

// MergeUpdateOnce implements state.OnceStore when the source does.
func (s *store[V]) MergeUpdateOnce(ctx context.Context, eventID string, k state.Key, delta V, ttl time.Duration) (bool, error) {
	if err := s.flag.Enter(ctx); err != nil {
		return false, err
	}
	applied, err := s.source.(onceMethods[V]).MergeUpdateOnce(ctx, eventID, k, delta, ttl)
	if err != nil || applied {
		s.refresh(ctx, err, k)
	}
	return applied, err
}

// MergeMany implements state.BatchStore when the source does.
func (s *store[V]) MergeMany(ctx context.Context, updates []state.Update[V]) error {
	if err := s.flag.Enter(ctx); err != nil {
		return err
	}
	err := s.source.(batchMethods[V]).MergeMany(ctx, updates)
	seen := make(map[state.Key]bool, len(updates))
	ks := make([]state.Key, 0, len(updates))
	for _, u := range updates {
		if !seen[u.Key] {
			seen[u.Key] = true
			ks = append(ks, u.Key)
		}
	}
	if len(ks) > 0 {
		s.refresh(ctx, err, ks...)
	}
	return err
}

// Close closes the source; later calls return ErrClosed. The Redis client stays
// open (the caller's).
func (s *store[V]) Close() error {
	s.flag.Close()
	return s.source.Close()
}

// Steps of a failed Redis call, the values of pipestate.tiered.step.
const (
	stepRead  = "read"
	stepWrite = "write"
)

type signals struct {
	hits, misses, failures metric.Int64Counter
}

func newSignals(mp metric.MeterProvider) (*signals, error) {
	m := mp.Meter(signal.ScopeName, metric.WithInstrumentationVersion(modversion.Version()))
	var s signals
	var errs [3]error
	s.hits, errs[0] = m.Int64Counter("pipestate.tiered.hits", metric.WithUnit("{read}"),
		metric.WithDescription("Keys read from the Redis tier of a tiered store."))
	s.misses, errs[1] = m.Int64Counter("pipestate.tiered.misses", metric.WithUnit("{read}"),
		metric.WithDescription("Keys a tiered store read from its source of truth."))
	s.failures, errs[2] = m.Int64Counter("pipestate.tiered.failures", metric.WithUnit("{call}"),
		metric.WithDescription("Redis calls of a tiered store that failed, by step (read: served by the source; write: a write-through or fill lost)."))
	return &s, errors.Join(errs[:]...)
}

func (s *signals) failed(ctx context.Context, step string) {
	s.failures.Add(ctx, 1, metric.WithAttributes(attribute.String("pipestate.tiered.step", step)))
}
