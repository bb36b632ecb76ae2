package pipestate_test

import (
	"errors"
	"testing"

	"github.com/pipestate/pipestate"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/state"
)

// TestOneSentinelPerMeaning pins that provider and state re-export the library's
// sentinels rather than define their own: a caller handles each once.
func TestOneSentinelPerMeaning(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want error
	}{
		{"provider.ErrInvalidArgument", provider.ErrInvalidArgument, pipestate.ErrInvalidArgument},
		{"state.ErrInvalidArgument", state.ErrInvalidArgument, pipestate.ErrInvalidArgument},
		{"provider.ErrClosed", provider.ErrClosed, pipestate.ErrClosed},
		{"state.ErrClosed", state.ErrClosed, pipestate.ErrClosed},
		{"provider.ErrContention", provider.ErrContention, pipestate.ErrContention},
		{"state.ErrContention", state.ErrContention, pipestate.ErrContention},
		{"provider.ErrTooLarge", provider.ErrTooLarge, pipestate.ErrTooLarge},
		{"provider.ErrLockHeld", provider.ErrLockHeld, pipestate.ErrLockHeld},
		{"provider.ErrLockNotHeld", provider.ErrLockNotHeld, pipestate.ErrLockNotHeld},
		{"provider.ErrCursorExpired", provider.ErrCursorExpired, pipestate.ErrCursorExpired},
		{"provider.ErrReadOnly", provider.ErrReadOnly, pipestate.ErrReadOnly},
		{"provider.ErrCorrupt", provider.ErrCorrupt, pipestate.ErrCorrupt},
		{"state.ErrCorrupt", state.ErrCorrupt, pipestate.ErrCorrupt},
		{"provider.ErrFenced", provider.ErrFenced, pipestate.ErrFenced},
		{"state.ErrFenced", state.ErrFenced, pipestate.ErrFenced},
	} {
		if tc.got != tc.want {
			t.Errorf("%s is not the library's sentinel %v", tc.name, tc.want)
		}
	}
	all := []error{pipestate.ErrInvalidArgument, pipestate.ErrTooLarge, pipestate.ErrClosed, pipestate.ErrContention,
		pipestate.ErrLockHeld, pipestate.ErrLockNotHeld, pipestate.ErrCursorExpired, pipestate.ErrReadOnly, pipestate.ErrCorrupt}
	// ErrFenced is a kind of ErrLockNotHeld (a holder that stops on losing its
	// lease stops on it too), and matches no other sentinel.
	if !errors.Is(pipestate.ErrFenced, pipestate.ErrLockNotHeld) {
		t.Error("ErrFenced does not match ErrLockNotHeld")
	}
	for _, b := range all {
		if b != pipestate.ErrLockNotHeld && wraps(pipestate.ErrFenced, b) {
			t.Errorf("ErrFenced matches %v", b)
		}
		if errors.Is(b, pipestate.ErrFenced) {
			t.Errorf("%v matches ErrFenced", b)
		}
	}
	for i, a := range all {
		for j, b := range all {
			if i != j && errors.Is(a, b) {
				t.Errorf("distinct sentinels must not match each other: %v matches %v", a, b)
			}
		}
	}
}

// wraps reports errors.Is(err, target) for two sentinels, one wrapping the other.
func wraps(err, target error) bool { return errors.Is(err, target) }
