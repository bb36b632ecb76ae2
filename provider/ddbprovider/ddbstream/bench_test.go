package ddbstream_test

import (
	"testing"
	"time"

	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider/ddbprovider/ddbstream"
)

// markerRecord is the stream record of a marker rewrite, as DynamoDB Local
// sends it (attributes as the backend writes them).
func markerRecord() streamtypes.Record {
	str := func(v string) streamtypes.AttributeValue { return &streamtypes.AttributeValueMemberS{Value: v} }
	num := func(v string) streamtypes.AttributeValue { return &streamtypes.AttributeValueMemberN{Value: v} }
	image := func(source string) map[string]streamtypes.AttributeValue {
		return map[string]streamtypes.AttributeValue{
			"PK": str("MARKER#orders-daily"), "SK": str("2026-11-28#daily"),
			"data":   str(`{"pipelineId":"orders-daily","scheduleId":"daily","date":"2026-11-28","source":"` + source + `","writtenAt":"2026-11-28T06:00:00.123456789Z"}`),
			"listPK": str("MARKER#orders-daily"), "listSK": str("#BYTIME#80000000692939e0#075bcd15#2026-11-28#daily"),
			"exp": num("1766901600123456789"), "ttl": num("1766901601"),
		}
	}
	seq, id := "000000000000000000001", "e1"
	at := time.Unix(1764309600, 0)
	return streamtypes.Record{EventID: &id, EventName: streamtypes.OperationTypeModify, Dynamodb: &streamtypes.StreamRecord{
		Keys:     map[string]streamtypes.AttributeValue{"PK": str("MARKER#orders-daily"), "SK": str("2026-11-28#daily")},
		OldImage: image("orders-raw"), NewImage: image("orders-raw-again"), SequenceNumber: &seq, ApproximateCreationDateTime: &at,
	}}
}

// BenchmarkDecode decodes a marker rewrite's record (both images): what a
// router pays per record before it routes.
func BenchmarkDecode(b *testing.B) {
	d, err := ddbstream.New("pipestate")
	if err != nil {
		b.Fatal(err)
	}
	rec := markerRecord()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Decode(rec); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeJSON is BenchmarkDecode from the record's Lambda JSON.
func BenchmarkDecodeJSON(b *testing.B) {
	d, err := ddbstream.New("pipestate")
	if err != nil {
		b.Fatal(err)
	}
	data := testenv.LambdaRecordJSON(b, markerRecord())
	b.ReportAllocs()
	for b.Loop() {
		if c, err := d.DecodeJSON(data); err != nil || c.Marker == nil {
			b.Fatal(c, err)
		}
	}
}
