package lifecycle

import (
	"context"
	"errors"
	"testing"

	"github.com/pipestate/pipestate"
)

// TestOpeningOrder: closed, then the context, then (writes) read-only, then the
// first failed check, whatever else is wrong too.
func TestOpeningOrder(t *testing.T) {
	bad := errors.New("bad argument")
	worse := errors.New("second bad argument")
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name             string
		closed, readOnly bool
		ctx              context.Context
		write            bool
		want             error
	}{
		{"closed first", true, true, done, true, pipestate.ErrClosed},
		{"closed read", true, false, done, false, pipestate.ErrClosed},
		{"context before read-only", false, true, done, true, context.Canceled},
		{"read-only before arguments", false, true, context.Background(), true, pipestate.ErrReadOnly},
		{"read-only lets reads in", false, true, context.Background(), false, bad},
		{"first failed check", false, false, context.Background(), true, bad},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := New("test")
			if c.readOnly {
				f.SetReadOnly()
			}
			if c.closed {
				if f.Close() {
					t.Fatal("Close of an open flag reports it was closed")
				}
				if !f.Close() || !f.Closed() {
					t.Fatal("a second Close does not report the flag closed")
				}
			}
			var err error
			if c.write {
				err = f.EnterWrite(c.ctx, "write", nil, bad, worse)
			} else {
				err = f.Enter(c.ctx, nil, bad, worse)
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
		})
	}
	if err := New("test").EnterWrite(context.Background(), "write", nil, nil); err != nil {
		t.Fatalf("an open, writable flag with passing checks: %v", err)
	}
}
