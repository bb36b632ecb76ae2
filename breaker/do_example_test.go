package breaker_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/pipestate/pipestate"
	"github.com/pipestate/pipestate/breaker"
)

// After WithFailures failures in a row the breaker opens: for WithOpenFor it
// refuses calls with an error wrapping pipestate.ErrUnavailable, without sending
// them, so a dead backend costs a caller nothing but the error.
func ExampleBreaker_Do() {
	down := errors.New("connection refused")
	b, err := breaker.New("my-backend", breaker.WithFailures(3), breaker.WithOpenFor(time.Minute),
		breaker.WithFailure(func(err error) bool { return errors.Is(err, down) }))
	if err != nil {
		panic(err)
	}
	sent := 0
	call := func() error { sent++; return down }
	for range 5 {
		err = b.Do(call)
	}
	fmt.Println(b.State(), sent, errors.Is(err, pipestate.ErrUnavailable))
	// Output: open 3 true
}
