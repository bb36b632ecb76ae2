package provider_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// TestDecodeFormat: a record without a format, or with format 1, decodes; one
// written in a newer format (or a bad one) is corrupt, naming the format, and is
// never misread.
func TestDecodeFormat(t *testing.T) {
	name := func() (string, string) { return "r1", "key r1" }
	for _, tc := range []struct {
		json, wantErr string
	}{
		{`{"runId":"r1","pipelineId":"p","status":"PENDING"}`, ""},
		{`{"pipestateFormat":1,"runId":"r1","pipelineId":"p","status":"PENDING"}`, ""},
		{`{"runId":"r1","pipelineId":"p","status":"PENDING","metadata":{"pipestateFormat":9}}`, ""},
		{`{"pipestateFormat":2,"runId":"r1","pipelineId":"p","status":"PENDING"}`, "record format 2, written by a newer version"},
		{`{"runId":"r1","pipestateFormat":3}`, "record format 3"},
		{`{"pipestateFormat":"x","runId":"r1"}`, "not a positive integer"},
		{`{"pipestateFormat":0,"runId":"r1"}`, "not a positive integer"},
	} {
		var run types.RunState
		err := provider.Decode(provider.KindRunState, []byte(tc.json), &run, name)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("Decode(%s) = %v, want nil", tc.json, err)
		case tc.wantErr == "" && run.RunID != "r1":
			t.Errorf("Decode(%s) read run %+v", tc.json, run)
		case tc.wantErr != "" && (!errors.Is(err, provider.ErrCorrupt) || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("Decode(%s) = %v, want ErrCorrupt saying %q", tc.json, err, tc.wantErr)
		case tc.wantErr != "" && run.RunID != "":
			t.Errorf("Decode(%s) misread the newer record into %+v", tc.json, run)
		}
	}
}
