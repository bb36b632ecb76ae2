package ddbprovider

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"go.opentelemetry.io/otel/metric"

	"github.com/pipestate/pipestate/internal/backoff"
	"github.com/pipestate/pipestate/internal/ddbx"
	"github.com/pipestate/pipestate/internal/ids"
	"github.com/pipestate/pipestate/internal/lifecycle"
	"github.com/pipestate/pipestate/internal/nilcheck"
	"github.com/pipestate/pipestate/internal/signal"
	"github.com/pipestate/pipestate/provider"
)

// API is the subset of *ddb.Client that Provider calls. Wrap a client in your own
// implementation to add tracing, metrics or fault injection; pass optFns on, as
// they carry the middleware that records throttling (see "Signals" in the package
// doc).
type API interface {
	GetItem(ctx context.Context, in *ddb.GetItemInput, optFns ...func(*ddb.Options)) (*ddb.GetItemOutput, error)
	PutItem(ctx context.Context, in *ddb.PutItemInput, optFns ...func(*ddb.Options)) (*ddb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *ddb.UpdateItemInput, optFns ...func(*ddb.Options)) (*ddb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *ddb.DeleteItemInput, optFns ...func(*ddb.Options)) (*ddb.DeleteItemOutput, error)
	Query(ctx context.Context, in *ddb.QueryInput, optFns ...func(*ddb.Options)) (*ddb.QueryOutput, error)
	Scan(ctx context.Context, in *ddb.ScanInput, optFns ...func(*ddb.Options)) (*ddb.ScanOutput, error)
	TransactWriteItems(ctx context.Context, in *ddb.TransactWriteItemsInput, optFns ...func(*ddb.Options)) (*ddb.TransactWriteItemsOutput, error)
	DescribeTable(ctx context.Context, in *ddb.DescribeTableInput, optFns ...func(*ddb.Options)) (*ddb.DescribeTableOutput, error)
}

var _ API = (*ddb.Client)(nil)

// DefaultReadinessTTL is how long PutReadiness keeps a result unless
// WithReadinessTTL says otherwise.
const DefaultReadinessTTL = provider.DefaultReadinessTTL

// Retry bounds of a transactional write that loses to concurrent writers of the
// same items. A TransactionConflict (transactions overlapping in time) is retried
// after a backoff, at most maxTxAttempts times. A failed condition that shows
// another writer got there first (an event sequence number taken, a list copy
// moved) means that writer made progress, so it is retried at once, at most
// maxLostRaces times.
const (
	maxTxAttempts = 64
	maxLostRaces  = 1000
)

// Option configures a Provider; see New. An option given a bad value makes New
// fail with an error wrapping provider.ErrInvalidArgument.
type Option func(*Provider) error

// WithOwner sets the lock owner identity of the provider instance (default: 16
// random bytes in hex). Two instances with the same owner hold each other's locks.
func WithOwner(owner string) Option {
	return func(p *Provider) error {
		if err := provider.CheckOwner(owner); err != nil {
			return err
		}
		p.owner = owner
		return nil
	}
}

// WithClock sets the clock that fills timestamps and judges every TTL (default
// time.Now). All instances sharing a table should agree on time to within the
// shortest TTL they use; events never depend on it (see the package doc).
func WithClock(now func() time.Time) Option {
	return func(p *Provider) error {
		if err := provider.CheckClock(now); err != nil {
			return err
		}
		p.now = now
		return nil
	}
}

// WithReadinessTTL sets how long PutReadiness keeps a result (default
// DefaultReadinessTTL); it must be positive and at most provider.MaxTTL.
func WithReadinessTTL(ttl time.Duration) Option {
	return func(p *Provider) error {
		if err := provider.CheckReadinessTTL(ttl); err != nil {
			return err
		}
		p.readinessTTL = ttl
		return nil
	}
}

// WithRetention sets how long the provider keeps each record kind it writes
// (default provider.DefaultRetention(): 30 days, 24 hours for the marker log),
// from each write, by the provider's clock (see provider.Retention and
// "Retention" in the package doc): every item of a record carries its expiry,
// which reads and conditions judge, and the table's `ttl` attribute, by which
// DynamoDB deletes it. A zero field keeps that kind forever. A field that is
// negative or above provider.MaxTTL is invalid. WithEventRetention and
// WithMarkerLogRetention set one field each; the last option that sets a field
// wins.
func WithRetention(r provider.Retention) Option {
	return func(p *Provider) error {
		if err := r.Check(); err != nil {
			return fmt.Errorf("dynamodb: WithRetention: %w", err)
		}
		p.retention = r
		return nil
	}
}

