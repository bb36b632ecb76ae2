// Package lifecycle is what every method of a state store, deduper or view does
// first, in this order: after Close, an error wrapping ErrClosed; with a done ctx,
// ctx.Err(); then the first failed argument check. All of it before any I/O.
package lifecycle

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/pipestate/pipestate"
)

// Flag is the closed flag of one handle. Handles hold it by pointer, so copies made
// while a store is built share it.
type Flag struct {
	name   string // e.g. "state/redis: BytesStore", for errors
	closed atomic.Bool
}

// New returns an open flag for the handle called name in errors.
func New(name string) *Flag { return &Flag{name: name} }

// Enter is called first by every method, with the results of the method's argument
// checks: it returns an error wrapping pipestate.ErrClosed (state.ErrClosed) after
// Close, else ctx.Err(), else the first non-nil check.
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

// Close marks the flag closed. It is idempotent and returns nil.
func (f *Flag) Close() error {
	f.closed.Store(true)
	return nil
}
