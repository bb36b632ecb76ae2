package ddbstream_test

import (
	"errors"
	"testing"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/dynamodb/ddbstream"
)

// FuzzDecodeJSON: whatever a record holds, DecodeJSON never panics, and an
// error is either bad input (ErrInvalidArgument) or a corrupt item
// (ErrCorrupt).
func FuzzDecodeJSON(f *testing.F) {
	for _, seed := range []string{
		`{"eventName":"INSERT","dynamodb":{"Keys":{"PK":{"S":"RUN#r"},"SK":{"S":"STATE"}},"NewImage":{"PK":{"S":"RUN#r"},"SK":{"S":"STATE"},"data":{"S":"{\"runId\":\"r\"}"},"version":{"N":"1"},"exp":{"N":"1"}}}}`,
		`{"eventName":"MODIFY","dynamodb":{"Keys":{"PK":{"S":"LOCK#k"},"SK":{"S":"LOCK"}},"OldImage":{"PK":{"S":"LOCK#k"},"SK":{"S":"LOCK"},"holder":{"S":"lease:t"},"fence":{"N":"2"}},"NewImage":{"PK":{"S":"LOCK#k"},"SK":{"S":"LOCK"}}}}`,
		`{"eventName":"REMOVE","userIdentity":{"type":"Service","principalId":"dynamodb.amazonaws.com"},"dynamodb":{"Keys":{"PK":{"S":"MARKER#p"},"SK":{"S":"d#s"}},"OldImage":{"PK":{"S":"MARKER#p"},"SK":{"S":"d#s"},"data":{"B":"AAAA"}}}}`,
		`{"eventName":"INSERT","dynamodb":{"Keys":{"PK":{"S":"PIPELINE#p"},"SK":{"S":"EVENT#00000000000000000001"}},"NewImage":{"PK":{"S":"PIPELINE#p"},"SK":{"S":"EVENT#x"},"seq":{"S":"1"},"data":{"L":[]}}}}`,
	} {
		f.Add([]byte(seed))
	}
	d, err := ddbstream.New("t")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := d.DecodeJSON(data); err != nil && !errors.Is(err, provider.ErrInvalidArgument) && !errors.Is(err, provider.ErrCorrupt) {
			t.Errorf("DecodeJSON(%s): %v, want ErrInvalidArgument or ErrCorrupt", data, err)
		}
	})
}
