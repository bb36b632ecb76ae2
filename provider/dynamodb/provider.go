package dynamodb

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/internal/backoff"
	"github.com/pipestate/pipestate/internal/ddbx"
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

// item is the stored form of every entity; see the key schema in the package doc.
// Entity bodies are JSON in Data (compressed when the item would not fit
// otherwise), so a Get returns exactly what a JSON round trip gives.
type item struct {
	PK     string `dynamodbav:"PK"`
	SK     string `dynamodbav:"SK"`
	GSI1PK string `dynamodbav:"GSI1PK,omitempty"`
	GSI1SK string `dynamodbav:"GSI1SK,omitempty"`
	Data   *body  `dynamodbav:"data,omitempty"`
	// Exp is the expiry in Unix nanoseconds by the provider clock (0: never); reads
	// and lock conditions compare it with the provider clock.
	Exp int64 `dynamodbav:"exp,omitempty"`
	// TTL is Exp in Unix seconds, rounded up, for DynamoDB's TTL deletion. Lock items
	// never carry it: their fence counter must outlive every lease.
	TTL int64 `dynamodbav:"ttl,omitempty"`
	// ListPK and ListSK, on a truth item, are the key of its list copy.
	ListPK string `dynamodbav:"listPK,omitempty"`
	ListSK string `dynamodbav:"listSK,omitempty"`
	// Version is a run's CAS version (runs only; a pointer so 0 is stored).
	Version *int `dynamodbav:"version,omitempty"`
	// Seq is an event's sequence number, or the last one handed out on the counter.
	Seq int64 `dynamodbav:"seq,omitempty"`
	// Holder and Fence are a lock item's holder ("lock:"+owner or "lease:"+token)
	// and lease fence counter.
	Holder string `dynamodbav:"holder,omitempty"`
	Fence  int64  `dynamodbav:"fence,omitempty"`
	// Tok is the random token of the call that last won a conditional write of the
	// item (CAS, event counter, lock acquire and release). When the SDK retries a
	// write whose response was lost and the retry fails its condition, the token
	// tells the call that its first attempt won.
	Tok string `dynamodbav:"tok,omitempty"`
}

// Attribute names used in expressions.
const (
	attrPK     = "PK"
	attrSK     = "SK"
	attrGSI1PK = "GSI1PK"
	attrGSI1SK = "GSI1SK"
	attrExp    = "exp"
	attrTTL    = "ttl"
	attrListPK = "listPK"
	attrListSK = "listSK"
	attrVer    = "version"
	attrSeq    = "seq"
	attrHolder = "holder"
	attrFence  = "fence"
	attrTok    = "tok"
	indexGSI1  = "GSI1"
)

// setExpiry sets Exp and TTL for an expiry at t (zero: never).
func (it *item) setExpiry(t time.Time) {
	if t.IsZero() {
		it.Exp, it.TTL = 0, 0
		return
	}
	it.Exp = unixNano(t)
	it.TTL = t.Unix() + 1
}

// live reports whether it has not expired at now.
func (it *item) live(now time.Time) bool { return it.Exp == 0 || unixNano(now) < it.Exp }

// unixNano is t.UnixNano, saturated outside the years 1678-2262 where it overflows.
func unixNano(t time.Time) int64 {
	switch s := t.Unix(); {
	case s >= math.MaxInt64/int64(time.Second):
		return math.MaxInt64
	case s <= math.MinInt64/int64(time.Second):
		return math.MinInt64 + 1
	}
	return t.UnixNano()
}

// encode returns v as compact JSON (no HTML escaping, to save item space). A value
// JSON cannot encode is ErrInvalidArgument.
func encode(v any) (*body, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, provider.Invalid(err)
	}
	return &body{text: string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))}, nil
}

// body is an entity's JSON text. It is stored as the string attribute "data", or,
// once compress has found that smaller, DEFLATE-compressed as the binary attribute
// "data". JSON escaping can make a string six times longer (a control character
// is \u00XX); compressed, 256 KB of any metadata string fits an item.
type body struct {
	text string
	z    []byte // text compressed, when that is stored instead
}

