package dynamodb

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/internal/ddbx"
	"github.com/pipestate/pipestate/provider"
)

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
