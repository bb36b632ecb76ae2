package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/pipestate/pipestate/types"
)

// RecordKind names a kind of stored record: the Kind of a CorruptError, the
// pipestate.record.kind attribute of the pipestate.corrupt.records metric, and
// what providertest's Harness.Corrupt corrupts. The set is closed, so metric
// attributes stay bounded.
type RecordKind string

// The record kinds.
const (
	KindPipeline      RecordKind = "pipeline"       // a pipeline config
	KindTrait         RecordKind = "trait"          // a trait evaluation
	KindRunState      RecordKind = "run_state"      // a run
	KindEvent         RecordKind = "event"          // an entry of a pipeline's event log
	KindRunLog        RecordKind = "run_log"        // a run log entry
	KindRerun         RecordKind = "rerun"          // a rerun record
	KindReplay        RecordKind = "replay"         // a replay request
	KindLateArrival   RecordKind = "late_arrival"   // a late-arrival record
	KindCascadeMarker RecordKind = "cascade_marker" // a cascade marker (ListCascadeMarkers)
	KindMarkerWrite   RecordKind = "marker_write"   // an entry of the marker log (WatchCascadeMarkers)
	KindReadiness     RecordKind = "readiness"      // a cached readiness result
	KindLock          RecordKind = "lock"           // a lock or lease holder (GetLockInfo)
)

// RecordKinds is every RecordKind, in the order above.
var RecordKinds = []RecordKind{KindPipeline, KindTrait, KindRunState, KindEvent, KindRunLog, KindRerun,
	KindReplay, KindLateArrival, KindCascadeMarker, KindMarkerWrite, KindReadiness, KindLock}

// String is the kind in words, as error messages show it: "run state".
func (k RecordKind) String() string { return strings.ReplaceAll(string(k), "_", " ") }

// CorruptError is the error of a stored record that does not decode: a flipped
// byte, a value written by a newer version of the library, a key written by hand.
// It wraps ErrCorrupt and its cause, so errors.Is(err, ErrCorrupt) holds and
// errors.As reaches the cause (a *json.SyntaxError, say). Its message names the
// record:
//
//	provider: corrupt run state r-1 (redis key pst:{p}:run:r-1): invalid character 'x' looking for beginning of value
//
// A Get* of a corrupt record returns one; a List* or an iterator skips the record
// and reports one (see SkipCorrupt).
type CorruptError struct {
	// Kind is the kind of the record.
	Kind RecordKind
	// ID is the record's identity as the API names it: a pipeline, run or rerun
	// ID, a lock key, or the parts of a composite identity joined by ':' (which
	// no ID holds): "p-1:freshness" for a trait, "p-1:2026-01-02:daily" for a run
	// log, replay or marker, and for a record of a log, the log and the record's
	// position in it ("p-1:1700000000000-0" for an event).
	ID string
	// Key is where the backend keeps the record, in its own terms, for the
	// operator who looks at it with the backend's tools: "redis key
	// pst:{p}:run:r-1", "dynamodb item RUN#r-1 STATE". It may hold the key
	// prefix or table, so it goes to logs and span events, never to metric
	// attributes.
	Key string
	// Err is why it does not decode.
	Err error
}

func (e *CorruptError) Error() string {
	var b strings.Builder
	b.WriteString("provider: corrupt ")
	b.WriteString(e.Kind.String())
	if e.ID != "" {
		b.WriteString(" ")
		b.WriteString(e.ID)
	}
	if e.Key != "" {
		b.WriteString(" (")
		b.WriteString(e.Key)
		b.WriteString(")")
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns ErrCorrupt and the cause.
func (e *CorruptError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrCorrupt}
	}
	return []error{ErrCorrupt, e.Err}
}

