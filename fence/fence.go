package fence

import (
	"context"
	"fmt"

	"github.com/pipestate/pipestate"
	"github.com/pipestate/pipestate/internal/fencectx"
	"github.com/pipestate/pipestate/types"
)

// ErrFenced is the error a refused fenced write wraps (pipestate.ErrFenced, which
// wraps pipestate.ErrLockNotHeld).
var ErrFenced = pipestate.ErrFenced

// Token is what a fenced write carries: the lease key and the lease's fence.
type Token struct {
	Key   string
	Fence int64
}

// Of returns the token of lease: its Key and Fence. It fails with an error wrapping
// pipestate.ErrInvalidArgument for an invalid lease (types.Lease.Validate) or a
// fence below 1 (every Leaser hands out fences from 1).
func Of(lease types.Lease) (Token, error) {
	if err := lease.Validate(); err != nil {
		return Token{}, fmt.Errorf("%w: fence: %w", pipestate.ErrInvalidArgument, err)
	}
	if lease.Fence < 1 {
		return Token{}, fmt.Errorf("%w: fence: lease %q has fence %d, want at least 1", pipestate.ErrInvalidArgument, lease.Key, lease.Fence)
	}
	return Token{Key: lease.Key, Fence: lease.Fence}, nil
}

// FromContext returns the token of the fenced write whose context ctx is, and
// whether there is one. A backend calls it in each write that takes a fence (see
// the package doc) and applies the rule (Set) atomically with the write. Only
// the fenced views (provider.Fenced, state.Fenced) put a token in a context.
func FromContext(ctx context.Context) (Token, bool) {
	t, ok := fencectx.From(ctx).(Token)
	return t, ok
}

// Set is what one record remembers: for each lease key, the highest fence that
// has written it. The zero value (nil) remembers nothing; Remember needs a
// non-nil Set. It is the rule for backends that hold records in process (memory,
// SQLite through a table of its own); a networked backend states the same rule in
// its script or condition.
type Set map[string]int64

// Check returns nil when a write carrying t may write a record that remembers s
// (t.Fence is at least the fence s remembers for t.Key; equal fences pass, and
// other keys' fences do not matter), and otherwise Refused(t, record, s[t.Key]).
func (s Set) Check(t Token, record string) error {
	if newest, ok := s[t.Key]; ok && t.Fence < newest {
		return Refused(t, record, newest)
	}
	return nil
}

// Remember records that a write carrying t wrote the record (after Check passed
// and the write happened).
func (s Set) Remember(t Token) {
	if t.Fence > s[t.Key] {
		s[t.Key] = t.Fence
	}
}

// Refused is the error of a fenced write that the rule refused: record names
// what was to be written, newest the fence of t.Key that wrote it. It wraps
// ErrFenced.
func Refused(t Token, record string, newest int64) error {
	return fmt.Errorf("%w: %s was written under fence %d of lease %q; this write carries fence %d",
		ErrFenced, record, newest, t.Key, t.Fence)
}