// maxBodyText bounds the text a stored compressed body may inflate to, far above
// what any item can hold, so that a corrupt item cannot exhaust memory.
const maxBodyText = 64 << 20

// compress makes b store its text compressed when that is smaller.
func (b *body) compress() {
	if b.z != nil {
		return
	}
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, flate.DefaultCompression) // the level is valid
	_, _ = w.Write([]byte(b.text))                          // writes to a bytes.Buffer never fail
	_ = w.Close()
	if buf.Len() < len(b.text) {
		b.z = buf.Bytes()
	}
}

// MarshalDynamoDBAttributeValue implements attributevalue.Marshaler.
func (b *body) MarshalDynamoDBAttributeValue() (ddbtypes.AttributeValue, error) {
	if b.z != nil {
		return &ddbtypes.AttributeValueMemberB{Value: b.z}, nil
	}
	return &ddbtypes.AttributeValueMemberS{Value: b.text}, nil
}

// UnmarshalDynamoDBAttributeValue implements attributevalue.Unmarshaler.
func (b *body) UnmarshalDynamoDBAttributeValue(av ddbtypes.AttributeValue) error {
	switch av := av.(type) {
	case *ddbtypes.AttributeValueMemberS:
		*b = body{text: av.Value}
	case *ddbtypes.AttributeValueMemberB:
		text, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(av.Value)), maxBodyText+1))
		if err != nil {
			return fmt.Errorf("inflate data: %w", err)
		}
		if len(text) > maxBodyText {
			return fmt.Errorf("inflate data: over %d bytes", maxBodyText)
		}
		*b = body{text: string(text), z: av.Value}
	default:
		return fmt.Errorf("data attribute of type %T", av)
	}
	return nil
}

// decodeData unmarshals it.Data.
func decodeData[T any](it item) (T, error) {
	var v T
	if it.Data == nil {
		return v, fmt.Errorf("dynamodb: corrupt item %s/%s: no data", it.PK, it.SK)
	}
	if err := json.Unmarshal([]byte(it.Data.text), &v); err != nil {
		return v, fmt.Errorf("dynamodb: corrupt item %s/%s: %w", it.PK, it.SK, err)
	}
	return v, nil
}

// decodeAll decodes the data of items.
func decodeAll[T any](items []item) ([]T, error) {
	out := make([]T, 0, len(items))
	for _, it := range items {
		v, err := decodeData[T](it)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// marshal returns it as an attribute map and checks DynamoDB's item size limit. An
// item that is too large with its data as text gets its data compressed (once:
// the items of one entity share their body).
func marshal(it item) (map[string]ddbtypes.AttributeValue, error) {
	av, err := attributevalue.MarshalMap(it)
	if err != nil {
		return nil, fmt.Errorf("dynamodb: marshal %s/%s: %w", it.PK, it.SK, err)
	}
	if ddbx.ItemSize(av) > ddbx.MaxItemSize && it.Data != nil && it.Data.z == nil {
		it.Data.compress()
		if av, err = attributevalue.MarshalMap(it); err != nil {
			return nil, fmt.Errorf("dynamodb: marshal %s/%s: %w", it.PK, it.SK, err)
		}
	}
	if n := ddbx.ItemSize(av); n > ddbx.MaxItemSize {
		return nil, fmt.Errorf("%w: item %s/%s would be about %d bytes, over DynamoDB's %d",
			provider.ErrTooLarge, it.PK, it.SK, n, ddbx.MaxItemSize)
	}
	return av, nil
}

// unmarshal decodes an attribute map into an item.
func unmarshal(av map[string]ddbtypes.AttributeValue) (item, error) {
	var it item
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return it, fmt.Errorf("dynamodb: corrupt item: %w", err)
	}
	return it, nil
}

// key returns the primary key attributes of (pk, sk).
func key(pk, sk string) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{
		attrPK: &ddbtypes.AttributeValueMemberS{Value: pk},
		attrSK: &ddbtypes.AttributeValueMemberS{Value: sk},
	}
}