// Decode unmarshals data, the stored JSON of a record of kind, into *v. When it
// does not decode, Decode returns a *CorruptError whose ID and Key name returns;
// name is called only then, so building them costs nothing on the common path.
// The built-in backends decode every stored record through Decode (a Get*) or
// DecodeOrSkip (a List* or an iterator); a third-party backend should too.
//
// A record whose format (see FormatVersion) is newer than this release's does
// not decode either: Decode reports it as corrupt, naming its format. Nor does
// a run or a rerun whose stored ID is not the one its key names (name's id: a
// flipped byte, a body copied by hand): a reader that trusted it would page on
// from another run's cursor, and a repair would index it under another key.
func Decode[T any](kind RecordKind, data []byte, v *T, name func() (id, key string)) error {
	err := checkFormat(data)
	if err == nil {
		err = json.Unmarshal(data, v)
	}
	if err == nil {
		err = checkOwnID(v, name)
	}
	if err != nil {
		id, key := name()
		return &CorruptError{Kind: kind, ID: id, Key: key, Err: err}
	}
	return nil
}

// checkOwnID fails when v is a run or a rerun whose ID is not name's.
func checkOwnID(v any, name func() (id, key string)) error {
	var own string
	switch r := v.(type) {
	case *types.RunState:
		own = r.RunID
	case *types.RerunRecord:
		own = r.RerunID
	default:
		return nil
	}
	if id, _ := name(); own != id {
		return fmt.Errorf("the record names itself %q", own)
	}
	return nil
}

// DecodeOrSkip is Decode for a List* or an iterator: it reports whether *v holds
// the record. A record that does not decode is reported by SkipCorrupt, and
// DecodeOrSkip returns false: the caller skips it and goes on with the others
// (and, for a List*(limit), reads on until it has limit good records or runs
// out). *v may hold part of the corrupt record then; reuse or clear it.
func DecodeOrSkip[T any](ctx context.Context, r CorruptReporter, kind RecordKind, data []byte, v *T, name func() (id, key string)) bool {
	err := Decode(kind, data, v, name)
	if err == nil {
		return true
	}
	SkipCorrupt(ctx, r, err)
	return false
}

// A CorruptReporter records the corrupt records a backend skips. The built-in
// backends' reporter records the pipestate.corrupt.records counter, a Warn log
// record naming the key and an event on the span in ctx, through their
// WithMeterProvider and WithLogger options; see package observe for the metric.
type CorruptReporter interface {
	ReportCorrupt(ctx context.Context, err *CorruptError)
}

// SkipCorrupt is the rule of every List* and iterator for a record that does not
// decode: when err is (or wraps) a *CorruptError it reports it, to r (nil: none)
// and to the handler that ctx carries (OnCorrupt), and returns true: the caller
// skips the record. For any other error, nil included, it reports nothing and
// returns false: the caller fails as usual.
func SkipCorrupt(ctx context.Context, r CorruptReporter, err error) bool {
	var ce *CorruptError
	if !errors.As(err, &ce) {
		return false
	}
	if r != nil {
		r.ReportCorrupt(ctx, ce)
	}
	if h, ok := ctx.Value(corruptKey{}).(func(*CorruptError)); ok {
		h(ce)
	}
	return true
}

type corruptKey struct{}

// OnCorrupt returns a context that carries handle: every List* and iterator call
// made with that context (or one derived from it) calls handle once for each
// stored record it skips because the record does not decode, before it returns
// (an iterator: before it yields the next record). It is how a caller learns
// which records a listing left out, as net/http/httptrace's ClientTrace is how
// one learns what a request did: cmd/pipestate names them on stderr, and
// providertest checks that a backend reports them. A call made on several
// goroutines with one such context may call handle concurrently. A nil handle
// removes one that ctx carries.
func OnCorrupt(ctx context.Context, handle func(*CorruptError)) context.Context {
	if handle == nil {
		return context.WithValue(ctx, corruptKey{}, nil)
	}
	return context.WithValue(ctx, corruptKey{}, handle)
}

// CorruptAt sets key as the Key of the *CorruptError in err's chain when it has
// none (HolderInfo's, say, which does not know where the backend keeps the
// lock), and returns err; any other error, nil included, is returned as it is.
func CorruptAt(err error, key string) error {
	var ce *CorruptError
	if errors.As(err, &ce) && ce.Key == "" {
		ce.Key = key
	}
	return err
}
