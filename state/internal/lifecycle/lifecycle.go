// Package lifecycle is the closed flag of every state store and deduper handle:
// after Close every method returns an error wrapping state.ErrClosed before it
// checks its arguments or does any I/O, and a method called with a done ctx returns
// ctx.Err(), also before anything else.
package lifecycle

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/pipestate/pipestate/state"
)

// Flag is the closed flag of one handle. Handles hold it by pointer, so copies made
// while a store is built share it.
type Flag struct {
	name   string // e.g. "state/redis: BytesStore", for errors
	closed atomic.Bool
}

// New returns an open flag for the handle called name in errors.
func New(name string) *Flag { return &Flag{name: name} }

// Enter is called first by every method: an error wrapping state.ErrClosed after
// Close, else ctx.Err().
func (f *Flag) Enter(ctx context.Context) error {
	if f.closed.Load() {
		return fmt.Errorf("%s: %w", f.name, state.ErrClosed)
	}
	return ctx.Err()
}

// Close marks the flag closed. It is idempotent and returns nil.
func (f *Flag) Close() error {
	f.closed.Store(true)
	return nil
}
