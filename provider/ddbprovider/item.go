package ddbprovider

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/internal/ddbx"
	"github.com/pipestate/pipestate/provider"
)

// item is the stored form of every entity; see the key schema in the package doc.
// Its attribute names are in the field tags (attrs and unmarshal encode them by
// hand: a string or number field that is empty or zero is absent).
// Entity bodies are JSON in Data (compressed when the item would not fit
// otherwise), so a Get returns exactly what a JSON round trip gives.
type item struct {
	PK     string `dynamodbav:"PK"`
	SK     string `dynamodbav:"SK"`
	GSI1PK string `dynamodbav:"GSI1PK,omitempty"`
	GSI1SK string `dynamodbav:"GSI1SK,omitempty"`
	// ActivePK and ActiveSK, on a run's truth item while its status is not
	// terminal, are its key in the sparse index ACTIVE (see active.go).
	ActivePK string `dynamodbav:"activePK,omitempty"`
	ActiveSK string `dynamodbav:"activeSK,omitempty"`
	Data     *body  `dynamodbav:"data,omitempty"`
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
	// fences is what the item remembers of fenced writes (see fence.go): lease key
	// -> highest fence. unmarshal reads it; attrs never writes it (updates do).
	fences map[string]int64
	// bad, on an item a query read, is the *provider.CorruptError of attributes
	// that did not unmarshal (only PK, SK and Seq are set then); never stored.
	bad error
}

// Attribute names used in expressions.
const (
	attrPK     = "PK"
	attrSK     = "SK"
	attrGSI1PK = "GSI1PK"
	attrGSI1SK = "GSI1SK"
	attrActPK  = "activePK"
	attrActSK  = "activeSK"
	attrData   = "data"
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
	// IndexActive is the sparse index of unfinished runs (see active.go).
	indexActive = "ACTIVE"
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
	e := encoders.Get().(*encoder)
	if err := e.enc.Encode(v); err != nil {
		return nil, provider.Invalid(err) // e is dropped: its buffer may hold a part
	}
	b := &body{text: string(bytes.TrimSuffix(e.buf.Bytes(), []byte("\n")))}
	if e.buf.Cap() <= maxPooledBuffer {
		e.buf.Reset()
		encoders.Put(e)
	}
	return b, nil
}

