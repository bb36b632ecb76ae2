// Package ddbstream decodes the DynamoDB Streams records of a pipestate table
// (package provider/ddbprovider) into typed changes, for the serverless half of
// the library on AWS: a Lambda function fed by the table's stream routes
// cascade markers (see examples/streamrouter, and docs/aws-lambda.md for the
// table, IAM and the event source mapping) without holding a
// WatchCascadeMarkers open. The item format stays the backend's own: the
// records decode through the backend's item decoding, so a change of format
// changes both together.
//
// Its name is not the SDK's: service/dynamodbstreams (the stream API) and this
// package can share an import list without an alias.
//
//	d, err := ddbstream.New("pipestate")
//	c, err := d.Decode(rec)      // rec: a dynamodbstreams/types.Record (GetRecords)
//	c, err := d.DecodeJSON(data) // data: one record of a Lambda's event, as JSON
//	if c.Kind == provider.KindCascadeMarker && c.Live() {
//		route(*c.Marker.New)
//	}
//
// # Input
//
// Decode takes the SDK's stream record (service/dynamodbstreams/types.Record,
// what GetRecords returns). DecodeJSON takes one record in the JSON a Lambda
// function receives (an element of the event's "Records"): aws-lambda-go's
// events.DynamoDBEventRecord marshals to it, and a handler may as well take
// its records as json.RawMessage. The library does not depend on
// aws-lambda-go (the Lambda runtime belongs to the function, which is why
// JSON is the neutral form); the two entries decode a record alike. The
// table's stream must have the view type NEW_AND_OLD_IMAGES (CreateTable,
// TableInput and the CloudFormation and Terraform snippets of package dynamodb
// set it): a record of one of the backend's items without the image it needs
// is an error wrapping provider.ErrInvalidArgument.
//
// # Changes
//
// A Change's Kind says which record field is set, each a Pair of the record
// before (Old) and after (New) the change, decoded as the provider's reads
// decode it:
//
//	Kind               field   reported for
//	-----------------  ------  ---------------------------------------------------------
//	KindCascadeMarker  Marker  a marker written (Old nil) or rewritten (Old: the one it replaced)
//	KindRunState       Run     a run put, created or swapped: old and new Status and Version
//	KindEvent          Event   an event appended (Old nil); the backend never modifies an
//	                           event, so a MODIFY (Old set) is a hand edit
//	KindRerun          Rerun   a rerun put
//	KindReplay         Replay  a replay put
//	KindLock           Lock    a lock or lease taken (Old nil), renewed or taken over (both
//	                           set: same or another Owner/Token), freed (New nil); a lease's
//	                           Fence is the key's fence counter
//
// Only the record's own item reports it: a run's, rerun's or marker's list copy,
// the event counter, the marker log's entries and counter (WatchCascadeMarkers'
// own record of each marker write) are the backend's bookkeeping, reported with
// Kind "", so one marker write is one marker change. So are pipeline configs,
// traits, readiness results, run logs and late arrivals. An item whose key the
// backend never writes (another application's, in a shared table) is reported
// with Kind "" and Foreign set. Neither is an error.
//
// # Expiry and removal
//
// Op is Written (INSERT, MODIFY), Deleted (REMOVE by a caller) or TTLDeleted
// (REMOVE by DynamoDB's TTL service: the record's user identity is {Type:
// Service, PrincipalId: dynamodb.amazonaws.com}). Expired reports that the
// record the change leaves (New for a write, Old for a removal) had expired by
// its exp and the Decoder's clock (WithClock; now >= exp), as the provider's
// reads judge it: a record delivered after its expiry is not a live change,
// and the provider no longer returns it. Live is a write, of one of the
// reported kinds, not expired: what a router acts on. A lock item never
// expires (its holding's expiry is Lock.New.ExpiresAt).
//
// # Corrupt records
//
// An image of one of the backend's items that does not decode (an attribute of
// the wrong type, data that is not its record's JSON, compressed data that
// does not inflate) is a *provider.CorruptError (errors.Is
// provider.ErrCorrupt) naming the record and the item ("dynamodb table T item
// PK SK"), never a panic. Decode returns the Change with the error, with the
// record's SequenceNumber set, so a Lambda handler can name it in its partial
// batch failures.
//
// # Delivery
//
// DynamoDB Streams deliver each change of an item once per stream, in the
// order of the item's changes, within a shard in sequence-number order; a
// Lambda event source mapping delivers them at least once (a retried batch is
// delivered again), and keeps them 24 hours. A router must be idempotent:
// examples/streamrouter starts each target under an ID derived from it (a run
// created once through provider.RunCreator, or a Step Functions execution of
// that name). docs/aws-lambda.md compares the stream with WatchCascadeMarkers.
package ddbstream
