package ddbstream_test

import (
	"errors"
	"testing"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider/ddbstream"
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
	// Keys of a marker, an image of a run.
	f.Add([]byte(`{"eventName":"INSERT","dynamodb":{"Keys":{"PK":{"S":"MARKER#p"},"SK":{"S":"d#s"}},"NewImage":{"PK":{"S":"RUN#r"},"SK":{"S":"STATE"},"data":{"S":"{}"}}}}`))
	d, err := ddbstream.New("t")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := d.DecodeJSON(data)
		if err != nil {
			if !errors.Is(err, provider.ErrInvalidArgument) && !errors.Is(err, provider.ErrCorrupt) {
				t.Errorf("DecodeJSON(%s): %v, want ErrInvalidArgument or ErrCorrupt", data, err)
			}
			return
		}
		// A reported change holds the record it reports: a router may
		// dereference it.
		var set, old bool
		switch c.Kind {
		case "":
			return
		case provider.KindCascadeMarker:
			set, old = c.Marker != nil && c.Marker.New != nil, c.Marker != nil && c.Marker.Old != nil
		case provider.KindRunState:
			set, old = c.Run != nil && c.Run.New != nil, c.Run != nil && c.Run.Old != nil
		case provider.KindEvent:
			set, old = c.Event != nil && c.Event.New != nil, c.Event != nil && c.Event.Old != nil
		case provider.KindRerun:
			set, old = c.Rerun != nil && c.Rerun.New != nil, c.Rerun != nil && c.Rerun.Old != nil
		case provider.KindReplay:
			set, old = c.Replay != nil && c.Replay.New != nil, c.Replay != nil && c.Replay.Old != nil
		case provider.KindLock:
			if c.Lock == nil {
				t.Errorf("DecodeJSON(%s): a lock change without Lock", data)
			}
			return // either side may be free
		}
		if (c.Op == ddbstream.Written && !set) || (c.Op != ddbstream.Written && !old) {
			t.Errorf("DecodeJSON(%s): %v %s change without its record", data, c.Op, c.Kind)
		}
	})
}
