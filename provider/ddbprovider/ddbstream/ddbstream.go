package ddbstream

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/pipestate/pipestate/provider"
	_ "github.com/pipestate/pipestate/provider/ddbprovider" // sets itemimage.Classify and Decode
	"github.com/pipestate/pipestate/provider/ddbprovider/internal/itemimage"
	"github.com/pipestate/pipestate/types"
)

// Decoder decodes the stream records of one pipestate table. It holds no state
// and is safe for concurrent use.
type Decoder struct {
	table string
	now   func() time.Time
}

// Option configures a Decoder.
type Option func(*Decoder) error

// WithClock sets the clock that judges expiry (default time.Now): a record is
// expired when now >= its expiry, as the provider's reads judge it by theirs.
// A nil clock is an error wrapping provider.ErrInvalidArgument.
func WithClock(now func() time.Time) Option {
	return func(d *Decoder) error {
		if err := provider.CheckClock(now); err != nil {
			return err
		}
		d.now = now
		return nil
	}
}

// New returns a Decoder of the records of table, the name given to
// dynamodb.New (it names items in errors). An empty name or a nil option is an
// error wrapping provider.ErrInvalidArgument.
func New(table string, opts ...Option) (*Decoder, error) {
	if table == "" {
		return nil, provider.Invalidf("ddbstream: New: empty table name")
	}
	d := &Decoder{table: table, now: time.Now}
	for _, o := range opts {
		if o == nil {
			return nil, provider.Invalidf("ddbstream: New: nil option")
		}
		if err := o(d); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// Op is what a stream record did to its item.
type Op uint8

// Ops, by the record's event name and user identity.
const (
	// Written: the item was put or updated (INSERT or MODIFY); the change's New
	// is the item as written, Old (on MODIFY) what it replaced.
	Written Op = iota + 1
	// Deleted: a caller deleted the item (REMOVE); Old is what was deleted.
	Deleted
	// TTLDeleted: DynamoDB's TTL service deleted the item after its ttl passed
	// (REMOVE with the user identity {Type: Service, PrincipalId:
	// dynamodb.amazonaws.com}); Old is what was deleted.
	TTLDeleted
)

func (o Op) String() string {
	switch o {
	case Written:
		return "written"
	case Deleted:
		return "deleted"
	case TTLDeleted:
		return "ttl_deleted"
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// Pair is a record before (Old) and after (New) a change; nil where the item
// did not exist (Old of an INSERT, New of a REMOVE) or, for a lock or lease,
// where nothing held the key.
type Pair[T any] struct {
	Old, New *T
}

// Change is one stream record, decoded. Kind says which of the record fields
// is set; a change whose Kind is "" is not one of ours to report (see Foreign).
type Change struct {
	// Kind is provider.KindCascadeMarker, KindRunState, KindEvent, KindRerun,
	// KindReplay or KindLock, or "" for any other item: another application's
	// (Foreign) or one the backend keeps for itself (a pipeline config, trait,
	// readiness result, run log, late arrival, list copy, counter, marker-log
	// entry...).
	Kind provider.RecordKind
	// Foreign reports an item whose key is none the backend writes.
	Foreign bool
	Op      Op
	// Expired reports that the record the change leaves behind (New for
	// Written, Old for Deleted and TTLDeleted) had expired, by its exp and the
	// Decoder's clock: a write of an expired record is no live change, and
	// the provider's reads no longer see it. Lock items never expire; a lock's
	// holding expires at Lock.New.ExpiresAt.
	Expired bool
	// Item names the item: "dynamodb table T item PK SK".
	Item string
	// EventID, SequenceNumber and At are the stream record's eventID,
	// SequenceNumber (the ItemIdentifier of a Lambda's partial batch failure)
	// and ApproximateCreationDateTime.
	EventID        string
	SequenceNumber string
	At             time.Time

	Marker *Pair[types.CascadeMarker] // a marker written (Old set: rewritten) or removed
	Run    *Pair[types.RunState]      // a run's state: status and version, old and new
	Event  *Pair[types.EventRecord]   // appended: New set, Old nil (Old set: a MODIFY, a hand edit)
	Rerun  *Pair[types.RerunRecord]   // a rerun requested or updated
	Replay *Pair[types.ReplayRequest] // a replay requested or updated
	Lock   *Pair[types.LockInfo]      // a lock or lease taken, renewed, taken over or freed
}

// Live reports whether c is a live write of one of the backend's records: Op
// Written, a Kind set and not Expired. A router acts on these alone.
func (c Change) Live() bool { return c.Kind != "" && c.Op == Written && !c.Expired }

// raw is a stream record in the form both entries convert to.
type raw struct {
	eventID, eventName, seq  string
	at                       time.Time
	keys, oldImage, newImage map[string]ddbtypes.AttributeValue
	identityType, principal  string
}

// Decode decodes a record of the table's stream as the DynamoDB Streams API
// returns it (GetRecords). A record that is not a DynamoDB stream record (no
// dynamodb field, no keys, an unknown event name, an image that is no
// attribute map) is an error wrapping provider.ErrInvalidArgument; so is a
// record of one of the backend's items without the image it needs (the table's
// stream view must be NEW_AND_OLD_IMAGES). An image of one of the backend's
// items that does not decode is a *provider.CorruptError (errors.Is
// provider.ErrCorrupt) naming the item; the Change returned with any error
// still carries what the record told (Item, SequenceNumber...), so that the
// caller can report it.
func (d *Decoder) Decode(rec streamtypes.Record) (Change, error) {
	r := raw{eventName: string(rec.EventName)}
	if rec.EventID != nil {
		r.eventID = *rec.EventID
	}
	if rec.UserIdentity != nil {
		r.identityType, r.principal = deref(rec.UserIdentity.Type), deref(rec.UserIdentity.PrincipalId)
	}
	s := rec.Dynamodb
	if s == nil {
		return Change{EventID: r.eventID}, provider.Invalidf("ddbstream: record %s has no dynamodb field", r.eventID)
	}
	r.seq = deref(s.SequenceNumber)
	if s.ApproximateCreationDateTime != nil {
		r.at = s.ApproximateCreationDateTime.UTC()
	}
	var err error
	for _, im := range []struct {
		from map[string]streamtypes.AttributeValue
		to   *map[string]ddbtypes.AttributeValue
	}{{s.Keys, &r.keys}, {s.OldImage, &r.oldImage}, {s.NewImage, &r.newImage}} {
		if im.from == nil {
			continue
		}
		if *im.to, err = attributevalue.FromDynamoDBStreamsMap(im.from); err != nil {
			return Change{EventID: r.eventID, SequenceNumber: r.seq}, provider.Invalid(fmt.Errorf("ddbstream: record %s: %w", r.seq, err))
		}
	}
	return d.decode(r)
}

// lambdaRecord is the JSON of one record of the event a Lambda function gets
// from a DynamoDB stream (aws-lambda-go's events.DynamoDBEventRecord marshals
// to it).
type lambdaRecord struct {
	EventID   string `json:"eventID"`
	EventName string `json:"eventName"`
	DynamoDB  *struct {
		ApproximateCreationDateTime *float64        `json:"ApproximateCreationDateTime"`
		Keys                        json.RawMessage `json:"Keys"`
		NewImage                    json.RawMessage `json:"NewImage"`
		OldImage                    json.RawMessage `json:"OldImage"`
		SequenceNumber              string          `json:"SequenceNumber"`
	} `json:"dynamodb"`
	UserIdentity *struct {
		Type        string `json:"type"`
		PrincipalID string `json:"principalId"`
	} `json:"userIdentity"`
}

// DecodeJSON decodes one record in the JSON a Lambda function receives for it
// (an element of the event's "Records"; aws-lambda-go's
// events.DynamoDBEventRecord marshals to it, and a handler may also take the
// records as json.RawMessage). Errors as for Decode; JSON that does not parse
// as a record wraps provider.ErrInvalidArgument.
func (d *Decoder) DecodeJSON(data []byte) (Change, error) {
	var rec lambdaRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return Change{}, provider.Invalid(fmt.Errorf("ddbstream: record JSON: %w", err))
	}
	r := raw{eventID: rec.EventID, eventName: rec.EventName}
	if rec.UserIdentity != nil {
		r.identityType, r.principal = rec.UserIdentity.Type, rec.UserIdentity.PrincipalID
	}
	s := rec.DynamoDB
	if s == nil {
		return Change{EventID: r.eventID}, provider.Invalidf("ddbstream: record %s has no dynamodb field", r.eventID)
	}
	r.seq = s.SequenceNumber
	if t := s.ApproximateCreationDateTime; t != nil && !math.IsNaN(*t) && math.Abs(*t) < 1e15 {
		sec, frac := math.Modf(*t)
		r.at = time.Unix(int64(sec), int64(frac*1e9)).UTC()
	}
	for _, im := range []struct {
		from json.RawMessage
		to   *map[string]ddbtypes.AttributeValue
	}{{s.Keys, &r.keys}, {s.OldImage, &r.oldImage}, {s.NewImage, &r.newImage}} {
		if len(im.from) == 0 || string(im.from) == "null" {
			continue
		}
		m, err := attributevalue.UnmarshalMapJSON(im.from)
		if err != nil {
			return Change{EventID: r.eventID, SequenceNumber: r.seq}, provider.Invalid(fmt.Errorf("ddbstream: record %s: %w", r.seq, err))
		}
		*im.to = m
	}
	return d.decode(r)
}

// TTL deletions are the stream's REMOVE records with this user identity.
const (
	ttlIdentityType = "Service"
	ttlPrincipal    = "dynamodb.amazonaws.com"
)

// decode is Decode and DecodeJSON past their input's form.
func (d *Decoder) decode(r raw) (Change, error) {
	c := Change{EventID: r.eventID, SequenceNumber: r.seq, At: r.at}
	var image map[string]ddbtypes.AttributeValue // the image the change leaves
	switch r.eventName {
	case string(streamtypes.OperationTypeInsert), string(streamtypes.OperationTypeModify):
		c.Op, image = Written, r.newImage
	case string(streamtypes.OperationTypeRemove):
		c.Op, image = Deleted, r.oldImage
		if r.identityType == ttlIdentityType && r.principal == ttlPrincipal {
			c.Op = TTLDeleted
		}
	default:
		return c, provider.Invalidf("ddbstream: record %s: event name %q is none of INSERT, MODIFY, REMOVE", r.seq, r.eventName)
	}
	if len(r.keys) == 0 {
		return c, provider.Invalidf("ddbstream: record %s has no keys", r.seq)
	}
	// The kind, by the key alone; only the images are decoded.
	keyed, err := itemimage.Classify(d.table, r.keys)
	c.Item = keyed.Name
	switch {
	case err != nil:
		return c, fmt.Errorf("ddbstream: record %s: %w", r.seq, err)
	case keyed.Kind == itemimage.Foreign:
		c.Foreign = true
		return c, nil
	case keyed.Kind == itemimage.Other:
		return c, nil
	case image == nil:
		return c, provider.Invalidf("ddbstream: record %s of %s has no %s image: the table's stream view must be NEW_AND_OLD_IMAGES",
			r.seq, c.Item, map[Op]string{Written: "new", Deleted: "old", TTLDeleted: "old"}[c.Op])
	}
	now := d.now()
	cur, err := itemimage.Decode(d.table, image)
	if err != nil {
		return c, err
	}
	if cur.Kind != keyed.Kind {
		return c, provider.Invalidf("ddbstream: record %s of %s: its image is of another item", r.seq, c.Item)
	}
	c.Expired = !cur.Exp.IsZero() && !now.Before(cur.Exp)
	var old itemimage.Item
	if c.Op == Written && r.oldImage != nil {
		if old, err = itemimage.Decode(d.table, r.oldImage); err != nil {
			return c, err
		}
		if old.Kind != keyed.Kind {
			return c, provider.Invalidf("ddbstream: record %s of %s: its old image is of another item", r.seq, c.Item)
		}
	}
	if c.Op != Written { // what the change leaves is the old item, gone
		old, cur = cur, itemimage.Item{}
	}
	switch keyed.Kind {
	case itemimage.Marker:
		c.Kind, c.Marker = provider.KindCascadeMarker, pair[types.CascadeMarker](old, cur)
	case itemimage.Run:
		c.Kind, c.Run = provider.KindRunState, pair[types.RunState](old, cur)
	case itemimage.Event:
		c.Kind, c.Event = provider.KindEvent, pair[types.EventRecord](old, cur)
	case itemimage.Rerun:
		c.Kind, c.Rerun = provider.KindRerun, pair[types.RerunRecord](old, cur)
	case itemimage.Replay:
		c.Kind, c.Replay = provider.KindReplay, pair[types.ReplayRequest](old, cur)
	case itemimage.Lock:
		c.Kind, c.Lock = provider.KindLock, pair[types.LockInfo](old, cur)
	}
	return c, nil
}

// pair is the Pair of two decoded images (a zero Item: none).
func pair[T any](old, cur itemimage.Item) *Pair[T] {
	p := &Pair[T]{}
	p.Old, _ = old.Value.(*T)
	p.New, _ = cur.Value.(*T)
	return p
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
