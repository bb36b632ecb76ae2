package provider

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// FormatVersion is the layout version of the records this release writes and
// reads: the JSON of the types package's records, which every backend stores as
// a record's value. A later release that changes a record's layout in a way an
// older reader would misread (not just a new field, which older readers ignore)
// writes its records with the field FormatField set to its version; a record
// without the field is format 1, so every record written so far is format 1.
//
// Decode, the one place every backend decodes a record, refuses a record whose
// format is newer than FormatVersion with a *CorruptError (ErrCorrupt) that says
// so, instead of misreading it: during a rolling deploy, an older instance
// reports the newer records it cannot read, and the newer release reads both
// formats. What a backend keeps around the JSON (a Redis hash's fields, a
// DynamoDB item's attributes, an expiry prefix) changes only by adding, or with
// the record's format version.
const FormatVersion = 1

// FormatField is the JSON field that holds a record's format version when it is
// not 1.
const FormatField = "pipestateFormat"

// formatMarker is FormatField as it appears in a JSON object.
var formatMarker = []byte(`"` + FormatField + `"`)

// checkFormat returns an error when data, a record's JSON, declares a format
// newer than FormatVersion (or one that is not a positive integer).
func checkFormat(data []byte) error {
	if !bytes.Contains(data, formatMarker) {
		return nil
	}
	var f struct {
		V json.RawMessage `json:"pipestateFormat"`
	}
	if err := json.Unmarshal(data, &f); err != nil || f.V == nil {
		return nil // not an object with the field at its top: Unmarshal decides
	}
	var v int
	if err := json.Unmarshal(f.V, &v); err != nil || v < 1 {
		return fmt.Errorf("record format %s is not a positive integer", f.V)
	}
	if v > FormatVersion {
		return fmt.Errorf("record format %d, written by a newer version of pipestate; this version reads format %d", v, FormatVersion)
	}
	return nil
}