// WithEventRetention sets the Events field of the retention (WithRetention):
// each event is kept for d after it is appended (by the provider clock): older
// events are invisible to ListEvents and ReadEventsSince and carry a `ttl`
// attribute so DynamoDB deletes them; a cursor whose next event is gone is
// expired (ReadEventsSince and FollowEvents fail with provider.ErrCursorExpired;
// "" reads from the oldest event retained). 0 keeps events forever; d must be at
// most provider.MaxTTL.
func WithEventRetention(d time.Duration) Option {
	return func(p *Provider) error {
		if err := provider.CheckTTL(d); err != nil {
			return fmt.Errorf("dynamodb: WithEventRetention: %w", err)
		}
		p.retention.Events = d
		return nil
	}
}

// WithMarkerLogRetention sets the MarkerLog field of the retention (WithRetention):
// each entry of the marker log, which WatchCascadeMarkers reads, is kept for d
// after it is written (by the writer's clock; default DefaultMarkerRetention). A watch whose cursor is older than that fails
// with provider.ErrCursorExpired. 0 keeps entries forever (the log then grows by
// one item per marker write); d must be at most provider.MaxTTL.
func WithMarkerLogRetention(d time.Duration) Option {
	return func(p *Provider) error {
		if err := provider.CheckTTL(d); err != nil {
			return fmt.Errorf("dynamodb: WithMarkerLogRetention: %w", err)
		}
		p.retention.MarkerLog = d
		return nil
	}
}

// WithReadOnly opens the provider read-only, for credentials whose IAM policy
// allows the reads only (see "Reads and credentials" in the package doc): every
// write method returns an error wrapping provider.ErrReadOnly, after the stopped
// and context checks and before its argument checks and any request, whatever its
// arguments. Reads are unchanged: no read of this backend writes (GetItem, Query
// and DescribeTable only).
func WithReadOnly() Option {
	return func(p *Provider) error {
		p.life.SetReadOnly()
		return nil
	}
}

// ReadOnly reports whether p was opened with WithReadOnly.
func (p *Provider) ReadOnly() bool { return p.life.ReadOnly() }

// DefaultMarkerRetention is how long the marker log keeps an entry unless
// WithMarkerLogRetention says otherwise.
const DefaultMarkerRetention = provider.DefaultMarkerLogRetention

// Default bounds of the polling of FollowEvents and WatchCascadeMarkers; see
// WithPollInterval.
const (
	DefaultPollMin = 20 * time.Millisecond
	DefaultPollMax = time.Second
)

// WithPollInterval sets how FollowEvents and WatchCascadeMarkers poll once they
// have caught up: the first wait is first, each further empty read doubles it up to
// most, and a read that returns records starts over (defaults DefaultPollMin and
// DefaultPollMax). most bounds the delay of a delivery after an idle spell and sets
// the idle cost: one Query per most per follower. 0 < first <= most <= 1 hour.
func WithPollInterval(first, most time.Duration) Option {
	return func(p *Provider) error {
		if first <= 0 || most < first || most > time.Hour {
			return provider.Invalidf("dynamodb: WithPollInterval: want 0 < first (%v) <= most (%v) <= 1h", first, most)
		}
		p.pollMin, p.pollMax = first, most
		return nil
	}
}

// WithMeterProvider sets the meter provider of the signals only the provider knows
// (default: otel.GetMeterProvider() at New): retries and give-ups of transactions
// cancelled by concurrent ones (pipestate.retries and pipestate.giveups, reason
// transaction_conflict, or throttled for a transaction cancelled for throttling),
// of event and marker-log sequence numbers lost to another instance
// (sequence_race), and of requests the SDK's retryer retried after throttling
// (throttled), and the size of each group commit of events (pipestate.batch.size).
// See "Signals" in the package doc; mp must not be nil.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(p *Provider) error {
		if nilcheck.IsNil(mp) {
			return provider.Invalidf("dynamodb: WithMeterProvider: nil meter provider")
		}
		p.meter = mp
		return nil
	}
}

// WithLogger sets the logger of the same signals (default: none): Debug for each
// retry, Warn for each give-up. log must not be nil.
func WithLogger(log *slog.Logger) Option {
	return func(p *Provider) error {
		if log == nil {
			return provider.Invalidf("dynamodb: WithLogger: nil logger")
		}
		p.log = log
		return nil
	}
}

