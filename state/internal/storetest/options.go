package storetest

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/pipestate/pipestate/state"
)

// OptionKinds fails t unless each option is accepted by exactly the constructors
// accepts lists for it, as the compiler judges: an option is accepted when the type
// its function returns is assignable to the element type of the constructor's
// variadic options parameter. ctors and opts map names to the functions (generic
// constructors instantiated); accepts maps option names to constructor names. So a
// change that lets NewDeduper take WithDedupTTL, or stops New taking WithClock,
// fails the test, not only a call that no longer compiles.
func OptionKinds(t *testing.T, ctors, opts map[string]any, accepts map[string][]string) {
	t.Helper()
	if len(opts) != len(accepts) {
		t.Fatalf("%d options but %d rows of accepts", len(opts), len(accepts))
	}
	for oname, o := range opts {
		ot := reflect.TypeOf(o)
		if ot.Kind() != reflect.Func || ot.NumOut() != 1 {
			t.Fatalf("%s is not an option function", oname)
		}
		want, ok := accepts[oname]
		if !ok {
			t.Fatalf("%s has no row in accepts", oname)
		}
		for cname, c := range ctors {
			ct := reflect.TypeOf(c)
			if ct.Kind() != reflect.Func || !ct.IsVariadic() {
				t.Fatalf("%s is not a constructor with variadic options", cname)
			}
			got := ot.Out(0).AssignableTo(ct.In(ct.NumIn() - 1).Elem())
			if want := slices.Contains(want, cname); got != want {
				t.Errorf("%s(..., %s(...)) compiles: %v, want %v", cname, oname, got, want)
			}
		}
	}
}

// Invalid runs each case (a constructor call, by name) as a subtest and fails it
// unless the error it returns wraps state.ErrInvalidArgument: the table of bad
// constructor arguments and options every backend has.
func Invalid(t *testing.T, cases map[string]func() error) {
	t.Helper()
	for name, open := range cases {
		t.Run(name, func(t *testing.T) {
			if err := open(); !errors.Is(err, state.ErrInvalidArgument) {
				t.Errorf("err = %v, want state.ErrInvalidArgument", err)
			}
		})
	}
}