// encoder is a JSON encoder with its buffer, kept in encoders for reuse.
type encoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var encoders = sync.Pool{New: func() any {
	e := &encoder{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}}

// maxPooledBuffer bounds the buffers encoders keeps: a rare huge entity's is
// dropped rather than held.
const maxPooledBuffer = 64 << 10

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

// attr is b's "data" attribute.
func (b *body) attr() ddbtypes.AttributeValue {
	if b.z != nil {
		return &ddbtypes.AttributeValueMemberB{Value: b.z}
	}
	return &ddbtypes.AttributeValueMemberS{Value: b.text}
}

// set makes b the body a "data" attribute holds.
func (b *body) set(av ddbtypes.AttributeValue) error {
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

// Corrupt records: every stored record is decoded by decodeData (its JSON) after
// unmarshal (its attributes); what does not decode is a *provider.CorruptError
// naming the record (kind, recordID, where). A Get* returns it; a query skips the
// item and reports it (provider.SkipCorrupt), and a List*(limit) reads on for
// limit good records.

// decodeData unmarshals the data of it, a record of kind, into *v.
func decodeData[T any](t tableName, kind provider.RecordKind, it item, v *T) error {
	if it.bad != nil {
		return it.bad
	}
	name := func() (string, string) { return recordID(kind, it), t.where(it.PK, it.SK) }
	if it.Data == nil {
		id, key := name()
		return &provider.CorruptError{Kind: kind, ID: id, Key: key, Err: errors.New("no data attribute")}
	}
	return provider.Decode(kind, []byte(it.Data.text), v, name)
}

// badItem is the item av, a record of kind whose attributes do not unmarshal
// (cause): its key and sequence number (its sort key's, for an entry of a
// numbered log), and bad, its *provider.CorruptError.
func (p *Provider) badItem(kind provider.RecordKind, av map[string]ddbtypes.AttributeValue, cause error) item {
	return tableName(p.table).badItem(kind, av, cause)
}

// badItem is Provider.badItem for an item of table t.
func (t tableName) badItem(kind provider.RecordKind, av map[string]ddbtypes.AttributeValue, cause error) item {
	var it item
	it.PK, _ = attrString(av[attrPK])
	it.SK, _ = attrString(av[attrSK])
	if n, ok := keySeq(it.SK); ok {
		it.Seq = n // the key is the truth, whatever the attribute holds
	} else if n, ok := av[attrSeq].(*ddbtypes.AttributeValueMemberN); ok {
		it.Seq, _ = strconv.ParseInt(n.Value, 10, 64)
	}
	it.bad = &provider.CorruptError{Kind: kind, ID: recordID(kind, it), Key: t.where(it.PK, it.SK), Err: cause}
	return it
}

// tableName is the name of a table, which names its items in errors: all that
// decoding an item needs of its Provider (ddbstream's images have none).
type tableName string

// where is the CorruptError.Key of the item (pk, sk).
func (t tableName) where(pk, sk string) string {
	return "dynamodb table " + string(t) + " item " + pk + " " + sk
}

// recordID is the CorruptError.ID of it, a record of kind (see the key schema in
// the package doc): the record's ID, or its identity's parts joined by ':'.
func recordID(kind provider.RecordKind, it item) string {
	pipeline := strings.TrimPrefix(it.PK, pipelinePrefix)
	parts := func(sk, prefix string, n int) string { // the first n '#'-parts of sk after prefix
		ps := strings.SplitN(strings.TrimPrefix(sk, prefix), "#", n+1)
		return strings.Join(ps[:min(n, len(ps))], ":")
	}
	last := func(s string) string { return s[strings.LastIndexByte(s, '#')+1:] }
	switch kind {
	case provider.KindPipeline, provider.KindReadiness:
		return pipeline
	case provider.KindTrait:
		return pipeline + ":" + strings.TrimPrefix(it.SK, skTrait)
	case provider.KindRunState, provider.KindRerun:
		if strings.HasPrefix(it.PK, pipelinePrefix) { // a list copy: ...#<time>#<id>
			return last(it.SK)
		}
		return last(it.PK) // the truth: RUN#<id>, RERUN#<id>
	case provider.KindEvent:
		return pipeline + ":" + provider.FormatSeqCursor(it.Seq)
	case provider.KindRunLog:
		return pipeline + ":" + parts(it.SK, skRunLog, 2)
	case provider.KindReplay:
		return pipeline + ":" + parts(it.SK, skReplay, 2)
	case provider.KindLateArrival:
		return pipeline + ":" + parts(it.SK, skLate, 2)
	case provider.KindCascadeMarker:
		sk := it.SK
		if rest, ok := strings.CutPrefix(sk, skMarkerByTime); ok {
			_, sk, _ = strings.Cut(rest, "#") // past the time
		}
		return strings.TrimPrefix(it.PK, markerPrefix) + ":" + strings.ReplaceAll(sk, "#", ":")
	case provider.KindMarkerWrite:
		return provider.FormatSeqCursor(it.Seq)
	case provider.KindLock:
		return strings.TrimPrefix(it.PK, lockPrefix)
	}
	return it.PK + " " + it.SK
}

// marshal returns it as an attribute map and checks DynamoDB's item size limit. An
// item that is too large with its data as text gets its data compressed (once:
// the items of one entity share their body).
func marshal(it item) (map[string]ddbtypes.AttributeValue, error) {
	av := it.attrs()
	if ddbx.ItemSize(av) > ddbx.MaxItemSize && it.Data != nil && it.Data.z == nil {
		it.Data.compress()
		av[attrData] = it.Data.attr()
	}
	if n := ddbx.ItemSize(av); n > ddbx.MaxItemSize {
		return nil, fmt.Errorf("%w: item %s/%s would be about %d bytes, over DynamoDB's %d",
			provider.ErrTooLarge, it.PK, it.SK, n, ddbx.MaxItemSize)
	}
	return av, nil
}

// attrs is the attribute map of it: every field that is set (see item's fields),
// numbers in decimal.
func (it *item) attrs() map[string]ddbtypes.AttributeValue {
	av := make(map[string]ddbtypes.AttributeValue, 4)
	av[attrPK] = &ddbtypes.AttributeValueMemberS{Value: it.PK}
	av[attrSK] = &ddbtypes.AttributeValueMemberS{Value: it.SK}
	for _, f := range [...]struct {
		name, v string
	}{{attrGSI1PK, it.GSI1PK}, {attrGSI1SK, it.GSI1SK}, {attrActPK, it.ActivePK}, {attrActSK, it.ActiveSK}, {attrListPK, it.ListPK}, {attrListSK, it.ListSK}, {attrHolder, it.Holder}, {attrTok, it.Tok}} {
		if f.v != "" {
			av[f.name] = &ddbtypes.AttributeValueMemberS{Value: f.v}
		}
	}
	if it.Data != nil {
		av[attrData] = it.Data.attr()
	}
	for _, f := range [...]struct {
		name string
		v    int64
	}{{attrExp, it.Exp}, {attrTTL, it.TTL}, {attrSeq, it.Seq}, {attrFence, it.Fence}} {
		if f.v != 0 {
			av[f.name] = &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(f.v, 10)}
		}
	}
	if it.Version != nil {
		av[attrVer] = &ddbtypes.AttributeValueMemberN{Value: strconv.Itoa(*it.Version)}
	}
	return av
}

// keySeq is the sequence number a numbered sort key (an event's EVENT#N(seq),
// a marker-log entry's ENTRY#N(seq)) holds; ok is false for any other key.
func keySeq(sk string) (seq int64, ok bool) {
	var digits string
	for _, prefix := range [...]string{skEvent, skLogEntry} {
		if d, found := strings.CutPrefix(sk, prefix); found {
			digits, ok = d, true
			break
		}
	}
	if !ok || len(digits) != 20 {
		return 0, false
	}
	for i := range len(digits) {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	seq, err := strconv.ParseInt(digits, 10, 64)
	return seq, err == nil
}

// numbered reports whether it is an entry of the numbered log whose sort keys
// start with prefix (its Seq is its key's).
func (it *item) numbered(prefix string) bool { return numberedKey(it.SK, prefix) }

// numberedKey reports whether sk is the sort key of an entry of the numbered
// log under prefix: prefix and 20 digits.
func numberedKey(sk, prefix string) bool {
	_, ok := keySeq(sk)
	return ok && strings.HasPrefix(sk, prefix)
}

// unmarshal decodes an attribute map into an item; attributes it does not know are
// ignored. The number of an entry of a numbered log is its sort key's (the key
// is the truth): a seq attribute that says otherwise makes the item corrupt.
func unmarshal(av map[string]ddbtypes.AttributeValue) (item, error) {
	it, err := unmarshalAttrs(av)
	if err != nil {
		return item{}, err
	}
	if n, ok := keySeq(it.SK); ok {
		if _, has := av[attrSeq]; has && it.Seq != n {
			return item{}, fmt.Errorf("dynamodb: corrupt item: attribute %s: %d, but its sort key holds %d", attrSeq, it.Seq, n)
		}
		it.Seq = n
	}
	if err := it.checkActive(); err != nil {
		return item{}, err
	}
	return it, nil
}

// unmarshalAttrs is unmarshal of the attributes alone.
func unmarshalAttrs(av map[string]ddbtypes.AttributeValue) (item, error) {
	var it item
	for name, v := range av {
		var err error
		switch name {
		case attrPK:
			it.PK, err = attrString(v)
		case attrSK:
			it.SK, err = attrString(v)
		case attrGSI1PK:
			it.GSI1PK, err = attrString(v)
		case attrGSI1SK:
			it.GSI1SK, err = attrString(v)
		case attrActPK:
			it.ActivePK, err = attrString(v)
		case attrActSK:
			it.ActiveSK, err = attrString(v)
		case attrListPK:
			it.ListPK, err = attrString(v)
		case attrListSK:
			it.ListSK, err = attrString(v)
		case attrHolder:
			it.Holder, err = attrString(v)
		case attrTok:
			it.Tok, err = attrString(v)
		case attrData:
			it.Data = new(body)
			err = it.Data.set(v)
		case attrExp:
			it.Exp, err = attrInt(v)
		case attrTTL:
			it.TTL, err = attrInt(v)
		case attrSeq:
			it.Seq, err = attrInt(v)
		case attrFence:
			it.Fence, err = attrInt(v)
		case attrVer:
			var n int64
			if n, err = attrInt(v); err == nil {
				ver := int(n)
				it.Version = &ver
			}
		default:
			if key, ok := strings.CutPrefix(name, fencePrefix); ok {
				var f int64
				if f, err = attrInt(v); err == nil {
					if it.fences == nil {
						it.fences = map[string]int64{}
					}
					it.fences[key] = f
				}
			}
		}
		if err != nil {
			return item{}, fmt.Errorf("dynamodb: corrupt item: attribute %s: %w", name, err)
		}
	}
	return it, nil
}

// attrString is the value of a string attribute.
func attrString(v ddbtypes.AttributeValue) (string, error) {
	s, ok := v.(*ddbtypes.AttributeValueMemberS)
	if !ok {
		return "", fmt.Errorf("type %T, want S", v)
	}
	return s.Value, nil
}

// attrInt is the value of a number attribute holding an int64 (an int, for a
// version, which is never written wider).
func attrInt(v ddbtypes.AttributeValue) (int64, error) {
	n, ok := v.(*ddbtypes.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("type %T, want N", v)
	}
	return strconv.ParseInt(n.Value, 10, 64)
}

// key returns the primary key attributes of (pk, sk).
func key(pk, sk string) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{
		attrPK: &ddbtypes.AttributeValueMemberS{Value: pk},
		attrSK: &ddbtypes.AttributeValueMemberS{Value: sk},
	}
}
