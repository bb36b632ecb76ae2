// Package corrupthook lets package memorytest replace the stored form of a memory
// provider's records with bytes that do not decode — what a flipped byte or a
// value written by hand does to a networked backend's storage — for
// providertest's Harness.Corrupt, without an exported method on the backend.
package corrupthook

import "github.com/pipestate/pipestate/provider"

// Corrupt is set by package memory. It gives the record of kind named by id, in
// the data of p (a *memprovider.Provider), the stored form raw, as
// providertest.Harness.Corrupt describes: id holds the arguments Harness.Corrupt
// gets for kind.
var Corrupt func(p any, kind provider.RecordKind, raw []byte, id ...string) error
