package dynamodb

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/pipestate/pipestate/internal/backoff"
	"github.com/pipestate/pipestate/internal/ids"
	"github.com/pipestate/pipestate/internal/nilcheck"
	"github.com/pipestate/pipestate/provider"
)

// API is the subset of *ddb.Client that Provider calls. Wrap a client in your own
// implementation to add tracing, metrics or fault injection.
type API interface {
	GetItem(ctx context.Context, in *ddb.GetItemInput, optFns ...func(*ddb.Options)) (*ddb.GetItemOutput, error)
	PutItem(ctx context.Context, in *ddb.PutItemInput, optFns ...func(*ddb.Options)) (*ddb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *ddb.UpdateItemInput, optFns ...func(*ddb.Options)) (*ddb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *ddb.DeleteItemInput, optFns ...func(*ddb.Options)) (*ddb.DeleteItemOutput, error)
	Query(ctx context.Context, in *ddb.QueryInput, optFns ...func(*ddb.Options)) (*ddb.QueryOutput, error)
	TransactWriteItems(ctx context.Context, in *ddb.TransactWriteItemsInput, optFns ...func(*ddb.Options)) (*ddb.TransactWriteItemsOutput, error)
	DescribeTable(ctx context.Context, in *ddb.DescribeTableInput, optFns ...func(*ddb.Options)) (*ddb.DescribeTableOutput, error)
}

var _ API = (*ddb.Client)(nil)

// DefaultReadinessTTL is how long PutReadiness keeps a result unless
// WithReadinessTTL says otherwise.
const DefaultReadinessTTL = 5 * time.Minute

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
		if owner == "" {
			return provider.Invalidf("dynamodb: WithOwner: empty owner")
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
		if now == nil {
			return provider.Invalidf("dynamodb: WithClock: nil clock")
		}
		p.now = now
		return nil
	}
}

// WithReadinessTTL sets how long PutReadiness keeps a result (default
// DefaultReadinessTTL); it must be positive and at most provider.MaxTTL.
func WithReadinessTTL(ttl time.Duration) Option {
	return func(p *Provider) error {
		if ttl <= 0 || ttl > provider.MaxTTL {
			return provider.Invalidf("dynamodb: WithReadinessTTL: ttl %v is outside (0, %v]", ttl, provider.MaxTTL)
		}
		p.readinessTTL = ttl
		return nil
	}
}

// WithEventRetention keeps each event for d after it is appended (by the provider
// clock): older events are invisible to ListEvents and ReadEventsSince and carry a
// `ttl` attribute so DynamoDB deletes them. The default, 0, keeps events forever; d
// must be at most provider.MaxTTL.
func WithEventRetention(d time.Duration) Option {
	return func(p *Provider) error {
		if err := provider.CheckTTL(d); err != nil {
			return fmt.Errorf("dynamodb: WithEventRetention: %w", err)
		}
		p.eventRetention = d
		return nil
	}
}

// Provider is a provider.Provider (plus provider.Leaser and provider.CascadeReader)
// on one DynamoDB table. It is safe for concurrent use; instances in many processes
// may share a table. See the package doc for the schema and the guarantees.
type Provider struct {
	api            API
	table          string
	now            func() time.Time
	owner          string
	readinessTTL   time.Duration
	eventRetention time.Duration
	retry          backoff.Policy
	closed         atomic.Bool

	seqMu sync.Mutex
	seqs  map[string]int64 // pipeline ID -> last event sequence number seen (a hint)

	qmu    sync.Mutex
	queues map[string]*appendQueue // pipeline ID -> events waiting to be appended
}

var (
	_ provider.Provider      = (*Provider)(nil)
	_ provider.Leaser        = (*Provider)(nil)
	_ provider.CascadeReader = (*Provider)(nil)
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
		retry:        backoff.Policy{Base: 5 * time.Millisecond, Max: 250 * time.Millisecond},
		seqs:         map[string]int64{},
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
	return p, nil
}

// Owner returns the lock owner identity of p.
func (p *Provider) Owner() string { return p.owner }

// Table returns the name of p's table.
func (p *Provider) Table() string { return p.table }

// Start implements provider.Provider. It does no I/O (use Ping to check the table);
// after Stop it returns ErrClosed.
func (p *Provider) Start(ctx context.Context) error { return p.begin(ctx) }

// Stop implements provider.Provider: every later call returns an error wrapping
// provider.ErrClosed. It never closes the client, and calls in flight finish.
func (p *Provider) Stop(ctx context.Context) error {
	p.closed.Store(true)
	return nil
}

// Ping implements provider.Provider with one DescribeTable call.
func (p *Provider) Ping(ctx context.Context) error {
	if err := p.begin(ctx); err != nil {
		return err
	}
	if _, err := p.api.DescribeTable(ctx, &ddb.DescribeTableInput{TableName: &p.table}); err != nil {
		return fmt.Errorf("dynamodb: ping: %w", err)
	}
	return nil
}

// begin checks ctx and the lifecycle at the start of every call.
func (p *Provider) begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if p.closed.Load() {
		return provider.ErrClosed
	}
	return nil
}