// Provider is a provider.Provider (plus provider.Leaser, provider.CascadeReader,
// provider.RunCreator, provider.EventFollower, provider.MarkerWatcher,
// provider.LockInspector and provider.LockLister) on one DynamoDB table. It is safe for concurrent use; instances in many processes may
// share a table. See the package doc for the schema and the guarantees.
type Provider struct {
	api          API
	table        string
	now          func() time.Time
	owner        string
	readinessTTL time.Duration
	retention    provider.Retention
	pollMin      time.Duration
	pollMax      time.Duration
	retry        backoff.Policy
	// life opens every method in the contract's order (see "Opening" in the
	// package doc): stopped, a done ctx, a write when WithReadOnly, the arguments.
	life *lifecycle.Flag

	meter metric.MeterProvider
	log   *slog.Logger
	sig   *signal.Recorder

	sdkOpts sync.Map // operation -> its SDK option (see sdk)

	seqs  hints[int64]   // pipeline ID -> its event counter, as this instance last saw it
	lists hints[listKey] // truth item -> where this instance last put its list copy (see putPair)

	markerSeq atomic.Int64 // the marker log's last sequence number seen (a hint)

	qmu    sync.Mutex
	queues map[string]*appendQueue // pipeline ID -> events waiting to be appended
}

var (
	_ provider.Provider      = (*Provider)(nil)
	_ provider.Leaser        = (*Provider)(nil)
	_ provider.CascadeReader = (*Provider)(nil)
	_ provider.RunCreator    = (*Provider)(nil)
	_ provider.EventFollower = (*Provider)(nil)
	_ provider.MarkerWatcher = (*Provider)(nil)
)

// New returns a Provider on table through client. It does no I/O: the table must
// exist (see CreateTable), and calls work as soon as New returns. It fails with an
// error wrapping provider.ErrInvalidArgument on a nil client (a typed nil such as
// (*ddb.Client)(nil) included), an empty table name or an invalid option.
func New(client API, table string, opts ...Option) (*Provider, error) {
	if nilcheck.IsNil(client) {
		return nil, provider.Invalidf("dynamodb: New: nil client")
	}
	if table == "" {
		return nil, provider.Invalidf("dynamodb: New: empty table name")
	}
	p := &Provider{
		api:          client,
		table:        table,
		now:          time.Now,
		owner:        ids.Random(),
		readinessTTL: DefaultReadinessTTL,
		retention:    provider.DefaultRetention(),
		pollMin:      DefaultPollMin,
		pollMax:      DefaultPollMax,
		retry:        backoff.Policy{Base: 5 * time.Millisecond, Max: 250 * time.Millisecond},
		life:         lifecycle.New("dynamodb"),
		queues:       map[string]*appendQueue{},
	}
	for _, o := range opts {
		if o == nil {
			return nil, provider.Invalidf("dynamodb: New: nil option")
		}
		if err := o(p); err != nil {
			return nil, err
		}
	}
	p.sig = signal.New(p.meter, p.log, system)
	return p, nil
}

// system is the db.system.name of the provider's signals.
const system = "aws.dynamodb"

// sdk is the SDK option of every request of operation op: it records the
// throttles the SDK's retryer retried (see ddbx.ThrottleSignals). It is made once
// per operation.
func (p *Provider) sdk(op string) func(*ddb.Options) {
	if o, ok := p.sdkOpts.Load(op); ok {
		return o.(func(*ddb.Options))
	}
	o, _ := p.sdkOpts.LoadOrStore(op, ddbx.ThrottleSignals(p.sig, op))
	return o.(func(*ddb.Options))
}

// Owner returns the lock owner identity of p.
func (p *Provider) Owner() string { return p.owner }

// Table returns the name of p's table.
func (p *Provider) Table() string { return p.table }

// Start implements provider.Provider. It does no I/O (use Ping to check the table);
// after Stop it returns ErrClosed.
func (p *Provider) Start(ctx context.Context) error { return p.life.Enter(ctx) }

// Stop implements provider.Provider: every later call returns an error wrapping
// provider.ErrClosed. It never closes the client, and calls in flight finish.
func (p *Provider) Stop(ctx context.Context) error {
	p.life.Close()
	return nil
}

// Ping implements provider.Provider with one DescribeTable call.
func (p *Provider) Ping(ctx context.Context) error {
	if err := p.life.Enter(ctx); err != nil {
		return err
	}
	if _, err := p.api.DescribeTable(ctx, &ddb.DescribeTableInput{TableName: &p.table}, p.sdk("Ping")); err != nil {
		return fmt.Errorf("dynamodb: Ping: %w", err)
	}
	return nil
}
