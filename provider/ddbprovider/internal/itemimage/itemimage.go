// Package itemimage lets package ddbstream classify and decode the DynamoDB
// backend's items with the backend's own knowledge of its format, without an
// exported decoding API on provider/ddbprovider: package dynamodb sets Classify
// and Decode when it initializes, and ddbstream, which imports dynamodb, calls
// them. The item format stays the
// backend's own (key schema, attributes, compression); only this neutral result
// crosses the boundary.
package itemimage

import (
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Kind is what an item image is, by its key.
type Kind uint8

// Kinds of item. Foreign and Other carry no Value.
const (
	// Foreign is an item whose key is none the backend writes: another
	// application's item in a shared table.
	Foreign Kind = iota
	// Other is one of the backend's items of a kind that no typed change
	// reports: a pipeline config, trait, readiness result, run log, late
	// arrival, a list copy (of a run, rerun or marker), an event counter, the
	// marker log's entries and counter, a late-arrival list's fence item.
	Other
	Marker // a cascade marker's truth item: Value *types.CascadeMarker
	Run    // a run's truth item: Value *types.RunState
	Event  // an event: Value *types.EventRecord
	Rerun  // a rerun's truth item: Value *types.RerunRecord
	Replay // a replay request: Value *types.ReplayRequest
	Lock   // a lock or lease item: Value *types.LockInfo, nil while nothing holds it
)

// Item is one decoded item image.
type Item struct {
	Kind Kind
	// Name names the item for errors and logs: "dynamodb table T item PK SK".
	Name string
	// Exp is when the record expires by the provider's rule (now >= Exp: gone);
	// zero when it never does. A lock item never expires (its holding's expiry
	// is Value's ExpiresAt).
	Exp time.Time
	// Value is the decoded record; see Kind.
	Value any
}

// Classify is what kind of item the key (its PK and SK attributes; other
// attributes are ignored) is, by the key alone, and the item's Name: an Item
// without Exp or Value. A key the backend does not write is Foreign; a key
// without the string attributes PK and SK is an error wrapping
// provider.ErrInvalidArgument. Set by package dynamodb.
var Classify func(table string, key map[string]ddbtypes.AttributeValue) (Item, error)

// Decode decodes an item image of the backend's table (its name for Name and
// errors). A key the backend does not write is Foreign, never an error; an
// image without the string keys PK and SK is an error wrapping
// provider.ErrInvalidArgument; an item
// of one of its kinds that does not decode is an error wrapping
// provider.ErrCorrupt (a *provider.CorruptError naming the item). Set by package
// dynamodb.
var Decode func(table string, image map[string]ddbtypes.AttributeValue) (Item, error)
