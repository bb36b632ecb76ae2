// Package lifecycle opens every method of the library's handles (the built-in
// providers, the state stores and dedupers, and the views over them) in the one
// order the contract names (provider and state package docs), before any I/O:
//
//  1. after Stop or Close, an error wrapping pipestate.ErrClosed;
//  2. with a done ctx, ctx.Err();
//  3. for a write on a read-only handle, an error wrapping pipestate.ErrReadOnly
//     (ReadOnly);
//  4. the first failed argument check, in the order the method lists them.
//
// Cheap facts about the handle come before facts about the call, so a caller
// learns first what no change of arguments can mend.
package lifecycle

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/pipestate/pipestate"
)

// Flag is the closed flag (and read-only mode) of one handle. Handles hold it by
// pointer, so copies made while a handle is built share it.
type Flag struct {
	name     string // e.g. "redis" or "state/redisstate: BytesStore", for errors
	readOnly bool
	closed   atomic.Bool
}

// New returns an open, writable flag for the handle called name in errors.
func New(name string) *Flag { return &Flag{name: name} }

// SetReadOnly makes EnterWrite refuse every write (a provider's WithReadOnly).
// It is called while the handle is built, before any method runs.
func (f *Flag) SetReadOnly() { f.readOnly = true }

// Enter opens a method that does not write, with the results of its argument
// checks: an error wrapping pipestate.ErrClosed after Close, else ctx.Err(), else
// the first non-nil check.
func (f *Flag) Enter(ctx context.Context, checks ...error) error {
	if f.closed.Load() {
		return fmt.Errorf("%s: %w", f.name, pipestate.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	return nil
}

// EnterWrite opens a method that writes, called op in errors: as Enter, with the
// read-only refusal between the context and the arguments.
func (f *Flag) EnterWrite(ctx context.Context, op string, checks ...error) error {
	if f.readOnly {
		if err := f.Enter(ctx); err != nil {
			return err
		}
		return ReadOnly(f.name, op)
	}
	return f.Enter(ctx, checks...)
}

// ReadOnly returns the error of the write op refused by the read-only handle
// name (provider.ReadOnly): it wraps pipestate.ErrReadOnly.
func ReadOnly(name, op string) error {
	return fmt.Errorf("%s: %s: %w: the provider was opened with WithReadOnly", name, op, pipestate.ErrReadOnly)
}

// ReadOnly reports whether EnterWrite refuses writes.
func (f *Flag) ReadOnly() bool { return f.readOnly }

// Closed reports whether Close was called.
func (f *Flag) Closed() bool { return f.closed.Load() }

// Close marks the flag closed and reports whether it already was. It is
// idempotent.
func (f *Flag) Close() (already bool) { return f.closed.Swap(true) }
