package lincheck_test

import (
	"errors"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/pipestate/pipestate/internal/testkit/lincheck"
	"github.com/pipestate/pipestate/types"
)

// An operation that failed is recorded as Unknown, returning after every other
// event, and its client continues under a new ID.
func TestRecorderUnknown(t *testing.T) {
	rec := lincheck.NewRecorder()
	c := rec.Client()
	_, _ = c.Do("lost", func() (any, error) { return nil, errors.New("connection reset") })
	_, _ = c.Do("next", func() (any, error) { return "ok", nil })
	ops := rec.Operations()
	if len(ops) != 2 {
		t.Fatalf("%d operations, want 2", len(ops))
	}
	lost, next := ops[0], ops[1]
	if u, ok := lost.Output.(lincheck.Unknown); !ok || u.Err != "connection reset" {
		t.Errorf("output of the failed call = %#v, want Unknown", lost.Output)
	}
	if lost.Return <= next.Return || lost.Return <= next.Call {
		t.Errorf("failed call returns at %d, not after the next call [%d, %d]", lost.Return, next.Call, next.Return)
	}
	if lost.ClientId == next.ClientId {
		t.Errorf("client kept ID %d after an unknown outcome", lost.ClientId)
	}
}

// A write of unknown outcome may take effect at any time after its call, even
// after later operations of the same caller, or never.
func TestUnknownTakesEffectLate(t *testing.T) {
	put := func(v int) lincheck.RunInput {
		return lincheck.RunInput{Op: lincheck.PutRun, RunID: "r", Version: v, Status: types.RunPending}
	}
	get := lincheck.RunInput{Op: lincheck.GetRun, RunID: "r"}
	found := func(v int) lincheck.RunOutput {
		return lincheck.RunOutput{Found: true, Version: v, Status: types.RunPending}
	}
	unknown := lincheck.Unknown{Err: "lost"}
	for _, c := range []struct {
		name string
		ops  []porcupine.Operation
		want bool
	}{
		{"applied late", []porcupine.Operation{
			{ClientId: 0, Input: put(1), Call: 0, Output: unknown, Return: 100},
			{ClientId: 1, Input: put(2), Call: 10, Output: lincheck.RunOutput{}, Return: 20},
			{ClientId: 1, Input: get, Call: 30, Output: found(2), Return: 40},
			{ClientId: 1, Input: get, Call: 50, Output: found(1), Return: 60},
		}, true},
		{"never applied", []porcupine.Operation{
			{ClientId: 0, Input: put(1), Call: 0, Output: unknown, Return: 100},
			{ClientId: 1, Input: get, Call: 50, Output: lincheck.RunOutput{}, Return: 60},
		}, true},
		{"applied twice", []porcupine.Operation{
			{ClientId: 0, Input: put(1), Call: 0, Output: unknown, Return: 100},
			{ClientId: 1, Input: get, Call: 10, Output: found(1), Return: 20},
			{ClientId: 1, Input: put(2), Call: 30, Output: lincheck.RunOutput{}, Return: 40},
			{ClientId: 1, Input: get, Call: 50, Output: found(1), Return: 60},
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := porcupine.CheckOperations(lincheck.RunModel(), c.ops); got != c.want {
				t.Errorf("linearizable = %t, want %t", got, c.want)
			}
		})
	}
}
