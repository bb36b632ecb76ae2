package state_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/monoid/sketch/hll"
	"github.com/pipestate/pipestate/state"
)

func TestCheckKey(t *testing.T) {
	tests := []struct {
		name string
		key  state.Key
		ok   bool
	}{
		{"plain", state.Key{Entity: "page:/home", Bucket: 3}, true},
		{"delimiters", state.Key{Entity: "{a}#b:c/d e", Bucket: -1}, true},
		{"unicode", state.Key{Entity: "café ☕"}, true},
		{"longest", state.Key{Entity: strings.Repeat("x", state.MaxEntityLen)}, true},
		{"empty", state.Key{}, false},
		{"too long", state.Key{Entity: strings.Repeat("x", state.MaxEntityLen+1)}, false},
		{"invalid utf8", state.Key{Entity: "\xff"}, false},
		{"newline", state.Key{Entity: "a\nb"}, false},
		{"nul", state.Key{Entity: "\x00"}, false},
		{"del", state.Key{Entity: "a\x7f"}, false},
		{"c1 control", state.Key{Entity: "a\u0085"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := state.CheckKey(tt.key)
			if tt.ok != (err == nil) || (err != nil && !errors.Is(err, state.ErrInvalidArgument)) {
				t.Errorf("CheckKey(%q) = %v, want ok=%v", tt.key.Entity, err, tt.ok)
			}
			if err := state.CheckEventID(tt.key.Entity); tt.ok != (err == nil) {
				t.Errorf("CheckEventID(%q) = %v, want ok=%v", tt.key.Entity, err, tt.ok)
			}
		})
	}
	if err := state.CheckKeys([]state.Key{{Entity: "a"}, {}}); !errors.Is(err, state.ErrInvalidArgument) || !strings.Contains(err.Error(), "key 1") {
		t.Errorf("CheckKeys = %v, want an error naming key 1", err)
	}
}

func TestCheckTTLAndDelta(t *testing.T) {
	if err := state.CheckTTL(-1); !errors.Is(err, state.ErrInvalidArgument) {
		t.Errorf("CheckTTL(-1) = %v", err)
	}
	if err := state.CheckTTL(0); err != nil {
		t.Errorf("CheckTTL(0) = %v", err)
	}
	m, _ := hll.New(10)
	err := state.CheckDelta[[]byte](m, []byte("junk"))
	if !errors.Is(err, state.ErrInvalidArgument) || !errors.Is(err, monoid.ErrIncompatible) {
		t.Errorf("CheckDelta(junk) = %v, want ErrInvalidArgument and ErrIncompatible", err)
	}
	if err := state.CheckDelta[[]byte](m, nil); err != nil {
		t.Errorf("CheckDelta(nil) = %v", err)
	}
	if err := state.CheckDelta[int64](monoid.Sum[int64]{}, 5); err != nil {
		t.Errorf("CheckDelta(sum) = %v", err)
	}
}

func TestCheckWriteAndMonoid(t *testing.T) {
	m := monoid.Sum[float64]{}
	k := state.Key{Entity: "k"}
	tests := []struct {
		name string
		err  error
		ok   bool
	}{
		{"merge", state.CheckWrite(m, false, "", k, 1, 0), true},
		{"once", state.CheckWrite(m, true, "evt", k, 1, 0), true},
		{"once without an event ID", state.CheckWrite(m, true, "", k, 1, 0), false},
		{"bad key", state.CheckWrite(m, false, "", state.Key{}, 1, 0), false},
		{"bad ttl", state.CheckWrite(m, true, "evt", k, 1, -1), false},
		{"bad float", state.CheckWrite(m, false, "", k, 1e300, 0), false},
		{"monoid", state.CheckMonoid[float64](m), true},
		{"nil monoid", state.CheckMonoid[float64](nil), false},
		{"typed nil monoid", state.CheckMonoid[[]byte]((*hll.Monoid)(nil)), false},
	}
	for _, tt := range tests {
		if tt.ok != (tt.err == nil) || (tt.err != nil && !errors.Is(tt.err, state.ErrInvalidArgument)) {
			t.Errorf("%s: err = %v, want ok=%v", tt.name, tt.err, tt.ok)
		}
	}
}
